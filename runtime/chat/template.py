"""The model's own chat template: finding it, rendering it, and the messages
it is rendered with.

LSE reads the template from the model's files in the order docs/spec/lse-api.md
"Thinking levels" gives: ``chat_template.jinja`` beside config.json, then
``tokenizer_config.json`` ``chat_template`` (a string, or the entry named
``default`` in a list), then ``chat_template.json``. It renders it the way
Hugging Face transformers does (``_compile_jinja_template`` in
``transformers/utils/chat_template_utils.py``): an immutable sandbox with
``trim_blocks``, ``lstrip_blocks`` and loop controls, plus the globals and
filters those templates call (``raise_exception``, ``tojson``,
``strftime_now``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import jinja2
from jinja2.sandbox import ImmutableSandboxedEnvironment

from lse.runtime.errors import invalid


class TemplateError(ValueError):
    """The chat template can't be read, parsed or rendered; the message names
    the file and the construct."""


class TemplateRaised(Exception):
    """The template called ``raise_exception(message)``: it refuses this input
    (for example an unknown reasoning_effort or a misplaced system message)."""


def _raise_exception(message: str) -> None:
    raise TemplateRaised(message)


def _tojson(value: Any, ensure_ascii: bool = False, indent: int | None = None,
            separators: tuple[str, str] | None = None, sort_keys: bool = False) -> str:
    # transformers' tojson: json.dumps, not jinja2's HTML-escaping filter.
    return json.dumps(value, ensure_ascii=ensure_ascii, indent=indent,
                      separators=separators, sort_keys=sort_keys)


def _strftime_now(fmt: str) -> str:
    return datetime.now().strftime(fmt)


def template_environment() -> ImmutableSandboxedEnvironment:
    """The Jinja environment chat templates are parsed and rendered in."""
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=["jinja2.ext.loopcontrols"])
    env.filters["tojson"] = _tojson
    env.globals["raise_exception"] = _raise_exception
    env.globals["strftime_now"] = _strftime_now
    return env


@dataclass(frozen=True)
class ChatTemplate:
    """One chat template: where it came from, its text, and the special-token
    strings it may refer to. Parsing happens on construction, so a broken
    template fails when the model loads, not at its first request."""

    source: Path
    text: str
    bos_token: str | None = None
    eos_token: str | None = None
    _compiled: jinja2.Template = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        try:
            compiled = template_environment().from_string(self.text)
        except jinja2.TemplateSyntaxError as exc:
            raise TemplateError(
                f"chat template {self.source}: line {exc.lineno}: {exc.message}") from exc
        object.__setattr__(self, "_compiled", compiled)

    def render(self, messages: list[dict[str, Any]], *, add_generation_prompt: bool = True,
               tools: list[dict[str, Any]] | None = None, tool_choice: Any = None,
               **template_kwargs: Any) -> str:
        """Render ``messages`` (already normalised). Variables left out stay
        undefined in the template, so ``enable_thinking is defined`` tests see
        what the request actually sent. Raises TemplateRaised when the template
        calls raise_exception, TemplateError when it fails otherwise."""
        context: dict[str, Any] = dict(template_kwargs)
        context.update(messages=messages, tools=tools, add_generation_prompt=add_generation_prompt)
        if tool_choice is not None:
            context["tool_choice"] = tool_choice
        if self.bos_token is not None:
            context["bos_token"] = self.bos_token
        if self.eos_token is not None:
            context["eos_token"] = self.eos_token
        try:
            return self._compiled.render(**context)
        except TemplateRaised:
            raise
        except (jinja2.TemplateError, TypeError, ValueError, KeyError, AttributeError) as exc:
            raise TemplateError(
                f"chat template {self.source} failed to render: {type(exc).__name__}: {exc}") from exc


# ---------------------------------------------------------------------------
# Finding the template


def _read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise TemplateError(f"{path}: cannot be read as JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise TemplateError(f"{path}: expected a JSON object")
    return data


def _token_string(value: Any) -> str | None:
    """tokenizer_config.json writes special tokens as a string or as an
    AddedToken object ``{"content": ...}``."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and isinstance(value.get("content"), str):
        return value["content"]
    return None


def _template_from_tokenizer_config(path: Path, raw: Any) -> str:
    if isinstance(raw, str):
        return raw
    if isinstance(raw, list):
        named = {e.get("name"): e.get("template") for e in raw if isinstance(e, dict)}
        # transformers picks the entry named "default" when none is asked for.
        if isinstance(named.get("default"), str):
            return named["default"]
        raise TemplateError(
            f"{path}: chat_template is a list with no entry named 'default' "
            f"(entries: {', '.join(str(n) for n in named)})")
    raise TemplateError(f"{path}: chat_template must be a string or a list of {{name, template}}")


def load_chat_template(model_dir: str | Path) -> ChatTemplate | None:
    """The model's chat template, or None when its files define none."""
    model_dir = Path(model_dir)
    tok_path = model_dir / "tokenizer_config.json"
    tok_config = _read_json(tok_path) if tok_path.is_file() else {}
    tokens = {"bos_token": _token_string(tok_config.get("bos_token")),
              "eos_token": _token_string(tok_config.get("eos_token"))}

    jinja_path = model_dir / "chat_template.jinja"
    if jinja_path.is_file():
        try:
            text = jinja_path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise TemplateError(f"{jinja_path}: cannot be read: {exc}") from exc
        return ChatTemplate(jinja_path, text, **tokens)
    if tok_config.get("chat_template") is not None:
        text = _template_from_tokenizer_config(tok_path, tok_config["chat_template"])
        return ChatTemplate(tok_path, text, **tokens)
    json_path = model_dir / "chat_template.json"
    if json_path.is_file():
        text = _read_json(json_path).get("chat_template")
        if not isinstance(text, str):
            raise TemplateError(f"{json_path}: chat_template must be a string")
        return ChatTemplate(json_path, text, **tokens)
    return None


# ---------------------------------------------------------------------------
# Messages

# "developer" is OpenAI's system-level role (both official SDKs' READMEs send
# it); merge_developer turns it into the template's system turn.
ROLES = ("system", "developer", "user", "assistant", "tool")
SYSTEM_LEVEL = ("system", "developer")


def _content_text(content: Any, where: str) -> str:
    """A message's content as one string: a string, or text parts joined with
    newlines (vLLM's choice for several text parts)."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise invalid("messages", f"{where}.content must be a string or an array of text parts")
    texts = []
    for i, part in enumerate(content):
        if not isinstance(part, dict) or part.get("type") != "text":
            raise invalid("messages", f"{where}.content[{i}] must be a text part "
                                      "({\"type\": \"text\", \"text\": ...}); LSE models take text only")
        if not isinstance(part.get("text"), str):
            raise invalid("messages", f"{where}.content[{i}].text must be a string")
        texts.append(part["text"])
    return "\n".join(texts)


def _tool_call(call: Any, where: str) -> dict[str, Any]:
    if not isinstance(call, dict):
        raise invalid("messages", f"{where} must be an object")
    fn = call.get("function")
    if call.get("type", "function") != "function" or not isinstance(fn, dict):
        raise invalid("messages", f"{where} must be {{\"type\": \"function\", \"function\": {{...}}}}")
    if not isinstance(fn.get("name"), str):
        raise invalid("messages", f"{where}.function.name must be a string")
    args = fn.get("arguments", {})
    if isinstance(args, str):
        # OpenAI sends arguments as a JSON string; templates expect a mapping.
        try:
            args = json.loads(args) if args.strip() else {}
        except json.JSONDecodeError:
            raise invalid("messages", f"{where}.function.arguments must be a JSON object") from None
    if not isinstance(args, dict):
        raise invalid("messages", f"{where}.function.arguments must be a JSON object")
    out: dict[str, Any] = {"type": "function", "function": {"name": fn["name"], "arguments": args}}
    if call.get("id") is not None:
        if not isinstance(call["id"], str):
            raise invalid("messages", f"{where}.id must be a string")
        out["id"] = call["id"]
    return out


def _message(msg: Any, i: int) -> dict[str, Any]:
    where = f"messages[{i}]"
    if not isinstance(msg, dict):
        raise invalid("messages", f"{where} must be an object")
    role = msg.get("role")
    if role not in ROLES:
        raise invalid("messages", f"{where}.role must be one of {', '.join(ROLES)}")
    content = msg.get("content")
    if content is None and role != "assistant":
        raise invalid("messages", f"{where}.content is required for role {role}")
    out: dict[str, Any] = {"role": role, "content": "" if content is None else _content_text(content, where)}
    if msg.get("name") is not None:
        if not isinstance(msg["name"], str):
            raise invalid("messages", f"{where}.name must be a string")
        out["name"] = msg["name"]
    if role == "assistant":
        calls = msg.get("tool_calls")
        if calls is not None:
            if not isinstance(calls, list):
                raise invalid("messages", f"{where}.tool_calls must be an array")
            out["tool_calls"] = [_tool_call(c, f"{where}.tool_calls[{j}]") for j, c in enumerate(calls)]
        if isinstance(msg.get("reasoning_content"), str):
            out["reasoning_content"] = msg["reasoning_content"]
    if role == "tool":
        if not isinstance(msg.get("tool_call_id"), str):
            raise invalid("messages", f"{where}.tool_call_id must be a string")
        out["tool_call_id"] = msg["tool_call_id"]
    return out


def normalize_messages(messages: Any) -> list[dict[str, Any]]:
    """Check a request's ``messages`` and bring them to the shape templates
    expect: string content, tool-call arguments as mappings. Keys LSE does
    not know are dropped."""
    if not isinstance(messages, list):
        raise invalid("messages", "messages must be an array")
    if not messages:
        raise invalid("messages", "messages must contain at least one message")
    return merge_developer([_message(m, i) for i, m in enumerate(messages)])


def merge_developer(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Developer messages as the template's system turn. A run of adjacent
    system and developer messages that holds a developer message becomes one
    system message: the contents in the order sent, joined by a blank line,
    the first message's name kept. Chat templates know one system turn (many
    render it only first, some raise on a second); OpenAI reads developer as
    the system instruction for its chat models. A run of system messages alone
    is left as sent."""
    out: list[dict[str, Any]] = []
    run: list[dict[str, Any]] = []
    for msg in [*messages, None]:
        if msg is not None and msg["role"] in SYSTEM_LEVEL:
            run.append(msg)
            continue
        if any(m["role"] == "developer" for m in run):
            merged = {**run[0], "role": "system", "content": "\n\n".join(m["content"] for m in run)}
            out.append(merged)
        else:
            out.extend(run)
        run = []
        if msg is not None:
            out.append(msg)
    return out
