"""Hypothesis strategies built from the request rows.

``valid_request`` draws any combination of optional fields from the rows'
valid values (and a thinking level the served model defines); every reply is
kept cheap with max_tokens 1..8. ``invalid_request`` breaks exactly one field
of a valid request with one of the rows' invalid values, so the expected
status, error.type, error.code and error.param are known.
"""

from __future__ import annotations

import copy
import string
from typing import Any

from hypothesis import strategies as st

from lse.spec.facts import Facts
from lse.spec.rows import CHAT, MISSING, Bad, Good, RequestField
from lse.spec.table import all_rows
from lse.spec.rows_requests import THINKING_FIELDS

ALPHABET = string.ascii_letters + string.digits + " .,?!"
MAX_TOKENS = st.integers(min_value=1, max_value=8)


def words(min_size: int = 1, max_size: int = 24) -> st.SearchStrategy[str]:
    return st.text(alphabet=ALPHABET, min_size=min_size, max_size=max_size).filter(lambda s: s.strip() != "")


@st.composite
def messages(draw: st.DrawFn) -> list[dict[str, str]]:
    """An optional system message, then user/assistant turns ending with the user."""
    turns = draw(st.integers(min_value=0, max_value=2))
    out = [{"role": "system", "content": draw(words())}] if draw(st.booleans()) else []
    for _ in range(turns):
        out += [{"role": "user", "content": draw(words())}, {"role": "assistant", "content": draw(words())}]
    return out + [{"role": "user", "content": draw(words())}]


def prompts() -> st.SearchStrategy[Any]:
    return st.one_of(words(1, 40), words(1, 40).map(lambda s: [s]))


def request_rows(endpoint: str, facts: Facts) -> list[RequestField]:
    return [r for r in all_rows() if isinstance(r, RequestField) and endpoint in r.endpoints
            and facts.has(r.needs) and r.manual is None]


def _thinking_choices(facts: Facts, endpoint: str) -> list[dict[str, Any]]:
    """Thinking fields a valid request may carry on this model, each spelling."""
    ids = list(facts.level_ids) or ["none"]
    out: list[dict[str, Any]] = [{}]
    for lid in ids:
        out += [{"reasoning_effort": lid}, {"thinking_level": lid},
                {"chat_template_kwargs": {"reasoning_effort": lid}}, {"reasoning": {"effort": lid}}]
    switches = []
    if "toggle" in facts.caps or "no_thinking" in facts.caps or endpoint != CHAT:
        switches.append(False)
    if "thinking" in facts.caps or endpoint != CHAT:
        switches.append(True)
    for on in switches:
        out += [{"enable_thinking": on}, {"thinking": on}, {"chat_template_kwargs": {"enable_thinking": on}},
                {"thinking": {"type": "enabled" if on else "disabled"}}]
    return out


def apply_goods(body: dict[str, Any], chosen: list[tuple[str, Good]]) -> dict[str, Any]:
    """Set each chosen value, then the fields each needs beside it."""
    for name, good in chosen:
        _set(body, name, good.value)
    for _, good in chosen:
        for name, value in good.with_:
            _set(body, name, value)
    return body


def _set(body: dict[str, Any], name: str, value: Any) -> None:
    if value is MISSING:
        body.pop(name, None)
    else:
        body[name] = copy.deepcopy(value)


def _positive(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


def _keep_cheap(body: dict[str, Any], draw: st.DrawFn) -> None:
    """Every generated reply is at most 8 tokens per choice (or scoring mode)."""
    if body.get("max_tokens") == 0:
        body.pop("max_completion_tokens", None)
        body.pop("stream_options", None)
        return
    for name in ("max_tokens", "max_completion_tokens"):
        if _positive(body.get(name)) and body[name] > 8:
            body[name] = draw(MAX_TOKENS)
    if not _positive(body.get("max_tokens")) and not _positive(body.get("max_completion_tokens")):
        body["max_tokens"] = draw(MAX_TOKENS)
    if "stream_options" in body and body.get("stream") is not True:
        body["stream"] = True


@st.composite
def valid_request(draw: st.DrawFn, endpoint: str, facts: Facts, thinking: bool = True) -> dict[str, Any]:
    """A valid request for ``endpoint`` on the served model."""
    body: dict[str, Any] = {"messages": draw(messages())} if endpoint == CHAT else {"prompt": draw(prompts())}
    chosen = []
    for row in request_rows(endpoint, facts):
        goods = [g for g in row.valid if facts.has(g.needs)]
        if row.in_strategies and goods and row.name not in ("messages", "prompt") and draw(st.booleans()):
            chosen.append((row.name, draw(st.sampled_from(goods))))
    apply_goods(body, chosen)
    if thinking:
        body.update(copy.deepcopy(draw(st.sampled_from(_thinking_choices(facts, endpoint)))))
    # n > 3 only in the rows' explicit examples: generated runs stay cheap.
    if _positive(body.get("n")) and body["n"] > 3:
        body["n"] = draw(st.integers(min_value=1, max_value=3))
    _keep_cheap(body, draw)
    return body


def bad_cases(endpoint: str, facts: Facts) -> list[tuple[RequestField, Bad]]:
    return [(row, bad) for row in request_rows(endpoint, facts) for bad in row.invalid if facts.has(bad.needs)]


def apply_bad(base: dict[str, Any], row: RequestField, bad: Bad) -> dict[str, Any]:
    """``base`` with one field broken: fields whose own check would fire
    first are dropped, the fields the case needs are set."""
    body = copy.deepcopy(base)
    for name in bad.drop:
        body.pop(name, None)
    if row.name in THINKING_FIELDS:
        for name in THINKING_FIELDS:
            body.pop(name, None)
    for name, value in bad.with_:
        _set(body, name, value)
    _set(body, row.name, bad.value)
    return body


@st.composite
def invalid_request(draw: st.DrawFn, endpoint: str, facts: Facts) -> tuple[dict[str, Any], RequestField, Bad]:
    """A request invalid by construction, the row and the expected answer."""
    row, bad = draw(st.sampled_from(bad_cases(endpoint, facts)))
    base = draw(valid_request(endpoint, facts, thinking=False))
    return apply_bad(base, row, bad), row, bad
