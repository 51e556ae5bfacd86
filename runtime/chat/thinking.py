"""Thinking levels, read from the chat template by rendering probe
conversations (docs/spec/lse-api.md "Thinking levels"). No model has hard-coded strings:
the toggle, the effort values, each level's instruction and generation prompt,
the default and the think markers all come from renderings and from the
template's own text.

The probe conversation is a system and a user message with distinctive
contents. For each candidate setting LSE renders it with and without the
generation prompt:

- toggle: ``enable_thinking=True`` and ``=False`` both render and differ;
- effort values: string literals the template compares ``reasoning_effort``
  (or a variable set from it) against, in source order, kept when they render
  without raise_exception;
- generation prompt: what ``add_generation_prompt`` appends;
- instruction: the text a level adds to the conversation, compared with the
  baseline rendering (the shortest of the levels' renderings, which is the
  ``none`` level when the template has the toggle); None when it adds nothing;
- default: the level whose rendering equals the one with neither variable set.

The second half resolves a request's thinking fields against those levels.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lse.runtime.chat.template import ChatTemplate, TemplateError, TemplateRaised
from lse.runtime.chat.template_text import EFFORT, effort_candidates, opens_reasoning, think_markers
from lse.runtime.errors import LseError

TOGGLE = "enable_thinking"

# Contents no instruction starts or ends with, so diffs align on them.
PROBE_SYSTEM = "\u00a7system probe\u00a7"
PROBE_USER = "\u00a7user probe\u00a7"


@dataclass(frozen=True)
class Level:
    """One thinking level: what it passes to the template and what it does."""

    id: str
    enable_thinking: bool | None
    reasoning_effort: str | None
    instruction: str | None
    opens_reasoning: bool
    default: bool
    generation_prompt: str  # for the runtime; not part of the spec's JSON

    @property
    def thinks(self) -> bool:
        """Whether the level turns thinking on (what the switch must agree with)."""
        if self.enable_thinking is not None:
            return self.enable_thinking
        return self.id != "none"

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "enable_thinking": self.enable_thinking,
                "reasoning_effort": self.reasoning_effort, "instruction": self.instruction,
                "opens_reasoning": self.opens_reasoning, "default": self.default}


@dataclass(frozen=True)
class ThinkingInfo:
    """The spec's ``thinking`` object, plus what the runtime needs to open and
    split a reply: the think marker pair and the base generation prompt."""

    supported: bool
    source: Path | None
    toggle: str | None
    effort: str | None
    default_level: str | None
    levels: tuple[Level, ...]
    think_markers: tuple[str, str] | None
    # The template rendered with neither variable set: what a request gets
    # when no level applies (a model without controls).
    generation_prompt: str = ""
    opens_reasoning: bool = False

    @property
    def level_ids(self) -> list[str]:
        return [lv.id for lv in self.levels]

    def level(self, level_id: str) -> Level | None:
        return next((lv for lv in self.levels if lv.id == level_id), None)

    def to_json(self) -> dict[str, Any]:
        return {"supported": self.supported,
                "source": str(self.source) if self.source is not None else None,
                "toggle": self.toggle, "effort": self.effort,
                "default_level": self.default_level,
                "levels": [lv.to_json() for lv in self.levels]}


NO_THINKING = ThinkingInfo(False, None, None, None, None, (), None)


# ---------------------------------------------------------------------------
# Probe renderings


@dataclass(frozen=True)
class _Probe:
    full: str  # with the generation prompt
    body: str  # without it

    @property
    def generation_prompt(self) -> str:
        if self.full.startswith(self.body):
            return self.full[len(self.body):]
        n = _common_prefix(self.full, self.body)
        return self.full[n:]


def _common_prefix(a: str, b: str) -> int:
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n


def _render(template: ChatTemplate, messages: list[dict[str, Any]], kwargs: dict[str, Any]) -> _Probe | None:
    """Both renderings for one setting, or None when the template refuses it."""
    try:
        return _Probe(template.render(messages, add_generation_prompt=True, **kwargs),
                      template.render(messages, add_generation_prompt=False, **kwargs))
    except TemplateRaised:
        return None


def _probe_messages(template: ChatTemplate) -> tuple[list[dict[str, Any]], _Probe]:
    """The probe conversation and its rendering with neither variable set. A
    template that refuses system messages is probed with the user turn alone."""
    user = {"role": "user", "content": PROBE_USER}
    refusal: TemplateRaised | None = None
    for messages in ([{"role": "system", "content": PROBE_SYSTEM}, user], [user]):
        try:
            return messages, _Probe(template.render(messages, add_generation_prompt=True),
                                    template.render(messages, add_generation_prompt=False))
        except TemplateRaised as exc:
            refusal = exc
    raise TemplateError(f"chat template {template.source}: raise_exception on a probe "
                        f"conversation (system + user, and user alone): {refusal}")


def instruction_of(body: str, baseline: str) -> str | None:
    """The text ``body`` adds to ``baseline``: an insertion as it stands, a
    replacement widened to whole lines; stripped; None when nothing."""
    if body == baseline:
        return None
    start = _common_prefix(body, baseline)
    limit = min(len(body), len(baseline)) - start
    tail = min(_common_prefix(body[::-1], baseline[::-1]), limit)
    end = len(body) - tail
    if start + tail < len(baseline):  # not a pure insertion: widen to lines
        start = body.rfind("\n", 0, start) + 1
        nl = body.find("\n", end)
        end = len(body) if nl < 0 else nl
    text = body[start:end].strip()
    return text or None


def _settings(template: ChatTemplate, messages: list[dict[str, Any]]
              ) -> tuple[bool, list[tuple[str, dict[str, Any], _Probe]]]:
    """Whether the toggle exists, and each level as (id, kwargs, probe)."""
    on = _render(template, messages, {TOGGLE: True})
    off = _render(template, messages, {TOGGLE: False})
    toggle = on is not None and off is not None and on != off
    settings: list[tuple[str, dict[str, Any], _Probe]] = []
    if toggle:
        settings.append(("none", {TOGGLE: False}, off))
    for value in effort_candidates(template.text):
        if toggle and value == "none":
            continue  # the toggle's none level already means thinking off
        kwargs = {TOGGLE: True, EFFORT: value} if toggle else {EFFORT: value}
        probe = _render(template, messages, kwargs)
        if probe is not None:
            settings.append((value, kwargs, probe))
    has_effort = len(settings) > int(toggle)
    if toggle and not has_effort:
        settings.append(("on", {TOGGLE: True}, on))
    return toggle, settings


def _baseline(toggle: bool, bodies: list[str], default: str) -> str:
    """What the renderings look like without any level's instruction. With a
    toggle, the shortest rendering (thinking off adds none). Without one every
    level may add its own text, so: the lines all levels share before and
    after the point where they differ."""
    if toggle or len(bodies) < 2:
        return min(bodies, key=len, default=default)
    head = min(_common_prefix(bodies[0], b) for b in bodies[1:])
    head = bodies[0].rfind("\n", 0, head) + 1
    tail = min(_common_prefix(bodies[0][::-1], b[::-1]) for b in bodies[1:])
    tail = min(tail, min(len(b) for b in bodies) - head)
    suffix = bodies[0][len(bodies[0]) - tail:]
    if not all(len(b) == tail or b[len(b) - tail - 1] == "\n" for b in bodies):
        cut = suffix.find("\n")  # the shared tail starts mid-line: keep whole lines only
        suffix = suffix[cut:] if cut >= 0 else ""
    return bodies[0][:head] + suffix


def probe_thinking(template: ChatTemplate | None) -> ThinkingInfo:
    """The template's thinking levels (the spec's ``thinking`` object)."""
    if template is None:
        return NO_THINKING
    messages, base = _probe_messages(template)
    toggle, settings = _settings(template, messages)
    prompts = [base.generation_prompt] + [p.generation_prompt for _, _, p in settings]
    markers = think_markers(template.text, prompts)
    baseline = _baseline(toggle, [p.body for _, _, p in settings], base.body)
    default_id = next((sid for sid, _, p in settings if p.full == base.full), None)
    levels = tuple(
        Level(id=sid, enable_thinking=kwargs.get(TOGGLE), reasoning_effort=kwargs.get(EFFORT),
              instruction=instruction_of(p.body, baseline),
              opens_reasoning=opens_reasoning(p.generation_prompt, markers),
              default=sid == default_id, generation_prompt=p.generation_prompt)
        for sid, kwargs, p in settings)
    has_effort = any(lv.reasoning_effort is not None for lv in levels)
    return ThinkingInfo(
        supported=bool(levels), source=template.source,
        toggle=TOGGLE if toggle else None, effort=EFFORT if has_effort else None,
        default_level=default_id, levels=levels, think_markers=markers,
        generation_prompt=base.generation_prompt,
        opens_reasoning=opens_reasoning(base.generation_prompt, markers))


def template_kwargs_for(level: Level | None) -> dict[str, Any]:
    """What to pass to ChatTemplate.render for ``level``; {} for none."""
    if level is None:
        return {}
    out: dict[str, Any] = {}
    if level.enable_thinking is not None:
        out[TOGGLE] = level.enable_thinking
    if level.reasoning_effort is not None:
        out[EFFORT] = level.reasoning_effort
    return out


# ---------------------------------------------------------------------------
# Resolving a request's thinking fields

# Every spelling of the two request fields, as paths into the body.
EFFORT_SPELLINGS = (("reasoning_effort",), ("thinking_level",),
                    ("chat_template_kwargs", "reasoning_effort"), ("reasoning", "effort"))
SWITCH_SPELLINGS = (("enable_thinking",), ("thinking",), ("chat_template_kwargs", "enable_thinking"))


@dataclass(frozen=True)
class CompletionThinking:
    """/v1/completions passes the prompt through unchanged; the thinking
    fields only say whether think markers in the output become reasoning.
    LSE splits only when the request asks for thinking (enable_thinking true,
    or a reasoning_effort other than "none"): by default the raw endpoint
    returns the model's text as it is."""

    split_reasoning: bool


def _error(kind: str, message: str, param: str, info: ThinkingInfo) -> LseError:
    return LseError(kind, message, param=param, extra={"levels": info.level_ids})


def _show(value: str | bool) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return f"'{value}'"


def _lookup(body: dict[str, Any], path: tuple[str, ...], info: ThinkingInfo) -> Any:
    node: Any = body
    for key in path[:-1]:
        node = node.get(key)
        if node is None:
            return None
        if not isinstance(node, dict):
            raise _error("invalid_thinking", f"{key} must be an object", key, info)
    return node.get(path[-1])


def _switch_value(param: str, value: Any, info: ThinkingInfo) -> bool:
    if isinstance(value, bool):
        return value
    if param == "thinking":
        if isinstance(value, dict) and value.get("type") in ("enabled", "disabled"):
            return value["type"] == "enabled"
        raise _error("invalid_thinking",
                     'thinking must be a boolean or {"type": "enabled" | "disabled"}', param, info)
    raise _error("invalid_thinking", f"{param} must be a boolean", param, info)


def _agreed(sent: list[tuple[str, Any]], info: ThinkingInfo) -> tuple[str, Any] | None:
    """The first spelling sent, after checking that every other agrees."""
    for param, value in sent[1:]:
        if value != sent[0][1]:
            raise _error("conflicting_thinking",
                         f"{sent[0][0]} {_show(sent[0][1])} and {param} {_show(value)} disagree",
                         param, info)
    return sent[0] if sent else None


def _sent_effort(body: dict[str, Any], info: ThinkingInfo) -> tuple[str, str] | None:
    sent = []
    for path in EFFORT_SPELLINGS:
        value = _lookup(body, path, info)
        if value is None:  # null means not sent
            continue
        param = ".".join(path)
        if not isinstance(value, str):
            raise _error("invalid_thinking", f"{param} must be a string (a thinking level id)", param, info)
        sent.append((param, value))
    return _agreed(sent, info)


def _sent_switch(body: dict[str, Any], info: ThinkingInfo) -> tuple[str, bool] | None:
    sent = []
    for path in SWITCH_SPELLINGS:
        value = _lookup(body, path, info)
        if value is not None:
            param = ".".join(path)
            sent.append((param, _switch_value(param, value, info)))
    return _agreed(sent, info)


def _check_switch(effort: tuple[str, str], thinks: bool, switch: tuple[str, bool] | None,
                  info: ThinkingInfo) -> None:
    if switch is not None and switch[1] != thinks:
        raise _error("conflicting_thinking",
                     f"{effort[0]} {_show(effort[1])} turns thinking {'on' if thinks else 'off'} "
                     f"but {switch[0]} is {_show(switch[1])}", switch[0], info)


def _by_effort(effort: tuple[str, str], switch: tuple[str, bool] | None, info: ThinkingInfo) -> Level | None:
    param, value = effort
    if not info.supported:
        if value == "none":  # the model already doesn't think
            _check_switch(effort, False, switch, info)
            return None
        raise _error("thinking_unsupported", f"{param} {_show(value)} asks for thinking, but this "
                     "model's chat template has no thinking controls", param, info)
    level = info.level(value)
    if level is None:
        raise _error("unsupported_reasoning_effort",
                     f"{param} {_show(value)} is not defined by this model's chat template; "
                     f"levels: {', '.join(info.level_ids)}", param, info)
    _check_switch(effort, level.thinks, switch, info)
    return level


def _by_switch(switch: tuple[str, bool], info: ThinkingInfo) -> Level | None:
    param, on = switch
    if not info.supported:
        if not on:
            return None
        raise _error("thinking_unsupported", f"{param} true asks for thinking, but this model's "
                     "chat template has no thinking controls", param, info)
    if not on:
        level = info.level("none")
        if level is None or level.thinks:
            raise _error("thinking_unsupported", f"{param} false was sent, but this model's chat "
                         f"template cannot switch thinking off; levels: {', '.join(info.level_ids)}",
                         param, info)
        return level
    default = info.level(info.default_level) if info.default_level else None
    if default is not None and default.thinks:
        return default
    level = next((lv for lv in info.levels if lv.thinks), None)
    if level is None:
        raise _error("thinking_unsupported", f"{param} true was sent, but no level of this model's "
                     f"chat template thinks; levels: {', '.join(info.level_ids)}", param, info)
    return level


def resolve_thinking(body: dict[str, Any], info: ThinkingInfo,
                     endpoint: str = "chat.completions") -> Level | CompletionThinking | None:
    """The level a chat request gets (None: render with no thinking variables),
    or for ``endpoint="completions"`` whether to split reasoning. Raises
    LseError with the spec's four codes and ``levels`` in the body."""
    effort = _sent_effort(body, info)
    switch = _sent_switch(body, info)
    if endpoint == "completions":
        if effort is not None:
            _check_switch(effort, effort[1] != "none", switch, info)
        asked = switch[1] if switch is not None else effort is not None and effort[1] != "none"
        return CompletionThinking(split_reasoning=asked)
    if endpoint != "chat.completions":
        raise ValueError(f"unknown endpoint {endpoint!r}")
    if effort is not None:
        return _by_effort(effort, switch, info)
    if switch is not None:
        return _by_switch(switch, info)
    return info.level(info.default_level) if info.default_level else None
