"""Splitting a reply's text into reasoning, content and tool calls, as it
streams; the folded message is the same however the text was chunked.

Rules (the markers come from the chat template, never from a model table):

- Reasoning is the text inside the think block: from the start of the reply
  when the generation prompt left the block open (``opens_reasoning``), or
  from an opening marker the reply starts with, up to the closing marker. It
  is stripped of surrounding whitespace (llama.cpp's ``try_parse_reasoning``
  does the same). With ``split_reasoning=False`` the markers are plain text.
- A tool-call block is ``<open>`` JSON ``<close>`` where the JSON is an object
  with a string ``name`` and an object ``arguments``. Any other block,
  unterminated ones included, is content as the model wrote it, delimiters
  and all (openai-compatible-api.md "Tool calling").
- Whitespace between a closing marker and what follows it, and between
  content and a tool-call block, is dropped; everything else in content is
  kept byte for byte.

Text that might be the start of a marker is held back until it is decided,
so no partial marker reaches a client.
"""

from __future__ import annotations

import json
import random
import re
import uuid
from typing import Any

from lse.runtime.chat.template_text import tag_pairs

# A template variable holding a call (message.tool_calls, tool_call.name),
# not the word inside a tag such as <tool_call>.
_TOOL_CALL_REF = re.compile(r"(?<![\w</])tool_calls?\b")


def tool_call_markers(template_text: str) -> tuple[str, str] | None:
    """The ``<name>``/``</name>`` pair the template writes a message's tool
    calls between: of the spans from an opening tag to the next closing one
    that read a tool-call variable, the shortest (the Qwen family writes
    ``<tool_call>``, but nothing here knows that)."""
    spans = []
    for open_, close in tag_pairs(template_text):
        for m in re.finditer(re.escape(open_), template_text):
            end = template_text.find(close, m.end())
            if end >= 0 and _TOOL_CALL_REF.search(template_text, m.end(), end):
                spans.append((end - m.end(), open_, close))
    if not spans:
        return None
    _, open_, close = min(spans)
    return open_, close


def _held(buf: str, marker: str) -> int:
    """How many trailing characters of ``buf`` could begin ``marker``."""
    for k in range(min(len(marker) - 1, len(buf)), 0, -1):
        if buf.endswith(marker[:k]):
            return k
    return 0


def _parse_call(body: str) -> tuple[str, dict[str, Any]] | None:
    try:
        obj = json.loads(body)
    except json.JSONDecodeError:
        return None
    if not isinstance(obj, dict) or not isinstance(obj.get("name"), str) \
            or not isinstance(obj.get("arguments"), dict):
        return None
    return obj["name"], obj["arguments"]


_START, _REASONING, _CONTENT, _TOOL = "start", "reasoning", "content", "tool"


class OutputParser:
    """Feed the reply's text as it is decoded; get OpenAI delta fragments."""

    def __init__(self, opens_reasoning: bool, think_markers: tuple[str, str] | None,
                 tool_markers: tuple[str, str] | None, split_reasoning: bool = True, *,
                 rng: random.Random | None = None) -> None:
        self._think = think_markers if split_reasoning else None
        self._tool = tool_markers
        self._rng = rng
        if self._think is None:
            self._state = _CONTENT
        else:
            self._state = _REASONING if opens_reasoning else _START
        self._lstrip = self._state == _REASONING  # drop whitespace that starts a part
        self._buf = ""  # text not yet decided
        self._ws = ""  # trailing whitespace held until what follows is known
        self._tool_ws = ""  # whitespace before a tool block, restored if it is malformed
        self._fragments: list[dict[str, Any]] = []
        self._content: list[str] = []
        self._reasoning: list[str] = []
        self._calls: list[dict[str, Any]] = []

    @property
    def has_tool_calls(self) -> bool:
        return bool(self._calls)

    @property
    def in_reasoning(self) -> bool:
        """Whether the text fed so far leaves the reply inside its think block."""
        return self._state == _REASONING

    def feed(self, text: str) -> list[dict[str, Any]]:
        self._buf += text
        self._drain(final=False)
        return self._take()

    def finish(self) -> list[dict[str, Any]]:
        """The end of the reply: flush what was held back."""
        self._drain(final=True)
        return self._take()

    def message(self) -> dict[str, Any]:
        """The folded assistant message (content None for a tool-call-only turn)."""
        content = "".join(self._content)
        msg: dict[str, Any] = {"role": "assistant", "content": content if content or not self._calls else None}
        if self._reasoning:
            msg["reasoning_content"] = "".join(self._reasoning)
        if self._calls:
            msg["tool_calls"] = [dict(c) for c in self._calls]
        return msg

    # -- output --------------------------------------------------------------

    def _take(self) -> list[dict[str, Any]]:
        out, self._fragments = self._fragments, []
        return out

    def _emit(self, kind: str, text: str) -> None:
        (self._content if kind == "content" else self._reasoning).append(text)
        last = self._fragments[-1] if self._fragments else None
        if last is not None and kind in last:
            last[kind] += text
        else:
            self._fragments.append({kind: text})

    def _text(self, kind: str, text: str) -> None:
        """Emit ``text``, dropping leading whitespace where a part starts and
        holding trailing whitespace back."""
        if self._lstrip:
            text = text.lstrip()
            if not text:
                return
            self._lstrip = False
        body = text.rstrip()
        if body:
            self._emit(kind, self._ws + body)
            self._ws = text[len(body):]
        else:
            self._ws += text

    def _call(self, name: str, arguments: dict[str, Any]) -> None:
        suffix = f"{self._rng.getrandbits(96):024x}" if self._rng is not None else uuid.uuid4().hex[:24]
        call = {"id": f"call_{suffix}", "type": "function",
                "function": {"name": name, "arguments": json.dumps(arguments, ensure_ascii=False)}}
        self._fragments.append({"tool_calls": [{"index": len(self._calls), **call}]})
        self._calls.append(call)

    # -- states --------------------------------------------------------------

    def _drain(self, final: bool) -> None:
        step = {_START: self._start, _REASONING: self._in_reasoning,
                _CONTENT: self._in_content, _TOOL: self._in_tool}
        while step[self._state](final):
            pass

    def _start(self, final: bool) -> bool:
        """Before the first text: does the reply open a think block itself?"""
        assert self._think is not None
        stripped = self._buf.lstrip()
        if stripped.startswith(self._think[0]):
            self._buf = stripped[len(self._think[0]):]
            self._state, self._lstrip = _REASONING, True
            return True
        if not final and (not stripped or self._think[0].startswith(stripped)):
            return False
        self._state = _CONTENT
        return True

    def _in_reasoning(self, final: bool) -> bool:
        assert self._think is not None
        close = self._think[1]
        at = self._buf.find(close)
        if at >= 0:
            self._text("reasoning_content", self._buf[:at])
            self._buf = self._buf[at + len(close):]
            self._state, self._lstrip, self._ws = _CONTENT, True, ""
            return True
        keep = 0 if final else _held(self._buf, close)
        self._text("reasoning_content", self._buf[:len(self._buf) - keep])
        self._buf = self._buf[len(self._buf) - keep:]
        if final:
            self._ws = ""
        return False

    def _in_content(self, final: bool) -> bool:
        keep = 0
        if self._tool is not None:
            at = self._buf.find(self._tool[0])
            if at >= 0:
                self._text("content", self._buf[:at])
                self._tool_ws, self._ws = self._ws, ""
                self._buf = self._buf[at + len(self._tool[0]):]
                self._state = _TOOL
                return True
            keep = 0 if final else _held(self._buf, self._tool[0])
        self._text("content", self._buf[:len(self._buf) - keep])
        self._buf = self._buf[len(self._buf) - keep:]
        if final and self._ws:
            self._emit("content", self._ws)
            self._ws = ""
        return False

    def _in_tool(self, final: bool) -> bool:
        assert self._tool is not None
        open_, close = self._tool
        at = self._buf.find(close)
        if at < 0:
            if final:  # unterminated: content as written
                self._text("content", self._tool_ws + open_ + self._buf)
                self._buf, self._tool_ws, self._state = "", "", _CONTENT
                return True
            return False
        body, self._buf = self._buf[:at], self._buf[at + len(close):]
        call = _parse_call(body)
        if call is None:
            self._text("content", self._tool_ws + open_ + body + close)
        else:
            self._call(*call)
            self._lstrip, self._ws = True, ""
        self._tool_ws, self._state = "", _CONTENT
        return True
