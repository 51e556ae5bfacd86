"""A live ``lse-server`` driven by the official ``anthropic`` SDK, unchanged:
create, stream (the SDK's own accumulator and the raw events), count_tokens,
a tools round trip with tool_result, a three-turn tool-use loop, thinking
with a budget, auth as x-api-key and Bearer, and errors as the SDK's own
exceptions. Replies are also read strictly against the SDK's types.

The servers run on the host interpreter (``--pool cpu:0``): the scripted
fixtures answer one exact text, so every assertion is on exact content, and
the compiled path is the other e2e modules' to cover.
"""

from __future__ import annotations

import json
import os

import anthropic
import httpx
import pytest
from anthropic.types import Message, RawMessageStreamEvent
from anthropic.types.shared import ErrorResponse
from pydantic import TypeAdapter

KEY = "e2e-anthropic"
MODEL = "claude-local"
HI = [{"role": "user", "content": "Say hi."}]
WEATHER = {"name": "get_weather", "description": "The weather in a city",
           "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}


def env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k != "LSE_API_KEY"} | {"LSE_API_KEY": KEY}


@pytest.fixture(scope="module")
def reasoning_url(lse_server):
    from lse.fixtures.make_fixtures import scripted_fixture_dir

    with lse_server(scripted_fixture_dir("reasoning"), "--kv-len", "2048", "--pool", "cpu:0",
                    env=env()) as (url, _process):
        yield url


@pytest.fixture(scope="module")
def tool_url(lse_server):
    from lse.fixtures.make_fixtures import scripted_fixture_dir

    with lse_server(scripted_fixture_dir("tool_call"), "--kv-len", "2048", "--pool", "cpu:0",
                    env=env()) as (url, _process):
        yield url


def client(url: str, **kw) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=url, max_retries=0, **({"api_key": KEY} | kw))


def strict(kind, value) -> None:
    TypeAdapter(kind).validate_python(value, strict=True)


def test_create(reasoning_url):
    with client(reasoning_url) as c:
        message = c.messages.create(model=MODEL, max_tokens=32, messages=HI, system="Be brief.",
                                    metadata={"user_id": "u-1"})
        raw = c.messages.with_raw_response.create(model=MODEL, max_tokens=32, messages=HI).http_response.json()
    assert [b.type for b in message.content] == ["thinking", "text"]
    assert message.content[0].thinking == "abc" and message.content[1].text == "Done"
    assert message.stop_reason == "end_turn" and message.model == MODEL and message.usage.output_tokens == 5
    strict(Message, raw)
    assert raw["lse_context"]["context_length"] == 2048


def test_stream_folds_to_the_create_reply(reasoning_url):
    with client(reasoning_url) as c:
        whole = c.messages.create(model=MODEL, max_tokens=32, messages=HI)
        with c.messages.stream(model=MODEL, max_tokens=32, messages=HI) as stream:
            text = "".join(stream.text_stream)
            final = stream.get_final_message()
    assert text == "Done"
    assert [b.model_dump() for b in final.content] == [b.model_dump() for b in whole.content]
    assert (final.stop_reason, final.usage.output_tokens) == (whole.stop_reason, whole.usage.output_tokens)
    total = lambda u: u.input_tokens + (u.cache_read_input_tokens or 0)  # noqa: E731
    assert total(final.usage) == total(whole.usage)


def test_the_raw_stream_is_the_exact_event_sequence(reasoning_url):
    body = {"model": MODEL, "max_tokens": 32, "messages": HI, "stream": True}
    with httpx.stream("POST", f"{reasoning_url}/v1/messages", json=body, headers={"x-api-key": KEY},
                      timeout=60) as response:
        assert response.status_code == 200 and response.headers["content-type"] == "text/event-stream"
        text = response.read().decode()
    events = []
    for block in text.strip("\n").split("\n\n"):
        event_line, data_line = block.split("\n")
        data = json.loads(data_line.removeprefix("data: "))
        assert event_line == f"event: {data['type']}"
        if data["type"] != "ping":
            strict(RawMessageStreamEvent, data)
            events.append(data["type"])
    assert events == ["message_start", "content_block_start", "content_block_delta", "content_block_stop",
                      "content_block_start", "content_block_delta", "content_block_stop",
                      "message_delta", "message_stop"]


def test_count_tokens_is_the_prompt_the_reply_used(reasoning_url):
    with client(reasoning_url) as c:
        counted = c.messages.count_tokens(model=MODEL, messages=HI, system="Count me.")
        message = c.messages.create(model=MODEL, max_tokens=8, messages=HI, system="Count me.")
    assert counted.input_tokens == message.usage.input_tokens + (message.usage.cache_read_input_tokens or 0)
    assert counted.input_tokens > 0


def test_auth_as_x_api_key_or_bearer(reasoning_url):
    with client(reasoning_url, api_key=None, auth_token=KEY) as c:  # Authorization: Bearer
        assert c.messages.create(model=MODEL, max_tokens=8, messages=HI).stop_reason == "end_turn"
    with client(reasoning_url, api_key="wrong") as c, pytest.raises(anthropic.AuthenticationError) as info:
        c.messages.create(model=MODEL, max_tokens=8, messages=HI)
    assert info.value.status_code == 401
    strict(ErrorResponse, info.value.body)
    assert info.value.body["error"]["type"] == "authentication_error"


def test_errors_are_the_sdks_exceptions(reasoning_url):
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}}
    with client(reasoning_url) as c:
        with pytest.raises(anthropic.BadRequestError) as info:
            c.messages.create(model=MODEL, max_tokens=8,
                              messages=[{"role": "user", "content": [{"type": "text", "text": "What?"}, image]}])
        assert info.value.status_code == 400
        assert info.value.body["error"] == {
            "type": "invalid_request_error", "param": "messages[0].content[1].type",
            "message": "messages[0].content[1] is an image block; LSE models take text only"}
        with pytest.raises(anthropic.BadRequestError) as info:
            # This SDK's create() no longer names the sampling fields; clients send them as extra body.
            c.messages.create(model=MODEL, max_tokens=8, messages=HI, extra_body={"temperature": 1.5})
        assert info.value.body["error"]["param"] == "temperature"
        with pytest.raises(anthropic.NotFoundError) as info:
            c.post("/v1/messages/nope", body={}, cast_to=httpx.Response)
        assert info.value.body["error"]["type"] == "not_found_error"


def test_a_tools_round_trip_with_tool_result(tool_url):
    with client(tool_url) as c:
        first = c.messages.create(model=MODEL, max_tokens=64, messages=HI, tools=[WEATHER],
                                  tool_choice={"type": "auto"})
        [call] = first.content
        assert (call.type, call.name, call.input, first.stop_reason) == ("tool_use", "get_weather",
                                                                          {"city": "Paris"}, "tool_use")
        with c.messages.stream(model=MODEL, max_tokens=64, messages=HI, tools=[WEATHER]) as stream:
            streamed = stream.get_final_message()
        assert streamed.content[0].input == {"city": "Paris"} and streamed.stop_reason == "tool_use"
        history = HI + [{"role": "assistant", "content": first.content},
                        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call.id,
                                                      "content": [{"type": "text", "text": "sunny, 24 C"}]}]}]
        second = c.messages.create(model=MODEL, max_tokens=64, messages=history, tools=[WEATHER])
    assert second.stop_reason == "tool_use"
    assert second.usage.input_tokens + second.usage.cache_read_input_tokens > \
        first.usage.input_tokens + first.usage.cache_read_input_tokens


def test_a_three_turn_tool_use_loop(tool_url):
    messages: list[dict] = [{"role": "user", "content": "Weather in Paris, three times?"}]
    prompts = []
    with client(tool_url) as c:
        for turn in range(3):
            reply = c.messages.create(model=MODEL, max_tokens=64, messages=messages, tools=[WEATHER],
                                      tool_choice={"type": "any"})
            assert reply.stop_reason == "tool_use" and reply.content[-1].type == "tool_use"
            prompts.append(reply.usage.input_tokens + reply.usage.cache_read_input_tokens)
            if turn:
                assert reply.usage.cache_read_input_tokens > 0  # the earlier turns' prompt is reused
            messages += [{"role": "assistant", "content": reply.content},
                         {"role": "user", "content": [{"type": "tool_result", "tool_use_id": reply.content[-1].id,
                                                       "content": f"sunny, {20 + turn} C"}]}]
        assert c.messages.count_tokens(model=MODEL, messages=messages, tools=[WEATHER]).input_tokens > prompts[-1]
    assert prompts[0] < prompts[1] < prompts[2]


def test_thinking_with_a_budget_on_a_thinking_model(lse_server, fixture_model):
    with lse_server(fixture_model("qwen38_like"), "--kv-len", "512", "--pool", "cpu:0",
                    env=env()) as (url, _process):
        with client(url) as c:
            args = dict(model=MODEL, max_tokens=12, messages=HI, extra_body={"temperature": 0})
            budgeted = c.messages.create(**args, thinking={"type": "enabled", "budget_tokens": 3})
            with c.messages.stream(**args, thinking={"type": "enabled", "budget_tokens": 3}) as stream:
                streamed = stream.get_final_message()
            free = c.messages.create(**args, thinking={"type": "adaptive"})
            with pytest.raises(anthropic.BadRequestError) as info:
                c.messages.create(**args, thinking={"type": "enabled", "budget_tokens": 12})
    # The random fixture never closes its reasoning itself: with the budget the
    # reasoning is closed after 3 tokens and the answer follows; without, it
    # reasons until max_tokens.
    assert [b.type for b in budgeted.content] == ["thinking", "text"]
    assert [b.model_dump() for b in streamed.content] == [b.model_dump() for b in budgeted.content]
    assert [b.type for b in free.content] == ["thinking"]
    assert budgeted.usage.output_tokens == free.usage.output_tokens == 12
    assert budgeted.stop_reason == free.stop_reason == "max_tokens"
    assert info.value.body["error"]["param"] == "thinking.budget_tokens"
