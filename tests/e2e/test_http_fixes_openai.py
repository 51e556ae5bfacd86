"""Issue #44's HTTP fixes on a live ``lse-server``, through the official
``openai`` SDK and raw HTTP: the developer role, streamed usage counted once,
context_full in words clients match, HEAD /health, the key in api-key and
x-api-key, CORS preflights with the SDKs' headers, and /docs offline.

The fixture runs on the host interpreter (``--pool cpu:0``): these are
behaviours of the HTTP layer, not of a device."""

from __future__ import annotations

import httpx
import openai
import pytest

KEY = "e2e-http-secret"
KV_LEN = 256
ORIGIN = "https://app.example"
HELLO = [{"role": "user", "content": "Say hello."}]


@pytest.fixture(scope="module")
def server(lse_server, fixture_model):
    with lse_server(fixture_model("smollm_like"), "--pool", "cpu:0", "--api-key", KEY, "--kv-len", str(KV_LEN),
                    "--allowed-origins", ORIGIN) as (base_url, _process):
        yield base_url


@pytest.fixture
def client(server):
    with openai.OpenAI(base_url=f"{server}/v1", api_key=KEY, max_retries=0) as c:
        yield c


def test_developer_is_the_system_turn(client):
    def reply(messages):
        return client.chat.completions.create(model="m", messages=messages, max_tokens=8, temperature=0).choices[0]

    as_developer = reply([{"role": "developer", "content": "Be brief."}, *HELLO])
    as_system = reply([{"role": "system", "content": "Be brief."}, *HELLO])
    assert as_developer.message.content == as_system.message.content
    merged = reply([{"role": "system", "content": "Be brief."}, {"role": "developer", "content": "Be kind."},
                    *HELLO])
    one_system = reply([{"role": "system", "content": "Be brief.\n\nBe kind."}, *HELLO])
    assert merged.message.content == one_system.message.content


@pytest.mark.parametrize("include_usage", [True, False])
def test_streamed_usage_is_counted_once(client, include_usage):
    options = {"stream_options": {"include_usage": True}} if include_usage else {}
    chunks = list(client.chat.completions.create(model="m", messages=HELLO, max_tokens=6, temperature=0,
                                                 stream=True, **options))
    with_usage = [c for c in chunks if c.usage is not None]
    assert len(with_usage) == 1 and with_usage[0] is chunks[-1]
    assert chunks[-1].usage.completion_tokens == 6
    assert (chunks[-1].choices == []) is include_usage


def test_context_full_says_maximum_context_length(client):
    with pytest.raises(openai.BadRequestError) as info:
        client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hello " * KV_LEN * 2}])
    assert info.value.code == "context_full"
    assert f"this model's maximum context length is {KV_LEN} tokens" in str(info.value)


def test_health_head_docs_and_key_headers(server):
    with httpx.Client(base_url=server, timeout=30) as http:
        assert http.head("/health").status_code == 200
        docs = http.get("/docs")
        assert docs.status_code == 200 and "openapi.json" in docs.text and "://" not in docs.text
        for header in ("api-key", "x-api-key"):
            assert http.get("/v1/models", headers={header: KEY}).status_code == 200
            assert http.get("/v1/models", headers={header: "wrong"}).status_code == 401
        asked = "authorization, content-type, x-stainless-os, x-stainless-lang, x-stainless-retry-count"
        preflight = http.options("/v1/chat/completions", headers={
            "origin": ORIGIN, "access-control-request-method": "POST", "access-control-request-headers": asked})
        assert preflight.status_code == 200
        assert preflight.headers["access-control-allow-headers"] == asked
