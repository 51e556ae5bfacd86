"""The Messages routes' HTTP layer (lse.api.messages) over a fake engine:
Anthropic's SSE framing, pings while a stream waits, errors in Anthropic's
envelope from every layer (auth, body reader, loading engine, router
fallback, timeout, in-stream), and the API key as x-api-key."""

from __future__ import annotations

import asyncio
import json
import threading
from typing import Any

import pytest
from anthropic.types import RawMessageStreamEvent
from anthropic.types.shared import ErrorResponse
from pydantic import TypeAdapter

from lse.api import messages
from api_fake_engine import CHAT, HANG, FakeHandle, FakeRuntime, error_event, run

KEY = "k-123"
BODY = {"model": "m", "max_tokens": 8, "messages": [{"role": "user", "content": "hi"}]}
MESSAGE = {"id": "msg_1", "type": "message", "role": "assistant", "model": "m", "content": [],
           "stop_reason": None, "stop_sequence": None,
           "usage": {"input_tokens": 3, "output_tokens": 0, "cache_read_input_tokens": 0}}
STREAM = [
    {"type": "message_start", "message": MESSAGE},
    {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
    {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hi"}},
    {"type": "content_block_stop", "index": 0},
    {"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": None},
     "usage": {"input_tokens": 3, "output_tokens": 1, "cache_read_input_tokens": 0}},
    {"type": "message_stop"},
]
WHOLE = {**MESSAGE, "content": [{"type": "text", "text": "Hi"}], "stop_reason": "end_turn",
         "usage": {"input_tokens": 3, "output_tokens": 1, "cache_read_input_tokens": 0}}


class MessagesHandle(FakeHandle):
    """The Messages handle's shape: Anthropic events, ``stream`` from the body;
    ``pause`` seconds pass after message_start (a queued request)."""

    pause = 0.0

    def __init__(self, script: list[dict[str, Any]], stream: bool = True) -> None:
        super().__init__(script)
        self.stream = stream

    async def aevents(self):
        for i, step in enumerate(self.script):
            if step is HANG:
                while not self.cancelled.is_set():
                    await asyncio.sleep(0.005)
                return
            yield step
            if i == 0 and self.pause:
                await asyncio.sleep(self.pause)


def runtime_for(script: list[dict[str, Any]], pause: float = 0.0) -> FakeRuntime:
    runtime = FakeRuntime(lambda body, endpoint: script)

    def handle(steps: list[dict[str, Any]]) -> MessagesHandle:
        made = MessagesHandle(steps, stream=runtime.requests[-1][0].get("stream") is True)
        made.pause = pause
        return made

    runtime.handle_type = handle
    return runtime


def chunks(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{"type": "chunk", "data": e} for e in events]


def sse_events(text: str) -> list[dict[str, Any]]:
    """Each frame exactly ``event: <type>\\ndata: <json>\\n\\n``, the type repeated in the data."""
    assert text.endswith("\n\n"), text
    out = []
    for block in text[:-2].split("\n\n"):
        event_line, data_line = block.split("\n")
        data = json.loads(data_line.removeprefix("data: "))
        assert event_line == f"event: {data['type']}" and data_line.startswith("data: "), block
        out.append(data)
    return out


def anthropic_error(response, status: int, etype: str) -> dict[str, Any]:
    assert response.status_code == status, response.text
    body = response.json()
    TypeAdapter(ErrorResponse).validate_python(body, strict=True)
    assert body["type"] == "error" and body["error"]["type"] == etype, body
    return body["error"]


def test_a_stream_is_framed_as_anthropic_events():
    async def scenario(client, runtime, app):
        response = await client.post("/v1/messages", json={**BODY, "stream": True})
        assert response.status_code == 200 and response.headers["content-type"] == "text/event-stream"
        events = sse_events(response.text)
        assert events == STREAM
        for event in events:
            TypeAdapter(RawMessageStreamEvent).validate_python(event, strict=True)
        assert runtime.requests[-1] == ({**BODY, "stream": True}, "messages")

    run(scenario, runtime_for(chunks(STREAM) + [{"type": "done", "data": WHOLE}]))


def test_a_queued_stream_gets_pings_after_message_start(monkeypatch):
    monkeypatch.setattr(messages, "KEEPALIVE_SECS", 0.02)

    async def scenario(client, runtime, app):
        response = await client.post("/v1/messages", json={**BODY, "stream": True})
        kinds = [e["type"] for e in sse_events(response.text)]
        assert kinds[0] == "message_start" and kinds[1] == "ping", kinds
        assert [k for k in kinds if k != "ping"] == [e["type"] for e in STREAM]
        assert all(k != "ping" for k in kinds[kinds.index("content_block_start"):])

    run(scenario, runtime_for(chunks(STREAM) + [{"type": "done", "data": WHOLE}], pause=0.15))


def test_the_whole_reply_is_the_done_event():
    async def scenario(client, runtime, app):
        response = await client.post("/v1/messages", json=BODY)
        assert response.status_code == 200 and response.json() == WHOLE

    run(scenario, runtime_for(chunks(STREAM) + [{"type": "done", "data": WHOLE}]))


def test_an_error_in_the_stream_is_an_error_event_and_the_end():
    failure = {"type": "error", "status": 500,
               "data": {"type": "error", "error": {"type": "api_error", "message": "boom"}}}

    async def scenario(client, runtime, app):
        response = await client.post("/v1/messages", json={**BODY, "stream": True})
        events = sse_events(response.text)
        assert events[:2] == STREAM[:2] and events[-1] == failure["data"]

    run(scenario, runtime_for(chunks(STREAM[:2]) + [failure]))


def test_a_refusal_keeps_its_status_and_envelope():
    refusal = error_event("overloaded", "the queue is full")
    refusal["data"] = {"type": "error", "error": {"type": "overloaded_error", "message": "the queue is full"}}

    async def scenario(client, runtime, app):
        response = await client.post("/v1/messages", json={**BODY, "stream": True})
        anthropic_error(response, 503, "overloaded_error")
        assert response.headers["retry-after"] == "1"

    run(scenario, runtime_for([refusal]))


@pytest.mark.parametrize("headers,status", [
    ({}, 401), ({"x-api-key": "wrong"}, 401), ({"authorization": "Bearer wrong"}, 401),
    ({"x-api-key": KEY}, 200), ({"authorization": f"Bearer {KEY}"}, 200),
])
def test_the_key_is_accepted_as_x_api_key_or_bearer(headers, status):
    async def scenario(client, runtime, app):
        response = await client.post("/v1/messages", json=BODY, headers=headers)
        if status == 401:
            err = anthropic_error(response, 401, "authentication_error")
            assert err["code"] == "invalid_api_key"
        else:
            assert response.status_code == 200
        chat = await client.post("/v1/chat/completions", json=CHAT, headers=headers)
        assert chat.status_code == status  # one key, both spellings, on every route

    def script(body, endpoint):
        return chunks(STREAM) + [{"type": "done", "data": WHOLE}] if endpoint == "messages" else \
            FakeRuntime().script(body, endpoint)

    runtime = runtime_for([])
    runtime.script = script
    run(scenario, runtime, api_key=KEY)


def test_errors_of_the_http_layer_come_in_anthropic_envelope():
    async def scenario(client, runtime, app):
        anthropic_error(await client.post("/v1/messages", content=b"{nope"), 400, "invalid_request_error")
        too_large = await client.post("/v1/messages", json={**BODY, "pad": "x" * 300})
        assert anthropic_error(too_large, 413, "invalid_request_error")["code"] == "request_too_large"
        anthropic_error(await client.post("/v1/messages/nope", json=BODY), 404, "not_found_error")
        wrong_method = await client.get("/v1/messages")
        anthropic_error(wrong_method, 405, "invalid_request_error")
        assert wrong_method.headers["allow"] == "POST"
        # Other routes keep OpenAI's envelope.
        assert (await client.post("/v1/nope", json=BODY)).json()["error"]["type"] == "not_found_error"
        assert "type" not in (await client.post("/v1/nope", json=BODY)).json()

    run(scenario, runtime_for([]), max_body_bytes=256)


def test_a_loading_engine_is_overloaded_with_retry_after():
    release = threading.Event()

    def slow_open():
        release.wait(5)
        return object()

    async def scenario(client, runtime, app):
        try:
            response = await client.post("/v1/messages/count_tokens", json=BODY)
            assert anthropic_error(response, 503, "overloaded_error")["code"] == "model_loading"
            assert response.headers["retry-after"] == "1"
        finally:
            release.set()

    run(scenario, runtime_for([]), wait_ready=False, open_engine=slow_open)


def test_a_timeout_is_a_408_timeout_error():
    async def scenario(client, runtime, app):
        response = await client.post("/v1/messages", json=BODY)
        anthropic_error(response, 408, "timeout_error")
        assert runtime.handles[-1].cancelled.is_set()

    run(scenario, runtime_for([HANG]), request_timeout_secs=0.05)


def test_a_timeout_after_message_start_is_an_error_event():
    async def scenario(client, runtime, app):
        response = await client.post("/v1/messages", json={**BODY, "stream": True})
        events = [e for e in sse_events(response.text) if e["type"] != "ping"]
        assert events[0] == STREAM[0] and events[-1]["type"] == "error"
        assert events[-1]["error"]["type"] == "timeout_error" and len(events) == 2
        assert runtime.handles[-1].cancelled.is_set()

    run(scenario, runtime_for(chunks(STREAM[:1]) + [HANG]), request_timeout_secs=0.1)

