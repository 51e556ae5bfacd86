"""A live ``lse-server`` on a fixture model, driven by the official ``openai``
SDK (sync and async, streamed and not) and by raw HTTP for what the SDK hides:
SSE framing, headers, malformed bodies, routes and limits.
"""

from __future__ import annotations

import asyncio
import json
import os
import time

import httpx
import openai
import pytest

KEY = "e2e-secret"
SERVED = "lse-e2e"
CAP = 64  # --max-tokens
KV_LEN = 256  # --kv-len: small, so a long prompt fills it
BODY_LIMIT = 65_536  # --max-body-bytes
HELLO = [{"role": "user", "content": "Say hello."}]


@pytest.fixture(scope="module")
def server(lse_server, fixture_model):
    """One server for the module; the key comes from LSE_API_KEY, not the flag."""
    env = {k: v for k, v in os.environ.items() if k != "LSE_API_KEY"} | {"LSE_API_KEY": KEY}
    with lse_server(fixture_model("smollm_like"), "--served-model-name", SERVED, "--max-tokens", str(CAP),
                    "--kv-len", str(KV_LEN), "--max-body-bytes", str(BODY_LIMIT), env=env) as (base_url, _process):
        yield base_url


@pytest.fixture
def client(server):
    with openai.OpenAI(base_url=f"{server}/v1", api_key=KEY, max_retries=0) as c:
        yield c


@pytest.fixture
def http(server):
    with httpx.Client(base_url=server, headers={"authorization": f"Bearer {KEY}"}, timeout=120) as c:
        yield c


# ---- the SDK ------------------------------------------------------------------

def test_sync_chat_and_its_stream_agree(client):
    args = dict(model=SERVED, messages=HELLO, max_tokens=8, temperature=0)
    whole = client.chat.completions.create(**args)
    choice = whole.choices[0]
    assert whole.object == "chat.completion" and whole.id.startswith("chatcmpl-")
    assert choice.finish_reason in ("stop", "length") and isinstance(choice.message.content, str)
    assert whole.usage.total_tokens == whole.usage.prompt_tokens + whole.usage.completion_tokens

    chunks = list(client.chat.completions.create(**args, stream=True))
    assert chunks[0].choices[0].delta.role == "assistant"
    assert all(c.object == "chat.completion.chunk" for c in chunks)
    assert chunks[-1].choices[0].finish_reason == choice.finish_reason
    streamed = "".join(c.choices[0].delta.content or "" for c in chunks)
    assert streamed == choice.message.content  # the reply is the fold of the stream


def test_async_chat_streamed_and_not(server):
    async def main():
        async with openai.AsyncOpenAI(base_url=f"{server}/v1", api_key=KEY, max_retries=0) as c:
            args = dict(model=SERVED, messages=HELLO, max_tokens=6, temperature=0)
            whole = await c.chat.completions.create(**args)
            stream = await c.chat.completions.create(**args, stream=True)
            text = "".join([ch.choices[0].delta.content or "" async for ch in stream])
            return whole.choices[0].message.content, text

    whole, streamed = asyncio.run(main())
    assert streamed == whole


def test_completions_endpoint(client):
    whole = client.completions.create(model=SERVED, prompt="Once upon a time", max_tokens=5, temperature=0)
    assert whole.object == "text_completion" and isinstance(whole.choices[0].text, str)
    chunks = list(client.completions.create(model=SERVED, prompt="Once upon a time", max_tokens=5,
                                            temperature=0, stream=True))
    assert "".join(c.choices[0].text for c in chunks) == whole.choices[0].text


def test_models_list(client, http):
    models = client.models.list().data
    assert [(m.id, m.object, m.owned_by) for m in models] == [(SERVED, "model", "lse")]
    entry = http.get("/v1/models").json()["data"][0]
    assert entry["context_length"] == KV_LEN
    assert entry["thinking"]["supported"] is False
    assert set(entry["generation_defaults"]["sources"]) >= {"temperature", "top_p", "top_k"}


def test_native_model_info_and_status(http):
    info = http.get("/v1/lse/model_info")
    status = http.get("/v1/lse/status")
    assert info.status_code == 200 and info.json()["context_length"] == KV_LEN
    assert status.status_code == 200 and "cpu_fallback" in status.json()["engine"]


# ---- errors through the SDK -----------------------------------------------------

def test_wrong_key_is_authentication_error(server):
    with openai.OpenAI(base_url=f"{server}/v1", api_key="wrong", max_retries=0) as c:
        with pytest.raises(openai.AuthenticationError) as info:
            c.models.list()
    assert info.value.status_code == 401 and info.value.code == "invalid_api_key"


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("extra,code,param", [
    ({"max_tokens": CAP + 1}, None, "max_tokens"),
    ({"max_tokens": 0}, None, "max_tokens"),
    ({"extra_body": {"enable_thinking": True}}, "thinking_unsupported", None),
])
def test_invalid_requests_are_bad_request(client, stream, extra, code, param):
    with pytest.raises(openai.BadRequestError) as info:
        client.chat.completions.create(model=SERVED, messages=HELLO, stream=stream, **extra)
    assert info.value.status_code == 400
    assert info.value.type == "invalid_request_error"
    if code is not None:
        assert info.value.code == code
    if param is not None:
        assert info.value.param == param


def test_prompt_that_fills_the_context_is_context_full(client):
    long = [{"role": "user", "content": "hello " * (KV_LEN * 2)}]
    with pytest.raises(openai.BadRequestError) as info:
        client.chat.completions.create(model=SERVED, messages=long, max_tokens=4)
    assert (info.value.code, info.value.param) == ("context_full", "messages")
    assert info.value.body["lse_context"]["context_length"] == KV_LEN


# ---- raw HTTP -------------------------------------------------------------------

def test_sse_framing_and_headers(http):
    body = {"model": SERVED, "messages": HELLO, "max_tokens": 4, "temperature": 0, "stream": True}
    with http.stream("POST", "/v1/chat/completions", json=body) as response:
        raw = b"".join(response.iter_bytes()).decode()
    assert response.status_code == 200
    assert response.headers["content-type"] == "text/event-stream"
    assert response.headers["cache-control"] == "no-cache"
    assert raw.endswith("data: [DONE]\n\n") and raw.count("[DONE]") == 1
    frames = raw[:-2].split("\n\n")
    assert all(f.startswith("data: ") for f in frames), raw
    final = json.loads(frames[-2].removeprefix("data: "))
    assert final["choices"][0]["finish_reason"] in ("stop", "length")
    assert set(final["lse_context"]) == {"tokens_used", "context_length", "tokens_remaining"}


@pytest.mark.parametrize("method,path,content,status,code,allow", [
    ("POST", "/v1/chat/completions", b"{nope", 400, "invalid_json", None),
    ("POST", "/v1/completions", b"[1]", 400, None, None),
    ("POST", "/v1/chat/completions", b" " * (BODY_LIMIT + 1), 413, "request_too_large", None),
    ("GET", "/v1/chat/completions", None, 405, "method_not_allowed", "POST"),
    ("GET", "/v1/no/such/route", None, 404, "not_found", None),
])
def test_http_errors_use_the_envelope(http, method, path, content, status, code, allow):
    response = http.request(method, path, content=content, headers={"content-type": "application/json"})
    assert response.status_code == status
    assert response.headers["content-type"] == "application/json"
    err = response.json()["error"]
    assert err["code"] == code and isinstance(err["message"], str) and "type" in err and "param" in err
    assert response.headers.get("allow") == allow


def test_health_is_open_and_v1_is_not(server):
    health = httpx.get(f"{server}/health")
    assert (health.status_code, health.json()) == (200, {"status": "ok"})
    assert httpx.get(f"{server}/v1/models").status_code == 401


@pytest.mark.parametrize("stream", [True, False])
def test_client_disconnect_cancels_its_request(lse_server, lse_server_log, fixture_model, stream):
    """No cap and an 8192-token context: greedy, this reply runs ~8000 tokens
    to context_full (seconds; at the fixture's 2048 it ended inside the 0.5 s
    read timeout on a Zen 4 core), so the hang-up lands mid-generation and must cancel it."""
    with lse_server(fixture_model("smollm_like"), "--kv-len", "8192") as (base_url, process):
        body = {"messages": HELLO, "stream": stream, "temperature": 0}
        with httpx.Client(base_url=base_url, timeout=60) as http:
            try:
                with http.stream("POST", "/v1/chat/completions", json=body, timeout=0.5 if not stream else 60) as r:
                    next(r.iter_lines())  # one frame, then hang up
            except httpx.ReadTimeout:
                pass  # the non-streamed reply is not ready: hang up while it generates
            deadline = time.monotonic() + 10
            while "lse-server: client disconnected; request cancelled" not in lse_server_log(process):
                assert time.monotonic() < deadline, lse_server_log(process)
                time.sleep(0.05)
            while http.get("/v1/lse/status").json()["engine"]["active"]:
                assert time.monotonic() < deadline
                time.sleep(0.05)
            # greedy, as the reply above: sampled at the fixture's temperature 1 it may draw the end of turn
            reply = http.post("/v1/chat/completions", json={"messages": HELLO, "max_tokens": 2,
                                                            "temperature": 0}).json()
            assert reply["choices"][0]["finish_reason"] == "length"


def test_bad_model_dir_exits_1_with_the_reason(lse_server_exit, tmp_path):
    missing = tmp_path / "no-such-model"
    result = lse_server_exit(str(missing), "--port", "0")
    assert result.returncode == 1, result.stdout + result.stderr
    assert "lse-server: the engine failed to start:" in result.stderr
    assert str(missing) in result.stderr


@pytest.mark.parametrize("stream", [False, True])
def test_request_timeout_is_408_and_frees_the_slot(lse_server, fixture_model, stream):
    """A reply that runs ~8000 tokens (seconds) against a 0.3 s limit: 408 in
    the envelope (in the stream once headers went out), the slot is freed, and
    the next request is served."""
    with lse_server(fixture_model("smollm_like"), "--kv-len", "8192",
                    "--request-timeout-secs", "0.3") as (base_url, _process):
        body = {"messages": HELLO, "stream": stream, "temperature": 0}
        with httpx.Client(base_url=base_url, timeout=60) as http:
            r = http.post("/v1/chat/completions", json=body)
            if stream:
                assert r.status_code == 200
                frames = [line[6:] for line in r.text.splitlines() if line.startswith("data: ")]
                assert frames[-1] == "[DONE]"
                error = json.loads(frames[-2])["error"]
            else:
                assert r.status_code == 408
                error = r.json()["error"]
            assert (error["type"], error["code"]) == ("timeout_error", "request_timeout")
            deadline = time.monotonic() + 10
            while http.get("/v1/lse/status").json()["engine"]["active"]:
                assert time.monotonic() < deadline
                time.sleep(0.05)
            reply = http.post("/v1/chat/completions", json={"messages": HELLO, "max_tokens": 2})
            assert reply.status_code == 200
