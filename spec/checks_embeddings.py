"""Checks of POST /v1/embeddings (rows_embeddings): the reply's members and
usage, the vectors (float and base64, dimensions, one input against
several, ids against the string they tokenize to), the scheduler left idle,
/openapi.json's listing and error answers. Pure functions of HTTP data."""

from __future__ import annotations

import base64
import math
import struct
from typing import Any

from lse.spec.checks import expect, is_int, is_number, named

# Vectors of one input computed twice (alone and among others, as ids or as
# the string they tokenize to) run the same prefill: float32 rounding at most.
TOLERANCE = 1e-5
REPLY_KEYS = ["data", "model", "object", "usage"]
ITEM_KEYS = ["embedding", "index", "object"]


def vectors(body: dict[str, Any]) -> list[list[float]]:
    return [item["embedding"] for item in body["data"]]


def _norm(vector: list[float]) -> float:
    return math.sqrt(sum(v * v for v in vector))


def _close(a: list[float], b: list[float]) -> bool:
    return len(a) == len(b) and all(abs(x - y) <= TOLERANCE for x, y in zip(a, b))


@named("embeddings.input.string", "embeddings.input.strings", "embeddings.input.ids", "embeddings.encoding.float",
       "embeddings.encoding.base64", "embeddings.dimensions", "embeddings.model", "embeddings.scheduling",
       "embeddings.user", dynamic=True)
def embeddings_accepted(reply: Any) -> None:
    """HTTP 200 with a list object."""
    expect(reply.status == 200 and (reply.json or {}).get("object") == "list",
           f"HTTP {reply.status} {reply.text[:200]}", "HTTP 200, {object: list, ...}")


@named("embeddings.reply", "embeddings.model")
def embeddings_reply(body: Any, inputs: int, tokens: int, model: str | None) -> tuple[str, ...]:
    """The members exactly, one item per input in order, usage the inputs' tokens, the model echoed."""
    expect(isinstance(body, dict) and sorted(body) == REPLY_KEYS, sorted(body) if isinstance(body, dict) else body,
           f"exactly the members {REPLY_KEYS}")
    expect(body["object"] == "list", body["object"], "object list")
    data = body["data"]
    expect(isinstance(data, list) and len(data) == inputs, len(data) if isinstance(data, list) else data,
           f"data: {inputs} items")
    for i, item in enumerate(data):
        expect(isinstance(item, dict) and sorted(item) == ITEM_KEYS, item if not isinstance(item, dict) else
               sorted(item), f"data[{i}]: exactly the members {ITEM_KEYS}")
        expect(item["object"] == "embedding" and is_int(item["index"]) and item["index"] == i,
               (item["object"], item["index"]), f"data[{i}]: object embedding, index {i}")
    usage = body["usage"]
    expect(usage == {"prompt_tokens": tokens, "total_tokens": tokens}, usage,
           f"usage {{prompt_tokens: {tokens}, total_tokens: {tokens}}} (the inputs' tokens)")
    expect(isinstance(body["model"], str) and body["model"], body["model"], "model: a non-empty string")
    if model is None:
        return ("embeddings.reply",)
    expect(body["model"] == model, body["model"], f"model echoed: {model!r}")
    return ("embeddings.reply", "embeddings.model")


@named("embeddings.encoding.float")
def float_vectors(body: dict[str, Any]) -> None:
    """Each embedding a JSON array of finite numbers, all of one length, L2 norm 1."""
    lengths = set()
    for i, vector in enumerate(vectors(body)):
        expect(isinstance(vector, list) and vector and all(is_number(v) and math.isfinite(v) for v in vector),
               str(vector)[:200], f"data[{i}].embedding: an array of finite numbers")
        expect(abs(_norm(vector) - 1) <= TOLERANCE, _norm(vector), f"data[{i}].embedding: L2 norm 1")
        lengths.add(len(vector))
    expect(len(lengths) == 1, sorted(lengths), "every embedding of one length (the model's hidden size)")


@named("embeddings.encoding.base64")
def base64_vectors(encoded: dict[str, Any], floats: dict[str, Any]) -> None:
    """base64 of the float reply's values as little-endian float32: the same numbers, bit for bit."""
    for i, (text, vector) in enumerate(zip(vectors(encoded), vectors(floats))):
        expect(isinstance(text, str), str(text)[:100], f"data[{i}].embedding: a base64 string")
        try:
            raw = base64.b64decode(text, validate=True)
        except ValueError:
            raw = b""
        expect(len(raw) == 4 * len(vector), len(raw), f"data[{i}]: {4 * len(vector)} bytes (float32 each)")
        decoded = struct.unpack(f"<{len(vector)}f", raw)
        as_f32 = struct.unpack(f"<{len(vector)}f", struct.pack(f"<{len(vector)}f", *vector))
        expect(decoded == as_f32, decoded[:4], f"data[{i}]: the float reply's values {as_f32[:4]}...")


@named("embeddings.dimensions")
def cut_vector(cut: dict[str, Any], full: dict[str, Any], dimensions: int) -> None:
    """The first N values of the full vector, L2-normalised again."""
    head = vectors(full)[0][:dimensions]
    want = [v / _norm(head) for v in head]
    got = vectors(cut)[0]
    expect(len(got) == dimensions, len(got), f"{dimensions} values")
    expect(_close(got, want), got[:4], f"the full vector's first {dimensions} values renormalised: {want[:4]}...")


@named("embeddings.input.strings")
def in_input_order(several: dict[str, Any], alone: list[dict[str, Any]]) -> None:
    """data[i] of several inputs is input i's vector embedded alone."""
    for i, (got, one) in enumerate(zip(vectors(several), alone)):
        expect(_close(got, vectors(one)[0]), got[:4], f"data[{i}]: input {i}'s own vector {vectors(one)[0][:4]}...")


@named("embeddings.input.ids")
def every_token_counts(body: dict[str, Any]) -> None:
    """Id inputs that share their first token and differ after it have different vectors (each input's own
    rows are pooled, not one row that all of them share)."""
    got = vectors(body)
    for i in range(1, len(got)):
        expect(not _close(got[0], got[i]), got[i][:4], f"data[{i}] unlike data[0] (other tokens after the first)")


@named("embeddings.user")
def same_vector(got: dict[str, Any], want: dict[str, Any]) -> None:
    """The reply's vector is the one of the same input sent without the field."""
    expect(_close(vectors(got)[0], vectors(want)[0]), vectors(got)[0][:4], f"the same vector {vectors(want)[0][:4]}...")


@named("embeddings.input.ids", "embeddings.input.string")
def ids_as_text(from_ids: dict[str, Any], from_text: dict[str, Any]) -> None:
    """The string's tokens (with the special tokens) sent as ids give the string's vector."""
    got, want = vectors(from_ids)[0], vectors(from_text)[0]
    expect(_close(got, want), got[:4], f"the string's vector {want[:4]}...")


@named("embeddings.scheduling")
def scheduler_idle(data: Any, inputs: int, engine: dict[str, Any]) -> None:
    """More inputs than slots all answered; afterwards no slot is busy and nothing waits."""
    expect(len(data) == inputs, len(data), f"{inputs} items")
    got = (engine.get("active"), engine.get("queued"))
    expect(got == (0, 0), got, "/v1/lse/status engine: active 0, queued 0")


@named("embeddings.openapi")
def openapi_listing(document: Any, served: bool) -> None:
    """/openapi.json lists POST /v1/embeddings exactly when the server serves it."""
    paths = document.get("paths") if isinstance(document, dict) else None
    expect(isinstance(paths, dict), str(document)[:200], "an OpenAPI document with paths")
    listed = "post" in (paths.get("/v1/embeddings") or {})
    expect(listed == served, listed, f"/v1/embeddings {'listed' if served else 'left out'}")


@named("embeddings.err.empty", "embeddings.err.shape", "embeddings.err.vocab", "embeddings.err.too_many",
       "embeddings.err.context", "embeddings.err.encoding", "embeddings.err.dimensions",
       "embeddings.err.disabled", dynamic=True)
def embeddings_error(reply: Any, status: int, etype: str, code: str | None, param: str | None,
                     says: str | None = None) -> None:
    """The exact status, error.type, error.code and error.param; ``says`` in the message; a context_full
    answer carries lse_context."""
    err = reply.error
    got = (reply.status, err.get("type"), err.get("code"), err.get("param"))
    want = (status, etype, code, param)
    expect(got == want, f"HTTP {got}", f"HTTP {want}")
    if says is not None:
        expect(says in str(err.get("message")), err.get("message"), f"a message naming {says}")
    if code == "context_full":
        expect(isinstance(err.get("lse_context"), dict), err, "error.lse_context")
