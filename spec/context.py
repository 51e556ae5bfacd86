"""What a scenario runs with: the client, the server's facts, the profile, and
the recorder that turns each named check's outcome into row results.

A scenario is a function of a Context, registered with ``@scenario(needs)``;
it sends requests and hands the replies to named checks through
``ctx.verify``. A failed check is recorded against its rows and aborts the
scenario (later checks would read a reply that is already wrong).
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from lse.spec.checks import CheckFailed, request_accepted
from lse.spec.checks_body import completion_suite
from lse.spec.checks_limits import stop_reason_fits, usage_chunk_as_asked
from lse.spec.checks_stream import (
    chunk_objects, done_last, event_stream_content_type, final_chunk_extras, finish_once, first_chunk_role,
    fold_stream, stream_n,
)
from lse.spec.client import Client, Stream
from lse.spec.facts import Facts
from lse.spec.profiles import Profile
from lse.spec.rows import CHAT, PATHS, RequestField
from lse.spec.table import all_rows

MAX_MESSAGES_PER_ROW = 3


class Abort(Exception):
    """A check failed (already recorded): stop this scenario."""


class Unobservable(Exception):
    """The server's replies never showed the case a property needs (a reply
    that repeats a token, a reply long enough to cut); the rows stay
    unexercised instead of passing."""


@dataclass
class RowResult:
    passed: int = 0
    failures: list[str] = field(default_factory=list)


@dataclass
class Recorder:
    rows: dict[str, RowResult] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    failed_checks: int = 0  # every failure, even one whose message a row already holds

    def passed(self, rows: tuple[str, ...]) -> None:
        for row in rows:
            self.rows.setdefault(row, RowResult()).passed += 1

    def failed(self, rows: tuple[str, ...], message: str) -> None:
        self.failed_checks += 1
        for row in rows:
            result = self.rows.setdefault(row, RowResult())
            if message not in result.failures and len(result.failures) < MAX_MESSAGES_PER_ROW:
                result.failures.append(message)

    def merge(self, other: Recorder) -> None:
        for row, result in other.rows.items():
            self.passed((row,) * result.passed)
            for message in result.failures:
                self.failed((row,), message)
        self.failed_checks += other.failed_checks - sum(len(r.failures) for r in other.rows.values())


@dataclass
class Context:
    client: Client
    facts: Facts
    profile: Profile
    recorder: Recorder
    scenario: str = ""
    model: str | None = None  # sent as "model" when the operator names one

    def verify(self, check: Callable, *args: Any, rows: tuple[str, ...] | None = None) -> tuple[str, ...]:
        """Run a named check; ``rows`` narrows which of its rows this call verifies."""
        bound = check.check
        if rows is None and bound.dynamic:
            raise ValueError(f"{bound.name} serves many rows: name the ones this call verifies")
        if rows is not None and not set(rows) <= set(bound.rows):
            raise ValueError(f"{bound.name} is not bound to {sorted(set(rows) - set(bound.rows))}")
        try:
            exercised = check(*args)
        except CheckFailed as failure:
            self.recorder.failed(rows or failure.rows, f"[{self.scenario}] {failure}")
            raise Abort(str(failure)) from None
        credited = (rows if exercised else ()) if rows is not None else exercised
        self.recorder.passed(credited)
        return credited

    def soft(self, check: Callable, *args: Any, rows: tuple[str, ...] | None = None) -> bool:
        """``verify`` that carries on after a failure (recorded all the same)."""
        try:
            self.verify(check, *args, rows=rows)
        except Abort:
            return False
        return True

    def verify_all(self, suite: list[tuple[Callable, tuple]]) -> None:
        """Run every check of a suite, then abort if any failed."""
        failed = 0
        for check, args in suite:
            try:
                self.verify(check, *args)
            except Abort:
                failed += 1
        if failed:
            raise Abort(f"{failed} checks failed")

    def base(self, endpoint: str, **fields: Any) -> dict[str, Any]:
        """A small valid request: a short prompt, 4 tokens unless told."""
        body: dict[str, Any] = {"max_tokens": 4, "seed": 7}
        if self.model:
            body["model"] = self.model
        if endpoint == CHAT:
            body["messages"] = [{"role": "user", "content": "Tell me a story."}]
        else:
            body["prompt"] = "Once upon a time"
        body.update(fields)
        return {k: v for k, v in body.items() if v is not DROP}

    def complete(self, endpoint: str, request: dict[str, Any], rows: tuple[str, ...] | None = None) -> dict[str, Any]:
        """POST a valid request; check it was accepted and check the body."""
        reply = self.client.post(PATHS[endpoint], request)
        self.verify(request_accepted, reply, rows=rows if rows is not None else accepted_rows(endpoint, request))
        self.verify_all(completion_suite(reply.json, request, self.facts, endpoint)
                        + [(stop_reason_fits, (reply.json, request, self.facts))])
        return reply.json

    def complete_stream(self, endpoint: str, request: dict[str, Any]) -> tuple[Stream, dict[str, Any]]:
        """Stream a valid request; check the stream and its fold."""
        request = copy.deepcopy(request) | {"stream": True}
        stream = self.client.stream(PATHS[endpoint], request)
        self.verify(event_stream_content_type, stream)
        include_usage = (request.get("stream_options") or {}).get("include_usage") is True
        suite = [(done_last, (stream,)), (chunk_objects, (stream, endpoint)),
                 (finish_once, (stream, stream_n(request))), (final_chunk_extras, (stream, include_usage)),
                 (usage_chunk_as_asked, (stream, include_usage))]
        if endpoint == CHAT:
            suite.append((first_chunk_role, (stream,)))
        self.verify_all(suite)
        folded = fold_stream(stream, endpoint)
        self.verify_all(completion_suite(folded, request, self.facts, endpoint)
                        + [(stop_reason_fits, (folded, request, self.facts))])
        return stream, folded


def accepted_rows(endpoint: str, request: dict[str, Any]) -> tuple[str, ...]:
    """The request-field rows a 200 to ``request`` verifies: the fields it sent."""
    scoring = request.get("max_tokens") == 0
    rows = [r.id for r in all_rows() if isinstance(r, RequestField) and endpoint in r.endpoints
            and r.name in request and (r.id == "req.completions.scoring_mode") == (r.name == "max_tokens" and scoring)]
    return tuple(rows) + (("surface.chat_endpoint",) if endpoint == CHAT else ())


def per_endpoint(ctx: Context, fn: Callable[[Context, str], None], endpoints: list[str] | tuple[str, ...]) -> None:
    """``fn(ctx, endpoint)`` for each endpoint; unobservable only if it was on every one."""
    missed = []
    for endpoint in endpoints:
        try:
            fn(ctx, endpoint)
        except Unobservable as why:
            missed.append(str(why))
    if missed and len(missed) == len(endpoints):
        raise Unobservable("; ".join(missed))


def attempt(fn: Callable[..., Any], *args: Any) -> bool:
    """Run one part of a scenario; its failure is recorded, and the next part still runs."""
    try:
        fn(*args)
    except Abort:
        return False
    except ExceptionGroup as group:  # Hypothesis found several distinct failures
        _, rest = group.split(Abort)
        if rest is not None:
            raise rest from None
        return False
    return True


class _Drop:
    def __repr__(self) -> str:
        return "DROP"


DROP: Any = _Drop()


@dataclass(frozen=True)
class Scenario:
    name: str
    run: Callable[[Context], None]
    needs: tuple[str, ...]
    doc: str


SCENARIOS: list[Scenario] = []


def scenario(*needs: str, generates: bool = True) -> Callable:
    """Register a scenario; one that generates needs a server that serves
    (not one that refuses every request, see facts.py ``serves``)."""
    refusing = {"fallback_refused", "times_out"} & set(needs)
    needs = needs + (("serves",) if generates and not refusing else ())

    def deco(fn: Callable[[Context], None]) -> Callable[[Context], None]:
        SCENARIOS.append(Scenario(fn.__name__, fn, needs, (fn.__doc__ or "").strip()))
        return fn

    return deco
