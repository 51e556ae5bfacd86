"""Checks of the Messages routes (rows in ``lse.spec.rows_messages``): the
Message, its stream of events and their fold, count_tokens, and errors in
Anthropic's envelope. Pure functions of HTTP data, like every check."""

from __future__ import annotations

import json
from typing import Any

from lse.spec.checks import expect, is_int, named
from lse.spec.table import all_rows
from lse.spec.rows_messages import MessagesError, MessagesField

STOP_REASONS = ("end_turn", "max_tokens", "stop_sequence", "tool_use", "model_context_window_exceeded")
BLOCK_TYPES = ("thinking", "text", "tool_use")
DELTA_OF = {"thinking": "thinking_delta", "text": "text_delta", "tool_use": "input_json_delta"}
REFUSAL_ROWS = ("msg.req.image", "msg.req.prefill")  # request rows that say what is refused
REQUEST_ROWS = tuple(r.id for r in all_rows() if isinstance(r, MessagesField) and r.id.startswith("msg.req.")
                     and not r.manual and r.id not in REFUSAL_ROWS)
ERROR_ROWS = tuple(r.id for r in all_rows() if isinstance(r, MessagesError) and not r.manual)


@named("msg.routes", "msg.auth.x_api_key", *REQUEST_ROWS, dynamic=True)
def message_accepted(reply: Any) -> None:
    """A valid Messages request: HTTP 200 and a JSON object."""
    expect(reply.status == 200 and isinstance(reply.json, dict), f"HTTP {reply.status} {reply.text[:200]}",
           "HTTP 200 with a JSON body")


@named("msg.resp.message", "msg.resp.content", "msg.resp.stop_reason", "msg.resp.stop_sequence",
       "msg.resp.usage", "msg.resp.lse_context")
def message_body(body: dict[str, Any], request: dict[str, Any]) -> None:
    """The Message: id, type, role, the request's model, typed content blocks,
    a documented stop_reason, stop_sequence, usage and lse_context."""
    ident = body.get("id")
    expect(isinstance(ident, str) and ident.startswith("msg_"), ident, "msg_...", "msg.resp.message")
    expect((body.get("type"), body.get("role"), body.get("model")) == ("message", "assistant", request["model"]),
           (body.get("type"), body.get("role"), body.get("model")), ("message", "assistant", request["model"]),
           "msg.resp.message")
    content = body.get("content")
    expect(isinstance(content, list) and all(_block_ok(b) for b in content), content,
           "thinking {thinking, signature}, text {text}, tool_use {id, name, input} blocks", "msg.resp.content")
    reason = body.get("stop_reason")
    expect(reason in STOP_REASONS, reason, f"one of {STOP_REASONS}", "msg.resp.stop_reason")
    sequence = body.get("stop_sequence")
    stops = request.get("stop_sequences") or []
    expect(sequence in stops if reason == "stop_sequence" else sequence is None, sequence,
           "the stop sequence that matched, else null", "msg.resp.stop_sequence")
    usage = body.get("usage") or {}
    expect(all(is_int(usage.get(k)) and usage[k] >= 0 for k in ("input_tokens", "output_tokens",
                                                               "cache_read_input_tokens"))
           and usage["output_tokens"] <= request["max_tokens"], usage,
           "input_tokens, output_tokens <= max_tokens, cache_read_input_tokens", "msg.resp.usage")
    ctx = body.get("lse_context") or {}
    expect(is_int(ctx.get("tokens_used")) and is_int(ctx.get("context_length"))
           and ctx.get("tokens_remaining") == max(0, ctx["context_length"] - ctx["tokens_used"]), ctx,
           "tokens_used, context_length, tokens_remaining", "msg.resp.lse_context")


def _block_ok(block: Any) -> bool:
    if not isinstance(block, dict) or block.get("type") not in BLOCK_TYPES:
        return False
    if block["type"] == "thinking":
        return isinstance(block.get("thinking"), str) and isinstance(block.get("signature"), str)
    if block["type"] == "text":
        return isinstance(block.get("text"), str)
    return isinstance(block.get("id"), str) and isinstance(block.get("name"), str) and \
        isinstance(block.get("input"), dict)


@named("msg.resp.stream_sequence")
def message_events(stream: Any) -> None:
    """message_start; per block start, deltas of its kind, stop (indexes 0, 1, ...); message_delta; message_stop."""
    events = [e for e in stream.chunks if e.get("type") != "ping"]
    kinds = [e.get("type") for e in events]
    expect(stream.status == 200 and kinds[:1] == ["message_start"] and kinds[-2:] == ["message_delta", "message_stop"],
           kinds, "message_start ... message_delta, message_stop")
    index, open_kind = -1, None
    for event in events[1:-2]:
        kind = event.get("type")
        if kind == "content_block_start":
            expect(open_kind is None and event.get("index") == index + 1, event, f"block {index + 1} starts")
            index, open_kind = index + 1, (event.get("content_block") or {}).get("type")
        elif kind == "content_block_delta":
            delta = (event.get("delta") or {}).get("type")
            expect(event.get("index") == index and delta == DELTA_OF.get(open_kind), event,
                   f"a {DELTA_OF.get(open_kind)} of block {index}")
        else:
            expect(kind == "content_block_stop" and event.get("index") == index and open_kind, event,
                   f"block {index} stops")
            open_kind = None
    expect(open_kind is None, kinds, "every block stopped before message_delta")


@named("msg.resp.stream_fold")
def message_fold(stream: Any, body: dict[str, Any]) -> None:
    """The stream's events folded are the whole reply's content and stop reason (same request, greedy)."""
    content: list[dict[str, Any]] = []
    partial: dict[int, str] = {}
    reason = None
    for event in stream.chunks:
        kind = event.get("type")
        if kind == "content_block_start":
            content.append(dict(event["content_block"]))
        elif kind == "content_block_delta":
            delta, block = event["delta"], content[event["index"]]
            if delta["type"] == "input_json_delta":
                partial[event["index"]] = partial.get(event["index"], "") + delta["partial_json"]
            else:
                key = "text" if delta["type"] == "text_delta" else "thinking"
                block[key] = block.get(key, "") + delta[key]
        elif kind == "message_delta":
            reason = event["delta"].get("stop_reason")
    for i, text in partial.items():
        content[i]["input"] = json.loads(text or "{}")
    strip = lambda blocks: [{k: v for k, v in b.items() if k != "id"} for b in blocks]  # noqa: E731
    expect((strip(content), reason) == (strip(body.get("content") or []), body.get("stop_reason")),
           (content, reason), (body.get("content"), body.get("stop_reason")))


@named("msg.resp.count_tokens")
def count_matches(reply: Any, body: dict[str, Any]) -> None:
    """count_tokens: {input_tokens} equal to the prompt the same request ran."""
    usage = body.get("usage") or {}
    want = (usage.get("input_tokens") or 0) + (usage.get("cache_read_input_tokens") or 0)
    got = reply.json.get("input_tokens") if isinstance(reply.json, dict) else None
    expect(reply.status == 200 and got == want, f"HTTP {reply.status} {reply.text[:200]}",
           f"HTTP 200 {{input_tokens: {want}}}")


@named("msg.resp.tool_use")
def tool_use_block(body: dict[str, Any]) -> None:
    """A tool call: a tool_use block (toolu_ id, name, input object) and stop_reason tool_use."""
    calls = [b for b in body.get("content") or [] if b.get("type") == "tool_use"]
    expect(bool(calls) and all(str(b.get("id", "")).startswith("toolu_") and isinstance(b.get("input"), dict)
                               for b in calls) and body.get("stop_reason") == "tool_use",
           body.get("content"), "tool_use blocks and stop_reason tool_use")


@named("msg.resp.thinking")
def thinking_block(body: dict[str, Any]) -> None:
    """Reasoning: a thinking block first, signature "", then the text."""
    kinds = [b.get("type") for b in body.get("content") or []]
    expect(kinds[:1] == ["thinking"] and "text" in kinds and body["content"][0].get("signature") == "",
           kinds, "thinking (signature \"\") then text")


@named(*ERROR_ROWS, *REFUSAL_ROWS, dynamic=True)
def messages_error(reply: Any, status: int, type_: str, param: str | None = None) -> None:
    """Anthropic's envelope {type: error, error: {type, message}} with the exact status, type and param."""
    body = reply.json if isinstance(reply.json, dict) else {}
    err = body.get("error") or {}
    got = (reply.status, body.get("type"), err.get("type"), err.get("param"))
    expect(got == (status, "error", type_, param) and isinstance(err.get("message"), str) and err["message"],
           f"HTTP {got}", f"HTTP {(status, 'error', type_, param)} with a message")
