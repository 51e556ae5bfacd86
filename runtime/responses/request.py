"""A /v1/responses body, checked and turned into a /v1/chat/completions body.

The Responses fields map onto chat's, so the engine parses the translated
body as it parses any chat request: the same sampler, limits, thinking
levels, structured output and tool calls. What is Responses-only is checked
here, with the Responses spelling in ``param``; an error the chat parser (or
the engine) raises for a translated field is renamed back by ``rename_error``
so it names the field the client sent.

Settled here (the spec leaves these open):
- ``input`` is a string or a non-empty array of items: messages (with or
  without ``"type": "message"``; content a string or ``input_text`` /
  ``output_text`` parts), ``function_call``, ``function_call_output`` and
  ``reasoning`` items. Other item and part types (images, files,
  ``item_reference``) are refused naming the type.
- ``max_output_tokens`` is any positive integer (OpenAI's own floor of 16 is
  not applied: small limits cost LSE nothing).
- Only function tools run; another tool type, or a tool_choice naming one,
  is a 400 naming the type.
- ``background: true`` and ``conversation`` are refused (LSE keeps no
  server-side conversations but through ``previous_response_id``); other
  unknown fields are ignored, as on chat.
- LSE's sampling extensions (``top_k``, ``min_p``, ``seed``, ``stop``, the
  penalties) pass through as on chat.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from lse.runtime.errors import LseError, invalid

# Fields that pass to chat under their own names (chat checks them).
PASSED = ("model", "temperature", "top_p", "parallel_tool_calls", "stream", "top_k", "min_p", "seed", "stop",
          "presence_penalty", "frequency_penalty", "repetition_penalty", "chat_template_kwargs")
ROLES = {"user": "user", "system": "system", "developer": "system", "assistant": "assistant"}
TEXT_PARTS = ("input_text", "output_text", "text")
REFUSED = {"background": "background responses are not supported; send the request and wait for its reply",
           "conversation": "conversations are not supported; continue one with previous_response_id"}

# chat's param -> the Responses field it came from (prefixes; the longest match wins).
RENAMES = (("messages", "input"), ("max_completion_tokens", "max_output_tokens"), ("max_tokens", "max_output_tokens"),
           ("reasoning_effort", "reasoning.effort"), ("response_format.json_schema.", "text.format."),
           ("response_format", "text.format"), ("tool_choice.function.", "tool_choice."))
MESSAGE_RENAMES = (("response_format.json_schema", "text.format"), ("response_format", "text.format"),
                   ("max_completion_tokens", "max_output_tokens"), ("reasoning_effort", "reasoning.effort"),
                   ("tool_choice.function.name", "tool_choice.name"), (".function.parameters", ".parameters"))


@dataclass(frozen=True)
class Translated:
    chat: dict[str, Any]  # the /v1/chat/completions body
    conversation: list[dict[str, Any]]  # the chat messages without instructions (what a later turn continues)
    echo: dict[str, Any]  # the request's fields as the response object repeats them
    store: bool
    stream: bool


def translate(body: Any, previous: Any) -> Translated:
    """``body`` as a chat body. ``previous(id)`` gives the stored conversation
    of a ``previous_response_id`` or raises its 404."""
    if not isinstance(body, dict):
        raise LseError("invalid_request", "the request body must be a JSON object")
    for name, why in REFUSED.items():
        if body.get(name) not in (None, False):
            raise invalid(name, f"{name}: {why}")
    items = _messages(_input(body))
    prev_id = _string(body, "previous_response_id")
    instructions = _string(body, "instructions")
    chat: dict[str, Any] = {k: body[k] for k in PASSED if k in body}
    limit = body.get("max_output_tokens")
    if limit is not None:
        if not isinstance(limit, int) or isinstance(limit, bool) or limit < 1:
            raise invalid("max_output_tokens", "max_output_tokens must be a positive integer")
        chat["max_completion_tokens"] = limit
    tools = _tools(body)
    if tools is not None:
        chat["tools"] = tools
    if body.get("tool_choice") is not None:
        chat["tool_choice"] = _tool_choice(body["tool_choice"])
    effort = _reasoning(body)
    if effort is not None:
        chat["reasoning_effort"] = effort
    fmt = _text_format(body)
    if fmt is not None:
        chat["response_format"] = fmt
    store = body.get("store", True)
    if not isinstance(store, bool):
        raise invalid("store", "store must be a boolean")
    # The store is read last: a bad field is its 400 whatever previous_response_id names.
    conversation = (list(previous(prev_id)) if prev_id is not None else []) + items
    chat["messages"] = ([{"role": "system", "content": instructions}] if instructions else []) + conversation
    return Translated(chat, conversation, _echo(body, prev_id), store, body.get("stream") is True)


def rename_error(body: dict[str, Any]) -> dict[str, Any]:
    """An error envelope from the chat path with its ``param`` (and the
    message's mentions of chat's names) spelled as the Responses fields."""
    err = body.get("error")
    if not isinstance(err, dict):
        return body
    param, message = err.get("param"), err.get("message", "")
    for old, new in MESSAGE_RENAMES:
        message = message.replace(old, new)
    return {"error": {**err, "param": _renamed(param) if isinstance(param, str) else param, "message": message}}


def _renamed(param: str) -> str:
    if param.startswith("tools[") and ".function." in param:
        return param.replace(".function.", ".", 1)
    for old, new in RENAMES:
        if old.endswith("."):
            if param.startswith(old):
                return new + param[len(old):]
        elif param == old or param.startswith((old + ".", old + "[")):
            return new + param[len(old):]
    return param


# ---- input ----------------------------------------------------------------------

def _input(body: dict[str, Any]) -> list[Any]:
    value = body.get("input")
    if value is None:
        raise invalid("input", "input is required on /v1/responses")
    if isinstance(value, str):
        return [{"role": "user", "content": value}]
    if not isinstance(value, list) or not value:
        raise invalid("input", "input must be a string or a non-empty array of items")
    return value


def _messages(items: list[Any]) -> list[dict[str, Any]]:
    """The input items as chat messages: an assistant message and the function
    calls after it (and the reasoning before them) are one assistant turn, as
    a stored response replays its output (items.conversation_turn)."""
    out: list[dict[str, Any]] = []
    reasoning: str | None = None
    for i, item in enumerate(items):
        where = f"input[{i}]"
        if not isinstance(item, dict):
            raise invalid(where, f"{where} must be an object")
        kind = item.get("type", "message")
        if kind == "message":
            msg = _message(item, where)
            if reasoning is not None and msg["role"] == "assistant":
                msg["reasoning_content"], reasoning = reasoning, None
            out.append(msg)
        elif kind == "function_call":
            call = _function_call(item, where)
            last = out[-1] if out else None
            if last is not None and last["role"] == "assistant":  # the same turn: its text, then its calls
                last.setdefault("tool_calls", []).append(call)
            else:
                msg = {"role": "assistant", "content": "", "tool_calls": [call]}
                if reasoning is not None:
                    msg["reasoning_content"], reasoning = reasoning, None
                out.append(msg)
        elif kind == "function_call_output":
            out.append({"role": "tool", "tool_call_id": _required(item, "call_id", where),
                        "content": _output_text(item.get("output"), where)})
        elif kind == "reasoning":
            reasoning = _reasoning_text(item, where)
        else:
            raise invalid(f"{where}.type", f"{where}.type {kind!r} is not supported; LSE takes message, "
                          "function_call, function_call_output and reasoning items")
    return out


def _message(item: dict[str, Any], where: str) -> dict[str, Any]:
    role = item.get("role")
    if not isinstance(role, str) or role not in ROLES:
        raise invalid(f"{where}.role", f"{where}.role must be one of {', '.join(ROLES)}; got {role!r}")
    content = item.get("content")
    if isinstance(content, str):
        return {"role": ROLES[role], "content": content}
    if not isinstance(content, list):
        raise invalid(f"{where}.content", f"{where}.content must be a string or an array of content parts")
    texts = []
    for j, part in enumerate(content):
        kind = part.get("type") if isinstance(part, dict) else None
        if kind not in TEXT_PARTS:
            raise invalid(f"{where}.content[{j}].type", f"{where}.content[{j}].type {kind!r} is not supported; "
                          "LSE models take text only (input_text, output_text)")
        if not isinstance(part.get("text"), str):
            raise invalid(f"{where}.content[{j}].text", f"{where}.content[{j}].text must be a string")
        texts.append(part["text"])
    return {"role": ROLES[role], "content": "\n".join(texts)}


def _function_call(item: dict[str, Any], where: str) -> dict[str, Any]:
    arguments = item.get("arguments", "")
    if not isinstance(arguments, str) or not _json_object(arguments):
        raise invalid(f"{where}.arguments", f"{where}.arguments must be a string holding a JSON object")
    return {"id": _required(item, "call_id", where), "type": "function",
            "function": {"name": _required(item, "name", where), "arguments": arguments}}


def _json_object(text: str) -> bool:
    if not text.strip():
        return True  # no arguments
    try:
        return isinstance(json.loads(text), dict)
    except ValueError:
        return False


def _output_text(output: Any, where: str) -> str:
    if isinstance(output, str):
        return output
    if isinstance(output, list) and all(isinstance(p, dict) and p.get("type") == "input_text"
                                        and isinstance(p.get("text"), str) for p in output):
        return "\n".join(p["text"] for p in output)
    raise invalid(f"{where}.output", f"{where}.output must be a string or an array of input_text parts")


def _reasoning_text(item: dict[str, Any], where: str) -> str:
    parts = item.get("content") or []
    if not isinstance(parts, list) or not all(isinstance(p, dict) and isinstance(p.get("text"), str) for p in parts):
        raise invalid(f"{where}.content", f"{where}.content must be an array of reasoning_text parts")
    return "".join(p["text"] for p in parts)


def _required(item: dict[str, Any], key: str, where: str) -> str:
    value = item.get(key)
    if not isinstance(value, str) or not value:
        raise invalid(f"{where}.{key}", f"{where}.{key} must be a non-empty string")
    return value


# ---- tools, reasoning, text ------------------------------------------------------

def _tools(body: dict[str, Any]) -> list[dict[str, Any]] | None:
    tools = body.get("tools")
    if tools is None:
        return None
    if not isinstance(tools, list):
        raise invalid("tools", "tools must be an array")
    out = []
    for i, tool in enumerate(tools):
        kind = tool.get("type") if isinstance(tool, dict) else None
        if kind != "function":
            raise invalid(f"tools[{i}].type", f"tools[{i}].type {kind!r} is not supported; LSE runs function "
                          "tools only")
        function = {k: tool[k] for k in ("name", "description", "parameters") if tool.get(k) is not None}
        out.append({"type": "function", "function": function})
    return out


def _tool_choice(choice: Any) -> Any:
    if isinstance(choice, str) or not isinstance(choice, dict):
        return choice  # "none", "auto", "required" or chat's refusal of anything else
    kind = choice.get("type")
    if kind != "function":
        raise invalid("tool_choice.type", f"tool_choice.type {kind!r} is not supported; LSE runs function "
                      "tools only")
    return {"type": "function", "function": {"name": choice.get("name")}}


def _reasoning(body: dict[str, Any]) -> Any:
    reasoning = body.get("reasoning")
    if reasoning is None:
        return None
    if not isinstance(reasoning, dict):
        raise invalid("reasoning", "reasoning must be an object ({\"effort\": ...})")
    return reasoning.get("effort")


def _text_format(body: dict[str, Any]) -> dict[str, Any] | None:
    text = body.get("text")
    if text is None:
        return None
    if not isinstance(text, dict):
        raise invalid("text", "text must be an object ({\"format\": ...})")
    fmt = text.get("format")
    if fmt is None:
        return None
    if not isinstance(fmt, dict):
        raise invalid("text.format", "text.format must be an object")
    if fmt.get("type") != "json_schema":
        return {"type": fmt.get("type")}  # text, json_object, or chat's refusal naming the type
    return {"type": "json_schema",
            "json_schema": {k: fmt[k] for k in ("name", "description", "schema", "strict") if k in fmt}}


def _string(body: dict[str, Any], name: str) -> str | None:
    value = body.get(name)
    if value is not None and not isinstance(value, str):
        raise invalid(name, f"{name} must be a string")
    return value


def _echo(body: dict[str, Any], prev_id: str | None) -> dict[str, Any]:
    """The request's settings as the response object repeats them (OpenAI's defaults where not sent)."""
    tools = [t for t in body.get("tools") or []]
    text = body.get("text") if isinstance(body.get("text"), dict) else {}
    reasoning = body.get("reasoning") if isinstance(body.get("reasoning"), dict) else {}
    return {
        "instructions": body.get("instructions"),
        "max_output_tokens": body.get("max_output_tokens"),
        "model": body.get("model"),
        "parallel_tool_calls": body.get("parallel_tool_calls") is not False,
        "previous_response_id": prev_id,
        "reasoning": {"effort": reasoning.get("effort"), "summary": None},
        "store": body.get("store", True),
        "temperature": body.get("temperature"),
        "text": {"format": text.get("format") or {"type": "text"}},
        "tool_choice": body.get("tool_choice") if body.get("tool_choice") is not None else "auto",
        "tools": tools,
        "top_p": body.get("top_p"),
        "metadata": body.get("metadata") if isinstance(body.get("metadata"), dict) else {},
    }
