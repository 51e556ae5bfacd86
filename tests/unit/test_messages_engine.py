"""The Messages endpoint over a real engine (the host interpreter on the
scripted and thinking fixtures, no iree-compile, no server): replies and
stream events checked against the ``anthropic`` SDK's own types in strict
mode (nothing coerced, no declared key missing), the non-streamed reply as
the fold of the stream, every stop reason, count_tokens, the error envelope,
and the thinking budget enforced to the token."""

from __future__ import annotations

import copy
import json

import pytest
from anthropic.types import Message, MessageTokensCount, RawMessageStreamEvent
from anthropic.types.shared import ErrorResponse
from pydantic import TypeAdapter

from lse.runtime.api import lse_close, lse_open, lse_request, lse_request_json
from lse.fixtures.make_fixtures import fixture_dir, scripted_fixture_dir

HI = [{"role": "user", "content": "hi"}]
WEATHER = {"name": "get_weather", "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}}}


def strict(kind, value) -> None:
    TypeAdapter(kind).validate_python(value, strict=True)


def body(**extra) -> dict:
    return {"model": "claude-local", "max_tokens": 32, "messages": HI, **extra}


@pytest.fixture(scope="module")
def engines():
    opened: dict[str, object] = {}

    def get(name: str, kv_len: int = 2048):
        key = f"{name}/{kv_len}"
        if key not in opened:
            model = fixture_dir(name) if name == "qwen38_like" else scripted_fixture_dir(name)
            opened[key] = lse_open({"model": str(model), "kv_len": kv_len, "pool": ["cpu:0"]})
        return opened[key]

    yield get
    for engine in opened.values():
        lse_close(engine)


def run(engine, request: dict) -> tuple[int, dict]:
    return lse_request(engine, request, "messages").result()


def stream(engine, request: dict) -> list[dict]:
    events = list(lse_request(engine, {**request, "stream": True}, "messages").events())
    assert events[-1]["type"] == "done"
    return events


def without_id(message: dict) -> dict:
    out = copy.deepcopy(message)
    out.pop("id")
    for block in out["content"]:
        block.pop("id", None)
    return out


def test_a_reply_with_thinking_and_text_fits_the_sdk_type(engines):
    status, reply = run(engines("reasoning"), body())
    assert status == 200
    strict(Message, reply)
    assert reply["content"] == [{"type": "thinking", "thinking": "abc", "signature": ""},
                                {"type": "text", "text": "Done"}]
    assert reply["type"] == "message" and reply["role"] == "assistant" and reply["model"] == "claude-local"
    assert reply["id"].startswith("msg_") and reply["stop_reason"] == "end_turn" and reply["stop_sequence"] is None
    assert reply["usage"]["output_tokens"] == 5
    assert reply["lse_context"]["context_length"] == 2048


def test_the_stream_is_the_exact_event_sequence_and_folds_to_the_reply(engines):
    engine = engines("reasoning")
    events = stream(engine, body())
    data = [e["data"] for e in events[:-1]]
    for event in data:
        strict(RawMessageStreamEvent, event)
    assert [(d["type"], d.get("index"), (d.get("delta") or {}).get("type")) for d in data] == [
        ("message_start", None, None),
        ("content_block_start", 0, None), ("content_block_delta", 0, "thinking_delta"), ("content_block_stop", 0, None),
        ("content_block_start", 1, None), ("content_block_delta", 1, "text_delta"), ("content_block_stop", 1, None),
        ("message_delta", None, None), ("message_stop", None, None)]
    assert data[-2]["delta"] == {"stop_reason": "end_turn", "stop_sequence": None}
    done = events[-1]["data"]
    strict(Message, done)
    whole = run(engine, body())[1]
    # The same prompt again is served from the prefix cache: only the usage split differs.
    assert without_id({**done, "usage": None}) == without_id({**whole, "usage": None})
    total = lambda u: u["input_tokens"] + u["cache_read_input_tokens"]  # noqa: E731
    assert total(done["usage"]) == total(whole["usage"]) == data[0]["message"]["usage"]["input_tokens"]


def test_a_tool_call_is_a_tool_use_block(engines):
    engine = engines("tool_call")
    status, reply = run(engine, body(tools=[WEATHER]))
    assert status == 200
    strict(Message, reply)
    [block] = reply["content"]
    assert block["type"] == "tool_use" and block["name"] == "get_weather" and block["input"] == {"city": "Paris"}
    assert block["id"].startswith("toolu_") and reply["stop_reason"] == "tool_use"
    data = [e["data"] for e in stream(engine, body(tools=[WEATHER]))[:-1]]
    for event in data:
        strict(RawMessageStreamEvent, event)
    deltas = [d["delta"] for d in data if d["type"] == "content_block_delta"]
    assert deltas == [{"type": "input_json_delta", "partial_json": '{"city": "Paris"}'}]


def test_a_tool_result_round_trip_is_rendered_and_answered(engines):
    engine = engines("tool_call")
    first = run(engine, body(tools=[WEATHER]))[1]
    history = HI + [{"role": "assistant", "content": first["content"]},
                    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": first["content"][0]["id"],
                                                  "content": "sunny, 24 C"}]}]
    before = lse_request(engine, body(tools=[WEATHER]), "messages.count_tokens").result()[1]["input_tokens"]
    after = lse_request(engine, body(tools=[WEATHER], messages=history), "messages.count_tokens").result()
    assert after[0] == 200
    strict(MessageTokensCount, after[1])
    assert after[1]["input_tokens"] > before
    status, second = run(engine, body(tools=[WEATHER], messages=history))
    assert status == 200 and second["stop_reason"] == "tool_use"
    usage = second["usage"]
    assert usage["input_tokens"] + usage["cache_read_input_tokens"] == after[1]["input_tokens"]
    assert usage["cache_read_input_tokens"] > 0  # the first turn's prompt is reused


def test_a_stop_sequence_is_named(engines):
    status, reply = run(engines("stop"), body(stop_sequences=["world", "STOP"]))
    assert status == 200
    strict(Message, reply)
    assert reply["stop_reason"] == "stop_sequence" and reply["stop_sequence"] == "STOP"
    assert reply["content"] == [{"type": "text", "text": "Hello "}]


def test_max_tokens_and_a_full_context(engines):
    status, reply = run(engines("stop"), body(max_tokens=1))
    assert status == 200 and reply["stop_reason"] == "max_tokens" and reply["usage"]["output_tokens"] == 1
    prompt = lse_request(engines("stop"), body(), "messages.count_tokens").result()[1]["input_tokens"]
    status, reply = run(engines("stop", kv_len=prompt + 2), body())
    assert status == 200
    strict(Message, reply)
    assert reply["stop_reason"] == "model_context_window_exceeded" and reply["usage"]["output_tokens"] == 2
    assert reply["lse_context"]["tokens_remaining"] == 0


@pytest.mark.parametrize("request_body,status,etype,param", [
    ({"model": "m", "messages": HI}, 400, "invalid_request_error", "max_tokens"),
    (body(messages=[{"role": "user", "content": [{"type": "image", "source": {}}]}]), 400,
     "invalid_request_error", "messages[0].content[0].type"),
    (body(thinking={"type": "enabled", "budget_tokens": 4}), 400, "invalid_request_error", "thinking"),
])
def test_errors_come_in_anthropic_envelope(engines, request_body, status, etype, param):
    handle = lse_request(engines("reasoning"), request_body, "messages")
    got_status, error = handle.result()
    assert (got_status, error["error"]["type"], error["error"]["param"]) == (status, etype, param)
    strict(ErrorResponse, error)
    assert handle.rejection() == {"type": "error", "status": status, "data": error}


def test_a_prompt_that_fills_the_context_is_a_400_with_lse_context(engines):
    status, error = run(engines("reasoning", kv_len=16), body())
    assert status == 400
    strict(ErrorResponse, error)
    assert error["error"]["type"] == "invalid_request_error" and error["error"]["code"] == "context_full"
    assert error["error"]["lse_context"]["context_length"] == 16


def test_the_thinking_budget_closes_reasoning_at_n_tokens(engines):
    engine = engines("qwen38_like", kv_len=512)
    close = engine.context.tokenizer.encode("</think>", add_special_tokens=False).ids
    for budget in (3, 5):
        handle = lse_request(engine, body(max_tokens=12, temperature=0,
                                          thinking={"type": "enabled", "budget_tokens": budget}), "messages")
        status, reply = handle.result()
        assert status == 200
        strict(Message, reply)
        generated = handle._inner._request.seqs[0].generated
        assert generated[budget:budget + len(close)] == close, generated
        assert [b["type"] for b in reply["content"]] == ["thinking", "text"]
    # Without a budget the same reply goes on reasoning past those tokens.
    handle = lse_request(engine, body(max_tokens=12, temperature=0, thinking={"type": "adaptive"}), "messages")
    assert handle.result()[0] == 200
    generated = handle._inner._request.seqs[0].generated
    assert close[0] not in generated[:6], generated


def test_output_config_effort_is_a_thinking_level(engines):
    engine = engines("qwen38_like", kv_len=512)
    assert run(engine, body(max_tokens=4, output_config={"effort": "low"}))[0] == 200
    status, error = run(engine, body(max_tokens=4, output_config={"effort": "high"}))
    assert status == 400
    strict(ErrorResponse, error)
    assert (error["error"]["param"], error["error"]["code"]) == ("output_config.effort", "unsupported_reasoning_effort")
    assert error["error"]["levels"] == ["none", "xhigh", "medium", "low"]


def test_output_config_format_is_enforced(engines):
    engine = engines("qwen38_like", kv_len=512)
    schema = {"type": "string", "enum": ["yes", "no"]}
    status, reply = run(engine, body(max_tokens=20, temperature=0, thinking={"type": "disabled"},
                                     output_config={"format": {"type": "json_schema", "schema": schema}}))
    assert status == 200
    strict(Message, reply)
    assert reply["content"] == [{"type": "text", "text": '"no"'}] and reply["stop_reason"] == "end_turn"
    status, error = run(engine, body(output_config={"format": {"type": "json_schema",
                                                               "schema": {"type": "array", "uniqueItems": True}}}))
    assert status == 400 and error["error"]["param"] == "output_config.format"


def test_the_json_entry_point_takes_the_http_paths(engines):
    """lse_request_json (what the C API calls) serves both routes by their HTTP paths."""
    engine = engines("reasoning")
    data = json.dumps(body()).encode()
    status, reply = lse_request_json(engine, data, "/v1/messages").result()
    assert status == 200 and reply["content"][1] == {"type": "text", "text": "Done"}
    status, count = lse_request_json(engine, data, "/v1/messages/count_tokens").result()
    assert status == 200 and count["input_tokens"] == reply["usage"]["input_tokens"] + \
        reply["usage"]["cache_read_input_tokens"]
    status, error = lse_request_json(engine, b"{nope", "/v1/messages").result()
    assert status == 400 and error["type"] == "error" and error["error"]["code"] == "invalid_json"
    strict(ErrorResponse, error)
