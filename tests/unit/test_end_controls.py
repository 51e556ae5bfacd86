"""ignore_eos, min_tokens and stop_token_ids (runtime/openai/controls.py):
parsed with vLLM's names, and applied by a sequence to its tokens."""

from __future__ import annotations

import numpy as np
import pytest

from lse.runtime.detokenize import IncrementalDetokenizer
from lse.runtime.errors import LseError
from lse.runtime.limits import TokenLimit
from lse.runtime.openai.controls import EndControls
from lse.runtime.openai.request import parse_request
from lse.runtime.prepare import _check_stop_token_ids
from lse.runtime.sampler import SamplingParams, make_rng
from lse.runtime.sequence import Sequence
from lse.runtime.stops import StopMatcher

GREEDY = SamplingParams(temperature=0.0, top_k=0, top_p=1.0, min_p=0.0, presence_penalty=0.0,
                        repetition_penalty=1.0)
VOCAB = 8
EOS = 7
CHAT = {"messages": [{"role": "user", "content": "hi"}]}


def parse(**fields):
    return parse_request({**CHAT, **fields}, "chat.completions", operator_cap=0)


@pytest.mark.parametrize("fields, ends", [
    ({}, EndControls()),
    ({"ignore_eos": True, "min_tokens": 3, "stop_token_ids": [5, 2, 5]}, EndControls(True, 3, (2, 5))),
    ({"min_tokens": 4, "max_tokens": 4}, EndControls(min_tokens=4)),
    ({"ignore_eos": None, "min_tokens": None, "stop_token_ids": None}, EndControls()),
])
def test_the_fields_parse(fields, ends):
    assert parse(**fields).ends == ends
    assert parse_request({"prompt": "x", **fields}, "completions", operator_cap=0).ends == ends


@pytest.mark.parametrize("fields, param", [
    ({"ignore_eos": 1}, "ignore_eos"),
    ({"min_tokens": -1}, "min_tokens"),
    ({"min_tokens": 2.0}, "min_tokens"),
    ({"min_tokens": 5, "max_tokens": 4}, "min_tokens"),
    ({"min_tokens": 5, "max_completion_tokens": 4}, "min_tokens"),
    ({"stop_token_ids": 5}, "stop_token_ids"),
    ({"stop_token_ids": [1, -2]}, "stop_token_ids"),
    ({"stop_token_ids": [True]}, "stop_token_ids"),
    ({"stop_token_ids": list(range(65))}, "stop_token_ids"),
])
def test_bad_values_are_a_400_naming_the_field(fields, param):
    with pytest.raises(LseError) as e:
        parse(**fields)
    assert (e.value.kind, e.value.param) == ("invalid_request", param)


def test_a_stop_token_id_outside_the_vocab_is_refused_by_the_prepare_step():
    _check_stop_token_ids((3, 263), 264)
    with pytest.raises(LseError) as e:
        _check_stop_token_ids((3, 264), 264)
    assert e.value.param == "stop_token_ids" and "264" in e.value.message


def sequence(script: list[int], *, end_ids=None, min_tokens=0, stops=(), max_new=10) -> tuple[Sequence, list]:
    """A greedy sequence over logits whose argmax at step i is script[i] and
    whose runner-up is always the end-of-turn token; ids detokenize to letters."""
    seq = Sequence(index=0, prompt_ids=[0], limit=TokenLimit(max_new, "max_tokens"), params=GREEDY,
                   rng=make_rng(0), eos_ids=frozenset({EOS}),
                   detok=IncrementalDetokenizer(lambda ids: "".join("abcdefg<"[i] for i in ids)),
                   stops=StopMatcher(list(stops)), parser=None, token_text=str,
                   end_ids=end_ids, min_tokens=min_tokens)
    deltas: list = []
    for want in script:
        logits = np.zeros(VOCAB, np.float32)
        logits[EOS], logits[want] = 1.0, 2.0
        deltas += seq.on_logits(logits)
        if seq.finish is not None:
            break
    return seq, deltas


def text(deltas) -> str:
    return "".join(d["content"] for d in deltas)


def test_min_tokens_masks_the_end_tokens_until_the_reply_is_long_enough():
    seq, deltas = sequence([EOS, EOS, EOS, EOS], min_tokens=3)
    # the first three steps take the runner-up (the end token is masked); token 1 scores 0 like the rest
    assert seq.generated == [0, 0, 0, EOS] and seq.finish == ("stop", "stop_token")
    assert text(deltas) == "aaa"


def test_min_tokens_holds_stop_strings_back_until_its_last_token():
    seq, deltas = sequence([1, 2, 1, 2, 1], stops=["b"], min_tokens=3)
    # "b" at tokens 1 and 2 is content; at token 3 (the min_tokens-th) it matches
    assert seq.generated == [1, 2, 1] and seq.finish == ("stop", "stop_sequence")
    assert text(deltas) == "bc"


def test_ignore_eos_runs_to_the_limit_and_the_eos_text_is_not_content():
    seq, deltas = sequence([EOS, 1, EOS], end_ids=frozenset(), max_new=3)
    assert seq.generated == [EOS, 1, EOS] and seq.finish == ("length", "max_tokens")
    assert text(deltas) == "b"


def test_a_stop_token_id_ends_the_reply_as_an_end_of_turn_token():
    seq, deltas = sequence([1, 4, 2], end_ids=frozenset({4, EOS}))
    assert seq.generated == [1, 4] and seq.finish == ("stop", "stop_token")
    assert text(deltas) == "b"


def test_min_tokens_leaves_the_grammar_its_end():
    class Done:  # a grammar that is complete: only the end token is allowed
        def allowed(self):
            mask = np.zeros(VOCAB, bool)
            mask[EOS] = True
            return mask

    seq = Sequence(index=0, prompt_ids=[0], limit=TokenLimit(10, "max_tokens"), params=GREEDY, rng=make_rng(0),
                   eos_ids=frozenset({EOS}), detok=IncrementalDetokenizer(lambda ids: ""), stops=StopMatcher([]),
                   parser=None, token_text=str, constraint=Done(), end_ids=frozenset(), min_tokens=5)
    seq.on_logits(np.zeros(VOCAB, np.float32))
    assert seq.generated == [EOS] and seq.finish == ("stop", "stop_token")
