"""Checks that a value is right for the situation, not only allowed: the
stop_reason a reply's numbers force, exact lengths at the limits'
boundaries, the defaults the model's files set, lse_warnings against the
lse_status counts, the refusal of a missing kernel, and the presence
penalty's 64-token window."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from lse.spec.checks import choices_of, expect, is_int, is_number, named
from lse.spec.checks_body import effective_limit, usage_of
from lse.spec.checks_stream import reply_outputs
from lse.spec.client import DONE, Stream
from lse.spec.facts import Facts

ENDED_BY_MODEL = ("stop_token", "stop_sequence")


@named("stop.max_tokens", "stop.context_full", "resp.stop_reason", "limit.context")
def stop_reason_fits(body: dict[str, Any], request: dict[str, Any], facts: Facts) -> tuple[str, ...]:
    """The stop_reason the numbers force: a reply cut at its token limit with
    room left says max_tokens (also when the limit and the context end it at
    the same token, LSE's choice); one that fills the context first says
    context_full."""
    if len(choices_of(body)) != 1 or (request.get("max_tokens") == 0):
        return ()
    usage = usage_of(body)
    prompt, completion = usage.get("prompt_tokens"), usage.get("completion_tokens")
    if not (is_int(prompt) and is_int(completion)):
        return ()
    choice = choices_of(body)[0]
    stop = choice.get("stop_reason")
    limit = effective_limit(request, facts, prompt)
    room = facts.context_length - prompt
    fills = prompt + completion == facts.context_length
    if stop == "max_tokens":
        expect(limit is not None and completion == limit and limit <= room,
               f"<max_tokens after {completion} tokens, limit {limit}, room {room}>",
               "max_tokens only where the token limit ended the reply within the context", "stop.max_tokens")
        return ("stop.max_tokens",)
    if stop == "context_full":
        expect(fills and (limit is None or limit > room), f"<context_full at {prompt}+{completion} tokens, "
               f"limit {limit}>", f"context_full only when the reply fills the {facts.context_length}-token "
               "context before its limit", "stop.context_full")
        return ("stop.context_full",)
    if stop in ENDED_BY_MODEL:
        return ()
    if limit is not None and completion == limit and limit <= room:
        expect(False, stop, f"max_tokens: the reply reached its limit of {limit} with room left", "stop.max_tokens")
    if fills:
        expect(False, stop, "context_full: the reply filled the context", "stop.context_full")
    return ()


@named("err.context_full", "context.no_compaction", "resp.lse_context.tokens_remaining", "limit.context",
       "context.reply_fills", "stop.context_full", "stop.max_tokens", "limit.max_length", "limit.cap",
       "limit.max_new_tokens", "limit.request", "err.max_tokens_cap", "req.max_completion_tokens",
       dynamic=True)
def exact_reply(body: dict[str, Any], tokens: int, finish: str, stop: str, used: int) -> None:
    """A reply at a boundary: exactly ``tokens`` tokens, its finish_reason and
    stop_reason, and lse_context.tokens_used."""
    choice = choices_of(body)[0] if choices_of(body) else {}
    ctx = body.get("lse_context") or {}
    got = (usage_of(body).get("completion_tokens"), choice.get("finish_reason"), choice.get("stop_reason"),
           ctx.get("tokens_used"))
    want = (tokens, finish, stop, used)
    expect(got == want, f"<completion_tokens, finish, stop, tokens_used = {got}>", f"{want}")


@named("err.context_full", "context.no_compaction", "resp.lse_context.tokens_remaining", dynamic=True)
def context_error_exact(reply: Any, context_length: int, param: str, prompt_tokens: int) -> None:
    """A prompt of known size that fills the context: 400 context_full, tokens_used the prompt's size."""
    err = reply.error
    got = (reply.status, err.get("type"), err.get("code"), err.get("param"))
    want = (400, "invalid_request_error", "context_full", param)
    expect(got == want, f"HTTP {got}", f"HTTP {want}")
    want_ctx = {"tokens_used": prompt_tokens, "context_length": context_length, "tokens_remaining": 0}
    expect(err.get("lse_context") == want_ctx, err.get("lse_context"), f"{want_ctx}: tokens_used is the prompt's size")


@named("err.max_tokens_cap", "req.max_completion_tokens", "err.field", dynamic=True)
def field_error(reply: Any, param: str) -> None:
    """A 400 for one field, naming ``param``."""
    err = reply.error
    got = (reply.status, err.get("type"), err.get("param"))
    expect(got == (400, "invalid_request_error", param), f"HTTP {got}", f"HTTP 400 naming {param}")


@named("fallback.warnings", "resp.lse_warnings")
def warnings_count_status(body: dict[str, Any], before: dict[str, int], after: dict[str, int]) -> tuple[str, ...]:
    """lse_warnings[].count is how much lse_status counted for the cause during the request."""
    grew = {c: n - before.get(c, 0) for c, n in after.items() if n > before.get(c, 0)}
    got = {w.get("cause"): w.get("count") for w in body.get("lse_warnings") or [] if isinstance(w, dict)}
    expect(got == grew, got, f"lse_warnings {{cause: count}} equal to lse_status' growth {grew}")
    return ("fallback.warnings", "resp.lse_warnings") if grew else ("fallback.warnings",)


@named("err.cpu_fallback_disabled", "fallback.missing_kernel")
def fallback_refused_answer(reply: Any) -> None:
    """500 server_error cpu_fallback_disabled, the message starting 'CPU fallback disabled:'."""
    err = reply.error
    got = (reply.status, err.get("type"), err.get("code"))
    expect(got == (500, "server_error", "cpu_fallback_disabled"), f"HTTP {got} {reply.text[:160]}",
           "HTTP 500 server_error cpu_fallback_disabled")
    expect(str(err.get("message", "")).startswith("CPU fallback disabled:"), err.get("message"),
           "a message starting 'CPU fallback disabled:' that names the operation group")


@named("err.cpu_fallback_disabled", "fallback.missing_kernel", "stream.done")
def fallback_refused_stream(stream: Stream) -> None:
    """Streamed: the error in the stream (or as the 500 itself), then data: [DONE]."""
    if stream.reply is not None:
        fallback_refused_answer(stream.reply)
        return
    errors = [c.get("error") for c in stream.chunks if isinstance(c.get("error"), dict)]
    expect(bool(errors) and errors[-1].get("code") == "cpu_fallback_disabled"
           and str(errors[-1].get("message", "")).startswith("CPU fallback disabled:"), stream.events[-3:],
           "an error event cpu_fallback_disabled in the stream")
    expect(stream.events[-1:] == [DONE], stream.events[-2:], "the stream ends with data: [DONE]")


@named("fallback.status", "status.cpu_fallback", "fallback.missing_kernel")
def fallback_not_allowed(status: Any) -> None:
    """lse_status: engine.cpu_fallback.allowed false under --no-cpu-fallback."""
    body = status.json if isinstance(status.json, dict) else {}
    allowed = ((body.get("engine") or {}).get("cpu_fallback") or {}).get("allowed")
    expect(allowed is False, allowed, "allowed: false")


@named("stream.final_chunk", "req.stream_options")
def usage_chunk_as_asked(stream: Stream, include_usage: bool) -> None:
    """A usage-only chunk (choices []) follows the final chunk exactly when
    stream_options.include_usage is true; then it is the one chunk whose usage
    is not null (OpenAI's shape), so a client summing usage counts it once."""
    usage_only = [c for c in stream.chunks if c.get("choices") == [] and "usage" in c]
    want = 1 if include_usage else 0
    expect(len(usage_only) == want, len(usage_only), f"{want} usage-only chunks (include_usage {include_usage})")
    counted = [c.get("usage") for c in stream.chunks if c.get("usage") is not None]
    expect(len(counted) == 1, counted, "usage on exactly one chunk")
    if include_usage:
        nulls = [c for c in stream.chunks[:-1] if "usage" not in c or c["usage"] is not None]
        expect(not nulls, nulls[:1], '"usage": null on every chunk before the usage-only chunk')


@named("resp.usage", "req.n")
def prompt_counted_once(several: dict[str, Any], single: dict[str, Any]) -> None:
    """n choices of one prompt count the prompt once."""
    a, b = usage_of(several).get("prompt_tokens"), usage_of(single).get("prompt_tokens")
    expect(a == b, a, f"prompt_tokens {b}, as with n 1")


@named("resp.choices", "req.n")
def seeded_choices_differ(replies: list[tuple[list[Any], Any]]) -> None:
    """Each choice is generated independently: over seeds where the model's
    replies differ, the choices of one request are not all copies of one another."""
    expect(any(len({repr(c) for c in choices}) > 1 for choices, _ in replies),
           [choices for choices, _ in replies], "choices that differ within a request for some seed")


def _typed(value: Any, integer: bool) -> Any:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if integer:
        return int(value) if float(value).is_integer() else None
    return float(value)


INTEGER_FIELDS = ("top_k", "max_new_tokens", "max_length")


def expected_defaults(model_dir: str, fields: tuple[str, ...], neutral: dict[str, Any]) -> dict[str, tuple[Any, str]]:
    """docs/spec/lse-api.md's order over the model's files: generation_config.json, then
    config.json's embedded generation_config, then its top level, then the neutral default."""
    def read(name: str) -> dict[str, Any]:
        path = Path(model_dir) / name
        data = json.loads(path.read_text()) if path.is_file() else {}
        return data if isinstance(data, dict) else {}

    config = read("config.json")
    embedded = config.get("generation_config") if isinstance(config.get("generation_config"), dict) else {}
    layers = (("generation_config.json", read("generation_config.json")), ("config.json", embedded),
              ("config.json", config))
    out = {}
    for name in fields:
        found = next(((v, src) for src, layer in layers
                      if (v := _typed(layer.get(name), name in INTEGER_FIELDS)) is not None), None)
        out[name] = found or (neutral[name], "lse_default")
    do_sample = next(((layer["do_sample"], src) for src, layer in layers if isinstance(layer.get("do_sample"), bool)),
                     None)
    if do_sample is not None and do_sample[0] is False:
        out["temperature"] = (0.0, do_sample[1])
    return out


@named("defaults.order", "defaults.from_files", "defaults.sources", "override.defaults", "defaults.greedy",
       dynamic=True)
def defaults_match_files(gd: dict[str, Any], expected: dict[str, tuple[Any, str]]) -> None:
    """Each default's value and source are the ones the model's files set, in the documented order
    (a temperature reported as server_option is lse-server --temperature's)."""
    sources = gd.get("sources") or {}
    for name, (value, source) in expected.items():
        if name == "temperature" and sources.get(name) == "server_option":
            continue
        got = (gd.get(name), sources.get(name))
        same = got[1] == source and (got[0] == value or (is_number(got[0]) and is_number(value)
                                                         and abs(got[0] - value) < 1e-6))
        expect(same, f"<{name} {got}>", f"{name} {(value, source)} from the model's files")


@named("sampling.presence_window", "req.presence_penalty")
def presence_window(inside: Any, outside: Any, penalised: int, other: int) -> None:
    """A token 64 tokens back is in the presence penalty's window; 65 back is not."""
    got = (inside, outside)
    expect(got == (other, penalised), f"<next token {got} with the token at -64 / -65>",
           f"({other}, {penalised}): penalised at -64, not at -65")


@named("req.logit_bias", "structured.logit_bias_ban")
def exact_ban(draws: list[tuple[Any, Any]], banned: tuple[Any, float]) -> None:
    """A token at -100 never comes, however the others are biased (a draw is the
    banned token when its text and unbiased logprob are the banned token's)."""
    hits = [d for d in draws if d[0] == banned[0] and is_number(d[1]) and abs(d[1] - banned[1]) < 1e-5]
    expect(not hits, f"<{len(hits)} of {len(draws)} draws were the banned token {banned[0]!r}>",
           "the token banned with -100 never sampled")


@named("sampling.truncation", "req.top_k", "req.top_p", "req.min_p", dynamic=True)
def all_choices_greedy(body: dict[str, Any], greedy: dict[str, Any], setting: str) -> None:
    """A filter that keeps only the top token makes every sampled choice the greedy reply."""
    want = [row[1:] for row in reply_outputs(greedy)][0]
    got = [row[1:] for row in reply_outputs(body)]
    expect(all(g == want for g in got), got, f"every choice the greedy reply {want} under {setting}")


@named("err.request_timeout", "stream.done", dynamic=True)
def timeout_answer(reply: Any, stream: Stream | None = None) -> None:
    """408 timeout_error request_timeout; streamed, the error in the stream (or as the 408) then [DONE]."""
    if stream is not None and stream.reply is None:
        errors = [c.get("error") for c in stream.chunks if isinstance(c.get("error"), dict)]
        expect(bool(errors) and errors[-1].get("code") == "request_timeout" and stream.events[-1:] == [DONE],
               stream.events[-3:], "an error event request_timeout in the stream, then data: [DONE]")
        return
    reply = stream.reply if stream is not None else reply
    err = reply.error
    got = (reply.status, err.get("type"), err.get("code"))
    expect(got == (408, "timeout_error", "request_timeout"), f"HTTP {got}", "HTTP 408 timeout_error request_timeout")
