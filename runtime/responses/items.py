"""The engine's chat chunks as Responses output items and stream events.

``ResponseBuilder`` reads the chunks of one chat choice in order and says
what happened in OpenAI's Responses events, each with its
``sequence_number``: ``response.created`` and ``response.in_progress``
first; per output item ``response.output_item.added``, its content part's
``added``, the deltas (``output_text``, ``reasoning_text``,
``function_call_arguments``), their ``done`` events and
``response.output_item.done``; last ``response.completed`` (or
``response.incomplete`` past max_output_tokens or after a cancel, or
``response.failed``). The response object the last event carries is the
fold of the events before it: its output is the items of every
``output_item.done``, in order. The non-streamed reply is that object.

Items: a reply's reasoning (the think block) is a ``reasoning`` item with
one ``reasoning_text`` part; its text a ``message`` with one ``output_text``
part; each tool call a ``function_call`` item whose ``call_id`` is the chat
tool call's id.
"""

from __future__ import annotations

import uuid
from typing import Any

Event = dict[str, Any]

# finish -> (status, incomplete_details.reason)
ENDINGS = {"length": ("incomplete", "max_output_tokens"), "cancelled": ("cancelled", None)}
TERMINAL = {"completed": "response.completed", "incomplete": "response.incomplete",
            "cancelled": "response.incomplete", "failed": "response.failed"}


def new_id(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex}"


class ResponseBuilder:
    def __init__(self, rid: str, created_at: int, echo: dict[str, Any]) -> None:
        self.rid, self.created_at, self.echo = rid, created_at, echo
        self.model = echo.get("model") or ""
        self.status = "in_progress"
        self.output: list[dict[str, Any]] = []  # finished items
        self.current: dict[str, Any] | None = None  # the open item
        self.usage: dict[str, Any] | None = None
        self.incomplete: dict[str, Any] | None = None
        self.error: dict[str, Any] | None = None
        self.started = False
        self._seq = 0

    # ---- the response object -------------------------------------------------
    def response(self) -> dict[str, Any]:
        """The response as it stands (OpenAI's key order)."""
        e = self.echo
        output = self.output + ([self._item_now()] if self.current is not None else [])
        return {"id": self.rid, "object": "response", "created_at": self.created_at, "status": self.status,
                "background": False, "error": self.error, "incomplete_details": self.incomplete,
                "instructions": e["instructions"], "max_output_tokens": e["max_output_tokens"],
                "model": self.model, "output": output, "parallel_tool_calls": e["parallel_tool_calls"],
                "previous_response_id": e["previous_response_id"], "reasoning": e["reasoning"],
                "store": e["store"], "temperature": e["temperature"], "text": e["text"],
                "tool_choice": e["tool_choice"], "tools": e["tools"], "top_p": e["top_p"],
                "truncation": "disabled", "usage": self.usage, "metadata": e["metadata"]}

    # ---- events --------------------------------------------------------------
    def _event(self, kind: str, **fields: Any) -> Event:
        event = {"type": kind, "sequence_number": self._seq, **fields}
        self._seq += 1
        return event

    def start(self, model: str) -> list[Event]:
        self.started = True
        self.model = model
        return [self._event("response.created", response=self.response()),
                self._event("response.in_progress", response=self.response())]

    def feed(self, chunk: dict[str, Any]) -> list[Event]:
        """The events one chat chunk makes."""
        events = [] if self.started else self.start(chunk.get("model", self.model))
        for choice in chunk.get("choices", []):
            delta = choice.get("delta") or {}
            if delta.get("reasoning_content"):
                events += self._text("reasoning", delta["reasoning_content"])
            if delta.get("content"):
                events += self._text("message", delta["content"])
            for call in delta.get("tool_calls") or []:
                events += self._tool_call(call)
            if choice.get("finish_reason") is not None or choice.get("stop_reason") == "cancelled":
                self._finish(choice.get("finish_reason"), choice.get("stop_reason"))
        if chunk.get("usage") is not None:
            self.usage = usage(chunk["usage"])
        return events

    def end(self) -> list[Event]:
        """The engine's done: close the open item, then the terminal event."""
        events = self._close()
        if self.status == "in_progress":
            self.status = "completed"
        return events + [self._event(TERMINAL[self.status], response=self.response())]

    def fail(self, error: dict[str, Any]) -> list[Event]:
        """The request failed (an engine error, a timeout): ``response.failed``
        carrying ``error`` (OpenAI's code ``server_error``, LSE's code in the message)."""
        events = [] if self.started else self.start(self.model)
        events += self._close("incomplete")
        self.status = "failed"
        message = error.get("message", "the request failed")
        code = error.get("code")
        self.error = {"code": "server_error", "message": f"{code}: {message}" if code else message}
        return events + [self._event("response.failed", response=self.response())]

    def _finish(self, finish_reason: str | None, stop_reason: str | None) -> None:
        status, reason = ENDINGS.get("cancelled" if stop_reason == "cancelled" else finish_reason or "",
                                     ("completed", None))
        self.status = status
        self.incomplete = {"reason": reason} if reason else None

    # ---- items ---------------------------------------------------------------
    def _text(self, kind: str, text: str) -> list[Event]:
        events = []
        cur = self.current
        if cur is None or cur["item"]["type"] != kind:
            events += self._close()
            events += self._open(kind)
            cur = self.current
        cur["text"] += text
        delta = "response.output_text.delta" if kind == "message" else "response.reasoning_text.delta"
        extra = {"logprobs": []} if kind == "message" else {}
        events.append(self._event(delta, item_id=cur["item"]["id"], output_index=cur["index"], content_index=0,
                                  delta=text, **extra))
        return events

    def _tool_call(self, call: dict[str, Any]) -> list[Event]:
        events = []
        cur = self.current
        fn = call.get("function") or {}
        if cur is None or cur["item"]["type"] != "function_call" or call.get("id") not in (None, cur["call_id"]):
            events += self._close()
            events += self._open("function_call", call_id=call.get("id") or new_id("call"), name=fn.get("name", ""))
            cur = self.current
        if fn.get("arguments"):
            cur["text"] += fn["arguments"]
            events.append(self._event("response.function_call_arguments.delta", item_id=cur["item"]["id"],
                                      output_index=cur["index"], delta=fn["arguments"]))
        return events

    def _open(self, kind: str, call_id: str = "", name: str = "") -> list[Event]:
        index = len(self.output)
        if kind == "function_call":
            item = {"id": new_id("fc"), "type": "function_call", "status": "in_progress", "arguments": "",
                    "call_id": call_id, "name": name}
            self.current = {"item": item, "index": index, "text": "", "call_id": call_id}
            return [self._event("response.output_item.added", output_index=index, item=dict(item))]
        if kind == "message":
            item = {"id": new_id("msg"), "type": "message", "status": "in_progress", "content": [],
                    "role": "assistant"}
            part = {"type": "output_text", "annotations": [], "logprobs": [], "text": ""}
        else:
            item = {"id": new_id("rs"), "type": "reasoning", "summary": [], "content": [], "status": "in_progress"}
            part = {"type": "reasoning_text", "text": ""}
        self.current = {"item": item, "index": index, "text": "", "part": part}
        return [self._event("response.output_item.added", output_index=index, item=dict(item)),
                self._event("response.content_part.added", item_id=item["id"], output_index=index,
                            content_index=0, part=dict(part))]

    def _item_now(self, status: str | None = None) -> dict[str, Any]:
        cur = self.current
        item = dict(cur["item"])
        if status is not None:
            item["status"] = status
        if item["type"] == "function_call":
            item["arguments"] = cur["text"]
        else:
            item["content"] = [{**cur["part"], "text": cur["text"]}]
        return item

    def _close(self, status: str | None = None) -> list[Event]:
        cur = self.current
        if cur is None:
            return []
        status = status or ("incomplete" if self.status in ("incomplete", "cancelled") else "completed")
        item = self._item_now(status)
        ids = {"item_id": item["id"], "output_index": cur["index"]}
        if item["type"] == "function_call":
            events = [self._event("response.function_call_arguments.done", **ids, name=item["name"],
                                  arguments=cur["text"])]
        else:
            done = "response.output_text.done" if item["type"] == "message" else "response.reasoning_text.done"
            extra = {"logprobs": []} if item["type"] == "message" else {}
            events = [self._event(done, **ids, content_index=0, text=cur["text"], **extra),
                      self._event("response.content_part.done", **ids, content_index=0, part=item["content"][0])]
        events.append(self._event("response.output_item.done", output_index=cur["index"], item=item))
        self.output.append(item)
        self.current = None
        return events


def usage(chat: dict[str, Any]) -> dict[str, Any]:
    """Chat's usage as the Responses API spells it."""
    cached = (chat.get("prompt_tokens_details") or {}).get("cached_tokens", 0)
    reasoning = (chat.get("completion_tokens_details") or {}).get("reasoning_tokens", 0)
    return {"input_tokens": chat["prompt_tokens"],
            "input_tokens_details": {"cached_tokens": cached, "cache_write_tokens": 0},
            "output_tokens": chat["completion_tokens"],
            "output_tokens_details": {"reasoning_tokens": reasoning},
            "total_tokens": chat["total_tokens"]}


def conversation_turn(output: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A response's output items as the chat messages a later turn replays:
    one assistant message with its reasoning, text and tool calls."""
    msg: dict[str, Any] = {"role": "assistant", "content": ""}
    for item in output:
        if item["type"] == "reasoning":
            msg["reasoning_content"] = "".join(p["text"] for p in item.get("content") or [])
        elif item["type"] == "message":
            msg["content"] += "".join(p["text"] for p in item["content"])
        elif item["type"] == "function_call":
            msg.setdefault("tool_calls", []).append(
                {"id": item["call_id"], "type": "function",
                 "function": {"name": item["name"], "arguments": item["arguments"]}})
    return [msg]


def fold(events: list[Event]) -> list[dict[str, Any]]:
    """The output a stream's events describe: every ``output_item.done``'s item, in order."""
    return [e["item"] for e in events if e["type"] == "response.output_item.done"]
