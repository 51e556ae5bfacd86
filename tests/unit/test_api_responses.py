"""The Responses routes (lse.api.responses) over the fake engine: SSE framing
(event: and data: lines, no [DONE]), keep-alive comments while queued,
--request-timeout-secs inside a stream (response.failed) and outside it (408),
405 with Allow on /v1/responses/{id}, engine errors renamed to the Responses
fields, the HTTP layer's errors (invalid_json, 401, 413, 503) and the store's
byte cap over the routes."""

from __future__ import annotations

import asyncio
import json
import threading

import pytest
from api_fake_engine import BOOM, HANG, FakeEngine, FakeRuntime, assert_error, error_event, reply_events, run

from lse.api import responses
from lse.runtime.responses import service
from lse.runtime.responses.store import StoreOptions

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


def test_http_layer_errors_in_openais_envelope():
    """docs/api-responses.md's errors of the HTTP layer: invalid_json, 401 invalid_api_key, 413
    request_too_large (all param null), and a 408 request_timeout for a reply not streamed."""
    key = {"authorization": "Bearer k"}

    async def scenario(client, runtime, app):
        assert_error(await client.post("/v1/responses", content=b'{"input": [', headers=key), 400,
                     "invalid_request_error", "invalid_json")
        for headers in ({}, {"authorization": "Bearer wrong"}):
            for method, path in (("POST", "/v1/responses"), ("GET", "/v1/responses/resp_1"),
                                 ("DELETE", "/v1/responses/resp_1"), ("POST", "/v1/responses/resp_1/cancel")):
                r = await client.request(method, path, json={"input": "hi"}, headers=headers)
                assert_error(r, 401, "authentication_error", "invalid_api_key")
        too_large = await client.post("/v1/responses", json={"input": "x" * 300}, headers=key)
        assert_error(too_large, 413, "invalid_request_error", "request_too_large")
        timed_out = await client.post("/v1/responses", json={"input": "hi"}, headers=key)
        assert_error(timed_out, 408, "timeout_error", "request_timeout")
        assert runtime.handles[0].cancelled.is_set()
        assert len(runtime.requests) == 1  # only the last request reached the engine
    run(scenario, FakeRuntime(lambda body, endpoint: [HANG]), api_key="k", max_body_bytes=256,
        request_timeout_secs=0.1)


@pytest.mark.parametrize("kind,code", [("overloaded", "server_overloaded"), ("shutting_down", "server_shutting_down")])
def test_unavailable_is_a_503_as_on_chat(kind, code):
    """The engine refusing a request (a full queue, a draining server) is its 503, streamed or not; a full queue
    adds Retry-After."""
    refusal = error_event(kind, "busy")

    async def scenario(client, runtime, app):
        for stream in (False, True):
            r = await client.post("/v1/responses", json={"input": "hi", "stream": stream})
            assert_error(r, 503, "unavailable_error", code)
            assert r.headers["retry-after"] == "1"
        assert (await client.get("/v1/lse/status")).json()["responses_store"]["running"] == 0
    run(scenario, FakeRuntime(lambda body, endpoint: [refusal]))


def test_a_loading_model_is_a_503_on_every_route():
    release = threading.Event()

    def slow_open():
        release.wait(5)
        return FakeEngine()

    async def scenario(client, runtime, app):
        try:
            for method, path in (("POST", "/v1/responses"), ("GET", "/v1/responses/resp_1"),
                                 ("DELETE", "/v1/responses/resp_1"), ("POST", "/v1/responses/resp_1/cancel")):
                r = await client.request(method, path, json={"input": "hi"})
                assert_error(r, 503, "unavailable_error", "model_loading")
        finally:
            release.set()
    run(scenario, wait_ready=False, open_engine=slow_open)


def test_the_store_byte_cap_over_http():
    """--responses-store-bytes through the routes: past the cap the oldest response goes (GET and
    previous_response_id are then 404s), a response larger than the cap alone is not kept, and
    /v1/lse/status counts both."""
    async def one_entry(client, runtime, app):
        await client.post("/v1/responses", json={"input": "aa"})
        sizes.append((await client.get("/v1/lse/status")).json()["responses_store"]["bytes"])

    sizes: list[int] = []
    run(one_entry)
    cap = sizes[0] * 2 + sizes[0] // 2  # room for two entries of that size, not three

    async def scenario(client, runtime, app):
        ids = [(await client.post("/v1/responses", json={"input": text})).json()["id"] for text in ("aa", "bb", "cc")]
        store = (await client.get("/v1/lse/status")).json()["responses_store"]
        assert (store["entries"], store["bytes"], store["max_bytes"], store["evicted"]) == (2, 2 * sizes[0], cap, 1)
        assert_error(await client.get(f"/v1/responses/{ids[0]}"), 404, "invalid_request_error", "response_not_found")
        r = await client.post("/v1/responses", json={"input": "dd", "previous_response_id": ids[0]})
        assert_error(r, 404, "invalid_request_error", "response_not_found", "previous_response_id")
        assert (await client.get(f"/v1/responses/{ids[2]}")).status_code == 200
        huge = (await client.post("/v1/responses", json={"input": "x" * cap})).json()
        assert huge["status"] == "completed"  # answered, just not kept
        assert_error(await client.get(f"/v1/responses/{huge['id']}"), 404, "invalid_request_error",
                     "response_not_found")
        store = (await client.get("/v1/lse/status")).json()["responses_store"]
        assert (store["entries"], store["too_large"]) == (2, 1)
        assert (await client.get(f"/v1/responses/{ids[1]}")).status_code == 200  # the big one evicted nothing
    run(scenario, responses_store=StoreOptions(max_entries=100, max_bytes=cap, ttl_secs=0))
