"""Sampling defaults from the model's own files (docs/spec/lse-api.md "Sampling defaults")."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lse.runtime.chat.defaults import generation_defaults
from lse.fixtures.make_fixtures import build_fixture

FIELDS = ("temperature", "top_k", "top_p", "min_p", "repetition_penalty", "presence_penalty",
          "max_new_tokens", "max_length")
NEUTRAL = {"temperature": 1.0, "top_k": 0, "top_p": 1.0, "min_p": 0.0, "repetition_penalty": 1.0,
           "presence_penalty": 0.0, "max_new_tokens": None, "max_length": None}
GEN, CFG, SERVER = "generation_config.json", "config.json", "server_option"


def expect(**changed: tuple[object, str]) -> dict:
    """The to_json() object: neutral defaults, with ``field=(value, source)`` changes."""
    out: dict = {f: changed[f][0] if f in changed else NEUTRAL[f] for f in FIELDS}
    out["sources"] = {f: changed[f][1] if f in changed else "lse_default" for f in FIELDS}
    return out


@pytest.fixture(scope="module")
def fixture(tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("fixtures")
    return lambda name: build_fixture(name, root / name)


FIXTURE_CASES = [
    # the spec's example: Qwen3.8's generation_config.json
    ("qwen38_like", expect(temperature=(1.0, GEN), top_k=(20, GEN), top_p=(0.95, GEN))),
    ("gen_sampling", expect(temperature=(0.6, GEN), top_k=(20, GEN), top_p=(0.95, GEN))),
    ("gen_greedy", expect(temperature=(0.0, GEN))),  # do_sample false beats its temperature 0.7
    ("gen_max_new", expect(max_new_tokens=(7, GEN))),
    ("gen_max_length", expect(max_length=(40, GEN))),
    # the embedded object (temperature 0.3, top_p 0.8) before the top-level fields (temperature 0.9, top_k 5)
    ("gen_embedded", expect(temperature=(0.3, CFG), top_p=(0.8, CFG), top_k=(5, CFG))),
    ("smollm_like", expect()),
]


@pytest.mark.parametrize("name, expected", FIXTURE_CASES)
def test_fixture_defaults(fixture, name: str, expected: dict) -> None:
    assert generation_defaults(fixture(name)).to_json() == expected


@pytest.mark.parametrize("name, server, expected", [
    ("gen_greedy", 0.8, expect(temperature=(0.8, SERVER))),
    ("gen_sampling", 0.0, expect(temperature=(0.0, SERVER), top_k=(20, GEN), top_p=(0.95, GEN))),
    ("smollm_like", 2, expect(temperature=(2.0, SERVER))),
    ("smollm_like", None, expect()),
])
def test_server_temperature(fixture, name: str, server: float | None, expected: dict) -> None:
    assert generation_defaults(fixture(name), server).to_json() == expected


def test_server_options(fixture) -> None:
    got = generation_defaults(fixture("gen_sampling"), server_options={"top_k": 4, "min_p": None})
    assert got.to_json() == expect(temperature=(0.6, GEN), top_k=(4, SERVER), top_p=(0.95, GEN))


@pytest.mark.parametrize("options, message", [
    ({"beam_width": 2}, "unknown generation default 'beam_width'"),
    ({"top_k": "many"}, "server option top_k must be a number, got 'many'"),
])
def test_bad_server_options(fixture, options: dict, message: str) -> None:
    with pytest.raises(ValueError, match=f"^{message}$"):
        generation_defaults(fixture("smollm_like"), server_options=options)


def model(tmp_path: Path, config: dict, gen: dict | None = None) -> Path:
    (tmp_path / "config.json").write_text(json.dumps(config))
    if gen is not None:
        (tmp_path / "generation_config.json").write_text(json.dumps(gen))
    return tmp_path


@pytest.mark.parametrize("config, gen, expected", [
    ({"do_sample": False, "temperature": 0.5}, None, expect(temperature=(0.0, CFG))),
    ({"generation_config": {"do_sample": False}}, {"top_p": 0.9}, expect(temperature=(0.0, CFG), top_p=(0.9, GEN))),
    # the first file that sets do_sample decides it
    ({"do_sample": False}, {"do_sample": True, "temperature": 0.7}, expect(temperature=(0.7, GEN))),
    ({"do_sample": True, "temperature": 0.4}, None, expect(temperature=(0.4, CFG))),
    # values of the wrong type are skipped; integral floats are integers
    ({"temperature": 0.2}, {"temperature": "0.5", "top_k": 20.0, "top_p": True, "min_p": None},
     expect(temperature=(0.2, CFG), top_k=(20, GEN))),
    ({}, {"top_k": 2.5, "max_new_tokens": 16, "repetition_penalty": 1, "presence_penalty": 1.5},
     expect(max_new_tokens=(16, GEN), repetition_penalty=(1.0, GEN), presence_penalty=(1.5, GEN))),
    ({"generation_config": "not an object", "min_p": 0.05}, None, expect(min_p=(0.05, CFG))),
])
def test_precedence_and_types(tmp_path: Path, config: dict, gen: dict | None, expected: dict) -> None:
    assert generation_defaults(model(tmp_path, config, gen)).to_json() == expected


def test_value_types(fixture) -> None:
    got = generation_defaults(fixture("gen_sampling"))
    assert [type(getattr(got, f)) for f in FIELDS] == [float, int, float, float, float, float,
                                                       type(None), type(None)]


def test_log_line(fixture) -> None:
    assert generation_defaults(fixture("gen_max_new")).log_line() == (
        "lse: generation defaults: temperature=1.0 (lse_default), top_k=0 (lse_default), "
        "top_p=1.0 (lse_default), min_p=0.0 (lse_default), repetition_penalty=1.0 (lse_default), "
        "presence_penalty=0.0 (lse_default), max_new_tokens=7 (generation_config.json), "
        "max_length=null (lse_default)")
