"""Scenarios of the Responses API (rows_responses_api): a reply and its
stream, the store (GET, DELETE, previous_response_id with the prefix
cache), structured output, a reasoning item and a function call where the
probe saw them, and the errors."""

from __future__ import annotations

from typing import Any

from lse.spec.checks_responses import (
    continued, deleted_reply, function_call_item, instructions_counted, json_output, reasoning_item,
    response_object, response_usage, responses_accepted, responses_error, store_status, stored_reply, stream_events,
    stream_fold,
)
from lse.spec.context import Context, scenario
from lse.spec.facts import probe_request

PATH = "/v1/responses"
ROOM = 64


def _body(ctx: Context, **fields: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"input": "Tell me a story.", "max_output_tokens": 4, "seed": 7}
    if ctx.model:
        body["model"] = ctx.model
    return body | fields


def _create(ctx: Context, body: dict[str, Any], rows: tuple[str, ...] = ("responses.input",)) -> dict[str, Any]:
    reply = ctx.client.post(PATH, body)
    ctx.verify(responses_accepted, reply, rows=rows)
    ctx.verify(response_object, reply.json, body)
    ctx.verify(response_usage, reply.json, body.get("max_output_tokens"))
    return reply.json


@scenario("template")
def responses_reply_and_stream(ctx: Context) -> None:
    """A reply (string input, items, instructions, sampling) and its stream's events and fold."""
    plain = _create(ctx, _body(ctx, temperature=0.5, top_p=0.9, metadata={"run": "lse-spec"}))
    items = [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Tell me a story."}]}]
    _create(ctx, _body(ctx, input=items))
    instructed = _create(ctx, _body(ctx, instructions="Answer briefly.", temperature=0.5, top_p=0.9),
                         rows=("responses.input", "responses.instructions"))
    ctx.verify(instructions_counted, plain, instructed)
    stream = ctx.client.stream(PATH, _body(ctx, stream=True))
    ctx.verify(stream_events, stream.events, stream.chunks)
    ctx.verify(stream_fold, stream.chunks)
    final = stream.chunks[-1]["response"]
    ctx.verify(response_object, final, {})
    ctx.verify(response_usage, final, 4)


@scenario("template")
def responses_store(ctx: Context) -> None:
    """GET answers a stored reply, previous_response_id continues it over the prefix cache, DELETE forgets it."""
    first = _create(ctx, _body(ctx))
    ctx.verify(stored_reply, ctx.client.get(f"{PATH}/{first['id']}"), first)
    second = _create(ctx, _body(ctx, input="And then?", previous_response_id=first["id"]))
    ctx.verify(continued, first, second)
    ctx.verify(store_status, ctx.client.get("/v1/lse/status").json)
    ctx.verify(deleted_reply, ctx.client.request("DELETE", f"{PATH}/{first['id']}"), first["id"])
    for reply, param in ((ctx.client.get(f"{PATH}/{first['id']}"), None),
                         (ctx.client.post(PATH, _body(ctx, previous_response_id=first["id"])), "previous_response_id")):
        ctx.verify(responses_error, reply, 404, "response_not_found", param,
                   rows=("err.response_not_found", "responses.delete"))
    unstored = _create(ctx, _body(ctx, store=False))
    ctx.verify(responses_error, ctx.client.get(f"{PATH}/{unstored['id']}"), 404, "response_not_found", None,
               rows=("err.response_not_found", "responses.store"))


@scenario("template")
def responses_text_format(ctx: Context) -> None:
    """text.format json_object: a completed reply is a JSON object."""
    body = _create(ctx, _body(ctx, max_output_tokens=ROOM, text={"format": {"type": "json_object"}}))
    ctx.verify(json_output, body)


def _probe(ctx: Context) -> dict[str, Any]:
    """The discovery probe's chat turn as a Responses request."""
    probe = probe_request()
    tools = [{"type": "function", **t["function"]} for t in probe["tools"]]
    return _body(ctx, input=probe["messages"], tools=tools, temperature=probe["temperature"],
                 max_output_tokens=probe["max_tokens"])


@scenario("probe_reasoning")
def responses_reasoning(ctx: Context) -> None:
    """The probe's think block is a reasoning item, its tokens counted."""
    ctx.verify(reasoning_item, _create(ctx, _probe(ctx)))


@scenario("probe_tool_call")
def responses_function_call(ctx: Context) -> None:
    """The probe's tool call is a function_call item."""
    ctx.verify(function_call_item, _create(ctx, _probe(ctx)))


BAD: tuple[tuple[str, dict[str, Any], str | None, str | None], ...] = (
    ("err.responses.input", {"input": []}, None, "input"),
    ("err.responses.item_type", {"input": [{"type": "item_reference", "id": "x"}]}, None, "input[0].type"),
    ("err.responses.tool_type", {"tools": [{"type": "web_search"}]}, None, "tools[0].type"),
    ("err.responses.max_output_tokens", {"max_output_tokens": 0}, None, "max_output_tokens"),
    ("err.responses.text_format", {"text": {"format": {"type": "yaml"}}}, None, "text.format"),
    ("err.responses.unsupported", {"background": True}, None, "background"),
)


@scenario("template", generates=False)
def responses_errors(ctx: Context) -> None:
    """Each refusal names the Responses field, streamed or not."""
    for row, fields, code, param in BAD:
        for stream in (False, True):
            reply = ctx.client.post(PATH, _body(ctx, stream=stream) | fields)
            ctx.verify(responses_error, reply, 400, code, param, rows=(row,))


@scenario("no_thinking")
def responses_reasoning_effort(ctx: Context) -> None:
    """reasoning.effort on a model without thinking is chat's thinking_unsupported, named reasoning.effort."""
    reply = ctx.client.post(PATH, _body(ctx, reasoning={"effort": "high"}))
    ctx.verify(responses_error, reply, 400, "thinking_unsupported", "reasoning.effort",
               rows=("responses.reasoning_effort",))
