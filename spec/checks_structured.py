"""Checks of structured output: JSON replies, schema matches, forced and
forbidden tool calls, logit_bias, one model by id, and the tokenizer routes.
Pure functions of HTTP data, like every check."""

from __future__ import annotations

import json
from typing import Any

from lse.spec.checks import choices_of, expect, is_int, named, output_of


def _parsed(text: Any) -> tuple[bool, Any]:
    try:
        return True, json.loads(text)
    except (TypeError, ValueError):
        return False, None


def _stopped(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The choices that ended on their own (a length ending may cut the JSON)."""
    return [c for c in choices_of(body) if c.get("finish_reason") == "stop"]


@named("structured.json_object", "req.response_format")
def json_object_reply(body: dict[str, Any]) -> tuple[str, ...]:
    """Every choice that ended with finish_reason stop is a JSON object."""
    for choice in _stopped(body):
        ok, value = _parsed(output_of(choice))
        expect(ok and isinstance(value, dict), output_of(choice), "a JSON object")
    return ("structured.json_object", "req.response_format") if _stopped(body) else ()


def matches(value: Any, schema: dict[str, Any]) -> bool:
    """The subset of JSON Schema the scenarios use: type, enum, properties,
    required, additionalProperties false, items, maxItems, minimum, maximum."""
    if "enum" in schema and value not in schema["enum"]:
        return False
    kind = schema.get("type")
    if kind == "object":
        props = schema.get("properties", {})
        return (isinstance(value, dict) and all(k in value for k in schema.get("required", ()))
                and (schema.get("additionalProperties", True) is not False or set(value) <= set(props))
                and all(matches(v, props[k]) for k, v in value.items() if k in props))
    if kind == "array":
        return (isinstance(value, list) and len(value) <= schema.get("maxItems", len(value))
                and all(matches(v, schema.get("items", {})) for v in value))
    if kind == "integer":
        return (is_int(value) and value >= schema.get("minimum", value) and value <= schema.get("maximum", value))
    return kind is None or (kind == "string" and isinstance(value, str))


@named("structured.json_schema", "req.response_format")
def schema_reply(body: dict[str, Any], schema: dict[str, Any]) -> tuple[str, ...]:
    """Every choice that ended with finish_reason stop matches the schema."""
    for choice in _stopped(body):
        ok, value = _parsed(output_of(choice))
        expect(ok and matches(value, schema), output_of(choice), f"JSON matching {json.dumps(schema)[:150]}")
    return ("structured.json_schema", "req.response_format") if _stopped(body) else ()


@named("tools.forced", "req.chat.tool_choice")
def forced_calls(body: dict[str, Any], tools: dict[str, dict[str, Any]]) -> tuple[str, ...]:
    """A reply that ended on its own is calls to ``tools`` (name -> parameters), arguments matching."""
    for choice in _stopped(body) + [c for c in choices_of(body) if c.get("finish_reason") == "tool_calls"]:
        expect(choice.get("finish_reason") == "tool_calls", choice.get("finish_reason"), "finish_reason tool_calls")
        calls = (choice.get("message") or {}).get("tool_calls") or []
        expect(len(calls) >= 1, choice.get("message"), "one or more tool_calls")
        for call in calls:
            fn = call.get("function") or {}
            expect(fn.get("name") in tools, fn.get("name"), f"a call to one of {sorted(tools)}")
            ok, args = _parsed(fn.get("arguments"))
            expect(ok and matches(args, tools[fn["name"]]), fn.get("arguments"), "arguments matching the parameters")
    return ("tools.forced", "req.chat.tool_choice") if choices_of(body) else ()


@named("tools.none", "req.chat.tool_choice")
def no_calls(body: dict[str, Any]) -> None:
    """tool_choice none: no choice has tool_calls."""
    for choice in choices_of(body):
        calls = (choice.get("message") or {}).get("tool_calls")
        expect(not calls and choice.get("finish_reason") != "tool_calls", choice, "no tool_calls")


@named("structured.logit_bias_ban", "req.logit_bias")
def ban_changes_reply(plain: str, banned: str, token: int) -> None:
    """The greedy reply changes when its first token is banned."""
    expect(plain != banned, banned, f"a reply other than {plain!r} with token {token} at -100")


@named("structured.logit_bias_force", "req.logit_bias")
def force_repeats_token(reply: str, token_text: str) -> None:
    """With 100 on one token every token is that one: the reply is its text repeated."""
    count = len(reply) // max(1, len(token_text))
    expect(bool(token_text) and count >= 1 and reply == token_text * count, reply, f"{token_text!r} repeated")


@named("surface.model_by_id")
def model_entry_by_id(entry: dict[str, Any], reply: Any) -> None:
    """GET /v1/models/{id}: HTTP 200 and the list's entry."""
    expect(reply.status == 200 and reply.json == entry, f"HTTP {reply.status} {reply.text[:200]}",
           f"HTTP 200 {json.dumps(entry)[:200]}")


@named("surface.tokenizer_routes")
def tokenizer_round_trip(tokens: Any, text: Any, info: Any, eos: Any, original: str) -> None:
    """/tokenize then /detokenize gives the text back; tokenizer_info's eos_token tokenizes to its id."""
    ids = (tokens.json or {}).get("tokens") if tokens.status == 200 else None
    expect(isinstance(ids, list) and ids and all(is_int(t) for t in ids), tokens.text[:200], '{"tokens": [ids]}')
    expect(text.status == 200 and (text.json or {}).get("content") == original, text.text[:200],
           f'{{"content": {original!r}}}')
    body = info.json if info.status == 200 and isinstance(info.json, dict) else {}
    expect(isinstance(body.get("eos_token"), str), info.text[:200], "tokenizer_info with an eos_token string")
    expect((eos.json or {}).get("tokens") == [body.get("eos_token_id")], eos.text[:200],
           f"/tokenize of eos_token giving [{body.get('eos_token_id')}]")
