"""The HTTP layer (lse.api) over a fake engine: SSE framing, errors inside a
stream, --request-timeout-secs, and cancel on client disconnect."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

from lse.api import sse

import pytest
from api_fake_engine import BOOM, CHAT, HANG, FakeHandle, FakeRuntime, assert_error, error_event, reply_events, run, sse_frames


# ---- streaming --------------------------------------------------------------

def test_stream_frames_every_chunk_then_done():
    events = reply_events(["Hel", "lo", " wörld"])

    async def scenario(client, runtime, app):
        response = await client.post("/v1/chat/completions", json={**CHAT, "stream": True})
        assert response.status_code == 200
        assert response.headers["content-type"] == "text/event-stream"
        assert response.headers["cache-control"] == "no-cache"
        frames = sse_frames(response)
        assert frames[-1] == "[DONE]"
        assert [json.loads(f) for f in frames[:-1]] == [e["data"] for e in events[:-1]]
    run(scenario, FakeRuntime(lambda body, endpoint: events))


def test_stream_error_after_chunks_is_an_error_frame_then_done():
    event = error_event("cpu_fallback_disabled", "CPU fallback disabled: fused group 3 has no device kernel")
    events = reply_events(["a", "b"])[:3] + [event]

    async def scenario(client, runtime, app):
        response = await client.post("/v1/chat/completions", json={**CHAT, "stream": True})
        assert response.status_code == 200
        frames = sse_frames(response)
        assert [json.loads(f) for f in frames[:3]] == [e["data"] for e in events[:3]]
        assert json.loads(frames[3]) == event["data"]
        assert frames[4:] == ["[DONE]"]
        assert not runtime.handles[0].cancelled.is_set()  # it ended by itself
    run(scenario, FakeRuntime(lambda body, endpoint: events))


def test_stream_engine_exception_after_chunks_is_a_500_frame_and_cancels():
    async def scenario(client, runtime, app):
        response = await client.post("/v1/chat/completions", json={**CHAT, "stream": True})
        frames = sse_frames(response)
        assert json.loads(frames[0]) == reply_events(["a"])[0]["data"]
        assert json.loads(frames[1])["error"]["code"] == "internal_error"
        assert frames[2:] == ["[DONE]"]
        assert runtime.handles[0].cancelled.is_set()
        assert (await client.post("/v1/chat/completions", json=CHAT)).status_code == 200
    run(scenario, FakeRuntime(lambda body, endpoint: reply_events(["a"])[:1] + [BOOM]
                              if body.get("stream") else reply_events(["a"])))


# ---- timeout and disconnect -------------------------------------------------

def test_timeout_before_any_chunk_is_a_json_408_and_cancels():
    async def scenario(client, runtime, app):
        response = await client.post("/v1/chat/completions", json=CHAT)
        assert_error(response, 408, "timeout_error", "request_timeout")
        assert runtime.handles[0].cancelled.is_set()
    run(scenario, FakeRuntime(lambda body, endpoint: [HANG]), request_timeout_secs=0.05)


def test_timeout_of_an_admitted_stream_before_any_chunk_is_in_the_stream():
    # Headers go out at admission (api/sse.py), so the 408 comes in the stream.
    async def scenario(client, runtime, app):
        response = await client.post("/v1/chat/completions", json={**CHAT, "stream": True})
        assert response.status_code == 200
        frames = sse_frames(response)
        err = json.loads(frames[0])["error"]
        assert (err["type"], err["code"]) == ("timeout_error", "request_timeout")
        assert frames[1:] == ["[DONE]"]
        assert runtime.handles[0].cancelled.is_set()
    run(scenario, FakeRuntime(lambda body, endpoint: [HANG]), request_timeout_secs=0.05)


def slow_prepare(body, endpoint):
    """A reply that is complete when its handle reaches the HTTP layer, 0.1 s after the body."""
    time.sleep(0.1)
    return reply_events(["a"])


@pytest.mark.parametrize("stream", [False, True])
def test_timeout_counts_from_the_body_not_from_the_engine_handle(stream):
    # Before, the clock started at the handle, and a 1 ms server answered 200
    # to ~3% of its fastest requests.
    async def scenario(client, runtime, app):
        response = await client.post("/v1/chat/completions", json={**CHAT, "stream": stream})
        if not stream:
            assert_error(response, 408, "timeout_error", "request_timeout")
            return
        frames = sse_frames(response)
        err = json.loads(frames[0])["error"]
        assert (err["type"], err["code"]) == ("timeout_error", "request_timeout")
        assert frames[1:] == ["[DONE]"]
    run(scenario, FakeRuntime(slow_prepare), request_timeout_secs=0.05)


def test_reply_within_the_timeout_after_a_slow_prepare_is_200():
    async def scenario(client, runtime, app):
        assert (await client.post("/v1/chat/completions", json=CHAT)).status_code == 200
    run(scenario, FakeRuntime(slow_prepare), request_timeout_secs=5)


def test_queued_stream_gets_keepalive_comments_until_its_first_chunk(monkeypatch):
    monkeypatch.setattr(sse, "KEEPALIVE_SECS", 0.02)

    async def scenario(client, runtime, app):
        response = await client.post("/v1/chat/completions", json={**CHAT, "stream": True})
        assert response.status_code == 200
        blocks = response.text.split("\n\n")
        assert blocks[0] == ": queued", response.text
        data = [b for b in blocks if b and not b.startswith(":")]
        assert data[-1] == "data: [DONE]" and len(data) == len(reply_events(["a"]))

    async def slow_first(handle_events):
        await asyncio.sleep(0.1)
        for event in handle_events:
            yield event

    class SlowHandle(FakeHandle):
        def aevents(self):
            return slow_first(self.script)

    runtime = FakeRuntime(lambda body, endpoint: reply_events(["a"]))
    runtime.handle_type = SlowHandle
    run(scenario, runtime)


def test_timeout_streamed_sends_408_in_the_stream_then_done():
    async def scenario(client, runtime, app):
        response = await client.post("/v1/chat/completions", json={**CHAT, "stream": True})
        assert response.status_code == 200
        frames = sse_frames(response)
        assert json.loads(frames[0]) == reply_events([])[0]["data"]
        err = json.loads(frames[-2])["error"]
        assert (err["type"], err["code"]) == ("timeout_error", "request_timeout")
        assert frames[-1] == "[DONE]"
        assert runtime.handles[0].cancelled.is_set()
    run(scenario, FakeRuntime(lambda body, endpoint: reply_events([])[:1] + [HANG]), request_timeout_secs=0.05)


def test_zero_timeout_means_none():
    async def scenario(client, runtime, app):
        task = asyncio.ensure_future(client.post("/v1/chat/completions", json=CHAT))
        await asyncio.sleep(0.2)
        assert not task.done()
        runtime.handles[0].cancel()
        assert (await task).status_code == 200
    run(scenario, FakeRuntime(lambda body, endpoint: [HANG]), request_timeout_secs=0)


@pytest.mark.parametrize("stream", [False, True])
def test_client_disconnect_cancels_the_request_at_once(stream):
    """Drive ASGI by hand: the client sends its body, then goes away mid-generation."""
    body = json.dumps({**CHAT, "stream": stream}).encode()
    script = reply_events([])[:1] + [HANG]

    async def scenario(client, runtime, app):
        gone = asyncio.Event()
        sent: list[dict[str, Any]] = []
        messages = [{"type": "http.request", "body": body, "more_body": False}]

        async def receive():
            if messages:
                return messages.pop()
            await gone.wait()
            return {"type": "http.disconnect"}

        async def send(message):
            sent.append(message)

        scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST",
                 "scheme": "http", "path": "/v1/chat/completions", "raw_path": b"/v1/chat/completions",
                 "query_string": b"", "root_path": "", "headers": [(b"content-type", b"application/json")],
                 "server": ("lse.test", 80), "client": ("127.0.0.1", 1)}
        call = asyncio.ensure_future(app(scope, receive, send))
        while not runtime.handles:
            await asyncio.sleep(0.005)
        await asyncio.sleep(0.05)
        assert not runtime.handles[0].cancelled.is_set()
        gone.set()
        await asyncio.wait_for(call, 2)
        assert runtime.handles[0].cancelled.is_set()
        payload = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
        assert b"[DONE]" not in payload  # nobody is there to read an ending
    run(scenario, FakeRuntime(lambda body, endpoint: script))
