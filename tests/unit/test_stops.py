"""StopMatcher: every way of chunking the text gives the same reply, and no
part of a stop string is ever emitted."""

from __future__ import annotations

from collections.abc import Iterator
from itertools import combinations

import pytest

from lse.runtime.stops import StopMatcher


def splits(text: str) -> Iterator[list[str]]:
    """Every way to cut ``text`` into non-empty chunks (2^(len-1) of them)."""
    inner = range(1, len(text))
    for r in range(len(text)):
        for cuts in combinations(inner, r):
            bounds = [0, *cuts, len(text)]
            yield [text[a:b] for a, b in zip(bounds, bounds[1:])]


# stops, generated text, the reply the client gets, whether a stop ended it
CASES = [
    (["</s>"], "hello</s>world", "hello", True),
    (["</s>"], "hello world", "hello world", False),
    (["</s>"], "a</b</s>", "a</b", True),            # a false start, then the stop
    (["ab", "bc"], "xabc", "x", True),              # "ab" completes before "bc"
    (["abcd", "bc"], "xabcd", "xa", True),          # "bc" completes first, though "abcd" starts earlier
    (["bc", "abc"], "xabc", "x", True),             # both complete at once: the earlier start wins
    (["aab"], "aaab", "a", True),                   # the stop overlaps its own false start
    (["<|im_end|>", "\n\n"], "Hi\n<|im_end|>", "Hi\n", True),
    (["é!"], "café!", "caf", True),
    (["xyz"], "xyxyxz", "xyxyxz", False),           # held text comes out at flush
    (["ab"], "ab", "", True),
    (["ab"], "ba", "ba", False),
    ([], "plain", "plain", False),
]


@pytest.mark.parametrize("stops, text, reply, stopped", CASES)
def test_every_chunking_gives_the_same_reply(stops: list[str], text: str, reply: str,
                                             stopped: bool) -> None:
    for chunks in splits(text):
        matcher = StopMatcher(stops)
        emitted = ""
        done = False
        for chunk in chunks:
            out, done = matcher.feed(chunk)
            emitted += out
            # Never leaked: what was emitted so far is always a prefix of the reply.
            assert reply.startswith(emitted), (chunks, emitted)
            if done:
                break
        if not done:
            emitted += matcher.flush()
        assert (emitted, done) == (reply, stopped), chunks


def test_holds_back_only_what_could_start_a_stop() -> None:
    matcher = StopMatcher(["hello"])
    assert matcher.feed("oh he") == ("oh ", False)
    assert matcher.feed("l") == ("", False)
    assert matcher.feed("p") == ("help", False)
    assert matcher.feed("hell") == ("", False)
    assert matcher.flush() == "hell"


def test_after_a_stop_nothing_more_is_emitted() -> None:
    matcher = StopMatcher(["#"])
    assert matcher.feed("a#b") == ("a", True)
    assert matcher.stopped
    assert matcher.feed("more") == ("", True)
    assert matcher.flush() == ""


def test_without_stops_text_passes_straight_through() -> None:
    matcher = StopMatcher([])
    assert matcher.feed("<|") == ("<|", False)
    assert matcher.flush() == ""


@pytest.mark.parametrize("stops", [[""], ["ok", ""]])
def test_empty_stop_string_is_refused(stops: list[str]) -> None:
    with pytest.raises(ValueError):
        StopMatcher(stops)
