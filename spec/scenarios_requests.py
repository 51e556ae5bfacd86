"""Scenarios driven by the request rows: every listed value once, then
Hypothesis' combinations of valid fields and single broken fields."""

from __future__ import annotations

from typing import Any

from collections.abc import Callable

from hypothesis import given
from hypothesis import strategies as st

from lse.spec.checks import THINKING_CODES, error_answer, error_envelope, thinking_error_levels
from lse.spec.context import Abort, Context, Recorder, attempt, scenario
from lse.spec.rows import PATHS, Bad, RequestField
from lse.spec.strategies import apply_bad, apply_goods, invalid_request, request_rows, valid_request

EXAMPLE_TOKENS = 4


def bounded(body: dict[str, Any]) -> dict[str, Any]:
    """Give a request without a positive limit one, so null-limit examples stay cheap."""
    if body.get("max_tokens") == 0:
        return body
    limits = [body.get(k) for k in ("max_tokens", "max_completion_tokens")]
    if not any(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in limits):
        body["max_completion_tokens" if "max_tokens" in body else "max_tokens"] = EXAMPLE_TOKENS
    return body


def send(ctx: Context, endpoint: str, body: dict[str, Any]) -> None:
    if body.get("stream") is True:
        ctx.complete_stream(endpoint, body)
    else:
        ctx.complete(endpoint, body)


def expect_error(ctx: Context, endpoint: str, body: dict[str, Any], row: RequestField, bad: Bad) -> None:
    """The exact error for a request with one broken field, in the envelope."""
    reply = ctx.client.post(PATHS[endpoint], body)
    error_row = f"err.{bad.code}" if bad.code else "err.field"
    ctx.verify(error_answer, reply, bad.status, bad.type, bad.code, bad.param, rows=(row.id, error_row))
    ctx.verify(error_envelope, reply)
    if bad.code in THINKING_CODES:
        ctx.verify(thinking_error_levels, reply, ctx.facts.level_ids)


@scenario()
def request_examples(ctx: Context) -> None:
    """Each row's valid values are accepted; each invalid value gets its exact error."""
    for endpoint in ctx.facts.endpoints:
        for row in request_rows(endpoint, ctx.facts):
            for good in (g for g in row.valid if ctx.facts.has(g.needs)):
                body = bounded(apply_goods(ctx.base(endpoint, max_tokens=EXAMPLE_TOKENS), [(row.name, good)]))
                attempt(send, ctx, endpoint, body)
            for bad in row.invalid:
                if ctx.facts.has(bad.needs):
                    attempt(expect_error, ctx, endpoint, apply_bad(ctx.base(endpoint), row, bad), row, bad)


def generated(ctx: Context, strategy: st.SearchStrategy, fn: Callable[[Any], None]) -> None:
    """Run ``fn`` on Hypothesis' examples. Passing examples count at once; of
    the failing ones only the last few count: Hypothesis replays each distinct
    failure, shrunk, last, so the rows blamed are the minimal example's."""
    main, failing = ctx.recorder, []

    @ctx.profile.hypothesis()
    @given(strategy)
    def example(value: Any) -> None:
        ctx.recorder = Recorder()
        try:
            fn(value)
        except Abort:
            failing.append(ctx.recorder)
            raise
        else:
            main.merge(ctx.recorder)
        finally:
            ctx.recorder = main

    try:
        example()
    except Abort:
        main.merge(failing[-1])
        raise
    except ExceptionGroup as group:
        for recorder in failing[-len(group.exceptions):]:
            main.merge(recorder)
        raise


@scenario()
def generated_valid_requests(ctx: Context) -> None:
    """Any combination of valid optional fields is accepted and its reply checks out."""
    for endpoint in ctx.facts.endpoints:
        attempt(generated, ctx, valid_request(endpoint, ctx.facts), lambda body, endpoint=endpoint: send(ctx, endpoint, body))


@scenario()
def generated_invalid_requests(ctx: Context) -> None:
    """A valid request with one field broken gets exactly that field's error."""
    for endpoint in ctx.facts.endpoints:
        attempt(generated, ctx, invalid_request(endpoint, ctx.facts),
                lambda case, endpoint=endpoint: expect_error(ctx, endpoint, *case))
