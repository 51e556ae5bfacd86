"""The Anthropic wire layer's translations, both ways, without an engine:
a Messages body into the chat body LSE runs (lse.runtime.anthropic.request),
chat chunks into Anthropic's stream events and their fold
(lse.runtime.anthropic.events), and LSE's errors into Anthropic's envelope
(lse.runtime.anthropic.errors)."""

from __future__ import annotations

import pytest

from lse.runtime.anthropic.errors import anthropic_error, error_type
from lse.runtime.anthropic.events import MessageEvents, fold
from lse.runtime.anthropic.request import to_chat
from lse.runtime.errors import ERROR_TABLE, LseError, error_body
from lse.runtime.openai.replies import choice_delta, choice_final, chunk

USER = [{"role": "user", "content": "Hi"}]
BASE = {"model": "m", "max_tokens": 16, "messages": USER}
WEATHER = {"name": "get_weather", "description": "Weather by city",
           "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}}}


def refused(body: dict, param: str) -> LseError:
    with pytest.raises(LseError) as info:
        to_chat(body)
    assert info.value.status == 400 and info.value.param == param, info.value
    return info.value


# ---- request: Anthropic -> chat ---------------------------------------------------

def test_a_plain_request_becomes_the_chat_body():
    request = to_chat({**BASE, "system": "Be brief.", "stop_sequences": ["END"], "temperature": 0.5,
                       "top_p": 0.9, "top_k": 40, "metadata": {"user_id": "u1"}, "stream": True})
    assert request.chat == {"model": "m", "max_tokens": 16, "stop": ["END"], "temperature": 0.5, "top_p": 0.9,
                            "top_k": 40, "messages": [{"role": "system", "content": "Be brief."}, *USER]}
    assert request.stream is True and request.model == "m" and request.thinking_budget is None


def test_system_text_blocks_join_with_newlines():
    request = to_chat({**BASE, "system": [{"type": "text", "text": "A", "cache_control": {"type": "ephemeral"}},
                                          {"type": "text", "text": "B"}]})
    assert request.chat["messages"][0] == {"role": "system", "content": "A\nB"}


def test_tools_and_every_tool_choice():
    request = to_chat({**BASE, "tools": [WEATHER]})
    assert request.chat["tools"] == [{"type": "function", "function": {
        "name": "get_weather", "parameters": WEATHER["input_schema"], "description": "Weather by city"}}]
    cases = {"auto": "auto", "any": "required", "none": "none"}
    for kind, chat in cases.items():
        assert to_chat({**BASE, "tools": [WEATHER], "tool_choice": {"type": kind}}).chat["tool_choice"] == chat
    named = to_chat({**BASE, "tools": [WEATHER], "tool_choice": {"type": "tool", "name": "get_weather",
                                                                  "disable_parallel_tool_use": True}}).chat
    assert named["tool_choice"] == {"type": "function", "function": {"name": "get_weather"}}
    assert named["parallel_tool_calls"] is False


def test_a_tool_round_trip_becomes_tool_calls_and_tool_messages():
    messages = [
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "content": [
            {"type": "thinking", "thinking": "look it up", "signature": ""},
            {"type": "text", "text": "Let me check."},
            {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Paris"}}]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_1", "content": [{"type": "text", "text": "sunny"}]},
            {"type": "tool_result", "tool_use_id": "toolu_2", "content": "warm", "is_error": False},
            {"type": "text", "text": "And tomorrow?"}]},
    ]
    chat = to_chat({**BASE, "messages": messages, "tools": [WEATHER]}).chat["messages"]
    assert chat == [
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "content": "Let me check.", "reasoning_content": "look it up",
         "tool_calls": [{"id": "toolu_1", "type": "function",
                         "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}]},
        {"role": "tool", "tool_call_id": "toolu_1", "content": "sunny"},
        {"role": "tool", "tool_call_id": "toolu_2", "content": "warm"},
        {"role": "user", "content": "And tomorrow?"},
    ]


def test_thinking_maps_onto_the_chat_switch_with_the_budget():
    enabled = to_chat({**BASE, "max_tokens": 64, "thinking": {"type": "enabled", "budget_tokens": 8}})
    assert enabled.chat["thinking"] == {"type": "enabled"} and enabled.thinking_budget == 8
    disabled = to_chat({**BASE, "thinking": {"type": "disabled"}})
    assert disabled.chat["thinking"] == {"type": "disabled"} and disabled.thinking_budget is None
    adaptive = to_chat({**BASE, "thinking": {"type": "adaptive"}})
    assert adaptive.chat["thinking"] == {"type": "enabled"} and adaptive.thinking_budget is None
    assert "thinking" not in to_chat(BASE).chat  # absent: the model's default level


def test_output_config_becomes_reasoning_effort_and_response_format():
    schema = {"type": "object", "properties": {"a": {"type": "integer"}}}
    chat = to_chat({**BASE, "output_config": {"effort": "low", "format": {"type": "json_schema",
                                                                          "schema": schema}}}).chat
    assert chat["reasoning_effort"] == "low"
    assert chat["response_format"] == {"type": "json_schema", "json_schema": {"name": "output", "schema": schema}}


def test_count_tokens_needs_no_max_tokens():
    request = to_chat({"model": "m", "messages": USER, "stream": True}, count_only=True)
    assert "max_tokens" not in request.chat and request.stream is False


@pytest.mark.parametrize("change,param", [
    ({"max_tokens": None}, "max_tokens"),
    ({"max_tokens": 0}, "max_tokens"),
    ({"max_tokens": 2.0}, "max_tokens"),
    ({"model": None}, "model"),
    ({"messages": []}, "messages"),
    ({"messages": [{"role": "system", "content": "x"}]}, "messages[0].role"),
    ({"messages": [{"role": "user", "content": [{"type": "image", "source": {}}]}]}, "messages[0].content[0].type"),
    ({"messages": [{"role": "user", "content": [{"type": "document", "source": {}}]}]},
     "messages[0].content[0].type"),
    ({"messages": [{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t",
                                                 "content": [{"type": "image", "source": {}}]}]}]},
     "messages[0].content[0].content[0].type"),
    ({"messages": [{"role": "user", "content": [{"type": "tool_result"}]}]}, "messages[0].content[0].tool_use_id"),
    ({"messages": [{"role": "user", "content": [{"type": "tool_use", "id": "t", "name": "n", "input": {}}]}]},
     "messages[0].content[0].type"),
    ({"messages": [*USER, {"role": "assistant", "content": "Sure"}]}, "messages[1]"),
    ({"messages": [{"role": "user", "content": []}]}, "messages[0].content"),
    ({"system": 3}, "system"),
    ({"stop_sequences": "END"}, "stop_sequences"),
    ({"stop_sequences": [""]}, "stop_sequences"),
    ({"temperature": 1.5}, "temperature"),
    ({"top_p": -0.1}, "top_p"),
    ({"top_k": -1}, "top_k"),
    ({"stream": "yes"}, "stream"),
    ({"metadata": "x"}, "metadata"),
    ({"tools": [{"name": "f"}]}, "tools[0].input_schema"),
    ({"tools": [{"type": "web_search_20250305", "name": "web_search"}]}, "tools[0].type"),
    ({"tool_choice": {"type": "any"}}, "tool_choice"),
    ({"tool_choice": {"type": "required"}, "tools": [WEATHER]}, "tool_choice"),
    ({"tool_choice": {"type": "tool", "name": "other"}, "tools": [WEATHER]}, "tool_choice.name"),
    ({"thinking": {"type": "on"}}, "thinking"),
    ({"output_config": "high"}, "output_config"),
    ({"output_config": {"effort": 3}}, "output_config.effort"),
    ({"output_config": {"format": {"type": "json_object"}}}, "output_config.format"),
    ({"thinking": {"type": "enabled"}}, "thinking.budget_tokens"),
    ({"thinking": {"type": "enabled", "budget_tokens": 16}}, "thinking.budget_tokens"),
])
def test_each_bad_field_is_a_400_naming_it(change, param):
    body = {**BASE, **change}
    body = {k: v for k, v in body.items() if v is not None}
    refused(body, param)


def test_an_image_is_refused_with_a_clear_message():
    err = refused({**BASE, "messages": [{"role": "user", "content": [
        {"type": "text", "text": "What is this?"},
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AA=="}}]}]},
        "messages[0].content[1].type")
    assert err.message == "messages[0].content[1] is an image block; LSE models take text only"


# ---- events: chat chunks -> Anthropic's stream, and the fold ----------------------

def chat_chunks(deltas: list[dict], finish: tuple[str, str], usage: dict) -> list[dict]:
    """The chunks request_state sends for one choice: role, deltas, the final one."""
    make = lambda choices, **extra: chunk("chat.completions", "chatcmpl-abc", 1, "m", choices, **extra)  # noqa: E731
    out = [make([choice_delta("chat.completions", 0, {"role": "assistant", "content": ""})])]
    out += [make([choice_delta("chat.completions", 0, d)]) for d in deltas]
    out.append(make([choice_final("chat.completions", 0, *finish)], usage=usage,
                    lse_context={"tokens_used": 12, "context_length": 64, "tokens_remaining": 52}))
    return out


USAGE = {"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12, "prompt_tokens_details": {"cached_tokens": 4}}


def test_reasoning_text_and_a_tool_call_become_three_blocks():
    call = {"index": 0, "id": "call_1", "type": "function",
            "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}
    stream = MessageEvents("m", 10, lambda: None)
    events = [e for c in chat_chunks([{"reasoning_content": "hm"}, {"reasoning_content": "m"}, {"content": "Hi"},
                                      {"tool_calls": [call]}], ("tool_calls", "stop_token"), USAGE)
              for e in stream.feed(c)]
    assert [(e["type"], e.get("index")) for e in events] == [
        ("message_start", None),
        ("content_block_start", 0), ("content_block_delta", 0), ("content_block_delta", 0), ("content_block_stop", 0),
        ("content_block_start", 1), ("content_block_delta", 1), ("content_block_stop", 1),
        ("content_block_start", 2), ("content_block_delta", 2), ("content_block_stop", 2),
        ("message_delta", None), ("message_stop", None)]
    assert events[0]["message"]["usage"] == {"input_tokens": 10, "output_tokens": 0, "cache_read_input_tokens": 0}
    assert events[-2]["delta"] == {"stop_reason": "tool_use", "stop_sequence": None}
    assert events[-2]["usage"] == {"input_tokens": 6, "output_tokens": 2, "cache_read_input_tokens": 4}
    message = fold(events)
    assert message == {
        "id": "msg_abc", "type": "message", "role": "assistant", "model": "m",
        "content": [{"type": "thinking", "thinking": "hmm", "signature": ""}, {"type": "text", "text": "Hi"},
                    {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Paris"}}],
        "stop_reason": "tool_use", "stop_sequence": None,
        "usage": {"input_tokens": 6, "output_tokens": 2, "cache_read_input_tokens": 4},
        "lse_context": {"tokens_used": 12, "context_length": 64, "tokens_remaining": 52}}


@pytest.mark.parametrize("finish,reason,sequence", [
    (("stop", "stop_token"), "end_turn", None),
    (("stop", "stop_sequence"), "stop_sequence", "END"),
    (("length", "max_tokens"), "max_tokens", None),
    (("length", "context_full"), "model_context_window_exceeded", None),
])
def test_each_ending_has_its_stop_reason(finish, reason, sequence):
    stream = MessageEvents("m", 10, lambda: "END")
    events = [e for c in chat_chunks([{"content": "x"}], finish, USAGE) for e in stream.feed(c)]
    assert fold(events)["stop_reason"] == reason and fold(events)["stop_sequence"] == sequence


def test_an_empty_reply_has_no_blocks():
    stream = MessageEvents("m", 10, lambda: None)
    events = [e for c in chat_chunks([], ("stop", "stop_token"), USAGE) for e in stream.feed(c)]
    assert [e["type"] for e in events] == ["message_start", "message_delta", "message_stop"]
    assert fold(events)["content"] == []


# ---- errors -------------------------------------------------------------------------

@pytest.mark.parametrize("kind", sorted(ERROR_TABLE))
def test_every_lse_error_has_an_anthropic_type(kind):
    status = ERROR_TABLE[kind][0]
    body = anthropic_error(status, error_body(kind, "why", param="p"))
    expected = {400: "invalid_request_error", 401: "authentication_error", 404: "not_found_error",
                405: "invalid_request_error", 408: "timeout_error", 413: "invalid_request_error",
                500: "api_error", 501: "api_error", 503: "overloaded_error"}[status]
    assert body["type"] == "error" and body["error"]["type"] == expected == error_type(status)
    assert body["error"]["message"] == "why" and body["error"]["param"] == "p"
    assert list(body["error"])[:2] == ["type", "message"]
