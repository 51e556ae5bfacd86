"""Checks of one completion body's numbers: usage, token limits, lse_context,
logprobs, echo and scoring mode; and ``completion_suite``, every body check
that applies to a request."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from lse.spec.checks import (
    choices_indexed, choices_of, envelope_fields, expect, is_int, is_number, message_shape, model_echo, named,
    no_stop_string, output_of, positive, prompt_text, reasoning_omitted_when_empty, stop_reason_maps_finish,
    stop_strings, text_shape,
)
from lse.spec.facts import Facts
from lse.spec.rows import CHAT, COMPLETIONS

# A logprob is log(p) <= 0; float rounding in a softmax can leave a hair above.
LOGPROB_SLACK = 1e-3


def usage_of(body: dict[str, Any]) -> dict[str, Any]:
    usage = body.get("usage")
    return usage if isinstance(usage, dict) else {}


@named("resp.usage", "resp.usage.total_tokens", "resp.usage.cached_tokens")
def usage_sums(body: dict[str, Any], endpoint: str) -> tuple[str, ...]:
    """Nonnegative counts; total_tokens == prompt_tokens + completion_tokens."""
    usage = usage_of(body)
    counts = [usage.get(k) for k in ("prompt_tokens", "completion_tokens", "total_tokens")]
    expect(all(is_int(c) and c >= 0 for c in counts), usage, "nonnegative integer counts", "resp.usage")
    prompt, completion, total = counts
    expect(total == prompt + completion, f"<total_tokens {total}, prompt {prompt} + completion {completion}>",
           "total_tokens == prompt_tokens + completion_tokens", "resp.usage.total_tokens")
    details = usage.get("prompt_tokens_details")
    if endpoint == CHAT or details is not None:
        cached = (details or {}).get("cached_tokens")
        expect(is_int(cached) and 0 <= cached <= prompt, details,
               f"prompt_tokens_details.cached_tokens in 0..{prompt}", "resp.usage.cached_tokens")
        return ("resp.usage", "resp.usage.total_tokens", "resp.usage.cached_tokens")
    return ("resp.usage", "resp.usage.total_tokens")


def request_limit(request: dict[str, Any]) -> int | None:
    """docs/spec/lse-api.md item 1: max_tokens, else max_completion_tokens; null is not sent."""
    for name in ("max_tokens", "max_completion_tokens"):
        if is_int(request.get(name)):
            return request[name]
    return None


def effective_limit(request: dict[str, Any], facts: Facts, prompt_tokens: int) -> int | None:
    """The reply's token bound from docs/spec/lse-api.md § Output limits, items 1-4 and max_length."""
    limit = request_limit(request)
    if limit is not None:
        return limit
    bounds = [b for b in (facts.limit(),) if b is not None]
    max_length = facts.defaults.get("max_length")
    if is_int(max_length):
        bounds.append(max(0, max_length - prompt_tokens))
    return min(bounds) if bounds else None


@named("limit.request", "limit.cap", "limit.max_new_tokens", "limit.max_length", "stop.max_tokens",
       "req.max_tokens", "req.max_completion_tokens")
def within_token_limit(body: dict[str, Any], request: dict[str, Any], facts: Facts) -> tuple[str, ...]:
    """completion_tokens <= limit * n; a reply ended by max_tokens is exactly the limit long."""
    usage = usage_of(body)
    limit = effective_limit(request, facts, usage.get("prompt_tokens") or 0)
    if limit is None or limit == 0:
        return ()
    n = request.get("n") if positive(request.get("n")) else 1
    completion = usage.get("completion_tokens")
    row = _limit_row(request, facts)
    expect(is_int(completion) and completion <= limit * n, completion, f"at most {limit} x {n} tokens", row)
    ended = [c.get("stop_reason") for c in choices_of(body)]
    if n == 1 and ended == ["max_tokens"]:
        expect(completion == limit, completion, f"{limit} tokens: the reply ended at its limit", row)
        return (row, "stop.max_tokens")
    return (row,)


def _limit_row(request: dict[str, Any], facts: Facts) -> str:
    if request_limit(request) is not None:
        return "limit.request"
    if facts.cap:
        return "limit.cap"
    return "limit.max_new_tokens" if facts.defaults.get("max_new_tokens") is not None else "limit.max_length"


@named("resp.lse_context", "resp.lse_context.tokens_used", "resp.lse_context.context_length",
       "resp.lse_context.tokens_remaining", "limit.context", "context.every_response", "context.completions")
def lse_context_invariants(body: dict[str, Any], request: dict[str, Any], context_length: int) -> None:
    """tokens_used == prompt + reply, context_length as /v1/models, remaining == max(0, length - used)."""
    ctx = body.get("lse_context")
    expect(isinstance(ctx, dict), ctx, "lse_context on every completion response", "context.every_response")
    used, length, remaining = (ctx.get(k) for k in ("tokens_used", "context_length", "tokens_remaining"))
    expect(length == context_length, length, f"{context_length}, /v1/models context_length",
           "resp.lse_context.context_length")
    expect(is_int(used) and 0 <= used <= context_length, used, f"tokens_used in 0..{context_length}", "limit.context")
    expect(remaining == max(0, context_length - used), remaining, f"max(0, {context_length} - {used})",
           "resp.lse_context.tokens_remaining")
    usage = usage_of(body)
    n = request.get("n") if positive(request.get("n")) else 1
    if n == 1:
        want = (usage.get("prompt_tokens") or 0) + (usage.get("completion_tokens") or 0)
        expect(used == want, used, f"prompt_tokens + completion_tokens = {want}", "resp.lse_context.tokens_used")


@named("resp.timings")
def timings_object(body: dict[str, Any]) -> None:
    expect(isinstance(body.get("timings"), dict), body.get("timings"), "timings: an object")


@named("resp.lse_warnings", "fallback.warnings")
def lse_warnings_shape(body: dict[str, Any]) -> tuple[str, ...]:
    """lse_warnings, when present: [{type: cpu_fallback, cause, count >= 1}]."""
    if "lse_warnings" not in body:
        return ()
    warnings = body["lse_warnings"]
    ok = isinstance(warnings, list) and warnings and all(
        isinstance(w, dict) and w.get("type") == "cpu_fallback" and isinstance(w.get("cause"), str)
        and w["cause"] and is_int(w.get("count")) and w["count"] >= 1 for w in warnings)
    expect(bool(ok), warnings, "[{type: cpu_fallback, cause, count >= 1}, ...]")
    return ("resp.lse_warnings",)


def _wants_logprobs(request: dict[str, Any], endpoint: str) -> bool:
    value = request.get("logprobs")
    return value is True if endpoint == CHAT else is_int(value)


@named("resp.logprobs", "resp.logprobs.chat", "resp.logprobs.completions", "resp.echo.logprobs",
       "req.chat.logprobs", "req.chat.top_logprobs", "req.completions.logprobs")
def logprobs_shape(body: dict[str, Any], request: dict[str, Any], endpoint: str) -> tuple[str, ...]:
    """logprobs null unless asked; asked, one entry per token with the asked alternatives."""
    if not _wants_logprobs(request, endpoint):
        for choice in choices_of(body):
            expect(choice.get("logprobs") is None, choice.get("logprobs"), "null when not requested", "resp.logprobs")
        return ("resp.logprobs",)
    usage = usage_of(body)
    # Tokens trimmed with a stop string may or may not be counted; compare lengths only without stops.
    exact = len(choices_of(body)) == 1 and not stop_strings(request)
    for choice in choices_of(body):
        if endpoint == CHAT:
            _chat_logprobs(choice.get("logprobs"), request.get("top_logprobs") or 0,
                           usage.get("completion_tokens") if exact else None)
        else:
            _completion_logprobs(choice.get("logprobs"), request, usage if exact else None)
    if endpoint == CHAT:
        return ("resp.logprobs.chat", "req.chat.logprobs", "req.chat.top_logprobs")
    extra = ("resp.echo.logprobs",) if request.get("echo") is True else ()
    return ("resp.logprobs.completions", "req.completions.logprobs") + extra


def _chat_logprobs(lp: Any, top: int, tokens: int | None) -> None:
    row = "resp.logprobs.chat"
    content = lp.get("content") if isinstance(lp, dict) else None
    expect(isinstance(content, list), lp, "{content: [...]}", row)
    if tokens is not None:
        expect(len(content) == tokens, len(content), f"{tokens} entries, one per completion token", row)
    for entry in content:
        ok = (isinstance(entry, dict) and isinstance(entry.get("token"), str) and is_number(entry.get("logprob"))
              and entry["logprob"] <= LOGPROB_SLACK and isinstance(entry.get("top_logprobs"), list)
              and len(entry["top_logprobs"]) == top)
        expect(ok, entry, f"{{token, logprob <= 0, top_logprobs: {top} entries}}", row)


def _completion_logprobs(lp: Any, request: dict[str, Any], usage: dict[str, Any] | None) -> None:
    row = "resp.logprobs.completions"
    keys = ("tokens", "token_logprobs", "top_logprobs", "text_offset")
    expect(isinstance(lp, dict) and all(isinstance(lp.get(k), list) for k in keys), lp,
           "{tokens, token_logprobs, top_logprobs, text_offset}", row)
    lengths = {k: len(lp[k]) for k in keys}
    expect(len(set(lengths.values())) == 1, lengths, "equal lengths", row)
    echo = request.get("echo") is True
    if usage is not None:
        want = usage.get("completion_tokens", 0) + (usage.get("prompt_tokens", 0) if echo else 0)
        expect(lengths["tokens"] == want, lengths["tokens"], f"{want} tokens", row)
    k = request["logprobs"]
    for i, (value, top) in enumerate(zip(lp["token_logprobs"], lp["top_logprobs"])):
        if echo and i == 0:
            expect(value is None, value, "null: the first prompt token has no logprob", "resp.echo.logprobs")
            continue
        expect(is_number(value) and value <= LOGPROB_SLACK, value, "a logprob <= 0", row)
        # Keyed by token text, two alternatives can collapse into one entry
        # (every partial UTF-8 byte reads as U+FFFD), so fewer than k may show.
        expect(isinstance(top, dict) and len(top) <= k + 1 and (k == 0 or len(top) >= 1), top,
               f"1 to {k + 1} alternatives" if k else "0 or 1 alternatives", row)


@named("resp.echo", "req.completions.echo")
def echo_prefix(body: dict[str, Any], request: dict[str, Any]) -> tuple[str, ...]:
    """echo: true puts the prompt in front of the reply."""
    if request.get("echo") is not True:
        return ()
    prompt = prompt_text(request)
    for choice in choices_of(body):
        text = output_of(choice) or ""
        expect(text.startswith(prompt), text[: len(prompt) + 20], f"starts with the prompt {prompt!r}")
    return None


@named("resp.scoring", "req.completions.scoring_mode", "override.max_tokens_zero")
def scoring_mode(body: dict[str, Any], request: dict[str, Any]) -> tuple[str, ...]:
    """max_tokens 0 + echo + logprobs: prompt logprobs and nothing generated."""
    if request.get("max_tokens") != 0:
        return ()
    usage = usage_of(body)
    expect(usage.get("completion_tokens") == 0, usage.get("completion_tokens"), "0 tokens generated")
    for choice in choices_of(body):
        expect(choice.get("text") == prompt_text(request), choice.get("text"), "the prompt alone")
        tokens = (choice.get("logprobs") or {}).get("tokens")
        expect(isinstance(tokens, list) and len(tokens) == usage.get("prompt_tokens"),
               tokens, f"{usage.get('prompt_tokens')} prompt tokens scored")
    return None


def completion_suite(body: dict[str, Any], request: dict[str, Any], facts: Facts,
                     endpoint: str) -> list[tuple[Callable, tuple]]:
    """Every body check that applies to ``request`` on ``endpoint``, with its arguments."""
    shape = (message_shape, (body,)) if endpoint == CHAT else (text_shape, (body,))
    suite = [
        (envelope_fields, (body, endpoint)), (model_echo, (body, request, facts.model_id)),
        (choices_indexed, (body, request)), shape, (stop_reason_maps_finish, (body,)),
        (no_stop_string, (body, request)), (usage_sums, (body, endpoint)),
        (within_token_limit, (body, request, facts)),
        (lse_context_invariants, (body, request, facts.context_length)), (timings_object, (body,)),
        (lse_warnings_shape, (body,)), (logprobs_shape, (body, request, endpoint)),
    ]
    if endpoint == CHAT:
        suite.append((reasoning_omitted_when_empty, (body,)))
    if endpoint == COMPLETIONS:
        suite += [(echo_prefix, (body, request)), (scoring_mode, (body, request))]
    return suite
