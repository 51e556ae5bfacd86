"""IncrementalDetokenizer over a real byte-level BPE tokenizer, fed one id at
a time: the chunks join to tokenizer.decode(all ids) and never split a
character."""

from __future__ import annotations

import pytest
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

from lse.runtime.detokenize import IncrementalDetokenizer

CORPUS = [
    "hello world, the quick brown fox",
    "héllo wörld",
    "日本語のテキスト",
    "emoji 😀 party 🎉",
    "hello 日本",
]

TEXTS = [
    "hi 😀🎉 日本語 👩‍👩‍👧 héllo 漢字",   # emoji, a ZWJ family, CJK, an accent
    "😀",
    "plain ascii text",
    "日本語のテキスト 😀 ok",
    "ééé ñ ü 🎉🎉",
]


@pytest.fixture(scope="module")
def tokenizer() -> Tokenizer:
    """A tiny byte-level BPE: its 300 tokens merge little, so most non-ASCII
    characters span several tokens and some tokens end mid-character."""
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=300, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(CORPUS * 3, trainer)
    return tok


@pytest.mark.parametrize("text", TEXTS)
def test_chunks_join_to_the_whole_decode(tokenizer: Tokenizer, text: str) -> None:
    ids = tokenizer.encode(text).ids
    detok = IncrementalDetokenizer(tokenizer.decode)
    chunks = [detok.feed(i) for i in ids] + [detok.flush()]
    assert "".join(chunks) == tokenizer.decode(ids) == text
    assert not any("\ufffd" in c for c in chunks)


def test_partial_characters_are_held_back(tokenizer: Tokenizer) -> None:
    ids = tokenizer.encode("😀").ids
    assert len(ids) > 1  # the emoji spans several byte tokens
    assert tokenizer.decode(ids[:1]).endswith("\ufffd")
    detok = IncrementalDetokenizer(tokenizer.decode)
    assert [detok.feed(i) for i in ids] == [""] * (len(ids) - 1) + ["😀"]
    assert detok.flush() == ""


def test_a_token_ending_mid_character_emits_the_complete_part(tokenizer: Tokenizer) -> None:
    # "hé" splits as "h" + the first byte of "é" in one token; "h" must wait
    # for that byte's partner, then "héllo" appears whole.
    ids = tokenizer.encode(" héllo").ids
    pieces = [tokenizer.decode([i]) for i in ids]
    assert any(p.endswith("\ufffd") and p != "\ufffd" for p in pieces)
    detok = IncrementalDetokenizer(tokenizer.decode)
    chunks = [detok.feed(i) for i in ids]
    assert "".join(chunks) == " héllo"
    assert not any("\ufffd" in c for c in chunks)


def test_flush_returns_an_unfinished_character(tokenizer: Tokenizer) -> None:
    ids = tokenizer.encode("a😀").ids
    detok = IncrementalDetokenizer(tokenizer.decode)
    out = "".join(detok.feed(i) for i in ids[:-1])
    assert out == "a"
    assert detok.flush() == tokenizer.decode(ids[:-1])[len("a"):]  # the model stopped mid-emoji


def test_each_step_decodes_a_short_window(tokenizer: Tokenizer) -> None:
    text = "the quick brown fox 😀 日本語 " * 80
    ids = tokenizer.encode(text).ids
    widths: list[int] = []

    def decode(window: list[int]) -> str:
        widths.append(len(window))
        return tokenizer.decode(window)

    detok = IncrementalDetokenizer(decode)
    joined = "".join(detok.feed(i) for i in ids) + detok.flush()
    assert joined == text
    assert len(ids) > 1000
    # The longest character here is 4 byte tokens; with the previous piece as
    # context a window never needs more than 8 ids, however long the reply.
    assert max(widths) <= 8
