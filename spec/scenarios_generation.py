"""Scenarios of generation: seeded properties, stop strings, token limits and
a context that fills."""

from __future__ import annotations

from typing import Any

from lse.spec.checks import choices_of, context_error, error_answer, output_of
from lse.spec.checks_behaviour import accepted_stream, longer_than, reply_fills_context, same_reply, stop_trims_reply
from lse.spec.checks_body import within_token_limit
from lse.spec.checks_limits import prompt_counted_once, seeded_choices_differ
from lse.spec.checks_stream import fold_equals_body, greedy_choices_independent, reply_outputs, seed_reproducible
from lse.spec.context import DROP, Context, Unobservable, per_endpoint, scenario
from lse.spec.facts import CHEAP_LIMIT
from lse.spec.rows import CHAT, PATHS

# "No limit of LSE's own": the lean doc's legacy default for /v1/completions.
LEGACY_DEFAULT = 16
NO_LIMIT_ROWS = ("limit.none", "override.completions_default")


def quiet(ctx: Context, endpoint: str) -> dict[str, Any]:
    """Fields that keep a chat reply out of <think> where the model allows it,
    so its text is content (stop strings and lengths are read from content)."""
    if endpoint == CHAT and "toggle" in ctx.facts.caps:
        return {"enable_thinking": False}
    return {}


def chat_text_observable(ctx: Context, endpoint: str) -> bool:
    return endpoint != CHAT or "thinking" not in ctx.facts.caps or "toggle" in ctx.facts.caps


@scenario()
def seeded_properties(ctx: Context) -> None:
    """Same seed, same reply; the non-streamed reply is the fold of the stream; greedy choices are independent."""
    for endpoint in ctx.facts.endpoints:
        request = ctx.base(endpoint, max_tokens=6, temperature=1.0, seed=1234)
        first = ctx.complete(endpoint, request)
        ctx.verify(seed_reproducible, first, ctx.complete(endpoint, request))
        _, folded = ctx.complete_stream(endpoint, request)
        ctx.verify(fold_equals_body, folded, first, endpoint)
        several = ctx.complete(endpoint, ctx.base(endpoint, max_tokens=6, temperature=0, n=3))
        single = ctx.complete(endpoint, ctx.base(endpoint, max_tokens=6, temperature=0))
        ctx.verify(greedy_choices_independent, several, single, 3)
        ctx.verify(prompt_counted_once, several, single)
        _seeded_choices(ctx, endpoint)


def _seeded_choices(ctx: Context, endpoint: str) -> None:
    """Sampled with a seed, n choices are independent draws: where the model's
    replies vary with the seed, a request's choices are not all one reply."""
    seen = []
    for seed in range(ctx.profile.tries):
        body = ctx.complete(endpoint, ctx.base(endpoint, max_tokens=6, temperature=1.0, seed=seed, n=3,
                                               **quiet(ctx, endpoint)))
        seen.append(([row[1:] for row in reply_outputs(body)], seed))
    firsts = {repr(choices[0]) for choices, _ in seen}
    if len(firsts) < 2:
        return  # the model answers the same whatever the seed: nothing to tell apart
    ctx.verify(seeded_choices_differ, seen)


def _stop_in(text: str) -> str | None:
    """A printable ASCII character of the reply to use as a stop string,
    preferring one after the start so the cut keeps some text."""
    picks = [c for c in text[1:] + text[:1] if c.isascii() and c.isprintable() and not c.isspace()]
    return picks[0] if picks else None


@scenario()
def stop_strings_cut(ctx: Context) -> None:
    """A stop string taken from a reply cuts the same seeded reply right before it."""
    per_endpoint(ctx, _stop_cut, [e for e in ctx.facts.endpoints if chat_text_observable(ctx, e)])


def _stop_cut(ctx: Context, endpoint: str) -> None:
    for seed in range(ctx.profile.tries):
        request = ctx.base(endpoint, max_tokens=8, temperature=1.0, seed=seed, **quiet(ctx, endpoint))
        full = ctx.complete(endpoint, request)
        stop = _stop_in(output_of(choices_of(full)[0]) or "")
        if stop is not None:
            ctx.verify(stop_trims_reply, ctx.complete(endpoint, request | {"stop": [stop]}), full, stop)
            return
    raise Unobservable(f"no reply on {endpoint} had a printable character to stop at")


@scenario()
def token_limit_order(ctx: Context) -> None:
    """max_completion_tokens bounds a reply; max_tokens wins beside it; null is not sent."""
    for endpoint in ctx.facts.endpoints:
        ctx.complete(endpoint, ctx.base(endpoint, max_tokens=DROP, max_completion_tokens=3))
        ctx.complete(endpoint, ctx.base(endpoint, max_tokens=2, max_completion_tokens=5))
        sent_null = ctx.complete(endpoint, ctx.base(endpoint, max_tokens=None, max_completion_tokens=3))
        left_out = ctx.complete(endpoint, ctx.base(endpoint, max_tokens=DROP, max_completion_tokens=3))
        ctx.verify(same_reply, sent_null, left_out, "max_tokens left out", rows=("limit.request",))


@scenario("cap")
def operator_cap(ctx: Context) -> None:
    """Above the operator's cap max_tokens is a 400; without a request limit the cap bounds the reply."""
    cap = ctx.facts.cap
    for endpoint in ctx.facts.endpoints:
        reply = ctx.client.post(PATHS[endpoint], ctx.base(endpoint, max_tokens=cap + 1))
        ctx.verify(error_answer, reply, 400, "invalid_request_error", None, "max_tokens", rows=("err.max_tokens_cap",))
        if cap <= CHEAP_LIMIT:
            ctx.complete(endpoint, ctx.base(endpoint, max_tokens=DROP, **quiet(ctx, endpoint)))


@scenario("max_new_tokens")
def model_max_new_tokens(ctx: Context) -> None:
    """Without a request limit or cap, generation_config.json max_new_tokens bounds the reply."""
    for endpoint in ctx.facts.endpoints:
        ctx.complete(endpoint, ctx.base(endpoint, max_tokens=DROP, temperature=1.0))


@scenario("max_length")
def model_max_length(ctx: Context) -> None:
    """max_length bounds prompt plus reply when the request names no limit, and not when it does."""
    max_length = ctx.facts.defaults["max_length"]
    for endpoint in ctx.facts.endpoints:
        body = ctx.complete(endpoint, ctx.base(endpoint, max_tokens=DROP, temperature=1.0))
        prompt = body["usage"]["prompt_tokens"]
        ask = max(1, max_length - prompt + 3)
        if prompt + ask < ctx.facts.context_length and (not ctx.facts.cap or ask <= ctx.facts.cap):
            request = ctx.base(endpoint, max_tokens=ask, temperature=1.0)
            body = ctx.complete(endpoint, request)
            ctx.verify(within_token_limit, body, request, ctx.facts, rows=("limit.max_length",))


def _tokens_so_far(chunks: list[dict[str, Any]]) -> int:
    """Chunks that carried text: each holds at least one token."""
    count = 0
    for chunk in chunks:
        for choice in choices_of(chunk):
            delta = choice.get("delta") or {}
            if choice.get("text") or delta.get("content") or delta.get("reasoning_content"):
                count += 1
    return count


@scenario("no_limit")
def no_limit_of_its_own(ctx: Context) -> None:
    """With no limit set anywhere a reply runs past 16 tokens (not the lean doc's default)."""
    if ctx.facts.context_length < 96:
        raise Unobservable("the context is too small to tell a 16-token limit from a full context")
    per_endpoint(ctx, _runs_long, ctx.facts.endpoints)


def _runs_long(ctx: Context, endpoint: str) -> None:
    """Stream until the reply passes 16 tokens (then cancel), or ends."""
    for seed in range(ctx.profile.tries):
        request = ctx.base(endpoint, max_tokens=DROP, temperature=1.0, seed=seed) | {"stream": True}
        stream = ctx.client.stream(PATHS[endpoint], request, stop_when=lambda c: _tokens_so_far(c) > LEGACY_DEFAULT)
        if stream.closed_early:
            ctx.verify(longer_than, _tokens_so_far(stream.chunks), LEGACY_DEFAULT, endpoint, rows=NO_LIMIT_ROWS)
            return
        final = stream.chunks[-1] if stream.chunks else {}
        if [c.get("stop_reason") for c in choices_of(final)] != ["stop_token"]:
            ctx.verify(longer_than, (final.get("usage") or {}).get("completion_tokens") or 0, LEGACY_DEFAULT, endpoint,
                       rows=NO_LIMIT_ROWS)
            return
    raise Unobservable(f"every reply on {endpoint} ended at an end-of-turn token within 16 tokens")


@scenario()
def max_tokens_beyond_context(ctx: Context) -> None:
    """max_tokens above the context is accepted (the reply would end at context_full)."""
    ask = ctx.facts.context_length + 1
    if ctx.facts.cap and ctx.facts.cap < ask:
        raise Unobservable("the operator's cap is below the context: the cap's 400 comes first")
    for endpoint in ctx.facts.endpoints:
        request = ctx.base(endpoint, max_tokens=ask) | {"stream": True}
        stream = ctx.client.stream(PATHS[endpoint], request, stop_when=lambda chunks: len(chunks) >= 1)
        ctx.verify(accepted_stream, stream.status, stream.chunks[0] if stream.chunks else None)


def filler(chars: int) -> str:
    """Deterministic text of short made-up words: no tokenizer merges it into few tokens."""
    letters = "etaoinshrdlucmfwypvbgkqjxz"
    words, state = [], 12345
    while sum(len(w) + 1 for w in words) < chars:
        state = (state * 1103515245 + 12345) % 2**31
        words.append("".join(letters[(state >> s) % 26] for s in range(0, 3 + state % 4 * 2, 2)))
    return " ".join(words)[:chars]


def _with_text(ctx: Context, endpoint: str, text: str, **fields: Any) -> dict[str, Any]:
    key = {"messages": [{"role": "user", "content": text}]} if endpoint == CHAT else {"prompt": text}
    return ctx.base(endpoint, **fields) | key


def _prompt_tokens(ctx: Context, endpoint: str, text: str) -> int:
    reply = ctx.client.post(PATHS[endpoint], _with_text(ctx, endpoint, text, max_tokens=1))
    if reply.status == 200:
        return reply.json["usage"]["prompt_tokens"]
    return ((reply.error.get("lse_context") or {}).get("tokens_used")) or ctx.facts.context_length


@scenario("small_context")
def context_fills(ctx: Context) -> None:
    """A prompt that fills the context is a 400 context_full; a reply that fills it ends at context_full."""
    per_endpoint(ctx, _fill_context, ctx.facts.endpoints)


def _fill_context(ctx: Context, endpoint: str) -> None:
    length = ctx.facts.context_length
    text = filler(length * 8)
    param = "messages" if endpoint == CHAT else "prompt"
    ctx.verify(context_error, ctx.client.post(PATHS[endpoint], _with_text(ctx, endpoint, text)), length, param)
    lo, hi = 1, len(text)
    while lo < hi:  # the longest prefix that leaves room for a reply
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if _prompt_tokens(ctx, endpoint, text[:mid]) < length else (lo, mid - 1)
    ask = min(length, ctx.facts.cap or length)
    for seed in range(ctx.profile.tries):
        body = ctx.complete(endpoint, _with_text(ctx, endpoint, text[:lo], max_tokens=ask, seed=seed))
        if choices_of(body)[0].get("stop_reason") == "context_full":
            ctx.verify(reply_fills_context, body, length)
            return
    raise Unobservable(f"every reply on {endpoint} ended at an end-of-turn token before the context filled")
