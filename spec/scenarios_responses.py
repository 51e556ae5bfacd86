"""Scenarios of the Responses API (rows_responses_api, docs/api-responses.md):
a reply and its stream, every documented field accepted and echoed, the
store (GET, DELETE, cancel, previous_response_id with the prefix cache),
structured output, a reasoning item and a function call where the probe saw
them, a forced call where the template has markers, and every error of the
page's table that a client can provoke (the operator's cap, the key, the
timeout where the server has them)."""

from __future__ import annotations

from typing import Any

from lse.spec.checks_responses import (
    cancel_answers_finished, continued, deleted_reply, effort_levels, event_stream, forced_function_call,
    function_call_item, instructions_counted, json_output, method_refused, reasoning_item, response_object,
    response_usage, responses_accepted, responses_error, store_status, stored_reply, stream_events, stream_fold,
    stream_failed,
)
from lse.spec.context import Context, Unobservable, scenario
from lse.spec.facts import probe_request
from lse.spec.scenarios_generation import filler

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
    request = _body(ctx, stream=True)
    stream = ctx.client.stream(PATH, request)
    ctx.verify(event_stream, stream)
    ctx.verify(stream_events, stream.events, stream.chunks)
    ctx.verify(stream_fold, stream.chunks)
    final = stream.chunks[-1]["response"]
    ctx.verify(response_object, final, request)
    ctx.verify(response_usage, final, 4)


WEATHER = {"type": "function", "name": "get_weather", "description": "The weather in a city",
           "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}
# LSE's chat extensions and fields OpenAI clients send that LSE ignores.
EXTENSIONS = {"top_k": 40, "min_p": 0.05, "seed": 3, "stop": ["zzzz"], "presence_penalty": 0.1,
              "frequency_penalty": 0.1, "repetition_penalty": 1.05, "chat_template_kwargs": {}}
IGNORED = {"user": "lse-spec", "include": [], "truncation": "disabled", "service_tier": "auto"}


@scenario("template")
def responses_fields(ctx: Context) -> None:
    """Every documented request field accepted and echoed (OpenAI's defaults where not sent); an extension
    checked by chat's rule under its own name."""
    request = _body(ctx, model=ctx.model or "lse-spec", tools=[WEATHER], tool_choice="none",
                    parallel_tool_calls=False, store=False, reasoning={"summary": "auto"},
                    text={"format": {"type": "text"}, "verbosity": "low"}, **EXTENSIONS, **IGNORED)
    reply = ctx.client.post(PATH, request)
    ctx.verify(responses_accepted, reply, rows=("responses.model", "responses.tools", "responses.tool_choice",
                                                "responses.parallel_tool_calls", "responses.extensions",
                                                "responses.unknown_fields"))
    ctx.verify(response_object, reply.json, {k: v for k, v in request.items() if k != "text"}
               | {"text": {"format": {"type": "text"}}})
    ctx.verify(response_usage, reply.json, 4)
    ctx.verify(responses_error, ctx.client.post(PATH, _body(ctx, top_k=-5)), 400, None, "top_k",
               rows=("responses.extensions",))


@scenario("template")
def responses_store(ctx: Context) -> None:
    """GET answers a stored reply, previous_response_id continues it over the prefix cache, cancelling it
    answers it unchanged, DELETE forgets it; an id the store lacks is a 404 on every route."""
    first = _create(ctx, _body(ctx), rows=("responses.input", "responses.routes"))
    ctx.verify(stored_reply, ctx.client.get(f"{PATH}/{first['id']}"), first)
    ctx.verify(cancel_answers_finished, ctx.client.post(f"{PATH}/{first['id']}/cancel", {}), first)
    second = _create(ctx, _body(ctx, input="And then?", previous_response_id=first["id"]))
    ctx.verify(continued, first, second)
    ctx.verify(store_status, ctx.client.get("/v1/lse/status").json)
    ctx.verify(deleted_reply, ctx.client.request("DELETE", f"{PATH}/{first['id']}"), first["id"])
    gone = f"{PATH}/{first['id']}"
    for reply in (ctx.client.get(gone), ctx.client.request("DELETE", gone), ctx.client.post(f"{gone}/cancel", {})):
        ctx.verify(responses_error, reply, 404, "response_not_found", None,
                   rows=("err.response_not_found", "responses.delete", "err.responses.envelope"))
    for stream in (False, True):
        reply = ctx.client.post(PATH, _body(ctx, previous_response_id=first["id"], stream=stream))
        ctx.verify(responses_error, reply, 404, "response_not_found", "previous_response_id",
                   rows=("err.responses.previous_not_found", "responses.delete"))
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


@scenario("tool_markers")
def responses_forced_call(ctx: Context) -> None:
    """tool_choice naming a function: the reply is a call of that function (chat's enforcement)."""
    request = _probe(ctx)
    name = request["tools"][0]["name"]
    request = request | {"tool_choice": {"type": "function", "name": name}, "max_output_tokens": ROOM}
    reply = ctx.client.post(PATH, request)
    if reply.status == 400 and reply.error.get("code") == "context_full":
        raise Unobservable("the tools' definitions in the template's prompt fill this server's context")
    ctx.verify(responses_accepted, reply, rows=("responses.tool_choice",))
    body = reply.json if isinstance(reply.json, dict) else {}
    if body.get("status") == "incomplete" and not any(i.get("type") == "function_call" for i in body.get("output") or []):
        # as chat's forced_calls checks only replies that ended on their own: a random fixture's
        # reasoning, or its call's arguments, can run past max_output_tokens before the call closes
        raise Unobservable(f"the reply ran out of max_output_tokens ({ROOM}) before its call closed")
    ctx.verify(forced_function_call, body, name)


TOOL = {"type": "function", "name": "f", "parameters": {"type": "object"}}
# (row, fields breaking one field of a valid request, code, param): every 400 of the page's table a field makes.
BAD: tuple[tuple[str, dict[str, Any], str | None, str | None], ...] = (
    ("err.responses.input", {"input": []}, None, "input"),
    ("err.responses.input", {"input": 3}, None, "input"),
    ("err.responses.item_type", {"input": [{"type": "item_reference", "id": "x"}]}, None, "input[0].type"),
    ("err.responses.item_type", {"input": [{"role": "user", "content": [{"type": "input_image", "image_url": "u"}]}]},
     None, "input[0].content[0].type"),
    ("err.responses.item", {"input": [{"role": "robot", "content": "x"}]}, None, "input[0].role"),
    ("err.responses.item", {"input": [{"type": "function_call", "name": "f", "arguments": "{}"}]}, None,
     "input[0].call_id"),
    ("err.responses.item", {"input": [{"type": "function_call", "call_id": "c", "name": "f", "arguments": "[1]"}]},
     None, "input[0].arguments"),
    ("err.responses.item", {"input": [{"type": "function_call_output", "call_id": "c", "output": 5}]}, None,
     "input[0].output"),
    ("err.responses.tool_type", {"tools": [{"type": "web_search"}]}, None, "tools[0].type"),
    ("err.responses.tool_choice_type", {"tool_choice": {"type": "file_search"}}, None, "tool_choice.type"),
    ("err.responses.tool_choice", {"tools": [TOOL], "tool_choice": {"type": "function", "name": "nope"}}, None,
     "tool_choice"),
    ("err.responses.tool_choice", {"tool_choice": "required"}, None, "tool_choice"),
    ("err.responses.max_output_tokens", {"max_output_tokens": 0}, None, "max_output_tokens"),
    ("err.responses.sampling", {"top_p": 2}, None, "top_p"),
    ("err.responses.sampling", {"temperature": "hot"}, None, "temperature"),
    ("err.responses.not_object", {"reasoning": "high"}, None, "reasoning"),
    ("err.responses.not_object", {"text": "json"}, None, "text"),
    ("err.responses.text_format", {"text": {"format": {"type": "yaml"}}}, None, "text.format"),
    ("err.responses.types", {"store": "yes"}, None, "store"),
    ("err.responses.types", {"instructions": 5}, None, "instructions"),
    ("err.responses.types", {"previous_response_id": 5}, None, "previous_response_id"),
    ("err.responses.unsupported", {"background": True}, None, "background"),
    ("err.responses.unsupported", {"conversation": "conv_1"}, None, "conversation"),
)
# (method, path, Allow)
WRONG_METHODS = (("GET", PATH, "POST"), ("PUT", f"{PATH}/resp_lse_spec", "GET, DELETE"),
                 ("GET", f"{PATH}/resp_lse_spec/cancel", "POST"))


@scenario("template", generates=False)
def responses_errors(ctx: Context) -> None:
    """Each refusal names the Responses field in OpenAI's envelope, streamed or not; a prompt over the context
    is context_full naming input; a body that is not JSON invalid_json; another method a 405 with Allow."""
    for row, fields, code, param in BAD:
        for stream in (False, True):
            reply = ctx.client.post(PATH, _body(ctx, stream=stream) | fields)
            rows = (row, "err.responses.envelope") + (("responses.stream_refusal",) if stream else ())
            ctx.soft(responses_error, reply, 400, code, param, rows=rows)
    for stream in (False, True):
        reply = ctx.client.post(PATH, _body(ctx, input=filler(ctx.facts.context_length * 8), stream=stream))
        ctx.soft(responses_error, reply, 400, "context_full", "input",
                 rows=("err.responses.context_full",) + (("responses.stream_refusal",) if stream else ()))
    reply = ctx.client.request("POST", PATH, raw=b'{"input": [')
    ctx.soft(responses_error, reply, 400, "invalid_json", None, rows=("err.responses.invalid_json",))
    for method, path, allow in WRONG_METHODS:
        reply = ctx.client.request(method, path)
        ctx.soft(responses_error, reply, 405, "method_not_allowed", None, rows=("err.responses.wrong_method",))
        ctx.soft(method_refused, reply, allow)


@scenario("template", "cap", generates=False)
def responses_cap(ctx: Context) -> None:
    """max_output_tokens above the operator's --max-tokens: a 400 naming max_output_tokens."""
    reply = ctx.client.post(PATH, _body(ctx, max_output_tokens=ctx.facts.cap + 1))
    ctx.verify(responses_error, reply, 400, None, "max_output_tokens", rows=("err.responses.max_tokens_cap",))


@scenario("template", "auth", generates=False)
def responses_key(ctx: Context) -> None:
    """Without the key, or with a wrong one, every route is a 401 invalid_api_key."""
    for key in (False, "lse-spec-wrong"):
        for method, path, body in (("POST", PATH, _body(ctx)), ("GET", f"{PATH}/resp_lse_spec", None),
                                   ("POST", f"{PATH}/resp_lse_spec/cancel", {})):
            reply = ctx.client.request(method, path, body, key=key)
            ctx.soft(responses_error, reply, 401, "invalid_api_key", None, "authentication_error",
                     rows=("err.responses.unauthorized",))


@scenario("template", "times_out")
def responses_timeout(ctx: Context) -> None:
    """Past --request-timeout-secs: 408 timeout_error request_timeout; streamed, response.failed."""
    ctx.verify(responses_error, ctx.client.post(PATH, _body(ctx)), 408, "request_timeout", None, "timeout_error",
               rows=("err.responses.timeout",))
    ctx.verify(stream_failed, ctx.client.stream(PATH, _body(ctx, stream=True)), "request_timeout")


@scenario("no_thinking")
def responses_reasoning_effort(ctx: Context) -> None:
    """reasoning.effort on a model without thinking is chat's thinking_unsupported, named reasoning.effort."""
    reply = ctx.client.post(PATH, _body(ctx, reasoning={"effort": "high"}))
    ctx.verify(responses_error, reply, 400, "thinking_unsupported", "reasoning.effort",
               rows=("responses.reasoning_effort", "err.responses.thinking_unsupported"))


@scenario("template", "thinking", generates=False)
def responses_effort_levels(ctx: Context) -> None:
    """reasoning.effort naming no level of the template: unsupported_reasoning_effort with the model's levels."""
    reply = ctx.client.post(PATH, _body(ctx, reasoning={"effort": "lse-spec-nope"}))
    ctx.verify(responses_error, reply, 400, "unsupported_reasoning_effort", "reasoning.effort",
               rows=("err.responses.unsupported_reasoning_effort",))
    ctx.verify(effort_levels, reply, ctx.facts.level_ids)
