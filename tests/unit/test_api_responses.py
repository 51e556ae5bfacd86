"""The Responses routes (lse.api.responses) over the fake engine: SSE framing
(event: and data: lines, no [DONE]), keep-alive comments while queued,
--request-timeout-secs inside a stream (response.failed), disconnects,
405 with Allow on /v1/responses/{id}, and engine errors renamed to the
Responses fields."""

from __future__ import annotations

import asyncio
import json

import pytest
from api_fake_engine import BOOM, HANG, FakeRuntime, assert_error, error_event, reply_events, run

from lse.api import responses
from lse.runtime.responses import service

BODY = {"input": "hi", "stream": True}


def frames(text: str) -> list[tuple[str, dict]]:
    """(event name, data) per frame; asserts each is exactly 'event: T\\ndata: {...}\\n\\n' with T the data's type."""
    assert text.endswith("\n\n"), text
    out = []
    for block in text[:-2].split("\n\n"):
        if block.startswith(":"):
            out.append((block, {}))
            continue
        event, data = block.split("\n")
        payload = json.loads(data.removeprefix("data: "))
        assert event == f"event: {payload['type']}"
        out.append((payload["type"], payload))
    return out


def test_stream_frames_and_the_reply_they_fold_into():
    async def scenario(client, runtime, app):
        response = await client.post("/v1/responses", json=BODY)
        assert response.status_code == 200
        assert response.headers["content-type"] == "text/event-stream"
        got = frames(response.text)
        assert [t for t, _ in got] == [
            "response.created", "response.in_progress", "response.output_item.added", "response.content_part.added",
            "response.output_text.delta", "response.output_text.delta", "response.output_text.done",
            "response.content_part.done", "response.output_item.done", "response.completed"]
        assert "[DONE]" not in response.text
        final = got[-1][1]["response"]
        assert final["output"][0]["content"][0]["text"] == "Hello"
        # what the chat engine was asked: the translated body
        assert runtime.requests[0] == ({"stream": True, "messages": [{"role": "user", "content": "hi"}]},
                                       "chat.completions")
        whole = (await client.post("/v1/responses", json={"input": "hi"})).json()
        assert whole["output"][0]["content"][0]["text"] == "Hello" and whole["status"] == "completed"
        assert (await client.get(f"/v1/responses/{whole['id']}")).json() == whole
    run(scenario, FakeRuntime(lambda body, endpoint: reply_events(["Hel", "lo"])))


def test_keepalive_while_queued_then_timeout_is_response_failed(monkeypatch):
    monkeypatch.setattr(responses, "KEEPALIVE_SECS", 0.01)

    async def scenario(client, runtime, app):
        response = await client.post("/v1/responses", json=BODY)
        got = frames(response.text)
        assert got[0][0] == ": queued"
        kinds = [t for t, _ in got if not t.startswith(":")]
        assert kinds == ["response.created", "response.in_progress", "response.failed"]
        failed = got[-1][1]["response"]
        assert failed["status"] == "failed" and failed["error"]["code"] == "server_error"
        assert failed["error"]["message"].startswith("request_timeout: ")
        assert [d["sequence_number"] for t, d in got if d] == [0, 1, 2]
        assert runtime.handles[0].cancelled.is_set()
    run(scenario, FakeRuntime(lambda body, endpoint: [HANG]), request_timeout_secs=0.1)


def test_engine_error_mid_stream_is_response_failed():
    event = error_event("generation_failed", "generation failed: boom")

    async def scenario(client, runtime, app):
        got = frames((await client.post("/v1/responses", json=BODY)).text)
        assert [t for t, _ in got][-3:] == ["response.content_part.done", "response.output_item.done",
                                            "response.failed"]
        assert got[-1][1]["response"]["error"] == {"code": "server_error",
                                                   "message": "generation_failed: generation failed: boom"}
        assert got[-2][1]["item"]["status"] == "incomplete"
    run(scenario, FakeRuntime(lambda body, endpoint: reply_events(["a"])[:2] + [event]))


def test_engine_exception_is_response_failed_and_cancels():
    async def scenario(client, runtime, app):
        got = frames((await client.post("/v1/responses", json=BODY)).text)
        assert got[-1][1]["response"]["error"]["message"].startswith("internal_error: ")
        assert runtime.handles[0].cancelled.is_set()
    run(scenario, FakeRuntime(lambda body, endpoint: reply_events(["a"])[:2] + [BOOM]))


def test_refusals_are_json_errors_named_as_sent():
    refused = error_event("unsupported_reasoning_effort", "reasoning_effort 'x' is not defined",
                          param="reasoning_effort")

    async def scenario(client, runtime, app):
        for stream in (False, True):
            r = await client.post("/v1/responses", json={"input": "hi", "reasoning": {"effort": "x"},
                                                         "stream": stream})
            err = assert_error(r, 400, "invalid_request_error", "unsupported_reasoning_effort", "reasoning.effort")
            assert err["message"] == "reasoning.effort 'x' is not defined"
        r = await client.post("/v1/responses", json={"input": "hi", "tools": [{"type": "mcp"}]})
        assert_error(r, 400, "invalid_request_error", None, "tools[0].type")
        assert len(runtime.requests) == 2  # the tool refusal never reached the engine
        assert_error(await client.get("/v1/responses/resp_nope"), 404, "invalid_request_error", "response_not_found")
        assert_error(await client.delete("/v1/responses/resp_nope"), 404, "invalid_request_error",
                     "response_not_found")
        assert_error(await client.post("/v1/responses/resp_nope/cancel"), 404, "invalid_request_error",
                     "response_not_found")
    run(scenario, FakeRuntime(lambda body, endpoint: [refused]))


@pytest.mark.parametrize("method,path,allow", [
    ("PUT", "/v1/responses/resp_1", "GET, DELETE"), ("GET", "/v1/responses/resp_1/cancel", "POST"),
    ("GET", "/v1/responses", "POST"),
])
def test_wrong_method_is_405_with_allow(method, path, allow):
    async def scenario(client, runtime, app):
        r = await client.request(method, path)
        assert_error(r, 405, "invalid_request_error", "method_not_allowed")
        assert r.headers["allow"] == allow
    run(scenario)


def test_cancel_of_a_running_response(monkeypatch):
    monkeypatch.setattr(service, "new_id", lambda prefix: f"{prefix}_fixed")

    async def scenario(client, runtime, app):
        task = asyncio.ensure_future(client.post("/v1/responses", json={"input": "hi"}))
        for _ in range(400):
            if (await client.get("/v1/lse/status")).json()["responses_store"]["running"] == 1:
                break
            await asyncio.sleep(0.005)
        running = (await client.get("/v1/responses/resp_fixed")).json()
        assert running["status"] == "in_progress"
        cancelled = (await client.post("/v1/responses/resp_fixed/cancel")).json()
        assert cancelled["status"] == "cancelled"
        reply = (await task).json()
        assert reply["id"] == "resp_fixed" and reply["status"] == "cancelled"
        assert runtime.handles[0].cancelled.is_set()
        assert (await client.get("/v1/responses/resp_fixed")).json() == reply
        again = (await client.post("/v1/responses/resp_fixed/cancel")).json()
        assert again == reply  # a finished response is answered as it is
    run(scenario, FakeRuntime(lambda body, endpoint: [HANG]))
