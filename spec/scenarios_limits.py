"""Scenarios at the boundaries the documents draw, sent on any server: a
prompt of exactly context_length tokens and one less, a token limit equal to
the room left, a max_length the prompt reaches, the operator's cap and
max_new_tokens run to the end, the presence penalty's 64-token window, the
defaults against the model's files, and a missing kernel refused.

Exact sizes come from token-id prompts on /v1/completions (used as given,
so prompt_tokens is their length) and from banning the end-of-turn tokens
with logit_bias -100, so a reply runs to its limit."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from lse.spec.checks import choices_of, context_error, output_of
from lse.spec.checks_behaviour import longer_than
from lse.spec.checks_info import DEFAULT_FIELDS, NEUTRAL, health_ok
from lse.spec.checks_limits import (
    context_error_exact, defaults_match_files, exact_ban, exact_reply, expected_defaults, fallback_not_allowed,
    fallback_refused_answer, fallback_refused_stream, field_error, presence_window, timeout_answer,
)
from lse.spec.context import DROP, Context, Unobservable, scenario
from lse.spec.rows import CHAT, COMPLETIONS, PATHS
from lse.spec.scenarios_generation import filler

COMPLETIONS_PATH = PATHS[COMPLETIONS]
WINDOW = 64  # lse-api.md: "each distinct token seen in the last 64 tokens"


def _ids(ctx: Context, text: str) -> list[int]:
    reply = ctx.client.post("/tokenize", {"content": text, "add_special": False})
    tokens = (reply.json or {}).get("tokens") if isinstance(reply.json, dict) else None
    return [t for t in tokens or [] if isinstance(t, int) and t not in ctx.facts.eos_ids]


def _filler_id(ctx: Context) -> int:
    ids = _ids(ctx, " a")
    if not ids:
        raise Unobservable("/tokenize gave no token id to build prompts of exact size from")
    return ids[-1]


def _no_eos(ctx: Context) -> dict[str, Any]:
    return {"logit_bias": {str(i): -100 for i in ctx.facts.eos_ids}} if ctx.facts.eos_ids else {}


def _ids_request(ctx: Context, ids: list[int], **fields: Any) -> dict[str, Any]:
    return ctx.base(COMPLETIONS, prompt=ids, temperature=0, **(_no_eos(ctx) | fields))


@scenario()
def context_boundaries(ctx: Context) -> None:
    """A prompt of exactly context_length tokens is a 400 context_full with tokens_used its size; one
    token less leaves room for one token: context_full past it, max_tokens when the limit ends it there."""
    length, tok = ctx.facts.context_length, _filler_id(ctx)
    for size in (length, length + 3):
        reply = ctx.client.post(COMPLETIONS_PATH, _ids_request(ctx, [tok] * size, max_tokens=1))
        ctx.verify(context_error_exact, reply, length, "prompt", size,
                   rows=("err.context_full", "context.no_compaction", "resp.lse_context.tokens_remaining"))
    fits = [tok] * (length - 1)
    body = ctx.complete(COMPLETIONS, _ids_request(ctx, fits, max_tokens=2))
    ctx.verify(exact_reply, body, 1, "length", "context_full", length,
               rows=("context.reply_fills", "stop.context_full", "limit.context"))
    body = ctx.complete(COMPLETIONS, _ids_request(ctx, fits, max_tokens=1))
    ctx.verify(exact_reply, body, 1, "length", "max_tokens", length, rows=("stop.max_tokens", "limit.request"))
    if CHAT in ctx.facts.endpoints:
        reply = ctx.client.post(PATHS[CHAT], ctx.base(CHAT, messages=[{"role": "user", "content": filler(length * 8)}]))
        ctx.verify(context_error, reply, length, "messages")


@scenario("max_length")
def max_length_boundaries(ctx: Context) -> None:
    """max_length bounds prompt plus reply: a prompt of max_length tokens gets 0 reply tokens, one less
    gets 1; a request's own max_tokens is not bounded by it."""
    max_length, tok = ctx.facts.defaults["max_length"], _filler_id(ctx)
    if max_length + 4 >= ctx.facts.context_length:
        raise Unobservable("max_length is at the context: the context ends replies first")
    for size, tokens in ((max_length, 0), (max_length + 1, 0), (max_length - 1, 1)):
        body = ctx.complete(COMPLETIONS, _ids_request(ctx, [tok] * size, max_tokens=DROP))
        ctx.verify(exact_reply, body, tokens, "length", "max_tokens", size + tokens, rows=("limit.max_length",))
    body = ctx.complete(COMPLETIONS, _ids_request(ctx, [tok] * (max_length - 1), max_tokens=3))
    ctx.verify(exact_reply, body, 3, "length", "max_tokens", max_length + 2, rows=("limit.max_length", "limit.request"))


@scenario("cap")
def cap_boundaries(ctx: Context) -> None:
    """max_tokens equal to the cap is accepted; max_completion_tokens above it is a 400 naming max_tokens;
    with no request limit the reply runs to exactly the cap."""
    cap, tok = ctx.facts.cap, _filler_id(ctx)
    ctx.complete(COMPLETIONS, _ids_request(ctx, [tok] * 4, max_tokens=cap))
    reply = ctx.client.post(COMPLETIONS_PATH, _ids_request(ctx, [tok] * 4, max_tokens=DROP,
                                                           max_completion_tokens=cap + 1))
    ctx.verify(field_error, reply, "max_tokens", rows=("err.max_tokens_cap", "req.max_completion_tokens"))
    if cap + 8 < ctx.facts.context_length:
        body = ctx.complete(COMPLETIONS, _ids_request(ctx, [tok] * 4, max_tokens=DROP))
        ctx.verify(exact_reply, body, cap, "length", "max_tokens", cap + 4, rows=("limit.cap", "stop.max_tokens"))


@scenario("max_new_tokens")
def max_new_tokens_boundary(ctx: Context) -> None:
    """Without a request limit or cap, the reply runs to exactly max_new_tokens."""
    limit, tok = ctx.facts.defaults["max_new_tokens"], _filler_id(ctx)
    body = ctx.complete(COMPLETIONS, _ids_request(ctx, [tok] * 4, max_tokens=DROP))
    ctx.verify(exact_reply, body, limit, "length", "max_tokens", limit + 4,
               rows=("limit.max_new_tokens", "stop.max_tokens"))


def _next(ctx: Context, prompt: list[int], pair: tuple[int, int], presence: float) -> str | None:
    """The greedy next token's text with only ``pair`` allowed (logit_bias 100 on both)."""
    bias = {str(pair[0]): 100, str(pair[1]): 100}
    body = ctx.complete(COMPLETIONS, ctx.base(COMPLETIONS, prompt=prompt, temperature=0, max_tokens=1,
                                              presence_penalty=presence, logit_bias=bias))
    return output_of(choices_of(body)[0]) if choices_of(body) else None


def _logprob(ctx: Context, prompt: list[int], token: int) -> float:
    """The model's own logprob of ``token`` after ``prompt`` (logprobs report the unpenalised distribution)."""
    body = ctx.complete(COMPLETIONS, ctx.base(COMPLETIONS, prompt=prompt, temperature=0, max_tokens=1, logprobs=0,
                                              logit_bias={str(token): 100}))
    values = ((choices_of(body) or [{}])[0].get("logprobs") or {}).get("token_logprobs") or [None]
    return values[0] if isinstance(values[0], (int, float)) else float("nan")


def _text(ctx: Context, token: int) -> str | None:
    reply = ctx.client.post("/detokenize", {"tokens": [token]})
    return (reply.json or {}).get("content") if isinstance(reply.json, dict) else None


def _gap(ctx: Context, prompt: list[int], x: int, y: int) -> float:
    return _logprob(ctx, prompt, x) - _logprob(ctx, prompt, y)


@scenario()
def presence_penalty_window(ctx: Context) -> None:
    """With two tokens left (logit_bias 100 on both) whose logits differ by less than the penalty, the
    greedy pick flips when presence_penalty 2 hits the leader 64 tokens back, and not 65 back."""
    tok = _filler_id(ctx)
    candidates = [i for i in dict.fromkeys(_ids(ctx, " cat dog sun red blue tree one two house water"))
                  if i != tok][:6]
    pairs = [(x, y) for x in candidates for y in candidates if x != y][: 4 * ctx.profile.tries]
    for x, y in pairs:
        inside = [tok] * 7 + [x] + [tok] * (WINDOW - 1)  # x is the 64th token from the end
        outside = [tok] * 6 + [x] + [tok] * WINDOW  # x is the 65th
        if not all(0.05 < _gap(ctx, p, x, y) < 1.95 for p in (inside, outside)):
            continue
        texts = (_text(ctx, x), _text(ctx, y))
        if texts[0] == texts[1]:
            continue
        got = (_next(ctx, inside, (x, y), 2.0), _next(ctx, outside, (x, y), 2.0))
        ctx.verify(presence_window, got[0], got[1], texts[0], texts[1])
        return
    raise Unobservable("no pair of tokens had logits within the presence penalty of each other")


@scenario("model_files", generates=False)
def defaults_from_files(ctx: Context) -> None:
    """generation_defaults' values and sources are what the model's files set, in docs/spec/lse-api.md's order."""
    expected = expected_defaults(ctx.facts.model_dir, DEFAULT_FIELDS, NEUTRAL)
    rows = ["defaults.order", "defaults.sources", "override.defaults"]
    if any(src in ("generation_config.json", "config.json") for _, src in expected.values()):
        rows.append("defaults.from_files")
    ctx.verify(defaults_match_files, ctx.facts.defaults, expected, rows=tuple(rows))


@scenario("fallback_refused")
def fallback_refused(ctx: Context) -> None:
    """--no-cpu-fallback with an operation lacking a device kernel: 500 cpu_fallback_disabled, in the
    stream when streamed, allowed false, and the server keeps answering (the next request the same)."""
    for endpoint in ctx.facts.endpoints:
        ctx.verify(fallback_refused_answer, ctx.client.post(PATHS[endpoint], ctx.base(endpoint)))
        ctx.verify(fallback_refused_stream, ctx.client.stream(PATHS[endpoint], ctx.base(endpoint, stream=True)))
    ctx.verify(fallback_refused_answer, ctx.client.post(COMPLETIONS_PATH, ctx.base(COMPLETIONS)))
    ctx.verify(fallback_not_allowed, ctx.client.get("/v1/lse/status"))
    ctx.verify(health_ok, ctx.client.get("/health", key=False))


MAX_BIAS_VOCAB = 4096  # a logit_bias naming every token stays a small body up to this vocabulary


@scenario()
def logit_bias_exact_ban(ctx: Context) -> None:
    """-100 is an exact ban, not a large penalty: with every other token at -99 the greedy token, banned,
    is never sampled (a -100 penalty would leave it about a third of its odds). Each draw is told apart
    by its text and its unbiased logprob, which the reply reports."""
    info = ctx.client.get("/tokenizer_info").json or {}
    vocab = info.get("vocab_size") if isinstance(info, dict) else None
    if not isinstance(vocab, int) or vocab > MAX_BIAS_VOCAB:
        raise Unobservable("the vocabulary is too large to bias every token in one request")
    for prompt in ([t] * n for t in _ids(ctx, " a cat dog sun red blue tree one two house water") for n in (8, 3)):
        greedy = ctx.complete(COMPLETIONS, ctx.base(COMPLETIONS, prompt=prompt, temperature=0, max_tokens=1,
                                                    logprobs=0))
        lp = (choices_of(greedy)[0].get("logprobs") or {}) if choices_of(greedy) else {}
        banned = ((lp.get("tokens") or [None])[0], (lp.get("token_logprobs") or [None])[0])
        first = _ids(ctx, banned[0] or "")
        if len(first) == 1 and isinstance(banned[1], (int, float)) and _text(ctx, first[0]) == banned[0]:
            break
    else:
        raise Unobservable("no greedy token had a text of its own to recognise it by")
    bias = {str(i): -99 for i in range(vocab)} | {str(first[0]): -100}
    draws = []
    for seed in range(ctx.profile.tries * 2):
        body = ctx.complete(COMPLETIONS, ctx.base(COMPLETIONS, prompt=prompt, temperature=1.0, max_tokens=1, n=16,
                                                  seed=seed, logprobs=0, logit_bias=bias))
        for choice in choices_of(body):
            got = choice.get("logprobs") or {}
            draws.append(((got.get("tokens") or [None])[0], (got.get("token_logprobs") or [None])[0]))
    ctx.verify(exact_ban, draws, banned)


@scenario("times_out")
def request_timeout(ctx: Context) -> None:
    """A generation past --request-timeout-secs: 408 request_timeout, in the stream when streamed, and
    the server answers the next request (the same way) and /health."""
    for endpoint in ctx.facts.endpoints:
        ctx.verify(timeout_answer, ctx.client.post(PATHS[endpoint], ctx.base(endpoint)),
                   rows=("err.request_timeout",))
        ctx.verify(timeout_answer, None, ctx.client.stream(PATHS[endpoint], ctx.base(endpoint, stream=True)),
                   rows=("err.request_timeout", "stream.done"))
    ctx.verify(timeout_answer, ctx.client.post(COMPLETIONS_PATH, ctx.base(COMPLETIONS)), rows=("err.request_timeout",))
    ctx.verify(health_ok, ctx.client.get("/health", key=False))


def _tokens_in(chunks: list[dict[str, Any]]) -> int:
    return sum(len(((c.get("choices") or [{}])[0].get("logprobs") or {}).get("tokens") or []) for c in chunks)


@scenario("model_files", "no_limit")
def model_max_length_not_a_limit(ctx: Context) -> None:
    """tokenizer_config.json's model_max_length is the trained length, not an output limit: a prompt
    just short of it gets a reply that runs past it."""
    path = Path(ctx.facts.model_dir) / "tokenizer_config.json"
    config = json.loads(path.read_text()) if path.is_file() else {}
    trained = config.get("model_max_length") if isinstance(config, dict) else None
    if not isinstance(trained, int) or not 4 <= trained <= ctx.facts.context_length - 16:
        raise Unobservable("tokenizer_config.json sets no model_max_length well inside the context")
    request = _ids_request(ctx, [_filler_id(ctx)] * (trained - 2), max_tokens=DROP, logprobs=0, stream=True)
    stream = ctx.client.stream(COMPLETIONS_PATH, request, stop_when=lambda chunks: _tokens_in(chunks) > 4)
    ctx.verify(longer_than, _tokens_in(stream.chunks), 4, COMPLETIONS, rows=("limit.model_max_length",))
