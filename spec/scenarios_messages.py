"""Scenarios of the Messages routes (docs/api-messages.md): a reply, its
stream and fold, count_tokens, every documented field accepted, each bad
field refused in Anthropic's envelope, tools and thinking where the model
shows them, the key as x-api-key, and the refusals of a server that cannot
generate."""

from __future__ import annotations

from typing import Any

from lse.spec.checks_messages import (
    count_matches, message_accepted, message_body, message_events, message_fold, messages_error, thinking_block,
    tool_use_block,
)
from lse.spec.context import Context, scenario

MESSAGES = "/v1/messages"
COUNT = "/v1/messages/count_tokens"
WEATHER = {"name": "get_weather", "description": "The weather in a city",
           "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}}}
IMAGE = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}}
# (field, value, param): each breaks one field of a valid request.
BAD = (
    ("max_tokens", 0, "max_tokens"), ("model", 3, "model"), ("messages", [], "messages"),
    ("messages", [{"role": "user", "content": [IMAGE]}], "messages[0].content[0].type"),
    ("messages", [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Sure"}], "messages[1]"),
    ("system", 3, "system"), ("stop_sequences", [""], "stop_sequences"), ("temperature", 1.5, "temperature"),
    ("top_p", 2, "top_p"), ("top_k", -1, "top_k"), ("stream", "yes", "stream"), ("metadata", [], "metadata"),
    ("tools", [{"name": "f"}], "tools[0].input_schema"),
    ("tool_choice", {"type": "tool", "name": "nope"}, "tool_choice"),
    ("thinking", {"type": "enabled", "budget_tokens": 99}, "thinking.budget_tokens"),
    ("output_config", {"format": {"type": "text"}}, "output_config.format"),
)


REFUSALS = {"messages[0].content[0].type": "msg.req.image", "messages[1]": "msg.req.prefill"}


def base(ctx: Context, **fields: Any) -> dict[str, Any]:
    body = {"model": ctx.model or "lse-spec", "max_tokens": 6, "temperature": 0,
            "messages": [{"role": "user", "content": "Tell me a story."}]}
    return {**body, **fields}


@scenario("template")
def messages_reply(ctx: Context) -> None:
    """A Message, its stream (the exact event order) folding to it, and count_tokens of its prompt."""
    request = base(ctx)
    reply = ctx.client.post(MESSAGES, request)
    ctx.verify(message_accepted, reply, rows=("msg.routes", "msg.req.model", "msg.req.max_tokens",
                                              "msg.req.messages", "msg.req.temperature"))
    ctx.verify(message_body, reply.json, request)
    stream = ctx.client.stream(MESSAGES, {**request, "stream": True})
    ctx.verify(message_events, stream)
    ctx.verify(message_accepted, stream.reply or _ok(stream), rows=("msg.req.stream",))
    ctx.verify(message_fold, stream, reply.json)
    count = ctx.client.post(COUNT, {k: v for k, v in request.items() if k not in ("max_tokens", "temperature")})
    ctx.verify(count_matches, count, reply.json)


def _ok(stream: Any) -> Any:
    """A streamed 200 read as a reply for message_accepted."""
    from lse.spec.client import Reply

    return Reply(stream.status, stream.headers, "{}", {})


@scenario("template")
def messages_fields(ctx: Context) -> None:
    """Every documented field accepted; each bad one a 400 naming it."""
    fields = {"system": [{"type": "text", "text": "Be brief."}], "stop_sequences": ["zzzz"], "top_p": 0.9,
              "top_k": 40, "metadata": {"user_id": "spec"}, "lse_spec_unknown": 1, "tools": [WEATHER],
              "tool_choice": {"type": "auto"}}
    request = base(ctx, **fields)
    reply = ctx.client.post(MESSAGES, request)
    ctx.verify(message_accepted, reply, rows=("msg.req.system", "msg.req.stop_sequences", "msg.req.top_p",
                                              "msg.req.top_k", "msg.req.metadata", "msg.req.unknown",
                                              "msg.req.tools", "msg.req.tool_choice"))
    ctx.verify(message_body, reply.json, request)
    fmt = {"type": "json_schema", "schema": {"type": "string", "enum": ["yes", "no"]}}
    reply = ctx.client.post(MESSAGES, base(ctx, max_tokens=8, output_config={"format": fmt}))
    ctx.soft(message_accepted, reply, rows=("msg.req.format",))
    for field, value, param in BAD:
        reply = ctx.client.post(MESSAGES, base(ctx, **{field: value}))
        refusal = REFUSALS.get(param)
        rows = ("msg.err.invalid", "msg.err.envelope") + ((refusal,) if refusal else ())
        ctx.soft(messages_error, reply, 400, "invalid_request_error", param, rows=rows)


@scenario("template", generates=False)
def messages_routes(ctx: Context) -> None:
    """A path under /v1/messages that is no route is 404, another method 405, in Anthropic's envelope."""
    ctx.soft(messages_error, ctx.client.post(f"{MESSAGES}/lse-spec-nope", base(ctx)), 404, "not_found_error",
             None, rows=("msg.err.not_found",))
    ctx.soft(messages_error, ctx.client.get(MESSAGES), 405, "invalid_request_error", None,
             rows=("msg.err.wrong_method",))


@scenario("template", "probe_tool_call")
def messages_tools(ctx: Context) -> None:
    """The model's tool call is a tool_use block; its tool_result is rendered into the next turn."""
    request = base(ctx, max_tokens=64, tools=[WEATHER])
    reply = ctx.client.post(MESSAGES, request)
    ctx.verify(tool_use_block, reply.json)
    call = reply.json["content"][-1]
    history = request["messages"] + [
        {"role": "assistant", "content": reply.json["content"]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call["id"], "content": "sunny"}]}]
    ctx.verify(message_accepted, ctx.client.post(MESSAGES, {**request, "messages": history}),
               rows=("msg.req.tool_result",))


@scenario("template", "probe_reasoning")
def messages_reasoning(ctx: Context) -> None:
    """The model's reasoning is a thinking block before the text."""
    ctx.verify(thinking_block, ctx.client.post(MESSAGES, base(ctx, max_tokens=32)).json)


@scenario("template", "thinking")
def messages_thinking(ctx: Context) -> None:
    """thinking and output_config.effort name the template's levels."""
    enabled = ctx.client.post(MESSAGES, base(ctx, max_tokens=8, thinking={"type": "enabled", "budget_tokens": 4}))
    ctx.verify(message_accepted, enabled, rows=("msg.req.thinking",))
    level = ctx.facts.thinking.get("default_level")
    if level:
        effort = ctx.client.post(MESSAGES, base(ctx, max_tokens=4, output_config={"effort": level}))
        ctx.verify(message_accepted, effort, rows=("msg.req.effort",))


@scenario("auth", "template", generates=False)
def messages_key(ctx: Context) -> None:
    """The key as x-api-key opens the route; a wrong one is 401 authentication_error."""
    key = ctx.client.api_key or ""
    counted = ctx.client.request("POST", COUNT, base(ctx), key=False, headers={"x-api-key": key})
    ctx.soft(message_accepted, counted, rows=("msg.auth.x_api_key",))
    for headers in ({"x-api-key": "lse-spec-wrong"}, {}):
        reply = ctx.client.request("POST", COUNT, base(ctx), key=False, headers=headers)
        ctx.soft(messages_error, reply, 401, "authentication_error", None, rows=("msg.err.unauthorized",))


@scenario("template", "times_out")
def messages_timeout(ctx: Context) -> None:
    """Past --request-timeout-secs: 408 timeout_error."""
    ctx.verify(messages_error, ctx.client.post(MESSAGES, base(ctx)), 408, "timeout_error", None,
               rows=("msg.err.timeout",))


@scenario("template", "fallback_refused")
def messages_failed(ctx: Context) -> None:
    """A generation the engine cannot run: 500 api_error."""
    ctx.verify(messages_error, ctx.client.post(MESSAGES, base(ctx)), 500, "api_error", None,
               rows=("msg.err.api_error",))
