"""The imported tokenizer.json gives llama.cpp's ids (tests/unit/data/smollm2_token_golden.json,
written by ``python -m lse.tools.golden_tokens``; llama_cpp is not needed here)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tokenizers import Tokenizer

from lse.tools.golden_tokens import corpus, special_tokens
from lse.compiler.gguf.tokenizer import build_tokenizer, write_tokenizer
from lse.compiler.gguf.reader import read_gguf
from lse.compiler.gguf.importer import default_gguf_path

GOLDEN = json.loads((Path(__file__).parent / "data" / "smollm2_token_golden.json").read_text())


@pytest.fixture(scope="module")
def tokenizer(tmp_path_factory: pytest.TempPathFactory) -> Tokenizer:
    out = tmp_path_factory.mktemp("tok")
    write_tokenizer(read_gguf(default_gguf_path()).metadata, out, model_max_length=8192)
    return Tokenizer.from_file(str(out / "tokenizer.json"))


def test_golden_file_covers_the_corpus() -> None:
    assert GOLDEN["gguf"] == default_gguf_path().name
    assert [c["text"] for c in GOLDEN["cases"]] == corpus(default_gguf_path())


def test_ids_equal_llama_cpp(tokenizer: Tokenizer) -> None:
    mismatches = [(c["text"], c["ids"], tokenizer.encode(c["text"]).ids) for c in GOLDEN["cases"]
                  if tokenizer.encode(c["text"]).ids != c["ids"]]
    assert mismatches == [], "\n".join(f"{t!r}: llama.cpp {g} / ours {o}" for t, g, o in mismatches)


def test_every_special_token_is_one_id(tokenizer: Tokenizer) -> None:
    specials = special_tokens(default_gguf_path())
    assert len(specials) == 17
    for token_id, token in enumerate(specials):  # SmolLM2's control tokens are ids 0..16
        assert tokenizer.encode(token).ids == [token_id]
        assert tokenizer.decode([token_id], skip_special_tokens=True) == ""


def test_decode_round_trips(tokenizer: Tokenizer) -> None:
    for case in GOLDEN["cases"]:
        assert tokenizer.decode(case["ids"], skip_special_tokens=False) == case["text"]


def test_bos_and_eos_added_only_when_the_gguf_says_so() -> None:
    tokens = ["<s>", "</s>", "a", "b", "ab"]
    meta = {"tokenizer.ggml.model": "gpt2", "tokenizer.ggml.pre": "gpt-2", "tokenizer.ggml.tokens": tokens,
            "tokenizer.ggml.token_type": [3, 3, 1, 1, 1], "tokenizer.ggml.merges": ["a b"],
            "tokenizer.ggml.bos_token_id": 0, "tokenizer.ggml.eos_token_id": 1}
    assert build_tokenizer(meta).encode("abab").ids == [4, 4]
    assert build_tokenizer(meta | {"tokenizer.ggml.add_bos_token": True}).encode("abab").ids == [0, 4, 4]
    both = meta | {"tokenizer.ggml.add_bos_token": True, "tokenizer.ggml.add_eos_token": True}
    assert build_tokenizer(both).encode("abab").ids == [0, 4, 4, 1]
    assert build_tokenizer(both).encode("abab", add_special_tokens=False).ids == [4, 4]
