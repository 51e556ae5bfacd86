"""Constrained decoding: grammars over a fixture's byte-level BPE tokenizer,
the token mask they give, and the sampler steps that use it (logit_bias,
the mask) on tiny logits."""

from __future__ import annotations

import json

import numpy as np
import pytest
from tokenizers import Tokenizer

from lse.runtime.sampler import SamplingParams, apply_logit_bias, apply_mask, filtered_logits, make_rng, sample_token
from lse.runtime.structured import (
    CACHE_SIZE, MAX_WHITESPACE, GrammarError, Grammars, after_reasoning, json_grammar, tool_grammar,
)
from lse.fixtures.make_fixtures import scripted_fixture_dir

NEG = -np.inf
GREEDY = SamplingParams(temperature=0.0, top_k=0, top_p=1.0, min_p=0.0, presence_penalty=0.0,
                        repetition_penalty=1.0)
SCHEMA = {"type": "object", "properties": {
    "color": {"enum": ["red", "green"]},
    "size": {"$ref": "#/$defs/Size"},
    "tags": {"type": "array", "items": {"type": "string", "pattern": "^[a-z]{1,4}$"}, "maxItems": 2}},
    "required": ["color", "size", "tags"], "additionalProperties": False,
    "$defs": {"Size": {"type": "object", "properties": {"w": {"type": "integer"}}, "required": ["w"],
                       "additionalProperties": False}}}
WEATHER = {"type": "function", "function": {"name": "get_weather", "parameters": {
    "type": "object", "properties": {"city": {"type": "string"}}}}}


@pytest.fixture(scope="module")
def tokenizer() -> Tokenizer:
    return Tokenizer.from_file(str(scripted_fixture_dir("tool_call") / "tokenizer.json"))


@pytest.fixture(scope="module")
def grammars(tokenizer: Tokenizer) -> Grammars:
    return Grammars(tokenizer, frozenset({tokenizer.token_to_id("<|im_end|>")}), tokenizer.get_vocab_size())


def walk(grammars: Grammars, grammar: str, ids: list[int]) -> np.ndarray:
    """Feed ``ids`` through a fresh constraint, each one allowed; the mask after them."""
    c = grammars.constraint(grammar)
    for t in ids:
        assert c.allowed()[t], t
        c.advance(t)
    return c.allowed()


def test_a_schema_admits_its_json_then_only_end_of_turn(grammars: Grammars, tokenizer: Tokenizer) -> None:
    text = json.dumps({"color": "red", "size": {"w": 3}, "tags": ["ab"]})
    end = tokenizer.token_to_id("<|im_end|>")
    assert np.flatnonzero(walk(grammars, json_grammar(SCHEMA), tokenizer.encode(text).ids)).tolist() == [end]


@pytest.mark.parametrize("text", ['{"color": "blue"', '{"color": "red", "size": {"w": 3}, "tags": ["toolong"',
                                  '{"colour"', '{\n'])
def test_a_schema_refuses_what_breaks_it(grammars: Grammars, tokenizer: Tokenizer, text: str) -> None:
    c = grammars.constraint(json_grammar(SCHEMA))
    ids = tokenizer.encode(text).ids
    allowed = True
    for t in ids:
        allowed = bool(c.allowed()[t])
        if not allowed:
            break
        c.advance(t)
    assert not allowed


def test_each_constraint_is_independent_and_the_grammar_cached(grammars: Grammars, tokenizer: Tokenizer) -> None:
    grammar = json_grammar({"type": "object"})
    a, b = grammars.constraint(grammar), grammars.constraint(grammar)
    a.advance(tokenizer.encode("{").ids[0])
    assert a.allowed().sum() != b.allowed().sum()
    assert grammars._compiled(grammar) is grammars._compiled(grammar)
    for i in range(CACHE_SIZE + 1):
        grammars.check(json_grammar({"type": "integer", "minimum": i}))
    assert len(grammars._cache) == CACHE_SIZE


@pytest.mark.parametrize("schema, says", [
    ({"type": "array", "uniqueItems": True}, "uniqueItems"),
    ({"not": {"type": "string"}}, "not"),
    ({"if": {"type": "string"}, "then": {}}, "if"),
    ({"type": "string", "pattern": "(?=a)b"}, "look-around"),
    ({"type": "string", "format": "no-such-format"}, "no-such-format"),
    ({"type": "wat"}, "wat"),
])
def test_refused_keywords_say_which(grammars: Grammars, schema: dict, says: str) -> None:
    with pytest.raises(GrammarError) as exc:
        grammars.check(json_grammar(schema))
    assert says in str(exc.value) and "\n" not in str(exc.value)


def test_a_forced_call_matches_the_template_markers(grammars: Grammars, tokenizer: Tokenizer) -> None:
    grammar = tool_grammar([WEATHER], grammars.literal, ("<tool_call>", "</tool_call>"), several=False)
    call = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>'
    end = tokenizer.token_to_id("<|im_end|>")
    # The script's whole-call token is offered, and after one call only the end.
    assert np.flatnonzero(walk(grammars, grammar, tokenizer.encode(call).ids)).tolist() == [end]
    several = tool_grammar([WEATHER], grammars.literal, ("<tool_call>", "</tool_call>"), several=True)
    assert walk(grammars, several, tokenizer.encode(call).ids)[tokenizer.encode("\n").ids[0]]


def test_reasoning_runs_free_up_to_the_closing_marker(grammars: Grammars, tokenizer: Tokenizer) -> None:
    grammar = after_reasoning(json_grammar({"enum": [1, 2]}), "</think>", grammars.literal)
    end = tokenizer.token_to_id("<|im_end|>")
    ids = tokenizer.encode("any {text} here</think>\n\n2").ids
    assert np.flatnonzero(walk(grammars, grammar, ids)).tolist() == [end]


def test_special_markers_are_tokens_by_id(grammars: Grammars, tokenizer: Tokenizer) -> None:
    assert grammars.literal("<tool_call>") == f"<[{tokenizer.token_to_id('<tool_call>')}]>"
    assert grammars.literal('a"b') == '"a\\"b"'


# --- the sampler's two steps before the penalties and filters --------------------------

def test_logit_bias_adds_bans_and_forces() -> None:
    x = np.array([1.0, 2.0, 3.0, 0.5], dtype=np.float32)
    assert apply_logit_bias(x, ((0, 1.5),)).tolist() == [2.5, 2.0, 3.0, 0.5]
    assert apply_logit_bias(x, ((2, -100.0),)).tolist() == [1.0, 2.0, NEG, 0.5]
    assert apply_logit_bias(x, ((1, 100.0), (3, 100.0))).tolist() == [NEG, 102.0, NEG, 100.5]
    assert apply_logit_bias(x, ()) is x


def test_the_mask_drops_what_the_grammar_forbids() -> None:
    x = np.array([1.0, 2.0, 3.0], dtype=np.float32)
    assert apply_mask(x, np.array([True, False, True])).tolist() == [1.0, NEG, 3.0]
    assert sample_token(x, [], GREEDY, make_rng(0), np.array([True, True, False])) == 1
    sampled = {sample_token(x, [], SamplingParams(1.0, 0, 1.0, 0.0, 0.0, 1.0), make_rng(s),
                            np.array([True, False, False])) for s in range(20)}
    assert sampled == {0}


def test_the_mask_comes_before_temperature_and_the_filters() -> None:
    # top_k 1 after the mask keeps the best allowed token, not the best overall.
    x = np.array([1.0, 5.0, 3.0], dtype=np.float32)
    p = SamplingParams(1.0, 1, 1.0, 0.0, 0.0, 1.0)
    assert filtered_logits(x, [], p, np.array([True, False, True])).tolist() == [NEG, NEG, 3.0]


def test_bias_that_bans_every_allowed_token_yields_to_the_grammar() -> None:
    x = np.array([1.0, 2.0, 3.0], dtype=np.float32)
    p = SamplingParams(0.0, 0, 1.0, 0.0, 0.0, 1.0, logit_bias=((0, -100.0),))
    assert sample_token(x, [], p, make_rng(0), np.array([True, False, False])) == 0
    assert sample_token(x, [], SamplingParams(0.0, 0, 1.0, 0.0, 0.0, 1.0, logit_bias=((2, -100.0),)),
                        make_rng(0)) == 1


def test_a_text_closing_marker_ends_reasoning_at_its_first_occurrence(grammars: Grammars,
                                                                       tokenizer: Tokenizer) -> None:
    grammar = after_reasoning(json_grammar({"enum": [1, 2]}), "END", grammars.literal)
    c = grammars.constraint(grammar)
    for t in tokenizer.encode("think END").ids:
        c.advance(t)
    digit = tokenizer.encode("1").ids[0]
    assert c.allowed()[digit] and not c.allowed()[tokenizer.encode("x").ids[0]]


def test_a_grammar_that_allows_nothing_more_allows_the_end(grammars: Grammars, tokenizer: Tokenizer) -> None:
    c = grammars.constraint(json_grammar({"enum": [1]}))
    c._matcher.consume_token(tokenizer.encode("x").ids[0])  # refused: the matcher is in its error state now
    assert np.flatnonzero(c.allowed()).tolist() == [tokenizer.token_to_id("<|im_end|>")]


def _accepts(grammars: Grammars, grammar: str, ids: list[int]) -> bool:
    """Whether a fresh constraint allows each of ``ids`` in turn."""
    c = grammars.constraint(grammar)
    for t in ids:
        if not c.allowed()[t]:
            return False
        c.advance(t)
    return True


def test_whitespace_runs_are_bounded_so_every_reply_ends(grammars: Grammars, tokenizer: Tokenizer) -> None:
    # JSON: at most one space between tokens, never a newline
    schema = json_grammar({"type": "object", "properties": {"a": {"type": "integer"}}})
    assert _accepts(grammars, schema, tokenizer.encode('{ "a": 1}').ids)
    assert not _accepts(grammars, schema, tokenizer.encode('{  "a"').ids)
    # after a closed think block: at most MAX_WHITESPACE whitespace characters
    grammar = after_reasoning(json_grammar({"enum": [1, 2]}), "</think>", grammars.literal)
    space = tokenizer.encode(" ").ids
    assert len(space) == 1
    head = tokenizer.encode("r</think>").ids
    assert _accepts(grammars, grammar, head + space * MAX_WHITESPACE + tokenizer.encode("2").ids)
    assert not _accepts(grammars, grammar, head + space * (MAX_WHITESPACE + 1))
