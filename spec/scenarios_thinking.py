"""Scenarios of thinking levels (docs/spec/lse-api.md § Thinking levels): every level
and spelling resolves as documented, the errors name the model's levels, and
/v1/completions checks only types and agreement."""

from __future__ import annotations

from typing import Any

from lse.spec.checks import error_answer, thinking_error_levels
from lse.spec.checks_behaviour import budget_spent_thinking, instruction_lengthens_prompt, no_reasoning, same_reply
from lse.spec.context import Context, attempt, scenario
from lse.spec.facts import instruction_pair
from lse.spec.rows import CHAT, COMPLETIONS, PATHS

BAD = "invalid_request_error"
UNDEFINED = "lse-spec-undefined-level"


def _req(ctx: Context, endpoint: str = CHAT, **fields: Any) -> dict[str, Any]:
    return ctx.base(endpoint, max_tokens=4, seed=5, temperature=1.0) | fields


def _effort_spellings(level: str) -> list[tuple[dict[str, Any], str]]:
    return [({"thinking_level": level}, "req.thinking_level"),
            ({"chat_template_kwargs": {"reasoning_effort": level}}, "req.chat_template_kwargs"),
            ({"reasoning": {"effort": level}}, "req.reasoning")]


def _switch_spellings(on: bool) -> list[tuple[dict[str, Any], str]]:
    return [({"enable_thinking": on}, "req.enable_thinking"), ({"thinking": on}, "req.thinking"),
            ({"thinking": {"type": "enabled" if on else "disabled"}}, "req.thinking"),
            ({"chat_template_kwargs": {"enable_thinking": on}}, "req.chat_template_kwargs")]


def _refused(ctx: Context, endpoint: str, request: dict[str, Any], code: str, param: Any,
             rows: tuple[str, ...]) -> None:
    reply = ctx.client.post(PATHS[endpoint], request)
    ctx.verify(error_answer, reply, 400, BAD, code, param, rows=rows)
    ctx.verify(thinking_error_levels, reply, ctx.facts.level_ids)


def _same(ctx: Context, fields: dict[str, Any], want: dict[str, Any], as_: str, rows: tuple[str, ...]) -> None:
    """The request with ``fields`` is accepted and answers as ``want`` did."""
    got = ctx.complete(CHAT, _req(ctx, **fields), rows=rows)
    ctx.verify(same_reply, got, want, as_, rows=rows)


@scenario("thinking")
def thinking_levels(ctx: Context) -> None:
    """Each level and its spellings give one reply; no field gives default_level; undefined levels are refused."""
    facts = ctx.facts
    ref = {lid: ctx.complete(CHAT, _req(ctx, reasoning_effort=lid), rows=("req.reasoning_effort",))
           for lid in facts.level_ids}
    for lid, reply in ref.items():
        for fields, row in _effort_spellings(lid):
            attempt(_same, ctx, fields, reply, f"reasoning_effort {lid}", ("thinking.aliases", row))
        switch = facts.level(lid).get("enable_thinking")
        if switch is not None:
            attempt(_same, ctx, {"reasoning_effort": lid, "enable_thinking": switch}, reply,
                    f"reasoning_effort {lid} alone", ("req.reasoning_effort", "thinking.resolve.effort"))
    default = facts.thinking.get("default_level")
    attempt(_same, ctx, {}, ref[default], f"default_level {default}", ("thinking.resolve.neither", "thinking.default"))
    for lid in facts.level_ids:
        attempt(_one_token, ctx, lid)
    for level in ("high", "minimal", UNDEFINED):
        if level not in facts.level_ids:
            attempt(_refused, ctx, CHAT, _req(ctx, reasoning_effort=level), "unsupported_reasoning_effort",
                    "reasoning_effort", ("err.unsupported_reasoning_effort", "thinking.resolve.effort"))
    pair = instruction_pair(facts)
    if pair:
        ctx.verify(instruction_lengthens_prompt, ref[pair[0]], ref[pair[1]], pair)


def _one_token(ctx: Context, level: str) -> None:
    """One token of budget: inside <think> for a level that opens reasoning, content otherwise."""
    body = ctx.complete(CHAT, _req(ctx, max_tokens=1, reasoning_effort=level), rows=("req.reasoning_effort",))
    opens = ctx.facts.level(level).get("opens_reasoning")
    ctx.verify(budget_spent_thinking if opens else no_reasoning, body, level)


def _thinking_level(ctx: Context) -> str:
    """What enable_thinking: true alone resolves to: the default when it thinks, else the first level that does."""
    default = ctx.facts.thinking.get("default_level")
    if ctx.facts.level(default).get("enable_thinking"):
        return default
    return next(lid for lid in ctx.facts.level_ids if ctx.facts.level(lid).get("enable_thinking"))


@scenario("toggle")
def thinking_switch(ctx: Context) -> None:
    """enable_thinking false is level none, true the default (or first) thinking level; contradictions are refused."""
    none = ctx.complete(CHAT, _req(ctx, reasoning_effort="none"), rows=("req.reasoning_effort",))
    on_level = _thinking_level(ctx)
    on = ctx.complete(CHAT, _req(ctx, reasoning_effort=on_level), rows=("req.reasoning_effort",))
    for want, name, reply in ((False, "none", none), (True, on_level, on)):
        for fields, row in _switch_spellings(want):
            attempt(_same, ctx, fields, reply, f"level {name}", ("thinking.resolve.switch", row))
    rows = ("err.conflicting_thinking", "thinking.resolve.effort")
    ids = ctx.facts.level_ids
    for fields, params in (
        ({"reasoning_effort": "none", "enable_thinking": True}, ("reasoning_effort", "enable_thinking")),
        ({"reasoning_effort": on_level, "enable_thinking": False}, ("reasoning_effort", "enable_thinking")),
        ({"enable_thinking": True, "thinking": False}, ("enable_thinking", "thinking")),
        ({"reasoning_effort": ids[0], "thinking_level": ids[-1]}, ("reasoning_effort", "thinking_level")),
    ):
        attempt(_refused, ctx, CHAT, _req(ctx, **fields), "conflicting_thinking", params, rows)


@scenario("no_thinking", "template")
def thinking_without_controls(ctx: Context) -> None:
    """Without controls: none and false are accepted as they are; asking to think is thinking_unsupported."""
    plain = ctx.complete(CHAT, _req(ctx))
    # One token cannot both open a <think> block and put reasoning in it,
    # even on a model that opens one by itself (the split still applies then).
    ctx.verify(no_reasoning, ctx.complete(CHAT, _req(ctx, max_tokens=1)), "none",
               rows=("resp.message.reasoning_content",))
    for fields, row in (({"reasoning_effort": "none"}, "req.reasoning_effort"),
                        ({"enable_thinking": False}, "req.enable_thinking")):
        attempt(_same, ctx, fields, plain, "no thinking fields", ("thinking.resolve.no_controls", row))
    rows = ("err.thinking_unsupported", "override.thinking_unsupported", "thinking.resolve.no_controls")
    params = {"enable_thinking": "enable_thinking", "thinking": "thinking",
              "chat_template_kwargs": "chat_template_kwargs.enable_thinking"}
    asks = [(fields, params[next(iter(fields))]) for fields, _ in _switch_spellings(True)]
    # A level other than none asks for thinking too; the model has no levels to name.
    asks.append(({"reasoning_effort": "low"}, "reasoning_effort"))
    for fields, param in asks:
        attempt(_refused, ctx, CHAT, _req(ctx, **fields), "thinking_unsupported", param, rows)


@scenario()
def thinking_on_completions(ctx: Context) -> None:
    """/v1/completions takes any level name (the prompt is not templated) but refuses disagreeing spellings."""
    ctx.complete(COMPLETIONS, _req(ctx, COMPLETIONS, reasoning_effort=UNDEFINED), rows=("thinking.completions",))
    _refused(ctx, COMPLETIONS, _req(ctx, COMPLETIONS, enable_thinking=True, thinking=False), "conflicting_thinking",
             ("enable_thinking", "thinking"), ("thinking.completions", "err.conflicting_thinking"))


@scenario("effort_without_toggle")
def thinking_cannot_be_switched_off(ctx: Context) -> None:
    """Effort levels without the enable_thinking switch: every spelling of
    'thinking off' is thinking_unsupported, with the model's levels."""
    rows = ("err.thinking_unsupported_off",)
    params = {"enable_thinking": "enable_thinking", "thinking": "thinking",
              "chat_template_kwargs": "chat_template_kwargs.enable_thinking"}
    for fields, _ in _switch_spellings(False):
        attempt(_refused, ctx, CHAT, _req(ctx, **fields), "thinking_unsupported", params[next(iter(fields))], rows)
