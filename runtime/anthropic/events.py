"""A chat request's chunks as Anthropic's stream events, and their fold.

The engine streams chat chunks (lse.runtime.request_state); ``MessageEvents``
turns them, one by one on the reader's side, into the Messages stream:
``message_start``, then per content block ``content_block_start``,
``content_block_delta`` (``thinking_delta``, ``text_delta`` or
``input_json_delta``) and ``content_block_stop``, then ``message_delta``
(stop reason, usage) and ``message_stop``. ``fold`` builds the Message out
of those events, so the streamed and the whole reply cannot disagree.

Settled here:
- usage follows Anthropic's split: ``input_tokens`` are the prompt tokens
  LSE computed, ``cache_read_input_tokens`` the ones its prefix cache gave
  (their sum is the prompt). Which ones the cache gives is known only once
  the request has a slot, so ``message_start`` counts the whole prompt as
  ``input_tokens`` and ``message_delta`` carries the final three counts (the
  SDK's stream accumulator takes them from there).
- A thinking block's ``signature`` is "": LSE does not sign reasoning, and
  reads a thinking block sent back without checking one.
- A tool_use block's id is the engine's call id with ``toolu_`` for
  ``call_``; its input arrives as one ``input_json_delta``.
- ``lse_context`` (and ``lse_warnings`` when there are some) ride on
  ``message_delta`` and on the Message.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

Event = dict[str, Any]

# stop_reason by the engine's (finish_reason, stop_reason).
CONTEXT_FULL_STOP = "model_context_window_exceeded"
_STOP_REASONS = {"stop_token": "end_turn", "stop_sequence": "stop_sequence", "max_tokens": "max_tokens",
                 "context_full": CONTEXT_FULL_STOP}


def message_id(chat_id: str) -> str:
    """The Message id for a chat request's id (the same hex, Anthropic's prefix)."""
    return "msg_" + chat_id.split("-", 1)[-1]


def tool_use_id(call_id: str) -> str:
    return "toolu_" + call_id[len("call_"):] if call_id.startswith("call_") else call_id


def stop_reason_of(finish_reason: str | None, stop_reason: str | None) -> str | None:
    if finish_reason == "tool_calls":
        return "tool_use"
    return _STOP_REASONS.get(stop_reason or "")


def usage_of(chat_usage: dict[str, Any]) -> dict[str, int]:
    """Anthropic's usage from the chat usage: uncached input, cached input, output."""
    cached = (chat_usage.get("prompt_tokens_details") or {}).get("cached_tokens", 0)
    return {"input_tokens": chat_usage["prompt_tokens"] - cached, "output_tokens": chat_usage["completion_tokens"],
            "cache_read_input_tokens": cached}


class MessageEvents:
    """The Messages stream of one chat request, fed its chunks in order.

    ``input_tokens``: the prompt's length, for ``message_start``;
    ``matched_stop``: the stop sequence that ended the reply, asked when the
    last chunk says one did.
    """

    def __init__(self, model: str, input_tokens: int, matched_stop: Callable[[], str | None]) -> None:
        self.model = model
        self.input_tokens = input_tokens
        self.matched_stop = matched_stop
        self.events: list[Event] = []
        self._started = False
        self._open: str | None = None  # the open block's type: "thinking" or "text"
        self._index = -1

    def feed(self, chunk: dict[str, Any]) -> list[Event]:
        out: list[Event] = []
        if not self._started:
            self._started = True
            out.append(self._message_start(chunk["id"]))
        for choice in chunk.get("choices", ()):
            delta = choice.get("delta") or {}
            if delta.get("reasoning_content"):
                out += self._text("thinking", delta["reasoning_content"])
            if delta.get("content"):
                out += self._text("text", delta["content"])
            for call in delta.get("tool_calls") or ():
                out += self._tool_use(call)
            if choice.get("finish_reason") is not None or choice.get("stop_reason") is not None:
                out += self._end(choice, chunk)
        self.events += out
        return out

    def _message_start(self, chat_id: str) -> Event:
        message = {"id": message_id(chat_id), "type": "message", "role": "assistant", "model": self.model,
                   "content": [], "stop_reason": None, "stop_sequence": None,
                   "usage": {"input_tokens": self.input_tokens, "output_tokens": 0, "cache_read_input_tokens": 0}}
        return {"type": "message_start", "message": message}

    def _close(self) -> list[Event]:
        if self._open is None:
            return []
        self._open = None
        return [{"type": "content_block_stop", "index": self._index}]

    def _begin(self, block: dict[str, Any]) -> list[Event]:
        out = self._close()
        self._index += 1
        out.append({"type": "content_block_start", "index": self._index, "content_block": block})
        return out

    def _text(self, kind: str, text: str) -> list[Event]:
        out: list[Event] = []
        if self._open != kind:
            block = {"type": "thinking", "thinking": "", "signature": ""} if kind == "thinking" else \
                {"type": "text", "text": ""}
            out = self._begin(block)
            self._open = kind
        delta = {"type": "thinking_delta", "thinking": text} if kind == "thinking" else \
            {"type": "text_delta", "text": text}
        out.append({"type": "content_block_delta", "index": self._index, "delta": delta})
        return out

    def _tool_use(self, call: dict[str, Any]) -> list[Event]:
        function = call.get("function") or {}
        out = self._begin({"type": "tool_use", "id": tool_use_id(call.get("id") or ""),
                           "name": function.get("name", ""), "input": {}})
        out.append({"type": "content_block_delta", "index": self._index,
                    "delta": {"type": "input_json_delta", "partial_json": function.get("arguments") or "{}"}})
        out.append({"type": "content_block_stop", "index": self._index})
        return out

    def _end(self, choice: dict[str, Any], chunk: dict[str, Any]) -> list[Event]:
        out = self._close()
        reason = stop_reason_of(choice.get("finish_reason"), choice.get("stop_reason"))
        stop_sequence = self.matched_stop() if reason == "stop_sequence" else None
        usage = usage_of(chunk["usage"]) if chunk.get("usage") else \
            {"input_tokens": self.input_tokens, "output_tokens": 0, "cache_read_input_tokens": 0}
        delta: Event = {"type": "message_delta", "delta": {"stop_reason": reason, "stop_sequence": stop_sequence},
                        "usage": usage}
        for key in ("lse_context", "lse_warnings"):
            if chunk.get(key) is not None:
                delta[key] = chunk[key]
        out.append(delta)
        out.append({"type": "message_stop"})
        return out


def fold(events: list[Event]) -> dict[str, Any]:
    """The Message a stream of events describes (what the non-streamed
    request answers)."""
    if not events or events[0]["type"] != "message_start":
        raise ValueError("a Messages stream starts with message_start")
    message = copy.deepcopy(events[0]["message"])
    content: list[dict[str, Any]] = message["content"]
    partial: dict[int, str] = {}
    for event in events[1:]:
        kind = event["type"]
        if kind == "content_block_start":
            content.append(copy.deepcopy(event["content_block"]))
        elif kind == "content_block_delta":
            _fold_delta(content[event["index"]], event["delta"], partial, event["index"])
        elif kind == "content_block_stop" and event["index"] in partial:
            content[event["index"]]["input"] = json.loads(partial.pop(event["index"]) or "{}")
        elif kind == "message_delta":
            message.update(event["delta"])
            message["usage"] = {**message["usage"], **event["usage"]}
            for key in ("lse_context", "lse_warnings"):
                if key in event:
                    message[key] = event[key]
    return message


def _fold_delta(block: dict[str, Any], delta: dict[str, Any], partial: dict[int, str], index: int) -> None:
    kind = delta["type"]
    if kind == "text_delta":
        block["text"] += delta["text"]
    elif kind == "thinking_delta":
        block["thinking"] += delta["thinking"]
    elif kind == "signature_delta":
        block["signature"] += delta["signature"]
    elif kind == "input_json_delta":
        partial[index] = partial.get(index, "") + delta["partial_json"]
