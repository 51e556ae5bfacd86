"""The generic tool-call form (runtime/chat/generic_tools.py): a forced call
on a template without tool-call markers is asked for in the prompt,
constrained to one JSON object and parsed into tool_calls (#44)."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest
from test_special_tokens import engine_for

from lse.runtime.chat.generic_tools import GenericToolParser, parse_calls, with_instruction
from lse.runtime.prepare import prepare_request

PICK = {"type": "function", "function": {"name": "pick", "description": "Pick one.", "parameters": {
    "type": "object", "properties": {"choice": {"enum": ["a", "b"]}}, "required": ["choice"],
    "additionalProperties": False}}}
OTHER = {"type": "function", "function": {"name": "other", "parameters": {"type": "object"}}}


@pytest.fixture(scope="module")
def model():
    ctx = engine_for("smollm_like")
    assert ctx.tool_markers is None
    return ctx


def _walk(seq, text: str, tokenizer) -> np.ndarray:
    c = seq.constraint
    for t in tokenizer.encode(text, add_special_tokens=False).ids:
        assert c.allowed()[t], (text, tokenizer.decode([t]))
        c.advance(t)
    return c.allowed()


def _chat(**extra) -> dict:
    return {"messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "a or b?"}],
            "tools": [PICK, OTHER], **extra}


def test_a_forced_call_asks_for_the_generic_form_and_is_constrained_to_it(model) -> None:
    seqs, *_ = prepare_request(model, _chat(tool_choice={"type": "function", "function": {"name": "pick"}}),
                               "chat.completions")
    seq = seqs[0]
    prompt = model.tokenizer.decode(seq.prompt_ids, skip_special_tokens=False)
    assert "Be brief.\n\nYou can call these tools" in prompt  # appended to the conversation's system message
    assert '"name": "pick"' in prompt and '"name": "other"' not in prompt  # only the named tool
    assert 'Respond with only a JSON object that calls the tool: {"tool_call": ' in prompt
    assert isinstance(seq.parser, GenericToolParser)
    _walk(seq, '{"tool_call": {"name": "pick", "arguments": {"choice": "b"}}}', model.tokenizer)
    end = model.tokenizer.token_to_id("<|endoftext|>")  # llguidance's end token for a tokenizer without eos ids
    assert np.flatnonzero(seq.constraint.allowed()).tolist() == [end]  # the object is whole: only the end follows


def test_the_grammar_refuses_another_tool_and_bad_arguments(model) -> None:
    seqs, *_ = prepare_request(model, _chat(tool_choice={"type": "function", "function": {"name": "pick"}}),
                               "chat.completions")
    c = seqs[0].constraint
    ids = model.tokenizer.encode('{"tool_call": {"name": "pick", "arguments": {"choice": "', add_special_tokens=False).ids
    for t in ids:
        c.advance(t)
    allowed = c.allowed()
    assert allowed[model.tokenizer.encode("a", add_special_tokens=False).ids[0]]
    assert not allowed[model.tokenizer.encode("c", add_special_tokens=False).ids[0]]


def test_required_with_parallel_calls_takes_an_array(model) -> None:
    seqs, *_ = prepare_request(model, _chat(tool_choice="required"), "chat.completions")
    prompt = model.tokenizer.decode(seqs[0].prompt_ids, skip_special_tokens=False)
    assert "calls one or more of the tools: {\"tool_calls\": [" in prompt
    _walk(seqs[0], '{"tool_calls": [{"name": "other", "arguments": {}}, {"name": "pick", "arguments": '
                   '{"choice": "a"}}]}', model.tokenizer)


def test_auto_is_unchanged_on_a_template_without_markers(model) -> None:
    seqs, *_ = prepare_request(model, _chat(tool_choice="auto"), "chat.completions")
    assert seqs[0].constraint is None and not isinstance(seqs[0].parser, GenericToolParser)
    prompt = model.tokenizer.decode(seqs[0].prompt_ids, skip_special_tokens=False)
    assert "Respond with only a JSON object" not in prompt


def test_the_parser_turns_the_object_into_tool_calls() -> None:
    parser = GenericToolParser(False, None, rng=random.Random(0))
    text = '{"tool_calls": [{"name": "pick", "arguments": {"choice": "a"}}, {"name": "other", "arguments": {}}]}'
    assert [parser.feed(text[i:i + 7]) for i in range(0, len(text), 7)] == [[]] * len(range(0, len(text), 7))
    out = parser.finish()
    assert [d["tool_calls"][0]["index"] for d in out] == [0, 1]
    assert [json.loads(d["tool_calls"][0]["function"]["arguments"]) for d in out] == [{"choice": "a"}, {}]
    assert [d["tool_calls"][0]["function"]["name"] for d in out] == ["pick", "other"]
    assert parser.has_tool_calls and parser.message()["content"] is None


def test_a_reply_cut_short_is_content_as_written() -> None:
    parser = GenericToolParser(False, None)
    assert parser.feed('{"tool_call": {"name": "pi') == []
    assert parser.finish() == [{"content": '{"tool_call": {"name": "pi'}]
    assert not parser.has_tool_calls


@pytest.mark.parametrize("text, calls", [
    ('{"tool_call": {"name": "f", "arguments": {"x": 1}}}', [("f", {"x": 1})]),
    ('{"tool_calls": []}', None), ('{"tool_call": {"name": "f"}}', None), ("[1]", None), ("nope", None),
])
def test_parse_calls(text: str, calls) -> None:
    assert parse_calls(text) == calls


def test_the_instruction_opens_the_conversation_without_a_system_message() -> None:
    out = with_instruction([{"role": "user", "content": "hi"}], [PICK["function"] and PICK], False, describe=False)
    assert out[0] == {"role": "system", "content": 'Respond with only a JSON object that calls the tool: '
                                                   '{"tool_call": {"name": "<tool name>", "arguments": {...}}}'}
    assert out[1] == {"role": "user", "content": "hi"}


@pytest.mark.parametrize("text, reads", [
    ("{#- no tools here -#}{{ messages }}", False), ("tools are nice {{ x }}", False),
    ("{%- if tools %}{{ tools | tojson }}{% endif %}", True), ("{{- x + tools[0] }}", True),
])
def test_renders_tools_reads_the_templates_code_only(text: str, reads: bool) -> None:
    from lse.runtime.chat.generic_tools import renders_tools

    assert renders_tools(text) is reads


def test_model_info_reports_the_form() -> None:
    from lse.runtime.api import lse_close, lse_model_info, lse_open
    from lse.fixtures.make_fixtures import fixture_dir

    engine = lse_open({"model": str(fixture_dir("smollm_like")), "kv_len": 96, "pool": ["cpu:0"], "parallel": 1})
    try:
        info = lse_model_info(engine)
        assert (info["tool_call_markers"], info["tool_call_form"]) == (None, "generic")
    finally:
        lse_close(engine)
