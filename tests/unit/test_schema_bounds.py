"""Grammar compilation is bounded (runtime/schema_bounds.py, structured.LIMITS):
a schema whose pattern would build a million lexer states, or a schema too
large, is a 400 before any work, and llguidance's errors name no grammar."""

from __future__ import annotations

import pytest
from test_special_tokens import engine_for
from tokenizers import Tokenizer

from lse.runtime.errors import LseError
from lse.runtime.prepare import prepare_request
from lse.runtime.schema_bounds import MAX_PATTERN_REPEAT, MAX_SCHEMA_CHARS, repeat_weight
from lse.runtime.structured import Grammars, json_grammar
from lse.fixtures.make_fixtures import scripted_fixture_dir

ATTACK = {"type": "object", "properties": {"a": {"type": "string", "pattern": "^a{1000000}$"}}, "required": ["a"]}


@pytest.mark.parametrize("pattern, weight", [
    ("^[a-z]+$", 1), ("^a{1000000}$", 1000000), (r"^\d{4}-\d{2}$", 4), ("(a{30}){30}", 900),
    ("(ab){2,50}x{3}", 50), ("[{]{5}", 5), (r"\p{L}{7}", 7), (r"a\{9}", 1), ("a{,12}", 12), ("(a|b{4}){3}", 12),
    ("x{2}(y){3}", 3), ("a{3,}", 3), ("((a){10}){10}{10}", 1000),
])
def test_repeat_weight_multiplies_nested_counts(pattern: str, weight: int) -> None:
    assert repeat_weight(pattern) == weight


@pytest.fixture(scope="module")
def engine():
    return engine_for("smollm_like")


def _chat(extra: dict) -> dict:
    return {"messages": [{"role": "user", "content": "hi"}], **extra}


@pytest.mark.parametrize("endpoint", ["chat.completions", "completions"])
def test_a_pattern_past_the_bound_is_a_400_before_any_work(engine, endpoint: str) -> None:
    fmt = {"response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema": ATTACK}}}
    body = _chat(fmt) if endpoint == "chat.completions" else {"prompt": "hi", **fmt}
    with pytest.raises(LseError) as err:
        prepare_request(engine, body, endpoint)
    e = err.value
    assert (e.status, e.kind, e.param) == (400, "invalid_request", "response_format")
    assert "repeats up to 1000000 times" in e.message and f"at most {MAX_PATTERN_REPEAT}" in e.message


def test_a_pattern_at_the_bound_is_accepted(engine) -> None:
    schema = {"type": "string", "pattern": f"^a{{{MAX_PATTERN_REPEAT}}}$"}
    seqs, *_ = prepare_request(engine, _chat({"response_format": {
        "type": "json_schema", "json_schema": {"name": "x", "schema": schema}}}), "chat.completions")
    assert seqs[0].constraint is not None


def test_a_schema_past_the_size_bound_is_a_400(engine) -> None:
    schema = {"type": "object", "description": "d" * MAX_SCHEMA_CHARS}
    with pytest.raises(LseError) as err:
        prepare_request(engine, _chat({"response_format": {
            "type": "json_schema", "json_schema": {"name": "x", "schema": schema}}}), "chat.completions")
    assert (err.value.status, err.value.param) == (400, "response_format")
    assert f"LSE compiles at most {MAX_SCHEMA_CHARS}" in err.value.message


def test_a_tools_pattern_past_the_bound_names_the_tool(engine, monkeypatch) -> None:
    import dataclasses

    tooled = dataclasses.replace(engine, tool_markers=("<tool_call>", "</tool_call>"))
    tool = {"type": "function", "function": {"name": "f", "parameters": ATTACK}}
    with pytest.raises(LseError) as err:
        prepare_request(tooled, _chat({"tools": [tool], "tool_choice": "required"}), "chat.completions")
    assert (err.value.status, err.value.param) == (400, "tools[0].function.parameters")


def test_a_matcher_error_names_no_grammar() -> None:
    tok = Tokenizer.from_file(str(scripted_fixture_dir("tool_call") / "tokenizer.json"))
    grammars = Grammars(tok, frozenset(), tok.get_vocab_size())
    secret = "secret-property-name"
    c = grammars.constraint(json_grammar({"type": "object", "properties": {secret: {"type": "integer"}},
                                          "required": [secret]}))
    with pytest.raises(RuntimeError) as err:
        c.advance(tok.encode("]").ids[0])
    assert "grammar refused token" in str(err.value)
    assert secret not in str(err.value) and "<grammar>" not in str(err.value)


def _digits_allowed(grammars: Grammars, tok: Tokenizer, node: dict, prefix: str) -> int:
    """How many more "3" tokens the grammar allows after '{"a": <prefix>'."""
    c = grammars.constraint(json_grammar({"type": "object", "properties": {"a": node}, "required": ["a"]}))
    for t in tok.encode('{"a": ' + prefix).ids:
        assert c.allowed()[t], (prefix, t)
        c.advance(t)
    three, n = tok.token_to_id("3"), 0
    while n < 100 and c.allowed()[three]:
        c.advance(three)
        n += 1
    return n


@pytest.mark.parametrize("node, prefix, more", [
    ({"type": "integer"}, "1", 15),  # 16 digits, as llama.cpp's integral part
    ({"type": "integer"}, "-1", 15),
    ({"type": "number"}, "1", 15),
    ({"type": "number"}, "1.", 10),  # NUMBER_FRACTION_DIGITS after the point
    ({"type": ["number", "null"]}, "0.", 10),
    ({"type": "integer", "minimum": 0}, "1", 15),
    ({"type": "integer", "maximum": 10**12}, "1", 11),  # the schema's own bound is kept
])
def test_numbers_end_within_a_bounded_number_of_digits(node: dict, prefix: str, more: int) -> None:
    tok = Tokenizer.from_file(str(scripted_fixture_dir("tool_call") / "tokenizer.json"))
    assert _digits_allowed(Grammars(tok, frozenset(), tok.get_vocab_size()), tok, node, prefix) == more


def test_bound_numbers_leaves_data_and_other_nodes_alone() -> None:
    from lse.runtime.schema_bounds import bound_numbers

    schema = {"type": "object", "properties": {"n": {"type": "number", "multipleOf": 0.5},
                                               "e": {"enum": [{"type": "number"}]}, "s": {"type": "string"}},
              "$defs": {"i": {"type": "integer", "exclusiveMinimum": 0}}}
    assert bound_numbers(schema) == {
        "type": "object", "properties": {"n": {"type": "number", "multipleOf": 0.5, "minimum": -1e16,
                                               "maximum": 1e16},
                                         "e": {"enum": [{"type": "number"}]}, "s": {"type": "string"}},
        "$defs": {"i": {"type": "integer", "exclusiveMinimum": 0, "maximum": 10**16 - 1}}}
    assert schema["properties"]["n"] == {"type": "number", "multipleOf": 0.5}  # not modified in place
