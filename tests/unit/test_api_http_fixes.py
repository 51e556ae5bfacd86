"""The HTTP surface details of issue #44 over the fake engine: HEAD /health,
/health while draining, the key in api-key / x-api-key, CORS preflights
carrying the SDKs' own headers, and the offline /docs page."""

from __future__ import annotations

import asyncio
import threading

import pytest
from api_fake_engine import CHAT, FakeRuntime, assert_error, run

from lse.spec import checks_http
from lse.spec.checks import CheckFailed
from lse.spec.client import Reply


@pytest.mark.parametrize("key", [None, "s3cret"])
def test_head_health_answers_like_get_and_needs_no_key(key):
    async def scenario(client, runtime, app):
        return await client.head("/health"), await client.get("/health")

    head, get = run(scenario, api_key=key)
    assert (head.status_code, get.status_code) == (200, 200)
    assert head.headers["content-type"] == get.headers["content-type"] == "application/json"


class DrainingRuntime(FakeRuntime):
    """lse_shutdown blocks until released, as the engine's drain does while replies finish."""

    def __init__(self) -> None:
        super().__init__()
        self.draining = threading.Event()
        self.release = threading.Event()

    def lse_shutdown(self, engine, timeout: float) -> None:
        self.draining.set()
        self.release.wait(5)
        super().lse_shutdown(engine, timeout)


def test_health_is_503_while_draining():
    async def scenario(client, runtime, app):
        assert (await client.get("/health")).status_code == 200
        drain = asyncio.ensure_future(app.lse_drain())
        while not runtime.draining.is_set():
            await asyncio.sleep(0.005)
        during = await client.get("/health")
        head = await client.head("/health")
        runtime.release.set()
        await drain
        after = await client.get("/health")
        return during, head, after

    during, head, after = run(scenario, DrainingRuntime())
    assert (during.status_code, during.json()) == (503, {"status": "shutting_down"})
    assert head.status_code == 503
    assert (after.status_code, after.json()) == (503, {"status": "shutting_down"})


@pytest.mark.parametrize("headers,status", [
    ({"api-key": "s3cret"}, 200),                   # AzureOpenAI
    ({"x-api-key": "s3cret"}, 200),                 # Anthropic's SDK
    ({"api-key": " s3cret "}, 200),                 # surrounding whitespace is not part of a header value
    ({"api-key": "wrong"}, 401),
    ({"x-api-key": "wrong", "authorization": "Bearer also-wrong"}, 401),
    ({"x-api-key": "wrong", "authorization": "Bearer s3cret"}, 200),
    ({"api-key": "Bearer s3cret"}, 401),            # these headers carry the key bare
    ({"x-api-key": ""}, 401),
    ({"api-key": "s3cret-extra"}, 401),
])
def test_the_key_in_api_key_and_x_api_key_headers(headers, status):
    async def scenario(client, runtime, app):
        models = await client.get("/v1/models", headers=headers)
        chat = await client.post("/v1/chat/completions", json=CHAT, headers=headers)
        return models, chat, runtime.requests

    models, chat, requests = run(scenario, api_key="s3cret")
    assert (models.status_code, chat.status_code) == (status, status), models.text
    if status == 401:
        assert_error(models, 401, "authentication_error", "invalid_api_key")
        assert requests == []


def test_cors_preflight_allows_the_headers_the_sdks_send():
    # What the openai JS SDK's preflight asks for in Chromium (its x-stainless-* headers).
    asked = ("authorization, content-type, x-stainless-arch, x-stainless-lang, x-stainless-os, "
             "x-stainless-package-version, x-stainless-retry-count, x-stainless-runtime, "
             "x-stainless-runtime-version, x-stainless-timeout")
    headers = {"origin": "https://app.example", "access-control-request-method": "POST",
               "access-control-request-headers": asked}

    async def scenario(client, runtime, app):
        return (await client.options("/v1/chat/completions", headers=headers),
                await client.options("/v1/models", headers={**headers, "access-control-request-method": "GET",
                                                            "access-control-request-headers": "api-key"}))

    chat, models = run(scenario, api_key="k", allowed_origins=("https://app.example",))
    assert chat.status_code == 200, chat.text
    assert chat.headers["access-control-allow-headers"] == asked
    assert chat.headers["access-control-allow-origin"] == "https://app.example"
    assert (models.status_code, models.headers["access-control-allow-headers"]) == (200, "api-key")


def test_cors_preflight_from_another_origin_is_still_refused():
    headers = {"origin": "https://evil.example", "access-control-request-method": "POST",
               "access-control-request-headers": "x-stainless-os"}

    async def scenario(client, runtime, app):
        return await client.options("/v1/chat/completions", headers=headers)

    refused = run(scenario, allowed_origins=("https://app.example",))
    assert refused.status_code == 400 and "access-control-allow-origin" not in refused.headers


@pytest.mark.parametrize("key", [None, "s3cret"])
def test_docs_is_an_offline_page_served_without_the_key(key):
    async def scenario(client, runtime, app):
        return await client.get("/docs")

    page = run(scenario, api_key=key)
    assert page.status_code == 200
    assert page.headers["content-type"] == "text/html; charset=utf-8"
    text = page.text
    assert "://" not in text and "<script" not in text and "<link" not in text  # nothing fetched from elsewhere
    assert 'href="openapi.json"' in text
    for route in ("POST /v1/chat/completions", "GET /v1/models/{model_id}", "HEAD /health"):
        assert f"<code>{route}</code>" in text, route


# ---- the spec kit's checks of these rows (spec/checks_http.py) over the same app ----

def kit_reply(response) -> Reply:
    return Reply(response.status_code, {k.lower(): v for k, v in response.headers.items()}, response.text,
                 response.json() if response.text and response.headers.get("content-type") == "application/json"
                 else None)


def test_the_kits_checks_pass_on_the_app():
    async def scenario(client, runtime, app):
        return {"head": await client.head("/health"), "docs": await client.get("/docs"),
                "api-key": await client.get("/v1/models", headers={"api-key": "s3cret"}),
                "x-api-key": await client.get("/v1/models", headers={"x-api-key": "s3cret"})}

    got = run(scenario, api_key="s3cret")
    checks_http.health_head(kit_reply(got["head"]))
    checks_http.docs_offline(kit_reply(got["docs"]))
    for header in ("api-key", "x-api-key"):
        checks_http.key_header_accepted(kit_reply(got[header]), header)


SWAGGER = ('<html><link rel="stylesheet" href="https://unpkg.com/swagger-ui-dist@5/swagger-ui.css">'
           '<script>SwaggerUIBundle({url: "openapi.json"})</script></html>')


@pytest.mark.parametrize("check,args", [
    (checks_http.health_head, (Reply(405, {}, "", None),)),
    (checks_http.health_head, (Reply(401, {}, "", None),)),
    (checks_http.key_header_accepted, (Reply(401, {}, "{}", {}), "api-key")),
    (checks_http.docs_offline, (Reply(200, {"content-type": "text/html"}, SWAGGER, None),)),
    (checks_http.docs_offline, (Reply(401, {"content-type": "application/json"}, "{}", {}),)),
])
def test_the_kits_checks_fail_off_the_spec(check, args):
    with pytest.raises(CheckFailed):
        check(*args)
