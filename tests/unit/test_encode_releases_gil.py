"""Prompt tokenization releases the interpreter lock (#44, prompt arrays).

``tokenizers.Tokenizer.encode`` holds the GIL for the whole call: a 330K-character
prompt (under the character bound, so it is tokenized before its 400) froze every
other thread for 0.82 s, ``/health`` and running streams included. ``encode_batch``
releases it (the longest gap of a 5 ms ticker: 20 ms) and gives the same ids, so
every prompt path encodes through ``encode_ids``."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from tokenizers import Tokenizer
from tokenizers.models import WordLevel
from tokenizers.pre_tokenizers import Whitespace

from lse.runtime.chat.special import PromptEncoder, encode_ids
from lse.runtime.embeddings.body import parse_body
from lse.runtime.tokens import tokenize

pytestmark = pytest.mark.unit


class LockHolding:
    """A tokenizer whose ``encode`` (the call that holds the GIL) is refused."""

    def __init__(self) -> None:
        self.inner = Tokenizer(WordLevel({"[UNK]": 0, "x": 1, "y": 2}, unk_token="[UNK]"))
        self.inner.pre_tokenizer = Whitespace()

    def encode(self, *args, **kwargs):
        raise AssertionError("Tokenizer.encode holds the interpreter lock")

    def encode_batch(self, *args, **kwargs):
        return self.inner.encode_batch(*args, **kwargs)


def test_encode_ids_matches_encode() -> None:
    tok = LockHolding()
    assert encode_ids(tok, "x y z x") == tok.inner.encode("x y z x").ids == [1, 2, 0, 1]


def test_tokenize_encodes_without_the_lock() -> None:
    engine = SimpleNamespace(tokenizer=LockHolding(), kv_len=64, prompts=SimpleNamespace(chars_per_token=8))
    assert tokenize(engine, {"content": "y x"}) == {"tokens": [2, 1]}


def test_prompt_text_encodes_without_the_lock() -> None:
    encoder = SimpleNamespace(text_only=LockHolding())
    assert PromptEncoder.encode_text(encoder, "x x y") == [1, 1, 2]


def test_embedding_inputs_encode_without_the_lock() -> None:
    body = parse_body({"input": ["x y", "y"]}, LockHolding(), vocab=3, hidden=4, context_length=64, chars_per_token=8)
    assert body.prompts == [[1, 2], [2]]
