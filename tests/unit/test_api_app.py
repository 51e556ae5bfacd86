"""The HTTP layer (lse.api) over a fake engine: routes, loading, error
envelopes from the one table, body limits, auth."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Callable
from typing import Any

import pytest
from api_fake_engine import (CHAT, FakeEngine, FakeRuntime, FakeStartupError, assert_error, error_event,
                             reply_events, run, until_health)

from lse.runtime.errors import LseError


# ---- routes -----------------------------------------------------------------

@pytest.mark.parametrize("path,endpoint", [("/v1/chat/completions", "chat.completions"),
                                           ("/v1/completions", "completions")])
def test_completion_returns_the_done_object_and_passes_the_body_through(path, endpoint):
    async def scenario(client, runtime, app):
        response = await client.post(path, json=CHAT)
        assert response.status_code == 200
        assert response.headers["content-type"] == "application/json"
        assert response.json() == reply_events(["Hel", "lo"])[-1]["data"]
        assert runtime.requests == [(CHAT, endpoint)]
    run(scenario)


def test_models_model_info_and_status():
    async def scenario(client, runtime, app):
        body = (await client.get("/v1/models")).json()
        assert body["object"] == "list" and len(body["data"]) == 1
        entry, info = body["data"][0], FakeRuntime.MODEL_INFO
        assert (entry["id"], entry["object"], entry["owned_by"]) == ("fake-model", "model", "lse")
        assert isinstance(entry["created"], int) and entry["created"] > 1_600_000_000
        assert {k: entry[k] for k in ("context_length", "thinking", "generation_defaults")} == {
            k: info[k] for k in ("context_length", "thinking", "generation_defaults")}
        assert (await client.get("/v1/lse/model_info")).json() == info
        status = (await client.get("/v1/lse/status")).json()
        assert status.pop("responses_store") == {"entries": 0, "bytes": 0, "running": 0, "max_entries": 1000,
                                                 "max_bytes": 64 * 2**20, "ttl_secs": 3600.0, "evicted": 0,
                                                 "expired": 0, "too_large": 0}
        assert status == runtime.lse_status(None)
    run(scenario)


def test_one_model_by_id_is_the_list_entry_and_another_id_is_404():
    async def scenario(client, runtime, app):
        entry = (await client.get("/v1/models")).json()["data"][0]
        assert (await client.get("/v1/models/fake-model")).json() == entry
        err = assert_error(await client.get("/v1/models/other%2Fmodel"), 404, "invalid_request_error",
                           "model_not_found", "model")
        assert "'other/model'" in err["message"]
        response = await client.post("/v1/models/fake-model", json={})
        assert_error(response, 405, "invalid_request_error", "method_not_allowed")
        assert response.headers.get("allow") == "GET"
    run(scenario)


def test_tokenizer_routes():
    async def scenario(client, runtime, app):
        assert (await client.post("/tokenize", json={"content": "ab"})).json() == {"tokens": [97, 98]}
        assert (await client.post("/detokenize", json={"tokens": [97]})).json() == {"content": "a", "prompt": "a"}
        assert (await client.get("/tokenizer_info")).json()["eos_token"] == "<|im_end|>"
        assert_error(await client.post("/tokenize", json={"content": 5}), 400, "invalid_request_error", None,
                     "content")
        assert_error(await client.post("/tokenize", content=b"{x", headers={"content-type": "application/json"}),
                     400, "invalid_request_error", "invalid_json")
        assert_error(await client.get("/tokenize"), 405, "invalid_request_error", "method_not_allowed")
    run(scenario)


def test_loading_then_ready_and_engine_closed_on_stop():
    release = threading.Event()
    engine = FakeEngine()

    def slow_open():
        release.wait(5)
        return engine

    async def scenario(client, runtime, app):
        health = await client.get("/health")
        assert (health.status_code, health.json()) == (503, {"status": "loading"})
        for path in ("/v1/models", "/v1/lse/status", "/v1/lse/model_info"):
            assert_error(await client.get(path), 503, "unavailable_error", "model_loading")
        assert_error(await client.post("/v1/chat/completions", json=CHAT), 503, "unavailable_error", "model_loading")
        release.set()
        health = await until_health(client, 200)
        assert health.json() == {"status": "ok"}
        assert (await client.get("/v1/models")).status_code == 200
        await app.stop()
        assert engine.closed
    run(scenario, wait_ready=False, open_engine=slow_open)


def test_failed_start_is_reported_and_logged(caplog):
    failures = []

    def failing_open():
        raise FakeStartupError("no model at /nowhere")

    async def scenario(client, runtime, app):
        await until_health(client, 503)  # the first request starts the app, and so the engine's thread
        for _ in range(400):
            if failures:
                break
            await asyncio.sleep(0.005)
        health = await client.get("/health")
        assert (health.status_code, health.json()) == (503, {"status": "error"})
        assert_error(await client.get("/v1/models"), 503, "unavailable_error", "model_loading")

    with caplog.at_level("ERROR", logger="lse.api"):
        run(scenario, wait_ready=False, open_engine=failing_open, on_failed=failures.append)
    assert [str(f) for f in failures] == ["no model at /nowhere"]
    assert "lse-server: the engine failed to start: no model at /nowhere" in caplog.messages


# ---- errors -----------------------------------------------------------------

@pytest.mark.parametrize("method,path,status,etype,code,allow", [
    ("GET", "/nope", 404, "not_found_error", "not_found", None),
    ("GET", "/v1/nope", 404, "not_found_error", "not_found", None),
    ("POST", "/v1/models/", 404, "not_found_error", "not_found", None),
    ("GET", "/v1/chat/completions", 405, "invalid_request_error", "method_not_allowed", "POST"),
    ("PUT", "/v1/completions", 405, "invalid_request_error", "method_not_allowed", "POST"),
    ("POST", "/v1/models", 405, "invalid_request_error", "method_not_allowed", "GET"),
    ("DELETE", "/health", 405, "invalid_request_error", "method_not_allowed", "GET, HEAD"),
])
def test_unknown_route_and_wrong_method(method, path, status, etype, code, allow):
    async def scenario(client, runtime, app):
        response = await client.request(method, path)
        assert_error(response, status, etype, code)
        assert response.headers.get("allow") == allow
    run(scenario)


@pytest.mark.parametrize("raw,code,fragment", [
    (b"{not json", "invalid_json", "not valid JSON"),
    (b"", "invalid_json", "not valid JSON"),
    (b'{"max_tokens": NaN}', "invalid_json", "NaN"),
    (b"\xff\xfe{}", "invalid_json", "not valid JSON"),
    (b"[" * 100_000, "invalid_json", "not valid JSON"),
    (b"[1, 2]", None, "must be a JSON object, not an array"),
    (b'"hi"', None, "must be a JSON object, not a string"),
    (b"null", None, "must be a JSON object, not null"),
])
def test_malformed_bodies_are_400(raw, code, fragment):
    async def scenario(client, runtime, app):
        for path in ("/v1/chat/completions", "/v1/completions"):
            response = await client.post(path, content=raw, headers={"content-type": "application/json"})
            err = assert_error(response, 400, "invalid_request_error", code)
            assert fragment in err["message"]
        assert runtime.requests == []
    run(scenario)


def test_body_over_the_limit_is_413_declared_or_chunked():
    async def chunked():
        for _ in range(5):
            yield b" " * 300

    async def scenario(client, runtime, app):
        declared = await client.post("/v1/chat/completions", content=b" " * 1025)
        assert_error(declared, 413, "invalid_request_error", "request_too_large")
        streamed = await client.post("/v1/chat/completions", content=chunked())
        assert "content-length" not in streamed.request.headers
        assert_error(streamed, 413, "invalid_request_error", "request_too_large")
        at_limit = await client.post("/v1/chat/completions", content=json.dumps(CHAT).ljust(1024).encode())
        assert at_limit.status_code == 200
        assert len(runtime.requests) == 1
    run(scenario, max_body_bytes=1024)


CONTEXT_FULL = error_event("context_full", "the prompt is 600 tokens and the context holds 512", param="messages",
                           extra={"lse_context": {"tokens_used": 600, "context_length": 512, "tokens_remaining": 0}})
BAD_MAX_TOKENS = LseError("invalid_request", "max_tokens must be a positive integer", param="max_tokens")
QUEUE_FULL = LseError("overloaded", "the request queue is full (64 waiting)")
QUEUE_FULL_EVENT = error_event("overloaded", "the request queue is full (64 waiting)")


def raising(err: LseError) -> Callable[[dict[str, Any], str], list[dict[str, Any]]]:
    def script(body: dict[str, Any], endpoint: str) -> list[dict[str, Any]]:
        raise err
    return script


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("script,status,body,retry_after", [
    (lambda body, endpoint: [CONTEXT_FULL], 400, CONTEXT_FULL["data"], None),  # an error as the first event
    (raising(BAD_MAX_TOKENS), 400, BAD_MAX_TOKENS.body(), None),               # lse_request raises
    (raising(QUEUE_FULL), 503, QUEUE_FULL.body(), "1"),
    (lambda body, endpoint: [QUEUE_FULL_EVENT], 503, QUEUE_FULL_EVENT["data"], "1"),
], ids=["error-event", "raised", "overloaded-raised", "overloaded-event"])
def test_engine_refusal_is_a_json_reply_with_its_status_and_body(stream, script, status, body, retry_after):
    async def scenario(client, runtime, app):
        response = await client.post("/v1/chat/completions", json={**CHAT, "stream": stream})
        assert (response.status_code, response.json()) == (status, body)
        assert response.headers["content-type"] == "application/json"
        assert response.headers.get("retry-after") == retry_after
    run(scenario, FakeRuntime(script))


def test_unexpected_exception_is_500_logged_with_traceback_and_the_next_request_is_served(caplog):
    calls = []

    def script(body, endpoint):
        calls.append(body)
        if len(calls) == 1:
            raise RuntimeError("bug in the engine")
        return reply_events(["ok"])

    async def scenario(client, runtime, app):
        assert_error(await client.post("/v1/chat/completions", json=CHAT), 500, "server_error", "internal_error")
        assert (await client.post("/v1/chat/completions", json=CHAT)).status_code == 200
    run(scenario, FakeRuntime(script))
    logged = [r.exc_info[1] for r in caplog.records if r.exc_info]
    assert [str(e) for e in logged] == ["bug in the engine"]


def test_engine_error_after_chunks_non_streamed_returns_its_status():
    event = error_event("generation_failed", "device lost")

    async def scenario(client, runtime, app):
        response = await client.post("/v1/chat/completions", json=CHAT)
        assert (response.status_code, response.json()) == (500, event["data"])
    run(scenario, FakeRuntime(lambda body, endpoint: reply_events(["a"])[:2] + [event]))


# ---- auth -------------------------------------------------------------------

@pytest.mark.parametrize("method,path,authorization,status", [
    ("GET", "/v1/models", None, 401),
    ("GET", "/v1/models", "Bearer wrong", 401),
    ("GET", "/v1/models", "Bearer s3cret-extra", 401),
    ("GET", "/v1/models", "Basic s3cret", 401),
    ("GET", "/v1/models", "s3cret", 401),
    ("POST", "/v1/chat/completions", None, 401),
    ("GET", "/v1/lse/status", None, 401),
    ("GET", "/v1/models/fake-model", None, 401),
    ("GET", "/v1/models/fake-model", "Bearer s3cret", 200),
    ("POST", "/tokenize", None, 401),
    ("POST", "/detokenize", None, 401),
    ("GET", "/tokenizer_info", None, 401),
    ("GET", "/tokenizer_info", "Bearer s3cret", 200),
    ("GET", "/v1/nope", None, 401),
    ("GET", "/v1/models", "Bearer s3cret", 200),
    ("GET", "/v1/models", "bearer s3cret", 200),
    ("GET", "/v1/nope", "Bearer s3cret", 404),
    ("GET", "/health", None, 200),
    ("GET", "/nope", None, 401),
    ("GET", "/nope", "Bearer s3cret", 404),
    ("GET", "/", None, 200),  # the chat page: it holds no data and asks for the key itself
    ("GET", "/ui/app.js", None, 200),
    ("GET", "/ui/nope.js", None, 401),
])
def test_api_key(method, path, authorization, status):
    headers = {"authorization": authorization} if authorization else {}

    async def scenario(client, runtime, app):
        response = await client.request(method, path, headers=headers, json=CHAT if method == "POST" else None)
        assert response.status_code == status, response.text
        if status == 401:
            assert_error(response, 401, "authentication_error", "invalid_api_key")
            assert runtime.requests == []
    run(scenario, api_key="s3cret")


# Every spelling the router might resolve to a protected route: the key is
# checked on the route chosen, so none of them answers without it.
SPELLINGS = ["/V1/models", "/v1/MODELS", "/v1/models/", "//v1/models", "/v1//models", "/v1/%6Dodels",
             "/v1/../v1/models", "/v1/./models", "/%761/models", "/v1/models?x=1", "/v1/models%2F"]


@pytest.mark.parametrize("path", SPELLINGS)
@pytest.mark.parametrize("method", ["GET", "POST"])
def test_no_path_spelling_sidesteps_the_key(method, path):
    async def scenario(client, runtime, app):
        bare = await client.request(method, path, json=CHAT if method == "POST" else None)
        assert_error(bare, 401, "authentication_error", "invalid_api_key")
        keyed = await client.request(method, path, headers={"authorization": "Bearer s3cret"},
                                     json=CHAT if method == "POST" else None)
        assert keyed.status_code != 401, keyed.text
        assert runtime.requests == [] or keyed.status_code == 200
    run(scenario, api_key="s3cret")


@pytest.mark.parametrize("path", ["/V1/chat/completions", "/v1/Chat/Completions"])
def test_upper_case_chat_needs_the_key_and_reaches_the_engine_with_it(path):
    async def scenario(client, runtime, app):
        assert_error(await client.post(path, json=CHAT), 401, "authentication_error", "invalid_api_key")
        assert runtime.requests == []
        keyed = await client.post(path, json=CHAT, headers={"authorization": "Bearer s3cret"})
        assert keyed.status_code == 200 and runtime.requests == [(CHAT, "chat.completions")]
    run(scenario, api_key="s3cret")
