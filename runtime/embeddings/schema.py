"""/v1/embeddings' shapes as JSON Schema, for /openapi.json (docs/api.md,
"Embeddings", has them in words; body.py is the validator)."""

from __future__ import annotations

from lse.runtime.embeddings.body import MAX_INPUTS
from lse.runtime.openai.schema import INT, NUM, STR, Schema, nullable, obj

_IDS = {"type": "array", "items": {"type": "integer", "minimum": 0}, "minItems": 1}
REQUEST: Schema = obj({
    "input": {"anyOf": [{"type": "string", "minLength": 1},
                        {"type": "array", "items": {"type": "string", "minLength": 1}, "minItems": 1,
                         "maxItems": MAX_INPUTS},
                        _IDS, {"type": "array", "items": _IDS, "minItems": 1, "maxItems": MAX_INPUTS}]},
    "model": nullable(STR),
    "encoding_format": nullable({"enum": ["float", "base64"]}),
    "dimensions": nullable({"type": "integer", "minimum": 1}),  # at most the model's hidden size
    "user": nullable(STR),
}, ("input",))
REPLY: Schema = obj({
    "object": {"const": "list"},
    "data": {"type": "array", "items": obj({
        "object": {"const": "embedding"}, "index": INT,
        # floats, or base64 of the little-endian float32 bytes (encoding_format)
        "embedding": {"anyOf": [{"type": "array", "items": NUM}, STR]}}, ("object", "index", "embedding"))},
    "model": STR,
    "usage": obj({"prompt_tokens": INT, "total_tokens": INT}, ("prompt_tokens", "total_tokens")),
}, ("object", "data", "model", "usage"))
