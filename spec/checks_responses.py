"""Checks of the Responses API (rows_responses_api): the response object,
its output items and usage, the stream's events and their fold, the store's
routes and figures, and error answers. Pure functions of HTTP data."""

from __future__ import annotations

import json
from typing import Any

from lse.spec.checks import expect, is_int, named
from lse.spec.table import all_rows
from lse.spec.rows_responses_api import ResponsesError

STATUSES = ("completed", "incomplete", "in_progress", "cancelled", "failed")
STORE_KEYS = ("entries", "bytes", "running", "max_entries", "max_bytes", "ttl_secs", "evicted", "expired",
              "too_large")
# The settings a reply repeats, and OpenAI's default for each the request did not send.
ECHO_DEFAULTS = {"instructions": None, "max_output_tokens": None, "tools": [], "tool_choice": "auto",
                 "parallel_tool_calls": True, "text": {"format": {"type": "text"}}, "store": True,
                 "previous_response_id": None}
ERROR_ROWS = tuple(r.id for r in all_rows() if isinstance(r, ResponsesError) and not r.manual)


def output_text(body: dict[str, Any]) -> str:
    return "".join(p.get("text", "") for item in body.get("output") or [] if item.get("type") == "message"
                   for p in item.get("content") or [] if p.get("type") == "output_text")


@named("responses.reply", "responses.status", "responses.output_message", "responses.sampling",
       "responses.metadata", "responses.model", "responses.echo", "responses.tools", "responses.tool_choice",
       "responses.parallel_tool_calls")
def response_object(body: Any, request: dict[str, Any]) -> tuple[str, ...]:
    """The response object's members, its echoed settings (OpenAI's defaults where not sent) and its message
    items."""
    expect(isinstance(body, dict), body, "a JSON object")
    expect(str(body.get("id", "")).startswith("resp_"), body.get("id"), "id resp_...", "responses.reply")
    expect(body.get("object") == "response", body.get("object"), "object response", "responses.reply")
    expect(is_int(body.get("created_at")), body.get("created_at"), "created_at: Unix seconds", "responses.reply")
    expect(body.get("status") in STATUSES, body.get("status"), f"status one of {STATUSES}", "responses.status")
    for key in ("error", "incomplete_details", "usage", "output", "tools", "tool_choice", "parallel_tool_calls"):
        expect(key in body, sorted(body), f"a {key} member", "responses.reply")
    rows = ["responses.reply", "responses.status"]
    for key, row in (("temperature", "responses.sampling"), ("top_p", "responses.sampling"),
                     ("metadata", "responses.metadata"), ("model", "responses.model")):
        if key in request:
            expect(body.get(key) == request[key], body.get(key), f"{key} echoed: {request[key]}", row)
            rows.append(row)
    for key, default in ECHO_DEFAULTS.items():
        want = request.get(key, default)
        expect(body.get(key) == want, body.get(key), f"{key} echoed: {want}" if key in request
               else f"{key}: {default} (not sent)", "responses.echo")
        if key in request and key in ("tools", "tool_choice", "parallel_tool_calls"):
            rows.append(f"responses.{key}")
    rows.append("responses.echo")
    for item in body.get("output") or []:
        if item.get("type") == "message":
            parts = item.get("content") or []
            expect(item.get("role") == "assistant" and len(parts) == 1 and parts[0].get("type") == "output_text",
                   item, "a message item: role assistant, one output_text part", "responses.output_message")
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


@named("responses.stream")
def event_stream(stream: Any) -> None:
    """stream: true: HTTP 200, text/event-stream, and events."""
    expect(stream.status == 200 and "text/event-stream" in stream.headers.get("content-type", "")
           and stream.chunks, (stream.status, stream.headers.get("content-type"), len(stream.chunks)),
           "HTTP 200 text/event-stream with events")


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


@named("responses.store", "responses.routes")
def stored_reply(got: Any, body: dict[str, Any]) -> None:
    """GET answers the stored response as it was sent."""
    expect(got.status == 200 and got.json == body, f"HTTP {got.status} {got.text[:200]}", "HTTP 200, the reply")


@named("responses.delete", "responses.routes")
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


@named("responses.routes", "responses.input", "responses.instructions", "responses.model", "responses.tools",
       "responses.tool_choice", "responses.parallel_tool_calls", "responses.reasoning_effort",
       "responses.text_format", "responses.extensions", "responses.unknown_fields", dynamic=True)
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


@named(*ERROR_ROWS, "err.responses.envelope", "responses.reasoning_effort", "responses.delete", "responses.store",
       "responses.stream_refusal", "responses.extensions", dynamic=True)
def responses_error(reply: Any, status: int, code: str | None, param: str | None,
                    type_: str = "invalid_request_error") -> None:
    """OpenAI's envelope {error: {message, type, param, code}} with the exact status, error.type, error.code
    and error.param (Responses spellings)."""
    err = reply.error
    got = (reply.status, err.get("type"), err.get("code"), err.get("param"))
    want = (status, type_, code, param)
    expect(got == want, f"HTTP {got}", f"HTTP {want}")
    expect(isinstance(err.get("message"), str) and err["message"] and "param" in err and "code" in err, err,
           "error: {message (non-empty), type, param, code}", "err.responses.envelope")


@named("err.responses.unsupported_reasoning_effort")
def effort_levels(reply: Any, level_ids: tuple[str, ...]) -> None:
    """An undefined reasoning.effort's error lists the model's level ids."""
    expect(reply.error.get("levels") == list(level_ids), reply.error.get("levels"), f"levels {list(level_ids)}")


@named("err.responses.wrong_method")
def method_refused(reply: Any, allow: str) -> None:
    """405 method_not_allowed with Allow naming the path's methods."""
    got = (reply.status, reply.error.get("code"), reply.headers.get("allow"))
    expect(got == (405, "method_not_allowed", allow), got, (405, "method_not_allowed", allow))


@named("responses.stream_failed", "err.responses.timeout")
def stream_failed(stream: Any, code: str) -> None:
    """An error after the stream began: a 200 stream whose last event is response.failed, status failed,
    error.code server_error, the message starting with LSE's code."""
    kinds = [c.get("type") for c in stream.chunks]
    expect(stream.status == 200 and kinds[:1] == ["response.created"] and kinds[-1:] == ["response.failed"],
           (stream.status, kinds[:3], kinds[-1:]), "HTTP 200, response.created ... response.failed")
    final = stream.chunks[-1].get("response") or {}
    error = final.get("error") or {}
    expect(final.get("status") == "failed" and error.get("code") == "server_error"
           and str(error.get("message", "")).startswith(f"{code}: "), (final.get("status"), error),
           f"status failed, error {{code server_error, message '{code}: ...'}}")


@named("responses.cancel_finished")
def cancel_answers_finished(reply: Any, body: dict[str, Any]) -> None:
    """Cancelling a finished response: HTTP 200 and the response unchanged."""
    expect(reply.status == 200 and reply.json == body, f"HTTP {reply.status} {reply.text[:200]}",
           "HTTP 200, the response as it was")


@named("responses.tool_choice")
def forced_function_call(body: dict[str, Any], name: str) -> None:
    """tool_choice {type function, name}: the reply's first item is a function_call of that name (its arguments
    a JSON object once the reply completed)."""
    items = [i for i in body.get("output") or [] if i.get("type") != "reasoning"]
    expect(bool(items) and items[0].get("type") == "function_call" and items[0].get("name") == name,
           [(i.get("type"), i.get("name")) for i in items], f"a function_call item named {name} first")
    if body.get("status") == "completed":
        try:
            args = json.loads(items[0].get("arguments") or "")
        except ValueError:
            args = None
        expect(isinstance(args, dict), items[0].get("arguments"), "arguments: a JSON object")
