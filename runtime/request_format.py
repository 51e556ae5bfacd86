"""The request fields that shape what may be sampled: ``response_format`` and
``logit_bias``, checked (both endpoints; on /v1/completions response_format
is an LSE extension).

Settled here (the spec leaves these open):
- response_format ``{"type": "text"}`` is the default; ``json_object`` is any
  JSON object; ``json_schema`` takes ``{"name", "schema", "strict",
  "description"}`` as OpenAI does. A missing ``schema`` means any JSON object.
  ``strict`` is accepted (a boolean) and changes nothing: LSE always decodes
  under the schema, so the reply matches it whatever strict says.
  Every response_format error names ``response_format``; the message says
  which part.
- logit_bias keys are token ids as strings (JSON keys; ints from the
  in-process API are accepted too), values numbers in [-100, 100]. The
  vocabulary bound is checked with the model (runtime/prepare.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from lse.runtime.errors import invalid
from lse.runtime.structured import GrammarError, check_schema

LOGIT_BIAS_BOUND = 100.0
FORMAT_TYPES = ("text", "json_object", "json_schema")


@dataclass(frozen=True)
class ResponseFormat:
    """A JSON reply: ``schema`` is the JSON schema it must match."""

    type: str  # "json_object" or "json_schema"
    schema: dict[str, Any]


def response_format(body: dict[str, Any]) -> ResponseFormat | None:
    """None for plain text (absent, null or {"type": "text"})."""
    fmt = body.get("response_format")
    if fmt is None:
        return None
    if not isinstance(fmt, dict):
        raise _format_error(f"response_format must be an object; got {_kind(fmt)}")
    kind = fmt.get("type")
    if kind not in FORMAT_TYPES:
        raise _format_error(f"response_format.type must be one of {', '.join(FORMAT_TYPES)}; got {_kind(kind)}")
    if kind == "text":
        return None
    if kind == "json_object":
        return ResponseFormat(kind, {"type": "object"})
    spec = fmt.get("json_schema")
    if not isinstance(spec, dict):
        raise _format_error(f"response_format.json_schema must be an object; got {_kind(spec)}")
    for key, kinds, what in (("name", str, "a string"), ("description", str, "a string"),
                             ("strict", bool, "a boolean"), ("schema", dict, "an object")):
        value = spec.get(key)
        if value is not None and not isinstance(value, kinds):
            raise _format_error(f"response_format.json_schema.{key} must be {what}; got {_kind(value)}")
    schema = spec.get("schema")
    if schema is None:
        return ResponseFormat(kind, {"type": "object"})
    try:
        check_schema(schema)
    except GrammarError as e:
        raise _format_error(f"response_format: the schema cannot be enforced by LSE's constrained decoding "
                            f"(llguidance): {e}") from e
    return ResponseFormat(kind, schema)


def logit_bias(body: dict[str, Any]) -> dict[int, float] | None:
    """{token id: bias}; None when absent, null or empty."""
    bias = body.get("logit_bias")
    if bias is None:
        return None
    if not isinstance(bias, dict):
        raise invalid("logit_bias", f"logit_bias must be an object of token id -> bias; got {_kind(bias)}")
    out: dict[int, float] = {}
    for key, value in bias.items():
        token = _token_id(key)
        if token is None:
            raise invalid("logit_bias", f"logit_bias keys must be token ids (nonnegative integers); "
                          f"got {str(key)[:40]!r}")
        if (isinstance(value, bool) or not isinstance(value, (int, float)) or value != value
                or not -LOGIT_BIAS_BOUND <= value <= LOGIT_BIAS_BOUND):
            raise invalid("logit_bias", f"logit_bias values must be numbers in [-100, 100]; "
                          f"got {_kind(value) if not isinstance(value, (int, float)) else value} for {key}")
        out[token] = float(value)
    return out or None


def check_logit_bias_vocab(bias: dict[int, float] | None, vocab: int) -> None:
    for token in bias or {}:
        if token >= vocab:
            raise invalid("logit_bias", f"logit_bias token id {token} is outside the vocabulary (0..{vocab - 1})")


def _token_id(key: Any) -> int | None:
    if isinstance(key, int) and not isinstance(key, bool):
        return key if key >= 0 else None
    if isinstance(key, str) and key.isascii() and key.isdigit():
        return int(key)
    return None


def _format_error(message: str):
    return invalid("response_format", message)


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, str):
        return repr(value[:40])
    names = {bool: "a boolean", int: "a number", float: "a number", list: "an array", dict: "an object"}
    return names.get(type(value), type(value).__name__)
