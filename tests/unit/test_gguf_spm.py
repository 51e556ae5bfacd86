"""The SentencePiece tokenizer of a Gemma GGUF (compiler/gguf/spm.py): merges
recovered in the file's order, space runs respelled, byte fallback, BOS as
the file says, the refusals; and on the real Gemma 3 270M file (when its
package is installed) the prompt ids transformers' tokenizer gave the golden
data."""

from __future__ import annotations

import json

import pytest

from lse.compiler.gguf.spm import recovered_merges
from lse.compiler.gguf.tokenizer import TokenizerImportError, build_tokenizer

SPECIALS = ["<pad>", "<eos>", "<bos>", "<unk>"]
BYTES = [f"<0x{b:02X}>" for b in range(256)]


def _meta(words: list[str], **extra) -> dict:
    tokens = SPECIALS + BYTES + words
    types = [3] * 4 + [6] * 256 + [1] * len(words)
    return {"general.architecture": "gemma3", "tokenizer.ggml.model": "llama", "tokenizer.ggml.tokens": tokens,
            "tokenizer.ggml.scores": [0.0] * len(tokens), "tokenizer.ggml.token_type": types,
            "tokenizer.ggml.bos_token_id": 2, "tokenizer.ggml.eos_token_id": 1, "tokenizer.ggml.unknown_token_id": 3,
            "tokenizer.ggml.padding_token_id": 0, "tokenizer.ggml.add_bos_token": True,
            "tokenizer.ggml.add_space_prefix": False, **extra}


def _id(meta: dict, token: str) -> int:
    return meta["tokenizer.ggml.tokens"].index(token)


def test_merges_follow_the_files_order_not_the_scores() -> None:
    """"bc" before "ab" in the file: "abcd" is a|bc|d, though the scores rank ab and cd first."""
    words = ["a", "b", "c", "d", "bc", "ab", "cd"]
    meta = _meta(words)
    meta["tokenizer.ggml.scores"] = [0.0] * (len(meta["tokenizer.ggml.tokens"]) - 3) + [-3.0, -1.0, -1.0]
    tok = build_tokenizer(meta)
    assert tok.encode("abcd").ids == [2] + [_id(meta, t) for t in ("a", "bc", "d")]
    assert recovered_merges(["a", "b", "c", "ab", "bc", "abc"]) == [("a", "b"), ("b", "c"), ("ab", "c"), ("a", "bc")]


def test_spaces_are_the_space_piece_and_runs_are_respelled() -> None:
    """The file keeps a run of spaces as real spaces; the text's spaces are "▁"."""
    meta = _meta(["x", "y", "\u2581", "  ", "\u2581y"])
    tok = build_tokenizer(meta)
    assert tok.encode("x  y").ids == [2, _id(meta, "x"), _id(meta, "  "), _id(meta, "y")]
    assert tok.encode("x y").ids == [2, _id(meta, "x"), _id(meta, "\u2581y")]
    assert tok.decode(tok.encode("x  y x y").ids, skip_special_tokens=True) == "x  y x y"


def test_unknown_characters_fall_back_to_bytes() -> None:
    meta = _meta(["x"])
    tok = build_tokenizer(meta)
    ids = tok.encode("xé").ids
    assert ids == [2, _id(meta, "x"), 4 + 0xC3, 4 + 0xA9]  # é is C3 A9 in UTF-8
    assert tok.decode(ids, skip_special_tokens=True) == "xé"
    assert tok.encode("<eos>x", add_special_tokens=False).ids == [1, _id(meta, "x")]


def test_a_space_prefix_and_other_sentencepiece_files_are_refused() -> None:
    with pytest.raises(TokenizerImportError) as e:
        build_tokenizer(_meta(["x"], **{"tokenizer.ggml.add_space_prefix": True}))
    assert str(e.value) == ("GGUF key tokenizer.ggml.add_space_prefix = True is not supported in a gemma3 file; "
                            "supported: False")
    with pytest.raises(TokenizerImportError) as e:
        build_tokenizer(_meta(["x"], **{"general.architecture": "llama"}))
    assert str(e.value) == ("tokenizer.ggml.model 'llama' is not supported in a llama file; supported: 'gpt2' "
                            "(byte-level BPE), 'llama' (SentencePiece) in gemma3")


def test_the_real_gemma3_file_tokenizes_as_transformers() -> None:
    from lse.tools.gemma3_file import PackageMissing, gemma3_gguf
    from lse.tools.golden_gemma3_file import GOLDEN
    from lse.compiler.gguf.reader import read_gguf

    try:
        path = gemma3_gguf()
    except PackageMissing as e:
        pytest.skip(str(e))
    tok = build_tokenizer(read_gguf(path).metadata)
    for case in json.loads(GOLDEN.read_text())["cases"]:
        assert tok.encode(case["text"]).ids == case["prompt"]
        assert tok.decode(case["ids"], skip_special_tokens=False) == case["completion"]
