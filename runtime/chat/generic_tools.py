"""A generic tool-call form for chat templates that write no tool-call
markers (the default model's), so a forced tool call works on every model.

As llama-server's generic handler (common/chat.cpp, "Generic"), when a
request forces a call (``tool_choice`` "required" or a named function) and
the template has no markers:

- the prompt gains a system instruction (appended to the conversation's own
  system message, or a new first one) that lists the tools, unless the
  template renders ``tools`` itself, and asks for one JSON object:
  ``{"tool_call": {"name", "arguments"}}``, or with ``parallel_tool_calls``
  under "required" ``{"tool_calls": [{"name", "arguments"}, ...]}``;
- the grammar admits exactly that object, each call's arguments under its
  tool's parameters schema (``generic_schema``);
- ``GenericToolParser`` holds the reply's text back and, at its end, turns
  the object into ``tool_calls`` (finish_reason "tool_calls"); text that is
  not such an object (a reply cut by max_tokens) is content as written.

``tool_choice`` "auto" and "none" on such a template are unchanged: the
tools reach the template, and the reply is content.
"""

from __future__ import annotations

import json
import re
from typing import Any

from lse.runtime.chat.output import OutputParser

GENERIC = "generic"  # the output parser's tool_markers argument for this form


def renders_tools(template_text: str) -> bool:
    """Whether the template's code (not its comments or text) reads ``tools``."""
    code = _COMMENT.sub("", template_text)
    return any(re.search(r"\btools\b", block) for block in _CODE.findall(code))


_COMMENT = re.compile(r"\{#.*?#\}", re.S)
_CODE = re.compile(r"\{\{.*?\}\}|\{%.*?%\}", re.S)


def generic_schema(tools: list[dict[str, Any]], several: bool) -> dict[str, Any]:
    """The JSON schema of the reply: one call (``several``: a non-empty array of calls) to ``tools``."""
    options = [{"type": "object", "properties": {"name": {"const": t["function"]["name"]},
                                                  "arguments": _parameters(t)},
                "required": ["name", "arguments"], "additionalProperties": False} for t in tools]
    call = options[0] if len(options) == 1 else {"anyOf": options}
    key, value = ("tool_calls", {"type": "array", "items": call, "minItems": 1}) if several else ("tool_call", call)
    return {"type": "object", "properties": {key: value}, "required": [key], "additionalProperties": False}


def with_instruction(messages: list[dict[str, Any]], tools: list[dict[str, Any]], several: bool,
                     describe: bool) -> list[dict[str, Any]]:
    """``messages`` with the generic form's instruction in the system message."""
    text = instruction(tools, several, describe)
    if messages and messages[0].get("role") == "system" and isinstance(messages[0].get("content"), str):
        first = {**messages[0], "content": f"{messages[0]['content']}\n\n{text}"}
        return [first, *messages[1:]]
    return [{"role": "system", "content": text}, *messages]


def instruction(tools: list[dict[str, Any]], several: bool, describe: bool) -> str:
    listed = ""
    if describe:
        entries = [{"name": t["function"]["name"], "description": t["function"].get("description", ""),
                    "parameters": _parameters(t)} for t in tools]
        listed = ("You can call these tools (each one's arguments as a JSON Schema):\n"
                  + "\n".join(json.dumps(e, ensure_ascii=False) for e in entries) + "\n\n")
    if several:
        shape = '{"tool_calls": [{"name": "<tool name>", "arguments": {...}}, ...]}'
        what = "calls one or more of the tools"
    else:
        shape = '{"tool_call": {"name": "<tool name>", "arguments": {...}}}'
        what = "calls the tool" if len(tools) == 1 else "calls one of the tools"
    return f"{listed}Respond with only a JSON object that {what}: {shape}"


def parse_calls(text: str) -> list[tuple[str, dict[str, Any]]] | None:
    """The calls in a generic-form reply, or None when it is not one."""
    try:
        obj = json.loads(text)
    except json.JSONDecodeError:
        return None
    if not isinstance(obj, dict):
        return None
    calls = obj.get("tool_calls") if "tool_calls" in obj else [obj.get("tool_call")]
    if not isinstance(calls, list) or not calls:
        return None
    out = []
    for call in calls:
        if not isinstance(call, dict) or not isinstance(call.get("name"), str) \
                or not isinstance(call.get("arguments"), dict):
            return None
        out.append((call["name"], call["arguments"]))
    return out


class GenericToolParser(OutputParser):
    """OutputParser whose content is a generic-form reply: held back, then
    parsed into tool calls at the end (reasoning still streams)."""

    def __init__(self, opens_reasoning: bool, think_markers: tuple[str, str] | None,
                 split_reasoning: bool = True, **kw: Any) -> None:
        super().__init__(opens_reasoning, think_markers, None, split_reasoning, **kw)
        self._reply = ""

    def _in_content(self, final: bool) -> bool:
        self._reply += self._buf
        self._buf = ""
        if final:
            calls = parse_calls(self._reply)
            if calls is None:
                text = self._reply.strip() if self._lstrip else self._reply
                if text:
                    self._emit("content", text)
            else:
                for name, arguments in calls:
                    self._call(name, arguments)
            self._reply = ""
        return False


def make_parser(opens_reasoning: bool, think_markers: tuple[str, str] | None, tool_markers: Any,
                split_reasoning: bool = True) -> OutputParser:
    """The output parser for a choice: GenericToolParser where ``tool_markers`` is GENERIC."""
    if tool_markers == GENERIC:
        return GenericToolParser(opens_reasoning, think_markers, split_reasoning)
    return OutputParser(opens_reasoning, think_markers, tool_markers, split_reasoning)


def _parameters(tool: dict[str, Any]) -> dict[str, Any]:
    params = tool["function"].get("parameters")
    return params if params is not None else {"type": "object"}
