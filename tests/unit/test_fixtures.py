"""The tiny fixture models: deterministic, complete HF layouts that load, and
scripted fixtures that decode their script exactly."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from safetensors.numpy import load_file
from tokenizers import Tokenizer

from lse.compiler.config import load_config
from lse.runtime.chat.template import load_chat_template
from lse.runtime.reference import ReferenceModel
from lse.fixtures import make_fixtures
from lse.fixtures.make_fixtures import (
    FIXTURES, SCRIPTS, SPECIAL_TOKENS, build_fixture, fixture_dir, generator_hash, make_tokenizer,
    script_chain, scripted_fixture_dir, tensor_shapes)


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("fixtures")
    for name in FIXTURES:
        build_fixture(name, root / name)
    return root


def files(d: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(d.iterdir())}


@pytest.mark.parametrize("name", FIXTURES)
def test_builds_the_same_bytes_twice(built: Path, tmp_path: Path, name: str) -> None:
    assert files(build_fixture(name, tmp_path / name)) == files(built / name)


BASE = {"config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json"}
EXTRA_FILES = {
    "qwen38_like": {"chat_template.jinja", "generation_config.json"},
    "qwen36_like": set(), "no_template": set(), "list_template": set(),
    "json_template": {"chat_template.json"},
    **{n: {"chat_template.jinja", "generation_config.json"} for n in FIXTURES if n.startswith("gen_")},
    "gen_embedded": {"chat_template.jinja"},
}


@pytest.mark.parametrize("name", FIXTURES)
def test_layout_loads(built: Path, name: str) -> None:
    d = built / name
    assert set(files(d)) == BASE | EXTRA_FILES.get(name, {"chat_template.jinja"})
    config = load_config(d)
    tok = Tokenizer.from_file(str(d / "tokenizer.json"))
    assert config.vocab_size % 2 == 1 and config.vocab_size in (tok.get_vocab_size(), tok.get_vocab_size() + 1)
    assert config.eos_token_ids == (tok.token_to_id("<|im_end|>"),)
    assert all(tok.token_to_id(t) is not None for t in SPECIAL_TOKENS)
    weights = load_file(str(d / "model.safetensors"))
    assert {k: v.shape for k, v in weights.items()} == dict(tensor_shapes(config.to_json()))
    assert {v.dtype for v in weights.values()} == {np.dtype(np.float32)}


@pytest.mark.parametrize("name, model_type, head_dim, bias, qk_norm, lm_head", [
    ("llama", "llama", 12, False, False, True),
    ("qwen2_bias", "qwen2", 12, True, False, True),
    ("qwen3_qk_norm", "qwen3", 16, False, True, True),
    ("tied_embeddings", "llama", 12, False, False, False),
])
def test_architectures(built: Path, name: str, model_type: str, head_dim: int, bias: bool,
                       qk_norm: bool, lm_head: bool) -> None:
    config = load_config(built / name)
    names = set(load_file(str(built / name / "model.safetensors")))
    assert (config.model_type, config.head_dim, config.hidden_size, config.intermediate_size,
            config.num_attention_heads, config.num_key_value_heads) == (model_type, head_dim, 48, 37, 4, 2)
    assert ("model.layers.1.self_attn.k_proj.bias" in names) == bias
    assert ("model.layers.0.self_attn.q_norm.weight" in names) == qk_norm
    assert ("lm_head.weight" in names) == lm_head


@pytest.mark.parametrize("name", ["llama", "qwen2_bias", "qwen3_qk_norm", "tied_embeddings"])
def test_logits_are_not_degenerate(built: Path, name: str) -> None:
    tok = Tokenizer.from_file(str(built / name / "tokenizer.json"))
    ids = tok.encode("<|im_start|>user\nWhat is the weather in Paris?<|im_end|>\n").ids
    logits = ReferenceModel.from_dir(built / name).forward(ids)
    spread = logits.std(axis=-1)
    assert spread.min() > 0.5 and spread.max() < 5.0
    assert len(set(logits.argmax(axis=-1).tolist())) > 1


PROMPT = [{"role": "system", "content": "Be brief."},
          {"role": "user", "content": "What is the weather in Paris?"}]


@pytest.mark.parametrize("script", SCRIPTS)
def test_scripted_fixture_decodes_its_script(built: Path, script: str) -> None:
    d = built / f"scripted_{script}"
    tok = Tokenizer.from_file(str(d / "tokenizer.json"))
    template = load_chat_template(d)
    assert template is not None
    ids = tok.encode(template.render(PROMPT, add_generation_prompt=True), add_special_tokens=False).ids
    config = load_config(d)
    out = ReferenceModel.from_dir(d).greedy(ids, 20, config.eos_token_ids)
    assert out == [tok.token_to_id(p) for p in SCRIPTS[script]]
    assert tok.decode(out, skip_special_tokens=False) == "".join(SCRIPTS[script])
    assert config.hidden_size >= config.vocab_size and config.num_hidden_layers == 1


def test_script_chain_checks_the_split() -> None:
    with pytest.raises(AssertionError, match="script stop: tokenized as"):
        script_chain(make_tokenizer(), "stop", 0)


def test_script_chain_checks_distinct_predecessors() -> None:
    tok = make_tokenizer(make_fixtures.SCRIPT_WORDS)
    start = tok.token_to_id("<think>")  # the script's first token is also its start
    with pytest.raises(AssertionError, match="a token precedes two different ones"):
        script_chain(tok, "reasoning", start)


def test_fixture_dir_builds_once_into_the_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LSE_CACHE_DIR", str(tmp_path))
    d = fixture_dir("smollm_like")
    assert d == tmp_path / "fixtures" / f"smollm_like-{generator_hash()}"
    assert (d / "config.json").is_file()
    calls = []
    monkeypatch.setattr(make_fixtures, "build_fixture", lambda *a: calls.append(a))
    assert fixture_dir("smollm_like") == d and calls == []
    assert scripted_fixture_dir("stop").name.startswith("scripted_stop-")
    assert sorted(p.name for p in (tmp_path / "fixtures").iterdir() if p.name.startswith(".")) == []


@pytest.mark.parametrize("call", [lambda: fixture_dir("nope"), lambda: scripted_fixture_dir("nope"),
                                  lambda: build_fixture("nope", "/nonexistent")])
def test_unknown_names(call) -> None:
    with pytest.raises(KeyError, match="unknown"):
        call()


def test_main(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    assert make_fixtures.main([str(tmp_path), "gen_greedy", "no_template"]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["gen_greedy", "no_template"]
    assert capsys.readouterr().out.split() == [str(tmp_path / "gen_greedy"), str(tmp_path / "no_template")]
    assert make_fixtures.main([str(tmp_path), "nope"]) == 2
    assert make_fixtures.main([]) == 2
