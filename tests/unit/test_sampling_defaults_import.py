"""A GGUF's sampling defaults (llama.cpp's general.sampling.* keys) reach
the imported generation_config.json, and startup names the defaults that
came from nowhere but LSE's neutral ones (#44)."""

from __future__ import annotations

import json
from pathlib import Path

import gguf
import pytest

from lse.runtime.chat.defaults import generation_defaults
from lse.compiler.gguf.reader import read_gguf
from lse.compiler.gguf.importer import sampling_defaults


def _gguf_with(path: Path, values: dict[str, float | int]) -> Path:
    writer = gguf.GGUFWriter(str(path), "llama")
    for key, value in values.items():
        (writer.add_int32 if isinstance(value, int) else writer.add_float32)(key, value)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def test_llama_cpps_sampling_keys_become_generation_config_fields(tmp_path: Path) -> None:
    k = gguf.Keys.General
    path = _gguf_with(tmp_path / "m.gguf", {k.SAMPLING_TEMP: 0.25, k.SAMPLING_TOP_K: 40, k.SAMPLING_TOP_P: 0.5,
                                             k.SAMPLING_MIN_P: 0.125, k.SAMPLING_PENALTY_REPEAT: 1.5,
                                             k.SAMPLING_PENALTY_LAST_N: 64})
    got = sampling_defaults(read_gguf(path).metadata)
    assert got == {"temperature": 0.25, "top_k": 40, "top_p": 0.5, "min_p": 0.125, "repetition_penalty": 1.5,
                   "do_sample": True}
    (tmp_path / "config.json").write_text("{}")
    (tmp_path / "generation_config.json").write_text(json.dumps(got))
    defaults = generation_defaults(tmp_path)
    assert (defaults.temperature, defaults.top_k, defaults.sources["temperature"]) == (
        0.25, 40, "generation_config.json")


def test_a_greedy_gguf_says_do_sample_false_and_no_keys_add_nothing(tmp_path: Path) -> None:
    path = _gguf_with(tmp_path / "g.gguf", {gguf.Keys.General.SAMPLING_TEMP: 0.0})
    assert sampling_defaults(read_gguf(path).metadata) == {"temperature": 0.0, "do_sample": False}
    assert sampling_defaults({"general.name": "x"}) == {}


@pytest.fixture
def model(tmp_path: Path):
    def make(gen: dict) -> Path:
        (tmp_path / "config.json").write_text("{}")
        (tmp_path / "generation_config.json").write_text(json.dumps(gen))
        return tmp_path
    return make


def test_startup_names_the_neutral_temperature_and_limit_and_their_options(model) -> None:
    note = generation_defaults(model({})).neutral_note(max_tokens_cap=0)
    assert note == ("lse: NOTE: the model's files set no temperature or max_new_tokens: a request that leaves "
                    "them out gets LSE's neutral defaults (temperature 1.0 and no token limit but the context); "
                    "set them with --temperature and --max-tokens")


def test_the_note_leaves_out_what_the_files_or_options_set(model) -> None:
    assert generation_defaults(model({}), 0.7).neutral_note(max_tokens_cap=256) is None
    assert generation_defaults(model({"temperature": 0.6})).neutral_note(0) == (
        "lse: NOTE: the model's files set no max_new_tokens: a request that leaves them out gets LSE's neutral "
        "defaults (no token limit but the context); set them with --max-tokens")
    assert generation_defaults(model({"max_new_tokens": 100})).neutral_note(0).endswith("with --temperature")
    assert generation_defaults(model({"max_length": 100, "do_sample": False})).neutral_note(0) is None


def test_the_engine_says_it_once_at_startup() -> None:
    from lse.runtime.api import lse_close, lse_open
    from lse.fixtures.make_fixtures import fixture_dir

    for options, count in (({}, 1), ({"temperature": 0.5, "max_tokens": 64}, 0)):
        engine = lse_open({"model": str(fixture_dir("llama")), "kv_len": 96, "pool": ["cpu:0"], "parallel": 1,
                           **options})
        try:
            notes = [x for x in engine.log_lines if x.startswith("lse: NOTE: the model's files set no")]
            assert len(notes) == count, engine.log_lines
        finally:
            lse_close(engine)
