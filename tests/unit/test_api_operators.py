"""/metrics, /openapi.json and CORS on the in-process app (the fake engine)."""

from __future__ import annotations

from blacksheep import Router
from openapi_spec_validator import validate
from prometheus_client.parser import text_string_to_metric_families

from lse.api.openapi import openapi_path
from lse.runtime.errors import ERROR_TABLE
from lse.runtime.telemetry import RequestRecord

from api_fake_engine import CHAT, run

RECORD = RequestRecord(endpoint="chat.completions", outcome="stop", prompt_tokens=7, generated_tokens=5,
                       cached_tokens=3, queue_seconds=0.01, first_token_seconds=0.2,
                       per_output_token_seconds=0.05, e2e_seconds=0.4)


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample of a scrape, keyed by name and sorted labels."""
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def test_metrics_count_replies_and_engine_records() -> None:
    async def scenario(client, runtime, app):
        assert (await client.post("/v1/chat/completions", json=CHAT)).status_code == 200
        assert (await client.get("/nowhere")).status_code == 404
        for observer in runtime.observers:
            observer(RECORD)
        return await client.get("/metrics")

    response = run(scenario)
    assert response.status_code == 200 and response.headers["content-type"].startswith("text/plain")
    got = samples(response.text)
    chat = (("endpoint", "/v1/chat/completions"), ("method", "POST"), ("status", "200"))
    assert got[("lse_http_requests_total", chat)] == 1
    assert got[("lse_http_requests_total", (("endpoint", "other"), ("method", "GET"), ("status", "404")))] == 1
    assert got[("lse_prompt_tokens_total", (("endpoint", "chat.completions"),))] == 7
    assert got[("lse_generation_tokens_total", (("endpoint", "chat.completions"),))] == 5
    assert got[("lse_prefix_cache_hit_tokens_total", ())] == 3
    assert got[("lse_requests_finished_total", (("endpoint", "chat.completions"), ("outcome", "stop")))] == 1
    assert got[("lse_time_to_first_token_seconds_count", ())] == 1
    assert got[("lse_time_to_first_token_seconds_sum", ())] == 0.2
    assert got[("lse_cpu_fallback_runs_total", (("cause", "silu"),))] == 3
    assert got[("lse_kv_cache_tokens", ())] == 40 and got[("lse_slots", ())] == 2
    info = (("context_length", "512"), ("device", "fake:0"), ("model", "fake-model"), ("slots", "2"))
    assert got[("lse_engine_info", info)] == 1


def test_each_app_has_its_own_registry() -> None:
    async def scenario(client, runtime, app):
        await client.get("/health")
        return samples((await client.get("/metrics")).text)

    for _ in range(2):  # a second app in the same process starts from zero
        got = run(scenario)
        key = ("lse_http_requests_total", (("endpoint", "/health"), ("method", "GET"), ("status", "200")))
        assert got[key] >= 1 and got[key] < 50


def test_metrics_need_the_key_unless_public() -> None:
    async def scenario(client, runtime, app):
        return (await client.get("/metrics")).status_code, (await client.get("/openapi.json")).status_code

    assert run(scenario, api_key="k") == (401, 401)
    assert run(scenario, api_key="k", metrics_public=True) == (200, 401)


def test_openapi_is_valid_3_1_and_lists_exactly_the_router_routes() -> None:
    async def scenario(client, runtime, app):
        return (await client.get("/openapi.json")).json(), app.router

    for key in (None, "k"):
        doc, router = run(scenario, api_key=key, embeddings=True) if key is None else \
            run(_with_key(scenario), api_key=key, embeddings=True)
        validate(doc)  # OpenAPI 3.1 (openapi-spec-validator picks the version from the document)
        assert doc["openapi"] == "3.1.0"
        documented = {(m.upper(), p) for p, ops in doc["paths"].items() for m in ops}
        assert documented == _routes(router)
        statuses = {int(s) for ops in doc["paths"].values() for op in ops.values() for s in op["responses"]}
        # 405 belongs to no documented path (404 is /v1/models/{id}'s); its envelope is in components.
        unrouted = {405} | ({401} if key is None else set())
        assert {status for status, _, _ in ERROR_TABLE.values()} - statuses == unrouted, statuses
        assert {f"Error{status}" for status, _, _ in ERROR_TABLE.values()} <= set(doc["components"]["schemas"])


def test_openapi_leaves_embeddings_out_without_the_option() -> None:
    async def scenario(client, runtime, app):
        return (await client.get("/openapi.json")).json(), app.router

    doc, router = run(scenario)
    documented = {(m.upper(), p) for p, ops in doc["paths"].items() for m in ops}
    assert documented == _routes(router) - {("POST", "/v1/embeddings")}


def _with_key(scenario):
    async def keyed(client, runtime, app):
        client.headers["authorization"] = "Bearer k"
        return await scenario(client, runtime, app)
    return keyed


def _routes(router: Router) -> set[tuple[str, str]]:
    return {(method.decode() if isinstance(method, bytes) else method, openapi_path(route.pattern.decode()))
            for method, routes in router.routes.items() for route in routes}


def test_cors_off_by_default_and_preflight_answered_when_allowed() -> None:
    headers = {"origin": "https://app.example", "access-control-request-method": "POST",
               "access-control-request-headers": "authorization, content-type"}

    async def scenario(client, runtime, app):
        preflight = await client.options("/v1/chat/completions", headers=headers)
        simple = await client.get("/v1/models", headers={"origin": "https://app.example"})
        return preflight, simple

    preflight, simple = run(scenario, api_key="k", allowed_origins=("https://app.example",))
    assert preflight.status_code == 200  # answered before auth: browsers send no key on a preflight
    assert preflight.headers["access-control-allow-origin"] == "https://app.example"
    assert "POST" in preflight.headers["access-control-allow-methods"]
    assert simple.status_code == 401 and simple.headers["access-control-allow-origin"] == "https://app.example"
    preflight, simple = run(scenario)
    assert preflight.status_code == 405  # no CORS: OPTIONS is a method no route allows
    assert all("access-control-allow-origin" not in r.headers for r in (preflight, simple))
