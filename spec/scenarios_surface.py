"""Scenarios of the server's surface: what it says about itself, auth, the
error envelope for malformed bodies and unknown routes, concurrency, and the
CPU fallback reports."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from lse.spec.checks import error_answer, error_envelope, request_accepted
from lse.spec.checks_body import completion_suite
from lse.spec.checks_behaviour import log_lines_match, warnings_match_status
from lse.spec.checks_http import docs_offline, health_head, key_header_accepted
from lse.spec.checks_limits import warnings_count_status
from lse.spec.checks_info import (
    auth_open, auth_refused, generation_defaults_shape, health_ok, model_info_matches, models_list,
    status_fallback, thinking_object, thinking_table,
)
from lse.spec.context import Context, Unobservable, scenario
from lse.spec.rows import BOTH, CHAT, PATHS, ThinkingModel
from lse.spec.table import all_rows

WRONG_KEY = "lse-spec-wrong-key"


@scenario(generates=False)
def self_description(ctx: Context) -> None:
    """/v1/models, its thinking and generation_defaults objects, /v1/lse/model_info, /v1/lse/status, /health."""
    models = ctx.client.get("/v1/models")
    ctx.verify(models_list, models)
    entry = models.json["data"][0]
    ctx.soft(thinking_object, entry.get("thinking"))
    for row in all_rows():
        if isinstance(row, ThinkingModel) and ctx.facts.has(row.needs):
            ctx.soft(thinking_table, entry.get("thinking") or {}, row)
    ctx.soft(generation_defaults_shape, entry.get("generation_defaults"))
    ctx.soft(model_info_matches, entry, ctx.client.get("/v1/lse/model_info"))
    ctx.soft(status_fallback, ctx.client.get("/v1/lse/status"))
    ctx.soft(health_ok, ctx.client.get("/health", key=False))
    ctx.soft(health_head, ctx.client.request("HEAD", "/health", key=False))
    ctx.soft(docs_offline, ctx.client.get("/docs", key=False))


def _v1_routes(ctx: Context) -> list[tuple[str, str, dict | None]]:
    gets = [("GET", "/v1/models", None), ("GET", "/v1/lse/model_info", None), ("GET", "/v1/lse/status", None),
            ("GET", f"/v1/models/{ctx.facts.model_id}", None), ("GET", "/tokenizer_info", None)]
    posts = [("POST", "/tokenize", {"content": "hi"}), ("POST", "/detokenize", {"tokens": [1]})]
    return gets + posts + [("POST", PATHS[e], ctx.base(e)) for e in ctx.facts.endpoints]


@scenario("auth", generates=False)
def key_required(ctx: Context) -> None:
    """With a key set, every /v1 route refuses a missing or wrong key; /health needs none."""
    for method, path, body in _v1_routes(ctx):
        for key in (False, WRONG_KEY):
            reply = ctx.client.request(method, path, body, key=key)
            ctx.soft(auth_refused, reply)
            ctx.soft(error_envelope, reply)
    # The right key under another scheme is no Bearer credential.
    for header in (f"Basic {ctx.client.api_key}", f"Token {ctx.client.api_key}", ctx.client.api_key or ""):
        ctx.soft(auth_refused, ctx.client.request("GET", "/v1/models", key=False, headers={"Authorization": header}))
    ctx.verify(health_ok, ctx.client.get("/health", key=False))
    # AzureOpenAI's and Anthropic's headers carry the key bare.
    for header in ("api-key", "x-api-key"):
        reply = ctx.client.request("GET", "/v1/models", key=False, headers={header: ctx.client.api_key or ""})
        ctx.soft(key_header_accepted, reply, header)
        wrong = ctx.client.request("GET", "/v1/models", key=False, headers={header: WRONG_KEY})
        ctx.soft(auth_refused, wrong)


@scenario("open")
def open_without_key(ctx: Context) -> None:
    """Without --api-key every /v1 route answers without a key."""
    for method, path, body in _v1_routes(ctx):
        ctx.soft(auth_open, ctx.client.request(method, path, body, key=False))


@scenario(generates=False)
def malformed_and_unknown(ctx: Context) -> None:
    """A malformed body is 400 invalid_json; an unknown route 404; a wrong method 405; all in the envelope."""
    for endpoint in BOTH:
        reply = ctx.client.request("POST", PATHS[endpoint], raw=b'{"messages": [')
        ctx.soft(error_answer, reply, 400, "invalid_request_error", "invalid_json", None, rows=("err.invalid_json",))
        ctx.soft(error_envelope, reply)
    reply = ctx.client.get("/v1/lse-spec-no-such-route")
    ctx.soft(error_answer, reply, 404, "not_found_error", "not_found", None, rows=("err.not_found",))
    ctx.soft(error_envelope, reply)
    reply = ctx.client.get(PATHS[CHAT])
    # docs/spec/lse-api.md names no status for a wrong method; the one error table
    # (style.md) gives 405 method_not_allowed, as HTTP itself does.
    ctx.soft(error_answer, reply, 405, "invalid_request_error", "method_not_allowed", None,
          rows=("surface.wrong_method",))
    ctx.soft(error_envelope, reply)


@scenario("no_template", generates=False)
def chat_without_template(ctx: Context) -> None:
    """A model without a chat template has no chat: /v1/chat/completions is a 400 naming messages."""
    reply = ctx.client.post(PATHS[CHAT], ctx.base(CHAT))
    ctx.verify(error_answer, reply, 400, "invalid_request_error", None, "messages", rows=("surface.no_template",))
    ctx.verify(error_envelope, reply)


@scenario()
def concurrent_requests(ctx: Context) -> None:
    """Several requests at once are all served, each reply whole."""
    served = ctx.facts.endpoints
    endpoints = [served[i % len(served)] for i in range(ctx.profile.concurrency)]
    requests = [ctx.base(endpoint, seed=100 + i) for i, endpoint in enumerate(endpoints)]
    with ThreadPoolExecutor(max_workers=len(requests)) as pool:
        replies = list(pool.map(lambda pair: ctx.client.post(PATHS[pair[0]], pair[1]), zip(endpoints, requests)))
    for endpoint, request, reply in zip(endpoints, requests, replies):
        ctx.verify(request_accepted, reply, rows=("gaps.concurrency",))
        ctx.verify_all(completion_suite(reply.json, request, ctx.facts, endpoint))


def _fallback_counts(ctx: Context) -> dict[str, int]:
    body = ctx.client.get("/v1/lse/status").json or {}
    events = ((body.get("engine") or {}).get("cpu_fallback") or {}).get("events") or []
    return {e["cause"]: e["count"] for e in events if isinstance(e, dict) and "cause" in e}


@scenario()
def fallback_warnings(ctx: Context) -> None:
    """A request's lse_warnings name exactly the fallback causes lse_status counted for it."""
    for endpoint in ctx.facts.endpoints:
        before = _fallback_counts(ctx)
        body = ctx.complete(endpoint, ctx.base(endpoint))
        after = _fallback_counts(ctx)
        ctx.verify(warnings_match_status, body, before, after)
        ctx.verify(warnings_count_status, body, before, after)
        # A stream carries them on its final chunk, which the fold keeps.
        before = _fallback_counts(ctx)
        _, folded = ctx.complete_stream(endpoint, ctx.base(endpoint))
        after = _fallback_counts(ctx)
        ctx.verify(warnings_match_status, folded, before, after)
        ctx.verify(warnings_count_status, folded, before, after)


@scenario("log", generates=False)
def fallback_log_lines(ctx: Context) -> None:
    """The server log has a CPU FALLBACK line at each power of two of each cause's count."""
    body = ctx.client.get("/v1/lse/status").json or {}
    events = ((body.get("engine") or {}).get("cpu_fallback") or {}).get("events") or []
    if not events:
        raise Unobservable("lse_status counts no CPU fallback, so no log line is due")
    text = Path(ctx.facts.server_log).read_text(errors="replace")
    ctx.verify(log_lines_match, text, events)
