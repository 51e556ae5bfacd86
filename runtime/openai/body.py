"""Request bodies as JSON bytes: parsed here for the HTTP server and the C API
alike, so a malformed body gets the same 400 over both."""

from __future__ import annotations

import json
from typing import Any

from lse.runtime.errors import LseError

# Compact separators keep SSE frames and C API events small; ensure_ascii off
# sends UTF-8 as is (json escapes control characters, so a frame never holds a
# raw newline).
_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))

_JSON_KIND = {list: "an array", str: "a string", int: "a number", float: "a number", bool: "a boolean",
              type(None): "null"}


def parse_json_object(data: bytes | bytearray | str) -> dict[str, Any]:
    """``data`` parsed as a JSON object, or a 400: ``invalid_json`` when it is
    not JSON, ``invalid_request`` when it is JSON but not an object."""
    try:
        body = json.loads(data, parse_constant=_reject_constant)
    except (ValueError, RecursionError) as exc:  # UnicodeDecodeError is a ValueError
        raise LseError("malformed_json", f"the request body is not valid JSON: {exc}") from None
    if not isinstance(body, dict):
        raise LseError("invalid_request", f"the request body must be a JSON object, not {_JSON_KIND[type(body)]}")
    return body


def dumps(obj: Any) -> bytes:
    """``obj`` as compact UTF-8 JSON."""
    return _ENCODER.encode(obj).encode("utf-8")


def _reject_constant(name: str) -> None:
    # Python's json takes NaN and Infinity; JSON (RFC 8259) has no such values.
    raise ValueError(f"{name} is not a JSON value")
