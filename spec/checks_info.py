"""Checks of what the server says about itself: /v1/models, the thinking and
generation_defaults objects, /v1/lse/model_info, /v1/lse/status, /health,
and the authentication answers."""

from __future__ import annotations

import posixpath
from typing import Any

from lse.spec.checks import expect, is_int, is_number, named
from lse.spec.rows import NeutralDefault, ThinkingModel
from lse.spec.table import all_rows

TEMPLATE_FILES = ("chat_template.jinja", "tokenizer_config.json", "chat_template.json")
DEFAULT_FIELDS = ("temperature", "top_k", "top_p", "min_p", "repetition_penalty", "presence_penalty",
                  "max_new_tokens", "max_length")
DEFAULT_KINDS = {"top_k": "an integer", "max_new_tokens": "an integer or null", "max_length": "an integer or null"}
SOURCES = ("generation_config.json", "config.json", "server_option", "lse_default")
NEUTRAL = {r.field: r.value for r in all_rows() if isinstance(r, NeutralDefault)}


@named("models.object", "models.data", "models.id", "models.model_object", "models.created",
       "models.owned_by", "models.context_length", "gaps.one_model")
def models_list(reply: Any) -> None:
    """OpenAI's list shape holding the one model, with context_length."""
    body = reply.json if isinstance(reply.json, dict) else {}
    expect(reply.status == 200 and body.get("object") == "list", f"HTTP {reply.status} {reply.text[:120]}",
           'HTTP 200 {"object": "list"}', "models.object")
    data = body.get("data")
    expect(isinstance(data, list) and len(data) == 1, data, "one model", "gaps.one_model")
    entry = data[0]
    for key, ok, want, row in (
        ("id", isinstance(entry.get("id"), str) and entry["id"] != "", "a string", "models.id"),
        ("object", entry.get("object") == "model", "model", "models.model_object"),
        ("created", is_int(entry.get("created")), "an integer", "models.created"),
        ("owned_by", isinstance(entry.get("owned_by"), str), "a string", "models.owned_by"),
        ("context_length", is_int(entry.get("context_length")) and entry["context_length"] > 0,
         "a positive integer", "models.context_length"),
    ):
        expect(ok, entry.get(key), f"{key}: {want}", row)


THINKING_ROWS = ("thinking.supported", "thinking.source", "thinking.toggle", "thinking.effort",
                 "thinking.default_level", "thinking.levels.id", "thinking.levels.enable_thinking",
                 "thinking.levels.reasoning_effort", "thinking.levels.instruction",
                 "thinking.levels.opens_reasoning", "thinking.levels.default", "thinking.levels_order")


@named(*THINKING_ROWS, "thinking.template_file")
def thinking_object(thinking: Any) -> tuple[str, ...]:
    """The thinking object's fields, types and the documented order of level ids."""
    expect(isinstance(thinking, dict), thinking, "a thinking object", "thinking.supported")
    levels = thinking.get("levels")
    expect(isinstance(levels, list) and all(isinstance(lv, dict) for lv in levels), levels,
           "levels: an array of objects", "thinking.levels.id")
    expect(thinking.get("supported") is bool(levels), thinking.get("supported"),
           f"{bool(levels)}: supported means at least one level", "thinking.supported")
    source = thinking.get("source")
    expect(source is None or (isinstance(source, str) and posixpath.basename(source) in TEMPLATE_FILES),
           source, f"null or one of {', '.join(TEMPLATE_FILES)}", "thinking.source")
    toggle, effort = thinking.get("toggle"), thinking.get("effort")
    expect(toggle in (None, "enable_thinking"), toggle, 'null or "enable_thinking"', "thinking.toggle")
    expect(effort in (None, "reasoning_effort"), effort, 'null or "reasoning_effort"', "thinking.effort")
    ids = [lv.get("id") for lv in levels]
    default = thinking.get("default_level")
    expect(default in ids if ids else default is None, default, f"one of {ids} (null without levels)",
           "thinking.default_level")
    for level in levels:
        _level_fields(level, toggle, default)
    _level_order(levels, toggle, effort)
    return THINKING_ROWS + (("thinking.template_file",) if source else ())


def _level_fields(level: dict[str, Any], toggle: Any, default: Any) -> None:
    lid = level.get("id")
    expect(isinstance(lid, str) and lid != "", lid, "a level id", "thinking.levels.id")
    switch = level.get("enable_thinking")
    expect(switch is None if toggle is None else isinstance(switch, bool), switch,
           "a boolean with a toggle, null without", "thinking.levels.enable_thinking")
    expect(level.get("reasoning_effort") is None or isinstance(level["reasoning_effort"], str),
           level.get("reasoning_effort"), "a string or null", "thinking.levels.reasoning_effort")
    expect(level.get("instruction") is None or isinstance(level["instruction"], str),
           level.get("instruction"), "a string or null", "thinking.levels.instruction")
    expect(isinstance(level.get("opens_reasoning"), bool), level.get("opens_reasoning"), "a boolean",
           "thinking.levels.opens_reasoning")
    expect(level.get("default") is (lid == default), level.get("default"),
           f"{lid == default}: default marks default_level {default!r}", "thinking.levels.default")


def _level_order(levels: list[dict[str, Any]], toggle: Any, effort: Any) -> None:
    """none first (only with the toggle), then the effort values with thinking on, then on."""
    ids = [lv.get("id") for lv in levels]
    want_none = toggle is not None
    expect(("none" in ids) == want_none and (not want_none or ids[0] == "none"), ids,
           "none first when the template has the toggle, absent without", "thinking.levels_order")
    rest = levels[1:] if want_none else levels
    if want_none:
        none = levels[0]
        expect(none.get("enable_thinking") is False and none.get("reasoning_effort") is None
               and none.get("opens_reasoning") is False, none,
               "none: enable_thinking false, reasoning_effort null, opens_reasoning false", "thinking.levels_order")
    if effort is None:
        want = ["on"] if want_none else []
        expect([lv.get("id") for lv in rest] == want, ids, f"{['none'] + want if want_none else want}",
               "thinking.levels_order")
        return
    for level in rest:
        expect(level.get("reasoning_effort") == level.get("id") and level.get("enable_thinking") in (True, None),
               level, "an effort level passes its id with thinking on", "thinking.levels_order")


@named(*(r.id for r in all_rows() if isinstance(r, ThinkingModel)))
def thinking_table(thinking: dict[str, Any], row: ThinkingModel) -> tuple[str, ...]:
    """The model's levels, default and instructions as docs/spec/lse-api.md's table says."""
    ids = tuple(lv.get("id") for lv in thinking.get("levels") or [])
    got = (ids, thinking.get("default_level"), thinking.get("supported"))
    want = (row.levels, row.default_level, bool(row.levels))
    expect(got == want, got, f"{want} ({row.model})", row.id)
    if row.source_file is not None:
        source = thinking.get("source") or ""
        expect(posixpath.basename(source) == row.source_file, source, row.source_file, row.id)
    if row.with_instruction:
        have = tuple(lv["id"] for lv in thinking["levels"] if lv.get("instruction"))
        expect(have == row.with_instruction, have, f"instructions on {row.with_instruction} only", row.id)
    if row.opening is not None:
        have = tuple(lv["id"] for lv in thinking["levels"] if lv.get("opens_reasoning") is True)
        expect(have == row.opening, have, f"opens_reasoning on {row.opening} only (the document's example)", row.id)
    return (row.id,)


def _served(info: dict[str, Any], key: str) -> list[Any]:
    """The object under ``key`` at the top of model_info and under served."""
    served = info.get("served") if isinstance(info.get("served"), dict) else {}
    return [holder[key] for holder in (info, served) if key in holder]


@named("thinking.model_info", "defaults.model_info")
def model_info_matches(entry: dict[str, Any], reply: Any) -> None:
    """/v1/lse/model_info has the same thinking and generation_defaults as /v1/models."""
    info = reply.json if isinstance(reply.json, dict) else {}
    expect(reply.status == 200 and bool(info), f"HTTP {reply.status}", "HTTP 200 with a JSON object",
           "thinking.model_info")
    for key, row in (("thinking", "thinking.model_info"), ("generation_defaults", "defaults.model_info")):
        found = _served(info, key)
        expect(bool(found) and all(f == entry.get(key) for f in found), found, f"{key} as in /v1/models", row)


@named(*(f"defaults.{f}" for f in DEFAULT_FIELDS), "defaults.sources",
       *(r.id for r in all_rows() if isinstance(r, NeutralDefault)))
def generation_defaults_shape(gd: Any) -> tuple[str, ...]:
    """Each field with its type and source; lse_default values are the neutral defaults."""
    expect(isinstance(gd, dict), gd, "a generation_defaults object", "defaults.sources")
    sources = gd.get("sources")
    expect(isinstance(sources, dict) and set(sources) == set(DEFAULT_FIELDS), sources,
           f"sources for {', '.join(DEFAULT_FIELDS)}", "defaults.sources")
    exercised = ["defaults.sources"]
    for name in DEFAULT_FIELDS:
        value, source = gd.get(name), sources[name]
        expect(name in gd, sorted(gd), f"{name} present", f"defaults.{name}")
        expect(source in SOURCES and (source != "server_option" or name == "temperature"), source,
               f"one of {', '.join(SOURCES)} (server_option for temperature only)", "defaults.sources")
        kind = DEFAULT_KINDS.get(name, "a number")
        typed = {"an integer": is_int(value), "an integer or null": is_int(value) or value is None}.get(
            kind, is_number(value))
        expect(typed, value, f"{name}: {kind}", f"defaults.{name}")
        exercised.append(f"defaults.{name}")
        if source == "lse_default":
            expect(value == NEUTRAL[name], value, f"{NEUTRAL[name]!r}, LSE's neutral default",
                   f"defaults.neutral.{name}")
            exercised.append(f"defaults.neutral.{name}")
    return tuple(exercised)


@named("status.cpu_fallback", "fallback.status")
def status_fallback(reply: Any) -> None:
    """engine.cpu_fallback: allowed, total, events [{cause, count}], total the sum."""
    body = reply.json if isinstance(reply.json, dict) else {}
    fallback = (body.get("engine") or {}).get("cpu_fallback")
    expect(reply.status == 200 and isinstance(fallback, dict), f"HTTP {reply.status} {reply.text[:160]}",
           "HTTP 200 with engine.cpu_fallback")
    events = fallback.get("events")
    ok = isinstance(fallback.get("allowed"), bool) and is_int(fallback.get("total")) and isinstance(events, list)
    expect(ok, fallback, "{allowed: boolean, total: integer, events: [...]}")
    for event in events:
        expect(isinstance(event, dict) and isinstance(event.get("cause"), str) and is_int(event.get("count"))
               and event["count"] >= 1, event, "{cause, count >= 1}")
    expect(fallback["total"] == sum(e["count"] for e in events), fallback["total"], "the sum of the counts")


@named("health.ok", "auth.health")
def health_ok(reply: Any) -> None:
    """GET /health: 200 and ok (as text, or {"status": "ok"})."""
    body_ok = reply.text.strip() == "ok" or (isinstance(reply.json, dict) and reply.json.get("status") == "ok")
    expect(reply.status == 200 and body_ok, f"HTTP {reply.status} {reply.text[:80]!r}", "HTTP 200 ok")


@named("auth.bearer", "err.unauthorized", "override.api_key")
def auth_refused(reply: Any) -> None:
    """A /v1 route without the right bearer key: 401 authentication_error invalid_api_key."""
    err = reply.error
    got = (reply.status, err.get("type"), err.get("code"))
    want = (401, "authentication_error", "invalid_api_key")
    expect(got == want, f"HTTP {got}", f"HTTP {want}")


@named("auth.open")
def auth_open(reply: Any) -> None:
    """Without --api-key the API is open."""
    expect(reply.status == 200, f"HTTP {reply.status} {reply.text[:120]}", "HTTP 200 without a key")
