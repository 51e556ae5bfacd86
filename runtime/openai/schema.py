"""The wire shapes as JSON Schema (2020-12, the dialect of OpenAPI 3.1).

The HTTP server publishes these in /openapi.json. Bounds come from the
validator's own constants (lse.runtime.openai.request) and the error envelope from
the one error table (lse.runtime.errors), so neither is restated here;
tests/unit/test_openapi.py drives every documented field's valid and invalid
values (lse.spec rows) through both ``parse_request`` and these schemas and
fails when they disagree.

Request schemas say what ``parse_request`` checks and no more: unknown
fields are allowed (OpenAI clients send extras), and checks that need the
served model (thinking level names, the context, --max-tokens) are left to
the documented 400s.
"""

from __future__ import annotations

from typing import Any

from lse.runtime.chat.template import ROLES
from lse.runtime.errors import ERROR_TABLE
from lse.runtime.openai.request import MAX_COMPLETION_LOGPROBS, MAX_N, MAX_STOPS, MAX_TOP_LOGPROBS, PENALTY_BOUND
from lse.runtime.request_format import LOGIT_BIAS_BOUND

Schema = dict[str, Any]
INT: Schema = {"type": "integer"}
NUM: Schema = {"type": "number"}
STR: Schema = {"type": "string"}
BOOL: Schema = {"type": "boolean"}
OBJ: Schema = {"type": "object"}


def nullable(schema: Schema) -> Schema:
    """``schema`` or null: every optional request field may be sent as null (not sent)."""
    return {"anyOf": [schema, {"type": "null"}]}


def obj(properties: dict[str, Schema], required: tuple[str, ...] = (), **extra: Any) -> Schema:
    return {"type": "object", "properties": properties, "required": list(required), **extra}


# ---- requests ------------------------------------------------------------------

_TEXT_PART = obj({"type": {"const": "text"}, "text": STR}, ("type", "text"))
_CONTENT: Schema = {"anyOf": [STR, {"type": "array", "items": _TEXT_PART}]}
_CALL_IN = obj({"id": nullable(STR), "type": {"const": "function"},
                "function": obj({"name": STR, "arguments": {"anyOf": [STR, OBJ]}}, ("name",))}, ("function",))


def _message(role: str) -> Schema:
    """One message of ``role`` as runtime/chat/template.py checks it."""
    props: dict[str, Schema] = {"role": {"const": role}, "name": nullable(STR),
                                "content": nullable(_CONTENT) if role == "assistant" else _CONTENT}
    required = ["role"] if role == "assistant" else ["role", "content"]
    if role == "assistant":
        props |= {"tool_calls": nullable({"type": "array", "items": _CALL_IN}), "reasoning_content": {}}
    if role == "tool":
        props["tool_call_id"] = STR
        required.append("tool_call_id")
    return obj(props, tuple(required))


_MESSAGE: Schema = {"oneOf": [_message(role) for role in ROLES]}
_TOOL = obj({"type": {"const": "function"},
             "function": obj({"name": {"type": "string", "minLength": 1}, "description": nullable(STR),
                              "parameters": nullable(OBJ)}, ("name",))}, ("type", "function"))
_TOOL_CHOICE = {"anyOf": [{"enum": ["none", "auto", "required"]},
                          obj({"type": {"const": "function"}, "function": obj({"name": STR}, ("name",))},
                              ("type", "function"))]}
_TOKEN_IDS: Schema = {"type": "array", "items": {"type": "integer", "minimum": 0}, "minItems": 1}
_PROMPT = {"anyOf": [{"type": "string", "minLength": 1}, _TOKEN_IDS,
                     {"type": "array", "items": {"type": "string", "minLength": 1}, "minItems": 1},
                     {"type": "array", "items": _TOKEN_IDS, "minItems": 1}]}
_STOP = {"anyOf": [{"type": "string", "minLength": 1},
                   {"type": "array", "items": {"type": "string", "minLength": 1}, "maxItems": MAX_STOPS}]}
_PENALTY = {"type": "number", "minimum": -PENALTY_BOUND, "maximum": PENALTY_BOUND}

# Fields of both endpoints, in OpenAI's order; LSE's extensions after the marker.
_COMMON: dict[str, Schema] = {
    "model": STR,
    "frequency_penalty": _PENALTY,
    # token id (a decimal string key) -> bias in [-100, 100] (lse.runtime.request_format)
    "logit_bias": {"type": "object", "propertyNames": {"pattern": "^[0-9]+$"},
                   "additionalProperties": {"type": "number", "minimum": -LOGIT_BIAS_BOUND,
                                            "maximum": LOGIT_BIAS_BOUND}},
    # text, any JSON object, or JSON matching a schema; keywords the constrained
    # decoder cannot enforce are refused by the server, not stated here.
    "response_format": {"oneOf": [
        obj({"type": {"const": "text"}}, ("type",)),
        obj({"type": {"const": "json_object"}}, ("type",)),
        obj({"type": {"const": "json_schema"},
             # name is optional: OpenAI requires it, LSE does not use it (lse.runtime.request_format)
             "json_schema": obj({"name": nullable(STR), "description": nullable(STR), "schema": nullable(OBJ),
                                 "strict": nullable(BOOL)})},
            ("type", "json_schema"))]},
    "max_tokens": {"type": "integer", "minimum": 1},
    "n": {"type": "integer", "minimum": 1, "maximum": MAX_N},
    "presence_penalty": _PENALTY,
    "seed": {"type": "integer", "minimum": 0},
    "stop": _STOP,
    "stream": BOOL,
    "stream_options": obj({"include_usage": nullable(BOOL)}),
    "temperature": NUM,
    "top_p": {"type": "number", "minimum": 0, "maximum": 1},
    "user": {},
    # ---- LSE's extensions (docs/spec/lse-api.md) ----
    "max_completion_tokens": {"type": "integer", "minimum": 1},
    "top_k": {"type": "integer", "minimum": -1},
    "min_p": {"type": "number", "minimum": 0, "maximum": 1},
    "repetition_penalty": {"type": "number", "exclusiveMinimum": 0},
    # where a reply may end, vLLM's fields (runtime/openai/controls.py)
    "ignore_eos": BOOL,
    "min_tokens": {"type": "integer", "minimum": 0},
    "stop_token_ids": {"type": "array", "items": {"type": "integer", "minimum": 0}, "maxItems": 64},
    "lse_speculative": BOOL,  # false: no speculative decoding for this request (runtime/speculative.py)
    "reasoning_effort": STR,
    "thinking_level": STR,
    "chat_template_kwargs": OBJ,
    "reasoning": OBJ,
    "enable_thinking": BOOL,
    "thinking": {"anyOf": [BOOL, obj({"type": {"enum": ["enabled", "disabled"]}}, ("type",))]},
}


def _when(field: str, value: Schema, then: dict[str, Schema]) -> Schema:
    """A rule across fields: when ``field`` is sent as ``value``, the fields in ``then`` must be sent so."""
    return {"if": {"required": [field], "properties": {field: value}},
            "then": {"required": list(then), "properties": then}}


def _request(first: dict[str, Schema], own: dict[str, Schema], required: str, rules: list[Schema]) -> Schema:
    props = {**first, **_COMMON, **own}
    stream_rule = _when("stream_options", OBJ, {"stream": {"const": True}})
    return obj({k: (v if k == required else nullable(v)) for k, v in props.items()}, (required,),
               allOf=[stream_rule, *rules])


# Scoring mode: max_tokens (or max_completion_tokens) 0 only with echo: true and logprobs.
_SCORING = [_when(name, {"const": 0}, {"echo": {"const": True}, "logprobs": INT})
            for name in ("max_tokens", "max_completion_tokens")]
CHAT_REQUEST = _request({"messages": {"type": "array", "items": _MESSAGE, "minItems": 1}}, {
    "logprobs": BOOL,
    "top_logprobs": {"type": "integer", "minimum": 0, "maximum": MAX_TOP_LOGPROBS},
    "tools": {"type": "array", "items": _TOOL},
    "tool_choice": _TOOL_CHOICE,
}, "messages", [_when("top_logprobs", INT, {"logprobs": {"const": True}}),
                _when("tool_choice", {"enum": ["required"]}, {"tools": {"type": "array", "minItems": 1}}),
                _when("tool_choice", OBJ, {"tools": {"type": "array", "minItems": 1}})])
COMPLETION_REQUEST = _request({"prompt": _PROMPT}, {
    "echo": BOOL,
    "logprobs": {"type": "integer", "minimum": 0, "maximum": MAX_COMPLETION_LOGPROBS},
    # 0 is scoring mode (with echo and logprobs), so 0 is allowed here.
    "max_tokens": {"type": "integer", "minimum": 0},
    "max_completion_tokens": {"type": "integer", "minimum": 0},
    "parse_special": BOOL,
}, "prompt", _SCORING)

# ---- replies ----------------------------------------------------------------------

_USAGE = obj({"prompt_tokens": INT, "completion_tokens": INT, "total_tokens": INT,
              "prompt_tokens_details": obj({"cached_tokens": INT}),
              "completion_tokens_details": obj({"reasoning_tokens": INT})},
             ("prompt_tokens", "completion_tokens", "total_tokens"))
_EXTRAS: dict[str, Schema] = {
    "usage": _USAGE,
    "lse_context": obj({"tokens_used": INT, "context_length": INT, "tokens_remaining": INT},
                       ("tokens_used", "context_length", "tokens_remaining")),
    "timings": obj({k: INT for k in ("prompt_n", "predicted_n", "cached_n", "draft_n", "draft_n_accepted")}
                   | {k: nullable(NUM) for k in ("prompt_ms", "prompt_per_second", "predicted_ms",
                                                 "predicted_per_second")}),
    "lse_warnings": {"type": "array", "items": obj({"type": {"const": "cpu_fallback"}, "cause": STR,
                                                    "count": INT}, ("type", "cause", "count"))},
}
_FINISH = {"finish_reason": nullable({"enum": ["stop", "length", "tool_calls"]}),
           "stop_reason": nullable({"enum": ["stop_token", "stop_sequence", "max_tokens", "context_full",
                                             "cancelled"]})}
_TOP_CHAT = obj({"token": STR, "logprob": NUM, "bytes": {"type": "array", "items": INT}}, ("token", "logprob"))
_CHAT_LOGPROBS = nullable(obj({"content": {"type": "array", "items": {
    **_TOP_CHAT, "properties": {**_TOP_CHAT["properties"], "top_logprobs": {"type": "array", "items": _TOP_CHAT}}}},
    "refusal": {"type": "null"}}))
_COMPLETION_LOGPROBS = nullable(obj({
    "tokens": {"type": "array", "items": STR},
    "token_logprobs": {"type": "array", "items": nullable(NUM)},
    "top_logprobs": {"type": "array", "items": nullable({"type": "object", "additionalProperties": NUM})},
    "text_offset": {"type": "array", "items": INT}}))
_TOOL_CALL = obj({"id": nullable(STR), "type": {"const": "function"},
                  "function": obj({"name": STR, "arguments": STR})})
_CHAT_MESSAGE = obj({"role": {"const": "assistant"}, "content": nullable(STR), "refusal": {"type": "null"},
                     "reasoning_content": STR,
                     "tool_calls": {"type": "array", "items": _TOOL_CALL}}, ("role", "content"))


def _reply(obj_name: str, choice: Schema, chunk: bool = False) -> Schema:
    # A chunk's usage is null under stream_options.include_usage (OpenAI's
    # shape: the usage rides on a last chunk of its own).
    extras = {**_EXTRAS, "usage": nullable(_USAGE)} if chunk else _EXTRAS
    return obj({"id": STR, "object": {"const": obj_name}, "created": INT, "model": STR,
                "choices": {"type": "array", "items": choice}, **extras},
               ("id", "object", "created", "model", "choices"))


CHAT_RESPONSE = _reply("chat.completion", obj(
    {"index": INT, "message": _CHAT_MESSAGE, "logprobs": _CHAT_LOGPROBS, **_FINISH},
    ("index", "message", "finish_reason")))
CHAT_CHUNK = _reply("chat.completion.chunk", obj(
    {"index": INT, "delta": obj({"role": STR, "content": nullable(STR), "reasoning_content": STR,
                                 "tool_calls": {"type": "array"}}),
     "logprobs": _CHAT_LOGPROBS, **_FINISH}, ("index", "delta")), chunk=True)
_TEXT_CHOICE = obj({"index": INT, "text": STR, "reasoning_content": STR, "logprobs": _COMPLETION_LOGPROBS,
                    **_FINISH}, ("index", "text"))
COMPLETION_RESPONSE = _reply("text_completion", _TEXT_CHOICE)
COMPLETION_CHUNK = _reply("text_completion", _TEXT_CHOICE, chunk=True)

_LEVEL = obj({"id": STR, "enable_thinking": nullable(BOOL), "reasoning_effort": nullable(STR),
              "instruction": nullable(STR), "opens_reasoning": BOOL, "default": BOOL})
THINKING = obj({"supported": BOOL, "source": nullable(STR), "toggle": nullable(STR), "effort": nullable(STR),
                "default_level": nullable(STR), "levels": {"type": "array", "items": _LEVEL}},
               ("supported", "levels", "default_level"))
GENERATION_DEFAULTS = obj({"temperature": NUM, "top_k": INT, "top_p": NUM, "min_p": NUM,
                           "repetition_penalty": NUM, "presence_penalty": NUM, "max_new_tokens": nullable(INT),
                           "max_length": nullable(INT), "sources": {"type": "object",
                                                                    "additionalProperties": STR}})
_MODEL = {"id": STR, "object": {"const": "model"}, "created": INT, "owned_by": STR, "context_length": INT,
          "thinking": THINKING, "generation_defaults": GENERATION_DEFAULTS}
MODELS = obj({"object": {"const": "list"},
              "data": {"type": "array", "items": obj(_MODEL, ("id", "object", "created", "owned_by"))}},
             ("object", "data"))
MODEL = obj(_MODEL, ("id", "object", "created", "owned_by"))
TOKENIZE_REQUEST = obj({"content": nullable(STR), "prompt": nullable(STR), "add_special": nullable(BOOL),
                        "add_special_tokens": nullable(BOOL)}, ())
TOKENS = obj({"tokens": {"type": "array", "items": INT}}, ("tokens",))
DETOKENIZE_REQUEST = obj({"tokens": {"type": "array", "items": INT}}, ("tokens",))
TEXT = obj({"content": STR, "prompt": STR}, ("content",))
MODEL_INFO = obj({**_MODEL, "served": OBJ}, ("id", "context_length", "thinking", "generation_defaults"))
STATUS = obj({"engine": obj({
    "device": STR, "slots": INT, "active": INT, "queued": INT, "context_length": INT, "kv_tokens": INT,
    "kv_capacity": INT, "cpu_fallback": obj({"allowed": BOOL, "total": INT, "events": {
        "type": "array", "items": obj({"cause": STR, "count": INT}, ("cause", "count"))}},
        ("allowed", "total", "events")),
    "speculative": obj({"mode": STR, "steps": INT, "proposed": INT, "accepted": INT, "verify_cost": nullable(NUM)},
                       ("mode", "steps", "proposed", "accepted"))},
    ("device", "slots", "active", "queued", "cpu_fallback"))}, ("engine",))
HEALTH = obj({"status": {"enum": ["ok", "loading", "error", "shutting_down"]}}, ("status",))


def error_schema(status: int) -> Schema:
    """The OpenAI envelope as the error table allows it for ``status``."""
    rows = [(etype, code) for st, etype, code in ERROR_TABLE.values() if st == status]
    codes = sorted({c for _, c in rows if c is not None})
    code: Schema = nullable({"type": "string"}) if any(c is None for _, c in rows) or status == 400 else STR
    if codes and status != 400:  # a field's 400 may carry a named code (lse-api.md), so 400's stay open
        code = {"enum": codes}
    return obj({"error": obj({"message": STR, "type": {"enum": sorted({t for t, _ in rows})},
                              "param": nullable(STR), "code": code}, ("message", "type", "param", "code"))},
               ("error",))


ERROR_STATUSES = tuple(sorted({status for status, _, _ in ERROR_TABLE.values()}))
