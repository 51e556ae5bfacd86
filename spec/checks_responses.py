"""Checks of the Responses API (rows_responses_api): the response object,
its output items and usage, the stream's events and their fold, the store's
routes and figures, and error answers. Pure functions of HTTP data."""

from __future__ import annotations

import json
from typing import Any

from lse.spec.checks import expect, is_int, named

STATUSES = ("completed", "incomplete", "in_progress", "cancelled", "failed")
STORE_KEYS = ("entries", "bytes", "running", "max_entries", "max_bytes", "ttl_secs", "evicted", "expired",
              "too_large")


def output_text(body: dict[str, Any]) -> str:
    return "".join(p.get("text", "") for item in body.get("output") or [] if item.get("type") == "message"
                   for p in item.get("content") or [] if p.get("type") == "output_text")


@named("responses.reply", "responses.output_message", "responses.sampling", "responses.metadata")
def response_object(body: Any, request: dict[str, Any]) -> tuple[str, ...]:
    """The response object's members, its echoed settings and its message items."""
    expect(isinstance(body, dict), body, "a JSON object")
    expect(str(body.get("id", "")).startswith("resp_"), body.get("id"), "id resp_...")
    expect(body.get("object") == "response", body.get("object"), "object response")
    expect(is_int(body.get("created_at")), body.get("created_at"), "created_at: Unix seconds")
    expect(body.get("status") in STATUSES, body.get("status"), f"status one of {STATUSES}")
    for key in ("error", "incomplete_details", "usage", "output", "tools", "tool_choice", "parallel_tool_calls"):
        expect(key in body, sorted(body), f"a {key} member")
    rows = ["responses.reply"]
    for key in ("temperature", "top_p", "metadata"):
        if key in request:
            expect(body.get(key) == request[key], body.get(key), f"{key} echoed: {request[key]}")
            rows.append("responses.metadata" if key == "metadata" else "responses.sampling")
    for item in body.get("output") or []:
        if item.get("type") == "message":
            parts = item.get("content") or []
            expect(item.get("role") == "assistant" and len(parts) == 1 and parts[0].get("type") == "output_text",
                   item, "a message item: role assistant, one output_text part")
            rows.append("responses.output_message")
    return tuple(dict.fromkeys(rows))


@named("responses.usage", "responses.max_output_tokens")
def response_usage(body: dict[str, Any], max_output_tokens: int | None) -> tuple[str, ...]:
    """usage's members add up; a reply max_output_tokens ended is incomplete, saying so."""
    usage = body.get("usage") or {}
    ins, outs = usage.get("input_tokens"), usage.get("output_tokens")
    expect(is_int(ins) and is_int(outs) and usage.get("total_tokens") == ins + outs, usage,
           "input_tokens + output_tokens = total_tokens")
    cached = (usage.get("input_tokens_details") or {}).get("cached_tokens")
    reasoning = (usage.get("output_tokens_details") or {}).get("reasoning_tokens")
    expect(is_int(cached) and 0 <= cached <= ins, usage, "input_tokens_details.cached_tokens in 0..input_tokens")
    expect(is_int(reasoning) and 0 <= reasoning <= outs, usage,
           "output_tokens_details.reasoning_tokens in 0..output_tokens")
    if max_output_tokens is None:
        return ("responses.usage",)
    expect(outs <= max_output_tokens, outs, f"output_tokens <= max_output_tokens {max_output_tokens}")
    if body.get("status") == "incomplete":
        expect(body.get("incomplete_details") == {"reason": "max_output_tokens"}, body.get("incomplete_details"),
               "incomplete_details {reason: max_output_tokens}")
        return ("responses.usage", "responses.max_output_tokens")
    return ("responses.usage",)


@named("responses.stream_events")
def stream_events(events: list[str], chunks: list[dict[str, Any]]) -> None:
    """The event sequence: created, in_progress, items opened and closed in order, a terminal event last,
    sequence numbers 0, 1, ..., no [DONE]."""
    expect("[DONE]" not in events, events[-1:], "no [DONE] frame")
    kinds = [c.get("type") for c in chunks]
    expect(kinds[:2] == ["response.created", "response.in_progress"], kinds[:2],
           "response.created, response.in_progress first")
    expect(kinds[-1] in ("response.completed", "response.incomplete"), kinds[-1:], "a terminal event last")
    expect([c.get("sequence_number") for c in chunks] == list(range(len(chunks))),
           [c.get("sequence_number") for c in chunks][:20], "sequence_number 0, 1, 2, ...")
    open_items: set[int] = set()
    for c in chunks:
        if c["type"] == "response.output_item.added":
            open_items.add(c["output_index"])
        elif c["type"] == "response.output_item.done":
            expect(c["output_index"] in open_items, c["output_index"], "an item closed after it was added")
            open_items.discard(c["output_index"])
        elif c["type"].endswith(".delta"):
            expect(c.get("output_index") in open_items, c, "a delta of an open item")
    expect(not open_items, sorted(open_items), "every item closed before the end")


@named("responses.stream_fold")
def stream_fold(chunks: list[dict[str, Any]]) -> None:
    """The last event's response holds the done items in order; each text is its deltas joined."""
    done = [c["item"] for c in chunks if c.get("type") == "response.output_item.done"]
    final = chunks[-1].get("response") or {}
    expect(final.get("output") == done, final.get("output"), "the output_item.done items, in order")
    for index, item in enumerate(done):
        deltas = "".join(c["delta"] for c in chunks if c.get("output_index") == index and c["type"].endswith("delta"))
        if item["type"] == "function_call":
            expect(item["arguments"] == deltas, item["arguments"], f"the argument deltas joined: {deltas!r}")
        else:
            text = "".join(p["text"] for p in item.get("content") or [])
            expect(text == deltas, text, f"the deltas joined: {deltas!r}")


@named("responses.store")
def stored_reply(got: Any, body: dict[str, Any]) -> None:
    """GET answers the stored response as it was sent."""
    expect(got.status == 200 and got.json == body, f"HTTP {got.status} {got.text[:200]}", "HTTP 200, the reply")


@named("responses.delete")
def deleted_reply(reply: Any, rid: str) -> None:
    expect(reply.status == 200 and reply.json == {"id": rid, "object": "response.deleted", "deleted": True},
           f"HTTP {reply.status} {reply.text[:200]}", f"HTTP 200 {{id {rid}, object response.deleted, deleted true}}")


@named("responses.previous_response_id")
def continued(first: dict[str, Any], second: dict[str, Any]) -> None:
    """The second turn's prompt holds the first turn's, and the prefix cache served part of it (a template
    that renders a past turn unlike the reply it generated, a think block dropped, shortens the prefix)."""
    a, b = first["usage"], second["usage"]
    expect(b["input_tokens"] > a["input_tokens"], b["input_tokens"], f"more than {a['input_tokens']} input tokens")
    cached = b["input_tokens_details"]["cached_tokens"]
    expect(cached > 0, cached, "cached_tokens > 0")
    expect(second.get("previous_response_id") == first["id"], second.get("previous_response_id"), first["id"])


@named("responses.store_status")
def store_status(status: dict[str, Any]) -> None:
    store = status.get("responses_store")
    expect(isinstance(store, dict) and all(is_int(store.get(k)) or k == "ttl_secs" for k in STORE_KEYS), store,
           f"responses_store with {', '.join(STORE_KEYS)}")


@named("responses.text_format")
def json_output(body: dict[str, Any]) -> tuple[str, ...]:
    """A completed reply under text.format json_object is a JSON object."""
    if body.get("status") != "completed":
        return ()
    try:
        value = json.loads(output_text(body))
    except ValueError:
        value = None
    expect(isinstance(value, dict), output_text(body)[:200], "a JSON object")
    return ("responses.text_format",)


@named("responses.reasoning_item")
def reasoning_item(body: dict[str, Any]) -> None:
    kinds = [i.get("type") for i in body.get("output") or []]
    expect("reasoning" in kinds, kinds, "a reasoning item")
    item = body["output"][kinds.index("reasoning")]
    expect([p.get("type") for p in item.get("content") or []] == ["reasoning_text"], item, "one reasoning_text part")
    reasoning = body["usage"]["output_tokens_details"]["reasoning_tokens"]
    expect(reasoning > 0, reasoning, "reasoning_tokens > 0")


@named("responses.function_call")
def function_call_item(body: dict[str, Any]) -> None:
    calls = [i for i in body.get("output") or [] if i.get("type") == "function_call"]
    expect(len(calls) >= 1, [i.get("type") for i in body.get("output") or []], "a function_call item")
    for call in calls:
        expect(all(isinstance(call.get(k), str) and call[k] for k in ("call_id", "name")), call,
               "call_id and name: non-empty strings")
        try:
            args = json.loads(call.get("arguments") or "{}")
        except ValueError:
            args = None
        expect(isinstance(args, dict), call.get("arguments"), "arguments: a JSON object")


@named("responses.input", "responses.instructions", dynamic=True)
def responses_accepted(reply: Any) -> None:
    """HTTP 200 with a response object."""
    expect(reply.status == 200 and (reply.json or {}).get("object") == "response",
           f"HTTP {reply.status} {reply.text[:200]}", "HTTP 200, a response")


@named("responses.instructions")
def instructions_counted(plain: dict[str, Any], instructed: dict[str, Any]) -> None:
    """The same input with instructions is another prompt (a system message; a template may put a default
    one where none is sent, so the count can go either way), and the reply echoes them."""
    a, b = plain["usage"]["input_tokens"], instructed["usage"]["input_tokens"]
    expect(b != a, b, f"another prompt length than without instructions ({a})")
    expect(isinstance(instructed.get("instructions"), str) and plain.get("instructions") is None,
           (plain.get("instructions"), instructed.get("instructions")), "instructions echoed, null when not sent")


@named("err.responses.input", "err.responses.item_type", "err.responses.tool_type", "err.responses.max_output_tokens",
       "err.responses.text_format", "err.responses.unsupported", "err.response_not_found", "responses.reasoning_effort",
       "responses.delete", "responses.store", dynamic=True)
def responses_error(reply: Any, status: int, code: str | None, param: str | None) -> None:
    """The exact status, error.type, error.code and error.param (Responses spellings)."""
    err = reply.error
    got = (reply.status, err.get("type"), err.get("code"), err.get("param"))
    want = (status, "invalid_request_error", code, param)
    expect(got == want, f"HTTP {got}", f"HTTP {want}")
