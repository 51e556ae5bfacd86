"""The request body of POST /v1/messages and /v1/messages/count_tokens
(Anthropic's Messages API), checked and translated into the chat request
LSE's one generation path runs.

``to_chat`` checks every Anthropic field, naming it in ``param`` as it is
spelled in the body ("messages[1].content[0].tool_use_id"), and returns a
``MessagesRequest``: the /v1/chat/completions body to run, plus what only
this wire layer reads (the thinking budget, the stream flag). Sampling
limits, thinking levels, the template, tool-call grammars, the operator's
cap and the context check stay the engine's, with their own errors.

Settled here (Anthropic's documentation leaves these to the server):
- ``model`` and ``max_tokens`` are required, as Anthropic requires them;
  the model name is echoed back (one model per server).
- Unknown top-level fields are ignored (``service_tier``, ``container``...),
  as on the chat route; ``metadata`` must be an object and is not used.
- Content blocks LSE can't read are refused (``image``, ``document``,
  server tools): a model that takes text only must not answer a question
  about a picture it never saw. ``cache_control`` and ``citations`` on a
  block are accepted and ignored (LSE reuses prefixes on its own).
- A final assistant message (Anthropic's "prefill") is refused: the chat
  template renders it as a finished turn, not as the start of the reply.
- ``thinking`` absent means the model's default level, as on the chat route;
  ``adaptive`` is the model's thinking level without a budget; ``display``
  is accepted and not used (reasoning is always returned).
  ``budget_tokens`` is an integer from 1 (Anthropic's own minimum of 1024
  would rule out small models and tests) and below ``max_tokens``.
- ``output_config.effort`` names one of the model's thinking levels (the
  chat route's reasoning_effort: a template that defines "high" takes it,
  one that does not refuses it listing its levels); ``output_config.format``
  is enforced by constrained decoding, as response_format is on the chat route.
- ``temperature`` and ``top_p`` lie in [0, 1] (Anthropic's range); ``top_k``
  is an integer of at least 0.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from lse.runtime.bounds import check_unicode
from lse.runtime.anthropic.content import is_int, json_type, messages_of, show, text_of
from lse.runtime.errors import LseError, invalid

MAX_STOP_SEQUENCES = 16  # the chat route's limit on stop strings
CHOICES = ("auto", "any", "tool", "none")


@dataclass(frozen=True)
class MessagesRequest:
    """One checked Messages request as LSE runs it."""

    chat: dict[str, Any]  # the /v1/chat/completions body
    model: str
    stream: bool
    thinking_budget: int | None  # thinking.budget_tokens when thinking is enabled


def to_chat(body: Any, *, count_only: bool = False) -> MessagesRequest:
    """Check ``body`` and translate it; ``count_only`` is count_tokens'
    body, which has no ``max_tokens`` and never streams."""
    if not isinstance(body, dict):
        raise LseError("invalid_request", f"the request body must be a JSON object; got {json_type(body)}")
    check_unicode(body)
    model = body.get("model")
    if not isinstance(model, str) or not model:
        raise invalid("model", "model is required and must be a non-empty string")
    max_tokens = None if count_only else _max_tokens(body)
    tools = _tools(body)
    chat: dict[str, Any] = {"model": model, "messages": _system(body) + messages_of(body)}
    if max_tokens is not None:
        chat["max_tokens"] = max_tokens
    if tools is not None:
        chat["tools"] = tools
    choice = _tool_choice(body, tools)
    if choice is not None:
        chat["tool_choice"], parallel = choice
        if not parallel:
            chat["parallel_tool_calls"] = False
    chat.update(_sampling(body))
    stops = _stop_sequences(body)
    if stops:
        chat["stop"] = stops
    thinking, budget = _thinking(body, max_tokens)
    if thinking is not None:
        chat["thinking"] = thinking
    chat.update(_output_config(body))
    metadata = body.get("metadata")
    if metadata is not None and not isinstance(metadata, dict):
        raise invalid("metadata", f"metadata must be an object; got {json_type(metadata)}")
    stream = body.get("stream")
    if stream is not None and not isinstance(stream, bool):
        raise invalid("stream", f"stream must be a boolean; got {json_type(stream)}")
    return MessagesRequest(chat=chat, model=model, stream=bool(stream) and not count_only, thinking_budget=budget)


# --- top-level fields ------------------------------------------------------------

def _max_tokens(body: dict[str, Any]) -> int:
    value = body.get("max_tokens")
    if value is None:
        raise invalid("max_tokens", "max_tokens is required on /v1/messages")
    if not is_int(value) or value < 1:
        raise invalid("max_tokens", f"max_tokens must be an integer of at least 1; got {show(value)}")
    return value


def _system(body: dict[str, Any]) -> list[dict[str, Any]]:
    system = body.get("system")
    if system is None:
        return []
    if isinstance(system, str):
        return [{"role": "system", "content": system}] if system else []
    if not isinstance(system, list):
        raise invalid("system", f"system must be a string or an array of text blocks; got {json_type(system)}")
    texts = [text_of(block, f"system[{i}]") for i, block in enumerate(system)]
    return [{"role": "system", "content": "\n".join(texts)}] if texts else []


def _sampling(body: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name in ("temperature", "top_p"):
        value = body.get(name)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
            raise invalid(name, f"{name} must be a number in [0, 1]; got {show(value)}")
        out[name] = value
    top_k = body.get("top_k")
    if top_k is not None:
        if not is_int(top_k) or top_k < 0:
            raise invalid("top_k", f"top_k must be an integer of at least 0; got {show(top_k)}")
        out["top_k"] = top_k
    return out


def _stop_sequences(body: dict[str, Any]) -> list[str]:
    stops = body.get("stop_sequences")
    if stops is None:
        return []
    if not isinstance(stops, list) or not all(isinstance(s, str) for s in stops):
        raise invalid("stop_sequences", f"stop_sequences must be an array of strings; got {json_type(stops)}")
    if len(stops) > MAX_STOP_SEQUENCES:
        raise invalid("stop_sequences", f"stop_sequences holds at most {MAX_STOP_SEQUENCES} strings; "
                      f"got {len(stops)}")
    if any(s == "" for s in stops):
        raise invalid("stop_sequences", "stop_sequences must not hold empty strings")
    return stops


def _thinking(body: dict[str, Any], max_tokens: int | None) -> tuple[dict[str, str] | None, int | None]:
    """The chat route's ``thinking`` switch, and the budget when enabled."""
    thinking = body.get("thinking")
    if thinking is None:
        return None, None
    kind = thinking.get("type") if isinstance(thinking, dict) else None
    if kind == "disabled":
        return {"type": "disabled"}, None
    if kind == "adaptive":  # the model decides how much to think: its thinking level, no budget
        return {"type": "enabled"}, None
    if kind != "enabled":
        raise invalid("thinking", 'thinking must be {"type": "enabled", "budget_tokens": N}, {"type": "adaptive"} '
                      f'or {{"type": "disabled"}}; got {show(kind) if kind is not None else json_type(thinking)}',
                      code="invalid_thinking")
    budget = thinking.get("budget_tokens")
    if not is_int(budget) or budget < 1:
        raise invalid("thinking.budget_tokens", "thinking.budget_tokens must be an integer of at least 1; "
                      f"got {show(budget)}", code="invalid_thinking")
    if max_tokens is not None and budget >= max_tokens:
        raise invalid("thinking.budget_tokens", f"thinking.budget_tokens ({budget}) must be less than "
                      f"max_tokens ({max_tokens})", code="invalid_thinking")
    return {"type": "enabled"}, budget


def _output_config(body: dict[str, Any]) -> dict[str, Any]:
    """``effort`` as the chat route's reasoning_effort (a thinking level of the
    model's template), ``format`` as its json_schema response_format."""
    config = body.get("output_config")
    if config is None:
        return {}
    if not isinstance(config, dict):
        raise invalid("output_config", f"output_config must be an object; got {json_type(config)}")
    out: dict[str, Any] = {}
    effort = config.get("effort")
    if effort is not None:
        if not isinstance(effort, str):
            raise invalid("output_config.effort", "output_config.effort must be a string (a thinking level)",
                          code="invalid_thinking")
        out["reasoning_effort"] = effort
    fmt = config.get("format")
    if fmt is not None:
        if not isinstance(fmt, dict) or fmt.get("type") != "json_schema" or not isinstance(fmt.get("schema"), dict):
            raise invalid("output_config.format", 'output_config.format must be {"type": "json_schema", '
                          '"schema": {...}}')
        out["response_format"] = {"type": "json_schema", "json_schema": {"name": "output", "schema": fmt["schema"]}}
    return out


# --- tools ---------------------------------------------------------------------------

def _tools(body: dict[str, Any]) -> list[dict[str, Any]] | None:
    tools = body.get("tools")
    if tools is None:
        return None
    if not isinstance(tools, list):
        raise invalid("tools", f"tools must be an array; got {json_type(tools)}")
    return [_tool(tool, f"tools[{i}]") for i, tool in enumerate(tools)]


def _tool(tool: Any, where: str) -> dict[str, Any]:
    if not isinstance(tool, dict):
        raise invalid(where, f"{where} must be an object; got {json_type(tool)}")
    kind = tool.get("type")
    if kind not in (None, "custom"):
        raise invalid(f"{where}.type", f"{where}.type {show(kind)} is a server tool, which LSE does not run; "
                      "send client tools (name, description, input_schema)")
    name = tool.get("name")
    if not isinstance(name, str) or not name:
        raise invalid(f"{where}.name", f"{where}.name must be a non-empty string")
    schema = tool.get("input_schema")
    if not isinstance(schema, dict):
        raise invalid(f"{where}.input_schema", f"{where}.input_schema must be an object (a JSON Schema); "
                      f"got {json_type(schema)}")
    function: dict[str, Any] = {"name": name, "parameters": schema}
    description = tool.get("description")
    if description is not None:
        if not isinstance(description, str):
            raise invalid(f"{where}.description", f"{where}.description must be a string")
        function["description"] = description
    return {"type": "function", "function": function}


def _tool_choice(body: dict[str, Any], tools: list[dict[str, Any]] | None
                 ) -> tuple[str | dict[str, Any], bool] | None:
    """The chat route's tool_choice, and whether parallel tool calls are allowed."""
    choice = body.get("tool_choice")
    if choice is None:
        return None
    kind = choice.get("type") if isinstance(choice, dict) else None
    if kind not in CHOICES:
        raise invalid("tool_choice", 'tool_choice must be {"type": "auto" | "any" | "tool" | "none"}; '
                      f"got {show(kind) if kind is not None else json_type(choice)}")
    disable = choice.get("disable_parallel_tool_use")
    if disable is not None and not isinstance(disable, bool):
        raise invalid("tool_choice.disable_parallel_tool_use",
                      "tool_choice.disable_parallel_tool_use must be a boolean")
    names = [t["function"]["name"] for t in tools or []]
    if kind in ("any", "tool") and not names:
        raise invalid("tool_choice", f'tool_choice "{kind}" needs tools')
    parallel = not disable
    if kind == "auto":
        return "auto", parallel
    if kind == "none":
        return "none", parallel
    if kind == "any":
        return "required", parallel
    name = choice.get("name")
    if not isinstance(name, str):
        raise invalid("tool_choice.name", 'tool_choice "tool" needs a name (a string)')
    if name not in names:
        raise invalid("tool_choice.name", f"tool_choice names tool {name!r}, which is not in tools")
    return {"type": "function", "function": {"name": name}}, parallel
