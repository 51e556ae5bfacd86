"""Scenarios of POST /v1/embeddings (rows_embeddings) on a server started
with --embeddings: a string, strings, ids (the string's own tokens, from
/tokenize), float and base64, dimensions, more inputs than slots, and every
body error; on a server without it, the 501 and /openapi.json leaving the
route out. The facts' probe (facts.py, ``embeddings`` / ``no_embeddings``)
says which server is which."""

from __future__ import annotations

import time
from typing import Any

from lse.spec.checks_embeddings import (
    base64_vectors, cut_vector, embeddings_accepted, embeddings_error, embeddings_reply, every_token_counts,
    float_vectors, ids_as_text, in_input_order, openapi_listing, same_vector, scheduler_idle,
    vectors,
)
from lse.spec.context import Context, scenario

PATH = "/v1/embeddings"
TEXT = "The capital of France"
TEXTS = ("one", "two words", "and three words")
MAX_INPUTS = 2048  # OpenAI's cap, LSE's too (docs/api.md § Embeddings)
INVALID = "invalid_request_error"


def _post(ctx: Context, body: dict[str, Any], rows: tuple[str, ...]) -> dict[str, Any]:
    reply = ctx.client.post(PATH, body)
    ctx.verify(embeddings_accepted, reply, rows=rows)
    return reply.json


def _tokens(ctx: Context, text: str) -> list[int]:
    """The string's ids with the tokenizer's special tokens, as the route tokenizes it."""
    return ctx.client.post("/tokenize", {"content": text, "add_special": True}).json["tokens"]


@scenario("embeddings")
def embeddings_inputs(ctx: Context) -> None:
    """A string, the same as ids, several strings against each alone; the reply's members and usage."""
    ids = _tokens(ctx, TEXT)
    text = _post(ctx, {"input": TEXT, "model": "lse-spec-embedder", "encoding_format": "float"},
                 ("embeddings.input.string", "embeddings.model", "embeddings.encoding.float"))
    ctx.verify(embeddings_reply, text, 1, len(ids), "lse-spec-embedder")
    ctx.verify(float_vectors, text)
    as_ids = _post(ctx, {"input": ids}, ("embeddings.input.ids",))
    ctx.verify(embeddings_reply, as_ids, 1, len(ids), None)
    ctx.verify(ids_as_text, as_ids, text)
    ctx.verify(same_vector, _post(ctx, {"input": TEXT, "user": "lse-spec"}, ("embeddings.user",)), text)
    several = _post(ctx, {"input": list(TEXTS)}, ("embeddings.input.strings",))
    alone = [_post(ctx, {"input": t}, ("embeddings.input.string",)) for t in TEXTS]
    ctx.verify(embeddings_reply, several, len(TEXTS), sum(len(_tokens(ctx, t)) for t in TEXTS), None)
    ctx.verify(float_vectors, several)
    ctx.verify(in_input_order, several, alone)
    arrays = _post(ctx, {"input": [[1, 2, 3], [1, 4, 5, 6]]}, ("embeddings.input.ids",))
    ctx.verify(embeddings_reply, arrays, 2, 7, None)
    ctx.verify(every_token_counts, arrays)


@scenario("embeddings")
def embeddings_encoding_and_dimensions(ctx: Context) -> None:
    """base64 is the float reply's float32 bytes; dimensions N cuts and renormalises, up to the hidden size."""
    floats = _post(ctx, {"input": list(TEXTS)}, ("embeddings.encoding.float",))
    encoded = _post(ctx, {"input": list(TEXTS), "encoding_format": "base64"}, ("embeddings.encoding.base64",))
    ctx.verify(base64_vectors, encoded, floats)
    hidden = len(vectors(floats)[0])
    for n in (1, 16, hidden):
        cut = _post(ctx, {"input": TEXTS[0], "dimensions": n}, ("embeddings.dimensions",))
        ctx.verify(float_vectors, cut)
        ctx.verify(cut_vector, cut, floats, n)
    for bad in (0, hidden + 1, 2.5):
        ctx.verify(embeddings_error, ctx.client.post(PATH, {"input": "a", "dimensions": bad}), 400, INVALID, None,
                   "dimensions", rows=("embeddings.err.dimensions",))


@scenario("embeddings")
def embeddings_beyond_the_slots(ctx: Context) -> None:
    """More inputs than slots: all answered in order, and the slots and queue are empty afterwards."""
    slots = (ctx.client.get("/v1/lse/status").json.get("engine") or {}).get("slots") or 1
    prompts = [[i + 1, i + 2, i + 3] for i in range(2 * slots + 1)]
    reply = _post(ctx, {"input": prompts}, ("embeddings.scheduling",))
    ctx.verify(embeddings_reply, reply, len(prompts), 3 * len(prompts), None)
    ctx.verify(scheduler_idle, reply["data"], len(prompts), _settled_engine(ctx))


def _settled_engine(ctx: Context) -> dict[str, Any]:
    """/v1/lse/status's engine once the last slot is handed back: the reply can reach the client a moment
    before the scheduler releases the slot it came from, so up to 2 s; a leaked slot stays busy past that."""
    deadline = time.monotonic() + 2.0
    while True:
        engine = ctx.client.get("/v1/lse/status").json.get("engine") or {}
        if (engine.get("active"), engine.get("queued")) == (0, 0) or time.monotonic() > deadline:
            return engine
        time.sleep(0.05)


# (row, body, code, param): each documented 400, before any work.
BAD: tuple[tuple[str, dict[str, Any], str | None, str], ...] = (
    ("embeddings.err.empty", {}, None, "input"),
    ("embeddings.err.empty", {"input": ""}, None, "input"),
    ("embeddings.err.empty", {"input": []}, None, "input"),
    ("embeddings.err.empty", {"input": ["a", ""]}, None, "input[1]"),
    ("embeddings.err.empty", {"input": [[1], []]}, None, "input[1]"),
    ("embeddings.err.shape", {"input": 5}, None, "input"),
    ("embeddings.err.shape", {"input": [1, "a"]}, None, "input"),
    ("embeddings.err.shape", {"input": [True]}, None, "input"),
    ("embeddings.err.shape", {"input": ["a", [1]]}, None, "input"),
    ("embeddings.err.vocab", {"input": [1, 10**9]}, None, "input"),
    ("embeddings.err.vocab", {"input": [[1], [2, -1]]}, None, "input[1]"),
    ("embeddings.err.too_many", {"input": ["a"] * (MAX_INPUTS + 1)}, None, "input"),
    ("embeddings.err.encoding", {"input": "a", "encoding_format": "int8"}, None, "encoding_format"),
)


@scenario("embeddings", generates=False)
def embeddings_errors(ctx: Context) -> None:
    """Each refusal: 400 invalid_request_error naming the field (input[i] for the i-th of several); an input
    longer than the context is context_full with lse_context."""
    for row, body, code, param in BAD:
        ctx.verify(embeddings_error, ctx.client.post(PATH, body), 400, INVALID, code, param, rows=(row,))
    too_long = {"input": [1] * (ctx.facts.context_length + 1)}
    ctx.verify(embeddings_error, ctx.client.post(PATH, too_long), 400, INVALID, "context_full", "input",
               rows=("embeddings.err.context",))
    ctx.verify(openapi_listing, ctx.client.get("/openapi.json").json, True)


@scenario("no_embeddings", generates=False)
def embeddings_disabled(ctx: Context) -> None:
    """Without --embeddings: 501 not_supported_error embeddings_disabled naming the flag, and /openapi.json
    leaves the route out."""
    for body in ({"input": "hello"}, {"input": []}):  # before the body is read: a bad one is the same 501
        ctx.verify(embeddings_error, ctx.client.post(PATH, body), 501, "not_supported_error", "embeddings_disabled",
                   None, "--embeddings", rows=("embeddings.err.disabled",))
    ctx.verify(openapi_listing, ctx.client.get("/openapi.json").json, False)
