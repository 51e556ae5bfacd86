"""The Responses API's shapes as JSON Schema, for /openapi.json (the
request's fields and the reply; docs/api-responses.md has them in words)."""

from __future__ import annotations

from lse.runtime.openai.schema import BOOL, INT, NUM, OBJ, STR, Schema, nullable, obj

_ARRAY = {"type": "array"}
_PART = obj({"type": {"enum": ["input_text", "output_text", "text"]}, "text": STR}, ("type", "text"))
_ITEM = {"anyOf": [
    obj({"type": {"const": "message"}, "role": {"enum": ["user", "system", "developer", "assistant"]},
         "content": {"anyOf": [STR, {"type": "array", "items": _PART}]}}, ("role", "content")),
    obj({"type": {"const": "function_call"}, "call_id": STR, "name": STR, "arguments": STR},
        ("type", "call_id", "name")),
    obj({"type": {"const": "function_call_output"}, "call_id": STR, "output": {"anyOf": [STR, _ARRAY]}},
        ("type", "call_id", "output")),
    obj({"type": {"const": "reasoning"}, "content": _ARRAY}, ("type",)),
]}
_TOOL = obj({"type": {"const": "function"}, "name": STR, "description": STR, "parameters": OBJ, "strict": BOOL},
            ("type", "name"))
_FORMAT = obj({"type": {"enum": ["text", "json_object", "json_schema"]}, "name": STR, "schema": OBJ,
               "strict": BOOL, "description": STR}, ("type",))

REQUEST: Schema = obj({
    "input": {"anyOf": [STR, {"type": "array", "items": _ITEM, "minItems": 1}]},
    "instructions": nullable(STR), "model": nullable(STR), "max_output_tokens": nullable({"type": "integer", "minimum": 1}),
    "temperature": nullable(NUM), "top_p": nullable({"type": "number", "minimum": 0, "maximum": 1}),
    # null is "not sent" on every optional field, as on chat
    "tools": nullable({"type": "array", "items": _TOOL}),
    "tool_choice": nullable({"anyOf": [{"enum": ["none", "auto", "required"]},
                                       obj({"type": {"const": "function"}, "name": STR}, ("type", "name"))]}),
    "parallel_tool_calls": nullable(BOOL), "reasoning": nullable(obj({"effort": nullable(STR)})),
    "text": nullable(obj({"format": _FORMAT})), "stream": nullable(BOOL), "store": nullable(BOOL),
    "previous_response_id": nullable(STR), "metadata": nullable(OBJ),
}, ("input",))

_USAGE = obj({"input_tokens": INT, "input_tokens_details": obj({"cached_tokens": INT, "cache_write_tokens": INT}),
              "output_tokens": INT, "output_tokens_details": obj({"reasoning_tokens": INT}), "total_tokens": INT},
             ("input_tokens", "output_tokens", "total_tokens"))
RESPONSE: Schema = obj({
    "id": STR, "object": {"const": "response"}, "created_at": INT,
    "status": {"enum": ["completed", "incomplete", "in_progress", "cancelled", "failed"]},
    "error": nullable(obj({"code": STR, "message": STR})), "incomplete_details": nullable(obj({"reason": STR})),
    "output": {"type": "array", "items": obj({"type": {"enum": ["message", "reasoning", "function_call"]},
                                              "id": STR}, ("type", "id"))},
    "usage": nullable(_USAGE), "model": STR, "previous_response_id": nullable(STR), "store": BOOL,
}, ("id", "object", "created_at", "status", "output"))
