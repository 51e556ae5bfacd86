"""Named checks: each compares what the server sent with what the spec says,
and fails with "received … / documented …".

A check is bound to the rows it verifies (``@named(row_id, ...)``); the
binding is what tests/unit/test_spec_rows.py reads to find orphan rows. A
check returns the rows it actually exercised (a check of stop strings on a
request without stop strings exercises none), so the coverage report never
counts a row as passed because a check had nothing to look at.

This module holds the registry and the checks of one completion body and of
error answers; ``checks_stream``, ``checks_info`` and ``checks_behaviour``
hold the rest. All checks are pure functions of HTTP data.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from lse.spec.rows import CHAT, COMPLETIONS, ErrorCode, RequestField, StopReason
from lse.spec.table import all_rows

OBJECTS = {CHAT: "chat.completion", COMPLETIONS: "text_completion"}
CHUNK_OBJECTS = {CHAT: "chat.completion.chunk", COMPLETIONS: "text_completion"}
FINISH_REASONS = ("stop", "length", "tool_calls")
STOP_TO_FINISH = {r.stop_reason: r.finish_reason for r in all_rows() if isinstance(r, StopReason)}
# A client never sees "cancelled" (its row is manual): seeing it is a failure of resp.stop_reason.
OBSERVABLE_STOPS = tuple(f"stop.{r.stop_reason}" for r in all_rows() if isinstance(r, StopReason) and not r.manual)
THINKING_CODES = ("unsupported_reasoning_effort", "thinking_unsupported", "conflicting_thinking",
                  "invalid_thinking")


@dataclass(frozen=True)
class NamedCheck:
    name: str
    rows: tuple[str, ...]
    doc: str
    # A dynamic check serves many rows (every request field's examples); each
    # call must say which of them it verifies.
    dynamic: bool = False


CHECKS: dict[str, NamedCheck] = {}


class CheckFailed(AssertionError):
    def __init__(self, check: str, received: Any, documented: Any, rows: tuple[str, ...]) -> None:
        self.check, self.received, self.documented, self.rows = check, received, documented, rows
        super().__init__(f"{check}: received {_show(received)} / documented {_show(documented)}")


class Mismatch(Exception):
    """Raised inside a check body; ``named`` turns it into CheckFailed."""

    def __init__(self, received: Any, documented: Any, row: str | None = None) -> None:
        super().__init__(received, documented, row)
        self.received, self.documented, self.row = received, documented, row


def expect(ok: bool, received: Any, documented: Any, row: str | None = None) -> None:
    if not ok:
        raise Mismatch(received, documented, row)


def named(*rows: str, dynamic: bool = False) -> Callable:
    """Register a check bound to ``rows``; the wrapped check returns the
    rows it exercised (all of them when the body returns None)."""

    def deco(fn: Callable) -> Callable:
        CHECKS[fn.__name__] = NamedCheck(fn.__name__, rows, (fn.__doc__ or "").strip(), dynamic)

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> tuple[str, ...]:
            try:
                exercised = fn(*args, **kwargs)
            except Mismatch as m:
                raise CheckFailed(fn.__name__, m.received, m.documented, (m.row,) if m.row else rows) from None
            return rows if exercised is None else tuple(exercised)

        wrapper.check = CHECKS[fn.__name__]
        return wrapper

    return deco


def _show(value: Any) -> str:
    text = value if isinstance(value, str) and value.startswith(("HTTP", "<")) else repr(value)
    return text if len(text) <= 300 else text[:297] + "..."


def is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def choices_of(body: Any) -> list[dict[str, Any]]:
    choices = body.get("choices") if isinstance(body, dict) else None
    return [c for c in choices if isinstance(c, dict)] if isinstance(choices, list) else []


def output_of(choice: dict[str, Any]) -> str | None:
    message = choice.get("message")
    return message.get("content") if isinstance(message, dict) else choice.get("text")


def positive(value: Any) -> bool:
    return is_int(value) and value > 0


def prompt_text(request: dict[str, Any]) -> str:
    prompt = request.get("prompt")
    return prompt[0] if isinstance(prompt, list) and prompt else prompt if isinstance(prompt, str) else ""


ACCEPTING_ROWS = ("surface.chat_endpoint", "override.max_tokens_context", "override.max_tokens_zero",
                  "thinking.completions", "thinking.resolve.no_controls", "thinking.resolve.effort",
                  "thinking.resolve.switch", "thinking.resolve.neither", "thinking.default", "thinking.aliases",
                  "gaps.concurrency", "defaults.order", "limit.request")


@named(*ACCEPTING_ROWS, *(r.id for r in all_rows() if isinstance(r, RequestField)), dynamic=True)
def request_accepted(reply: Any) -> None:
    """A valid request: HTTP 200 and a JSON object."""
    expect(reply.status == 200 and isinstance(reply.json, dict),
           f"HTTP {reply.status} {reply.text[:200]}", "HTTP 200 with a JSON body")


ERROR_ROWS = tuple(r.id for r in all_rows() if not r.manual and (isinstance(r, ErrorCode) or
                   (isinstance(r, RequestField) and r.invalid)))


@named(*ERROR_ROWS, "override.max_tokens_zero", "override.thinking_unsupported", "thinking.resolve.effort",
       "thinking.resolve.no_controls", "thinking.completions", "surface.wrong_method", "surface.no_template",
       dynamic=True)
def error_answer(reply: Any, status: int, type_: str, code: str | None, param: str | tuple[str, ...] | None) -> None:
    """The exact status, error.type, error.code and error.param. Where the
    spec names no single param (two spellings conflict), ``param`` is the
    tuple of the fields involved and error.param must be one of them."""
    err = reply.error
    got = (reply.status, err.get("type"), err.get("code"), err.get("param"))
    if isinstance(param, tuple):
        ok = got[:3] == (status, type_, code) and got[3] in param
        expect(ok, f"HTTP {got}", f"HTTP {(status, type_, code)} with param one of {param}")
        return
    expect(got == (status, type_, code, param), f"HTTP {got}", f"HTTP {(status, type_, code, param)}")


@named("err.envelope")
def error_envelope(reply: Any) -> None:
    """{"error": {message, type, param, code}}, message a non-empty string."""
    err = reply.error
    expect(bool(err), reply.text[:200], '{"error": {...}}')
    expect(isinstance(err.get("message"), str) and err["message"] != "", err.get("message"), "a message")
    expect(isinstance(err.get("type"), str), err.get("type"), "type: a string")
    for key in ("param", "code"):
        expect(key in err and (err[key] is None or isinstance(err[key], str)), err, f"{key}: a string or null")


@named("err.unsupported_reasoning_effort", "err.thinking_unsupported", "err.conflicting_thinking",
       "err.invalid_thinking", "err.thinking_unsupported_off")
def thinking_error_levels(reply: Any, level_ids: Iterable[str]) -> tuple[str, ...]:
    """Thinking errors include levels, the model's level ids."""
    err = reply.error
    expect(err.get("levels") == list(level_ids), err.get("levels"), f"levels {list(level_ids)}")
    return (f"err.{err.get('code')}",)


@named("err.context_full", "context.no_compaction", "resp.lse_context.tokens_remaining")
def context_error(reply: Any, context_length: int, param: str) -> None:
    """A prompt that fills the context: 400 context_full naming the prompt, with lse_context."""
    err = reply.error
    got = (reply.status, err.get("type"), err.get("code"), err.get("param"))
    want = (400, "invalid_request_error", "context_full", param)
    expect(got == want, f"HTTP {got}", f"HTTP {want}")
    ctx = err.get("lse_context") or {}
    expect(ctx.get("context_length") == context_length and ctx.get("tokens_remaining") == 0
           and is_int(ctx.get("tokens_used")) and ctx["tokens_used"] >= context_length,
           ctx, f"lse_context with tokens_used >= {context_length}, context_length {context_length}, remaining 0")
    # litellm raises ContextWindowExceededError on this phrase, OpenAI's own.
    message = str(err.get("message") or "")
    expect("this model's maximum context length is" in message.lower(), message,
           "a message with \"this model's maximum context length is\" (OpenAI's phrase, which litellm matches)")


@named("resp.id", "resp.object", "resp.created", "surface.sdk")
def envelope_fields(body: dict[str, Any], endpoint: str) -> None:
    """object, id (chatcmpl- on chat) and created."""
    expect(body.get("object") == OBJECTS[endpoint], body.get("object"), OBJECTS[endpoint], "resp.object")
    ident = body.get("id")
    expect(isinstance(ident, str) and ident != "", ident, "a non-empty id", "resp.id")
    if endpoint == CHAT:
        expect(ident.startswith("chatcmpl-"), ident, "chatcmpl-...", "resp.id")
    expect(is_int(body.get("created")), body.get("created"), "an integer", "resp.created")


@named("resp.model", "req.model")
def model_echo(body: dict[str, Any], request: dict[str, Any], model_id: str) -> None:
    """The request's model echoed back; the served id when none is sent."""
    want = request["model"] if isinstance(request.get("model"), str) else model_id
    expect(body.get("model") == want, body.get("model"), want)


@named("resp.choices", "req.n")
def choices_indexed(body: dict[str, Any], request: dict[str, Any]) -> None:
    """n choices with indices 0..n-1."""
    n = request.get("n") if positive(request.get("n")) else 1
    indices = sorted(c.get("index") for c in choices_of(body) if is_int(c.get("index")))
    expect(len(choices_of(body)) == n and indices == list(range(n)), indices, f"indices 0..{n - 1}")


@named("resp.message.role", "resp.message.content")
def message_shape(body: dict[str, Any]) -> None:
    """role assistant; content a string, null only beside tool_calls."""
    for choice in choices_of(body):
        message = choice.get("message") or {}
        expect(message.get("role") == "assistant", message.get("role"), "assistant", "resp.message.role")
        content = message.get("content")
        calls = message.get("tool_calls")
        expect(isinstance(content, str) or (content is None and bool(calls)), content,
               "a string (null only with tool_calls)", "resp.message.content")


@named("resp.message.reasoning_content")
def reasoning_omitted_when_empty(body: dict[str, Any]) -> None:
    """reasoning_content is omitted entirely when there is none: never null or ""."""
    for choice in choices_of(body):
        message = choice.get("message") or {}
        if "reasoning_content" in message:
            value = message["reasoning_content"]
            expect(isinstance(value, str) and value != "", value, "omitted when empty, else a string")


@named("resp.text")
def text_shape(body: dict[str, Any]) -> None:
    """/v1/completions choices carry text, not message."""
    for choice in choices_of(body):
        expect(isinstance(choice.get("text"), str) and "message" not in choice, choice, "text: a string")


@named("resp.finish_reason", "resp.stop_reason", "surface.shared_json", *OBSERVABLE_STOPS)
def stop_reason_maps_finish(body: dict[str, Any]) -> tuple[str, ...]:
    """finish_reason and stop_reason agree with docs/spec/lse-api.md's table."""
    exercised = {"resp.finish_reason", "resp.stop_reason", "surface.shared_json"}
    for choice in choices_of(body):
        finish, stop = choice.get("finish_reason"), choice.get("stop_reason")
        expect(finish in FINISH_REASONS, finish, " / ".join(FINISH_REASONS), "resp.finish_reason")
        expect(stop in STOP_TO_FINISH, stop, " / ".join(STOP_TO_FINISH), "resp.stop_reason")
        row = f"stop.{stop}" if f"stop.{stop}" in OBSERVABLE_STOPS else "resp.stop_reason"
        expect(finish in STOP_TO_FINISH[stop], f"<{finish} with {stop}>",
               f"{stop} -> finish_reason {'/'.join(STOP_TO_FINISH[stop]) or 'none (the client is gone)'}", row)
        exercised.add(row)
    return tuple(sorted(exercised))


def stop_strings(request: dict[str, Any]) -> list[str]:
    stop = request.get("stop")
    return [stop] if isinstance(stop, str) else [s for s in stop or [] if isinstance(s, str)]


@named("req.stop")
def no_stop_string(body: dict[str, Any], request: dict[str, Any]) -> tuple[str, ...]:
    """No stop string appears in the generated text: it is trimmed."""
    stops = stop_strings(request)
    if not stops:
        return ()
    skip = len(prompt_text(request)) if request.get("echo") is True else 0
    for choice in choices_of(body):
        text = (output_of(choice) or "")[skip:]
        found = [s for s in stops if s in text]
        expect(not found, f"<{text!r} contains {found!r}>", "stop strings trimmed from the output")
    return None
