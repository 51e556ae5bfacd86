"""The messages of a Messages request (Anthropic's content blocks) as the
chat route's messages: user text and tool_result blocks, assistant text,
tool_use and thinking blocks; every other block refused with its path."""

from __future__ import annotations

from typing import Any

from lse.runtime.errors import invalid

BLOCKS_REFUSED = ("image", "document", "search_result", "container_upload")


def messages_of(body: dict[str, Any]) -> list[dict[str, Any]]:
    messages = body.get("messages")
    if messages is None:
        raise invalid("messages", "messages is required")
    if not isinstance(messages, list) or not messages:
        got = "an empty array" if messages == [] else json_type(messages)
        raise invalid("messages", f"messages must be a non-empty array of messages; got {got}")
    out: list[dict[str, Any]] = []
    for i, message in enumerate(messages):
        where = f"messages[{i}]"
        if not isinstance(message, dict):
            raise invalid(where, f"{where} must be an object; got {json_type(message)}")
        role = message.get("role")
        if role not in ("user", "assistant"):
            raise invalid(f"{where}.role", f'{where}.role must be "user" or "assistant"; got {show(role)} '
                          '(a system prompt goes in the top-level "system" field)')
        blocks = _blocks(message.get("content"), where)
        out += _user(blocks, where) if role == "user" else [_assistant(blocks, where)]
    if messages[-1].get("role") == "assistant":
        raise invalid(f"messages[{len(messages) - 1}]", "the last message must be a user message: LSE does not "
                      "continue a final assistant message (prefill)")
    return out


def _blocks(content: Any, where: str) -> list[Any]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if not isinstance(content, list) or not content:
        got = "an empty array" if content == [] else json_type(content)
        raise invalid(f"{where}.content", f"{where}.content must be a string or a non-empty array of content "
                      f"blocks; got {got}")
    for j, block in enumerate(content):
        if not isinstance(block, dict) or not isinstance(block.get("type"), str):
            raise invalid(f"{where}.content[{j}]", f"{where}.content[{j}] must be a content block "
                          '(an object with a "type")')
        if block["type"] in BLOCKS_REFUSED:
            raise invalid(f"{where}.content[{j}].type", f"{where}.content[{j}] is an {block['type']} block; "
                          "LSE models take text only")
    return content


def _user(blocks: list[dict[str, Any]], where: str) -> list[dict[str, Any]]:
    """A user turn: its tool_result blocks as tool messages, its text as user messages, in order."""
    out: list[dict[str, Any]] = []
    texts: list[str] = []
    for j, block in enumerate(blocks):
        at = f"{where}.content[{j}]"
        if block["type"] == "text":
            texts.append(text_of(block, at))
        elif block["type"] == "tool_result":
            if texts:
                out.append({"role": "user", "content": "\n".join(texts)})
                texts = []
            out.append(_tool_result(block, at))
        else:
            raise invalid(f"{at}.type", f"{at}.type {show(block['type'])} is not a user content block "
                          "(text or tool_result)")
    if texts:
        out.append({"role": "user", "content": "\n".join(texts)})
    return out


def _tool_result(block: dict[str, Any], where: str) -> dict[str, Any]:
    tool_use_id = block.get("tool_use_id")
    if not isinstance(tool_use_id, str) or not tool_use_id:
        raise invalid(f"{where}.tool_use_id", f"{where}.tool_use_id must be a non-empty string")
    content = block.get("content")
    if content is None:
        text = ""
    elif isinstance(content, str):
        text = content
    elif isinstance(content, list):
        text = "\n".join(_result_part(part, f"{where}.content[{k}]") for k, part in enumerate(content))
    else:
        raise invalid(f"{where}.content", f"{where}.content must be a string or an array of text blocks")
    is_error = block.get("is_error")
    if is_error is not None and not isinstance(is_error, bool):
        raise invalid(f"{where}.is_error", f"{where}.is_error must be a boolean")
    return {"role": "tool", "tool_call_id": tool_use_id, "content": text}


def _result_part(part: Any, where: str) -> str:
    kind = part.get("type") if isinstance(part, dict) else None
    if kind in BLOCKS_REFUSED:
        raise invalid(f"{where}.type", f"{where} is an {kind} block; LSE models take text only")
    return text_of(part, where)


def _assistant(blocks: list[dict[str, Any]], where: str) -> dict[str, Any]:
    """An assistant turn: text joined, tool_use blocks as tool calls, thinking as reasoning."""
    texts: list[str] = []
    reasoning: list[str] = []
    calls: list[dict[str, Any]] = []
    for j, block in enumerate(blocks):
        at = f"{where}.content[{j}]"
        kind = block["type"]
        if kind == "text":
            texts.append(text_of(block, at))
        elif kind == "tool_use":
            calls.append(_tool_use(block, at))
        elif kind == "thinking":
            if not isinstance(block.get("thinking"), str):
                raise invalid(f"{at}.thinking", f"{at}.thinking must be a string")
            reasoning.append(block["thinking"])
        elif kind != "redacted_thinking":  # encrypted reasoning LSE never wrote: nothing to render
            raise invalid(f"{at}.type", f"{at}.type {show(kind)} is not an assistant content block "
                          "(text, tool_use, thinking or redacted_thinking)")
    message: dict[str, Any] = {"role": "assistant", "content": "".join(texts)}
    if calls:
        message["tool_calls"] = calls
    if reasoning:
        message["reasoning_content"] = "\n".join(reasoning)
    return message


def _tool_use(block: dict[str, Any], where: str) -> dict[str, Any]:
    for key in ("id", "name"):
        if not isinstance(block.get(key), str) or not block[key]:
            raise invalid(f"{where}.{key}", f"{where}.{key} must be a non-empty string")
    arguments = block.get("input")
    if not isinstance(arguments, dict):
        raise invalid(f"{where}.input", f"{where}.input must be an object; got {json_type(arguments)}")
    return {"id": block["id"], "type": "function", "function": {"name": block["name"], "arguments": arguments}}


def text_of(block: Any, where: str) -> str:
    if not isinstance(block, dict) or block.get("type") != "text":
        raise invalid(where, f'{where} must be a text block ({{"type": "text", "text": ...}})')
    if not isinstance(block.get("text"), str):
        raise invalid(f"{where}.text", f"{where}.text must be a string")
    return block["text"]


def is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def show(value: Any) -> str:
    if isinstance(value, (int, float, str)) and not isinstance(value, bool):
        text = repr(value) if isinstance(value, str) else str(value)
        return text if len(text) <= 40 else text[:40] + "..."
    return json_type(value)


_JSON_TYPES = ((bool, "a boolean"), ((int, float), "a number"), (str, "a string"),
               (list, "an array"), (dict, "an object"))


def json_type(value: Any) -> str:
    if value is None:
        return "null"
    return next((name for kind, name in _JSON_TYPES if isinstance(value, kind)), type(value).__name__)
