"""The Messages routes' shapes as JSON Schema, for /openapi.json: the
request's fields (the checks themselves are ``request.to_chat``'s), the
Message, the token count and Anthropic's error envelope."""

from __future__ import annotations

from typing import Any

from lse.runtime.anthropic.errors import ERROR_TYPES

Schema = dict[str, Any]
STR: Schema = {"type": "string"}
INT: Schema = {"type": "integer"}
OBJ: Schema = {"type": "object"}
ARR: Schema = {"type": "array"}
UNIT: Schema = {"type": "number", "minimum": 0, "maximum": 1}

_COMMON: Schema = {
    "model": {"type": "string", "minLength": 1},
    "messages": {"type": "array", "minItems": 1, "items": OBJ},
    "system": {"anyOf": [STR, {"type": "array", "items": OBJ}]},
    "tools": {"type": "array", "items": OBJ},
    "tool_choice": OBJ,
    "thinking": OBJ,
}
MESSAGES_REQUEST: Schema = {
    "type": "object", "required": ["model", "max_tokens", "messages"],
    "properties": {**_COMMON, "max_tokens": {"type": "integer", "minimum": 1},
                   "stop_sequences": {"type": "array", "items": {"type": "string", "minLength": 1}, "maxItems": 16},
                   "temperature": UNIT, "top_p": UNIT, "top_k": {"type": "integer", "minimum": 0},
                   "stream": {"type": "boolean"}, "metadata": OBJ},
}
COUNT_TOKENS_REQUEST: Schema = {"type": "object", "required": ["model", "messages"], "properties": _COMMON}
USAGE: Schema = {"type": "object", "required": ["input_tokens", "output_tokens"],
                 "properties": {"input_tokens": INT, "output_tokens": INT, "cache_read_input_tokens": INT}}
MESSAGE: Schema = {
    "type": "object", "required": ["id", "type", "role", "model", "content", "stop_reason", "stop_sequence", "usage"],
    "properties": {"id": STR, "type": {"const": "message"}, "role": {"const": "assistant"}, "model": STR,
                   "content": {"type": "array", "items": OBJ},
                   "stop_reason": {"enum": ["end_turn", "max_tokens", "stop_sequence", "tool_use",
                                            "model_context_window_exceeded", None]},
                   "stop_sequence": {"type": ["string", "null"]}, "usage": USAGE, "lse_context": OBJ},
}
TOKEN_COUNT: Schema = {"type": "object", "required": ["input_tokens"], "properties": {"input_tokens": INT}}
ERROR: Schema = {
    "type": "object", "required": ["type", "error"],
    "properties": {"type": {"const": "error"},
                   "error": {"type": "object", "required": ["type", "message"],
                             "properties": {"type": {"enum": sorted(set(ERROR_TYPES.values()) | {"api_error"})},
                                            "message": STR}}},
}
EVENT: Schema = {
    "type": "object", "properties": {"event": STR, "data": {"type": "string", "contentMediaType": "application/json"}},
    "required": ["event", "data"],
    "description": "event: <type> with data: <the event as JSON>: message_start, content_block_start, "
                   "content_block_delta, content_block_stop, message_delta, message_stop; ping while waiting; "
                   "error after a failure",
}
