"""The Responses wire layer without an engine or a server: a /v1/responses
body into a chat body (lse.runtime.responses.request), chat chunks into
Responses events and items (lse.runtime.responses.items), error params
renamed back, and the bounded store (lse.runtime.responses.store)."""

from __future__ import annotations

import pytest

from lse.runtime.errors import LseError
from lse.runtime.responses.items import ResponseBuilder, conversation_turn, fold, usage
from lse.runtime.responses.request import rename_error, translate
from lse.runtime.responses.store import ResponseStore, StoreOptions


def no_previous(rid):
    raise AssertionError(f"looked up {rid}")


def chat_of(body, previous=no_previous):
    return translate(body, previous).chat


# ---- requests: Responses -> chat ----------------------------------------------------

def test_string_input_and_instructions():
    t = translate({"input": "Hi", "instructions": "Be brief", "model": "m", "max_output_tokens": 7,
                   "temperature": 0.5, "top_p": 0.9, "stream": True, "seed": 3}, no_previous)
    assert t.chat == {"model": "m", "temperature": 0.5, "top_p": 0.9, "stream": True, "seed": 3,
                      "messages": [{"role": "system", "content": "Be brief"}, {"role": "user", "content": "Hi"}],
                      "max_completion_tokens": 7}
    assert t.conversation == [{"role": "user", "content": "Hi"}]  # instructions are not carried over
    assert t.store is True and t.stream is True


def test_items_become_messages_and_tool_turns():
    items = [
        {"role": "developer", "content": "rules"},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "a"},
                                                         {"type": "input_text", "text": "b"}]},
        {"type": "reasoning", "id": "rs_1", "summary": [], "content": [{"type": "reasoning_text", "text": "hm"}]},
        {"type": "function_call", "call_id": "c1", "name": "f", "arguments": '{"x": 1}'},
        {"type": "function_call", "call_id": "c2", "name": "g", "arguments": ""},
        {"type": "function_call_output", "call_id": "c1", "output": "one"},
        {"type": "function_call_output", "call_id": "c2", "output": [{"type": "input_text", "text": "two"}]},
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "done"}]},
    ]
    assert chat_of({"input": items})["messages"] == [
        {"role": "system", "content": "rules"},
        {"role": "user", "content": "a\nb"},
        {"role": "assistant", "content": "", "reasoning_content": "hm", "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "f", "arguments": '{"x": 1}'}},
            {"id": "c2", "type": "function", "function": {"name": "g", "arguments": ""}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "one"},
        {"role": "tool", "tool_call_id": "c2", "content": "two"},
        {"role": "assistant", "content": "done"},
    ]


def test_a_message_and_the_calls_after_it_are_one_turn_as_a_stored_reply_replays():
    output = [{"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Let me look."}]},
              {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"}]
    replayed = chat_of({"input": [{"role": "user", "content": "hi"}, *output]})["messages"][1:]
    stored = conversation_turn([{**output[0], "id": "msg_1", "status": "completed"},
                                {**output[1], "id": "fc_1", "status": "completed"}])
    assert replayed == stored == [{"role": "assistant", "content": "Let me look.", "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]}]


def test_previous_response_id_prepends_its_conversation():
    before = [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello"}]
    t = translate({"input": "More", "previous_response_id": "resp_1", "instructions": "sys"},
                  lambda rid: before if rid == "resp_1" else no_previous(rid))
    assert t.chat["messages"] == [{"role": "system", "content": "sys"}, *before, {"role": "user", "content": "More"}]
    assert t.conversation == [*before, {"role": "user", "content": "More"}]
    assert t.echo["previous_response_id"] == "resp_1"


def test_tools_tool_choice_reasoning_and_text_format():
    tool = {"type": "function", "name": "get_weather", "description": "d", "strict": True,
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}
    chat = chat_of({"input": "x", "tools": [tool], "tool_choice": {"type": "function", "name": "get_weather"},
                    "parallel_tool_calls": False, "reasoning": {"effort": "low"},
                    "text": {"format": {"type": "json_schema", "name": "n", "schema": {"type": "object"},
                                        "strict": True}}})
    assert chat["tools"] == [{"type": "function", "function": {"name": "get_weather", "description": "d",
                                                               "parameters": tool["parameters"]}}]
    assert chat["tool_choice"] == {"type": "function", "function": {"name": "get_weather"}}
    assert chat["parallel_tool_calls"] is False
    assert chat["reasoning_effort"] == "low"
    assert chat["response_format"] == {"type": "json_schema", "json_schema": {"name": "n", "schema": {"type": "object"},
                                                                             "strict": True}}
    assert chat_of({"input": "x", "text": {"format": {"type": "json_object"}}})["response_format"] == {
        "type": "json_object"}
    assert chat_of({"input": "x", "tool_choice": "required"})["tool_choice"] == "required"


@pytest.mark.parametrize("body,param,fragment", [
    ({}, "input", "input is required"),
    ({"input": []}, "input", "non-empty"),
    ({"input": 3}, "input", "a string or"),
    ({"input": "x", "max_output_tokens": 0}, "max_output_tokens", "positive integer"),
    ({"input": "x", "max_output_tokens": True}, "max_output_tokens", "positive integer"),
    ({"input": "x", "tools": [{"type": "web_search"}]}, "tools[0].type", "'web_search' is not supported"),
    ({"input": "x", "tool_choice": {"type": "file_search"}}, "tool_choice.type", "'file_search' is not supported"),
    ({"input": [{"type": "item_reference", "id": "x"}]}, "input[0].type", "'item_reference' is not supported"),
    ({"input": [{"role": "user", "content": [{"type": "input_image", "image_url": "u"}]}]},
     "input[0].content[0].type", "'input_image' is not supported"),
    ({"input": [{"role": "robot", "content": "x"}]}, "input[0].role", "must be one of"),
    ({"input": [{"role": []}]}, "input[0].role", "must be one of"),
    ({"input": [{"type": "function_call", "name": "f", "arguments": "{}"}]}, "input[0].call_id", "non-empty"),
    ({"input": [{"type": "function_call", "call_id": "c", "name": "f", "arguments": "[1]"}]},
     "input[0].arguments", "JSON object"),
    ({"input": [{"type": "function_call_output", "call_id": "c", "output": 5}]}, "input[0].output", "a string"),
    ({"input": "x", "store": "yes"}, "store", "a boolean"),
    ({"input": "x", "background": True}, "background", "not supported"),
    ({"input": "x", "conversation": "conv_1"}, "conversation", "not supported"),
    ({"input": "x", "reasoning": "high"}, "reasoning", "an object"),
    ({"input": "x", "text": {"format": "json"}}, "text.format", "an object"),
    ({"input": "x", "previous_response_id": 5}, "previous_response_id", "a string"),
])
def test_refusals_name_the_responses_field(body, param, fragment):
    with pytest.raises(LseError) as e:
        translate(body, no_previous)
    assert (e.value.status, e.value.param) == (400, param)
    assert fragment in e.value.message


def test_a_bad_field_is_its_400_before_the_store_is_read():
    with pytest.raises(LseError) as e:
        translate({"input": "x", "previous_response_id": "resp_1", "max_output_tokens": -1}, no_previous)
    assert (e.value.status, e.value.param) == (400, "max_output_tokens")


def test_unknown_previous_response_is_the_lookups_error():
    def missing(rid):
        raise LseError("response_not_found", f"no {rid}", param="previous_response_id")

    with pytest.raises(LseError) as e:
        translate({"input": "x", "previous_response_id": "resp_gone"}, missing)
    assert (e.value.status, e.value.param, e.value.body()["error"]["code"]) == (
        404, "previous_response_id", "response_not_found")


@pytest.mark.parametrize("param,renamed", [
    ("max_completion_tokens", "max_output_tokens"), ("reasoning_effort", "reasoning.effort"),
    ("response_format", "text.format"), ("tools[1].function.parameters", "tools[1].parameters"),
    ("tool_choice.function.name", "tool_choice.name"), ("temperature", "temperature"), ("tool_choice", "tool_choice"),
])
def test_chat_errors_are_renamed_back(param, renamed):
    body = {"error": {"message": f"{param} is wrong", "type": "invalid_request_error", "param": param,
                      "code": "unsupported_reasoning_effort", "levels": ["a"]}}
    err = rename_error(body)["error"]
    assert err["param"] == renamed
    assert err["code"] == "unsupported_reasoning_effort" and err["levels"] == ["a"]
    assert err["message"] == f"{renamed} is wrong"


def test_the_operator_caps_error_names_max_output_tokens():
    # chat names the cap's error max_tokens whatever the spelling (lse-api.md); the message names the one sent
    body = {"error": {"message": "max_completion_tokens is 9, above this server's cap of 8 tokens (lse-server "
                                 "--max-tokens); send at most 8", "type": "invalid_request_error",
                      "param": "max_tokens", "code": None}}
    err = rename_error(body)["error"]
    assert err["param"] == "max_output_tokens"
    assert err["message"].startswith("max_output_tokens is 9") and "--max-tokens" in err["message"]


def test_a_messages_error_names_input_and_keeps_its_text():
    # The chat message indexes (instructions and history prepended) are not the input's, so the text stays.
    body = {"error": {"message": "messages[2].content is required", "type": "invalid_request_error",
                      "param": "messages", "code": None}}
    assert rename_error(body)["error"] == {**body["error"], "param": "input"}


# ---- replies: chat chunks -> Responses events ----------------------------------------

ECHO = translate({"input": "x", "model": "m"}, no_previous).echo


def chunk(delta=None, finish=None, stop=None, usage_=None):
    choice = {"index": 0, "delta": delta or {}, "logprobs": None, "finish_reason": finish}
    if stop is not None:
        choice["stop_reason"] = stop
    out = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "m", "choices": [choice]}
    if usage_ is not None:
        out["usage"] = usage_
    return out


CHAT_USAGE = {"prompt_tokens": 9, "completion_tokens": 6, "total_tokens": 15,
              "prompt_tokens_details": {"cached_tokens": 4}, "completion_tokens_details": {"reasoning_tokens": 3}}


def run(chunks, builder=None):
    b = builder or ResponseBuilder("resp_1", 1, ECHO)
    events = [e for c in chunks for e in b.feed(c)] + b.end()
    return b, events


def test_reasoning_text_and_tool_call_events_in_order():
    b, events = run([
        chunk({"role": "assistant", "content": ""}),
        chunk({"reasoning_content": "think"}), chunk({"reasoning_content": "ing"}),
        chunk({"content": "Hi"}),
        chunk({"tool_calls": [{"index": 0, "id": "call_a", "type": "function",
                               "function": {"name": "f", "arguments": ""}}]}),
        chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"a"'}}]}),
        chunk({"tool_calls": [{"index": 0, "function": {"arguments": ": 1}"}}]}),
        chunk(finish="tool_calls", stop="stop_token", usage_=CHAT_USAGE),
    ])
    assert [e["type"] for e in events] == [
        "response.created", "response.in_progress",
        "response.output_item.added", "response.content_part.added",
        "response.reasoning_text.delta", "response.reasoning_text.delta",
        "response.reasoning_text.done", "response.content_part.done", "response.output_item.done",
        "response.output_item.added", "response.content_part.added", "response.output_text.delta",
        "response.output_text.done", "response.content_part.done", "response.output_item.done",
        "response.output_item.added", "response.function_call_arguments.delta",
        "response.function_call_arguments.delta", "response.function_call_arguments.done",
        "response.output_item.done", "response.completed"]
    assert [e["sequence_number"] for e in events] == list(range(len(events)))
    final = events[-1]["response"]
    assert final["status"] == "completed" and final["incomplete_details"] is None
    assert final["output"] == fold(events)  # the reply is the fold of the stream
    reasoning, message, call = final["output"]
    assert reasoning["content"] == [{"type": "reasoning_text", "text": "thinking"}]
    assert message["content"][0]["text"] == "Hi" and message["status"] == "completed"
    assert (call["call_id"], call["name"], call["arguments"]) == ("call_a", "f", '{"a": 1}')
    assert final["usage"] == {"input_tokens": 9, "input_tokens_details": {"cached_tokens": 4, "cache_write_tokens": 0},
                              "output_tokens": 6, "output_tokens_details": {"reasoning_tokens": 3},
                              "total_tokens": 15}
    assert conversation_turn(final["output"]) == [{"role": "assistant", "content": "Hi", "reasoning_content": "thinking",
                                                   "tool_calls": [{"id": "call_a", "type": "function",
                                                                   "function": {"name": "f", "arguments": '{"a": 1}'}}]}]


def test_two_tool_calls_are_two_items():
    _, events = run([
        chunk({"tool_calls": [{"index": 0, "id": "c0", "function": {"name": "f", "arguments": "{}"}}]}),
        chunk({"tool_calls": [{"index": 1, "id": "c1", "function": {"name": "g", "arguments": "{}"}}]}),
        chunk(finish="tool_calls", stop="stop_token"),
    ])
    assert [(i["call_id"], i["name"]) for i in fold(events)] == [("c0", "f"), ("c1", "g")]
    assert [i["output_index"] for i in events if i["type"] == "response.output_item.added"] == [0, 1]


def test_length_is_incomplete_and_cancel_is_cancelled():
    _, events = run([chunk({"content": "abc"}), chunk(finish="length", stop="max_tokens")])
    last = events[-1]
    assert last["type"] == "response.incomplete"
    assert last["response"]["status"] == "incomplete"
    assert last["response"]["incomplete_details"] == {"reason": "max_output_tokens"}
    assert last["response"]["output"][0]["status"] == "incomplete"
    _, events = run([chunk({"content": "abc"}), chunk(finish=None, stop="cancelled")])
    assert (events[-1]["type"], events[-1]["response"]["status"]) == ("response.incomplete", "cancelled")


def test_failure_is_response_failed_with_the_code_in_the_message():
    b = ResponseBuilder("resp_1", 1, ECHO)
    b.feed(chunk({"content": "a"}))
    last = b.fail({"message": "boom", "code": "generation_failed"})[-1]
    assert last["type"] == "response.failed"
    assert last["response"]["error"] == {"code": "server_error", "message": "generation_failed: boom"}
    assert last["response"]["output"][0]["status"] == "incomplete"


def test_usage_defaults_reasoning_tokens_to_zero():
    assert usage({"prompt_tokens": 1, "completion_tokens": 2, "total_tokens": 3})["output_tokens_details"] == {
        "reasoning_tokens": 0}


# ---- the store ---------------------------------------------------------------------

class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def test_store_count_cap_evicts_the_oldest():
    store = ResponseStore(StoreOptions(max_entries=2, max_bytes=10**6, ttl_secs=0))
    for i in range(3):
        assert store.put(f"r{i}", {"id": f"r{i}"}, [])
    assert store.get("r0") is None and store.get("r1") is not None and store.get("r2") is not None
    assert store.status()["evicted"] == 1 and store.status()["entries"] == 2


def test_store_byte_cap_and_too_large():
    store = ResponseStore(StoreOptions(max_entries=10, max_bytes=60, ttl_secs=0))
    assert store.put("a", {"t": "x" * 10}, [])
    assert store.put("b", {"t": "y" * 10}, [])
    assert store.put("c", {"t": "z" * 10}, [])  # 3 x 20 bytes of JSON: fits exactly
    assert store.status()["bytes"] == 60
    assert store.put("d", {"t": "w" * 10}, [])
    assert store.get("a") is None and store.status()["bytes"] == 60
    assert not store.put("huge", {"t": "x" * 100}, [])
    assert store.status()["too_large"] == 1 and store.get("huge") is None


def test_store_ttl_and_delete():
    clock = Clock()
    store = ResponseStore(StoreOptions(max_entries=10, max_bytes=10**6, ttl_secs=5), clock=clock)
    store.put("a", {}, [])
    clock.now = 3
    store.put("b", {}, [])
    clock.now = 6
    assert store.get("a") is None and store.get("b") is not None
    assert store.status()["expired"] == 1
    assert store.delete("b") and not store.delete("b")
    assert store.status()["bytes"] == 0
