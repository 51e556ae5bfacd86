"""Scenarios of structured output (response_format on both endpoints,
streamed and with n > 1), forced and forbidden tool calls, logit_bias, one
model by id, and the tokenizer routes."""

from __future__ import annotations

from lse.spec.checks import error_answer, error_envelope
from lse.spec.checks_stream import fold_equals_body
from lse.spec.checks_structured import (
    ban_changes_reply, forced_calls, force_repeats_token, json_object_reply, model_entry_by_id, no_calls,
    schema_reply, tokenizer_round_trip,
)
from lse.spec.context import Context, Unobservable, scenario
from lse.spec.rows import CHAT, COMPLETIONS, PATHS

SCHEMA = {"type": "object", "properties": {
    "answer": {"enum": ["yes", "no"]},
    "detail": {"type": "object", "properties": {
        "score": {"type": "integer", "minimum": 0, "maximum": 9},
        "tags": {"type": "array", "items": {"enum": ["a", "b"]}, "maxItems": 2}},
        "required": ["score", "tags"], "additionalProperties": False}},
    "required": ["answer", "detail"], "additionalProperties": False}
# Short, so the tools' definitions fit a small context even at a byte per token.
PICK = {"type": "object", "properties": {"c": {"enum": ["a", "b"]}}, "required": ["c"], "additionalProperties": False}
TOOLS = [{"type": "function", "function": {"name": name, "parameters": PICK}} for name in ("f", "g")]
# Room for the whole JSON; a random-weight model's reply may still be cut (finish_reason length).
ROOM = 64


def _schema_format() -> dict:
    return {"type": "json_schema", "json_schema": {"name": "verdict", "schema": SCHEMA, "strict": True}}


@scenario()
def json_replies(ctx: Context) -> None:
    """json_object and json_schema replies parse and match, streamed the same, n choices each."""
    for endpoint in ctx.facts.endpoints:
        body = ctx.complete(endpoint, ctx.base(endpoint, max_tokens=ROOM, response_format={"type": "json_object"}))
        ctx.verify(json_object_reply, body)
        request = ctx.base(endpoint, max_tokens=ROOM, n=3, temperature=1.0, response_format=_schema_format())
        body = ctx.complete(endpoint, request)
        ctx.verify(schema_reply, body, SCHEMA)
        _, folded = ctx.complete_stream(endpoint, request)
        ctx.verify(fold_equals_body, folded, body, endpoint)


@scenario("tool_markers")
def forced_tool_calls(ctx: Context) -> None:
    """tool_choice required and a named function give calls with matching arguments; none gives none."""
    params = {t["function"]["name"]: PICK for t in TOOLS}
    fits = ctx.client.post(PATHS[CHAT], ctx.base(CHAT, max_tokens=1, tools=TOOLS))
    if fits.status == 400 and fits.error.get("code") == "context_full":
        raise Unobservable("the tools' definitions in the template's prompt fill this server's context")
    body = ctx.complete(CHAT, ctx.base(CHAT, max_tokens=ROOM, tools=TOOLS, tool_choice="required"))
    ctx.verify(forced_calls, body, params)
    named = {"type": "function", "function": {"name": "g"}}
    request = ctx.base(CHAT, max_tokens=ROOM, tools=TOOLS, tool_choice=named)
    body = ctx.complete(CHAT, request)
    ctx.verify(forced_calls, body, {"g": PICK})
    _, folded = ctx.complete_stream(CHAT, request)
    ctx.verify(fold_equals_body, folded, body, CHAT)
    ctx.verify(no_calls, ctx.complete(CHAT, ctx.base(CHAT, max_tokens=8, tools=TOOLS, tool_choice="none")))


@scenario()
def logit_bias_applied(ctx: Context) -> None:
    """-100 on the greedy reply's first token changes the reply; 100 on a token repeats it."""
    def reply(**fields) -> str:
        return _greedy(ctx, **fields)["choices"][0]["text"]

    plain = _greedy(ctx, logprobs=0)
    sampled = (plain["choices"][0].get("logprobs") or {}).get("tokens") or []
    first = ctx.client.post("/tokenize", {"content": sampled[0] if sampled else ""}).json.get("tokens") or []
    if len(first) != 1:
        raise Unobservable(f"the greedy reply's first token {sampled[:1]} does not tokenize back to one id")
    if not plain["choices"][0]["text"]:  # special tokens only, which replies leave out of the text
        raise Unobservable(f"the greedy reply {sampled} shows no text, so a change of it can't be seen")
    ctx.verify(ban_changes_reply, plain["choices"][0]["text"], reply(logit_bias={str(first[0]): -100}), first[0])
    token = ctx.client.post("/tokenize", {"content": " the"}).json["tokens"][-1]
    text = ctx.client.post("/detokenize", {"tokens": [token]}).json["content"]
    ctx.verify(force_repeats_token, reply(logit_bias={str(token): 100}, temperature=1.0), text)


def _greedy(ctx: Context, **fields) -> dict:
    return ctx.complete(COMPLETIONS, ctx.base(COMPLETIONS, **({"max_tokens": 4, "temperature": 0} | fields)))


@scenario(generates=False)
def model_and_tokenizer_routes(ctx: Context) -> None:
    """GET /v1/models/{id}, its 404 for another id; /tokenize, /detokenize, /tokenizer_info."""
    entry = ctx.client.get("/v1/models").json["data"][0]
    ctx.verify(model_entry_by_id, entry, ctx.client.get(f"/v1/models/{entry['id']}"))
    missing = ctx.client.get("/v1/models/lse-spec-no-such-model")
    ctx.verify(error_answer, missing, 404, "invalid_request_error", "model_not_found", "model",
               rows=("err.model_not_found",))
    ctx.verify(error_envelope, missing)
    text = "Hello, world"
    tokens = ctx.client.post("/tokenize", {"content": text, "add_special": False})
    back = ctx.client.post("/detokenize", {"tokens": (tokens.json or {}).get("tokens") or []})
    info = ctx.client.get("/tokenizer_info")
    eos = ctx.client.post("/tokenize", {"content": (info.json or {}).get("eos_token") or ""})
    ctx.verify(tokenizer_round_trip, tokens, back, info, eos, text)
