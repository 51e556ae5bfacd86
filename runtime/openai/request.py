"""The request body of /v1/chat/completions and /v1/completions, checked.

``parse_request`` turns the JSON body into a ``ParsedRequest`` or raises the
400 (``LseError`` from ``lse.runtime.errors``) whose ``param`` names the
offending field exactly as it is spelled in the body, nested ones with dots
("stream_options.include_usage") and indexes ("tools[0].function.name").

Settled here (the spec leaves these open):
- Unknown fields are ignored: OpenAI clients send extras such as ``user``
  or ``service_tier``, and refusing them would break
  those clients. Fields of the other endpoint (``echo`` on chat, ``tools`` on
  completions) are unknown there in the same way.
- A bool is not a number or an integer; an int is accepted where a number is;
  a float is not accepted where an integer is (``n: 2.0`` is a 400). NaN and
  infinities are refused.
- presence_penalty and frequency_penalty lie in [-2, 2], OpenAI's range.
- ``stop`` takes up to 16 strings (OpenAI allows 4; longer lists cost LSE
  nothing, and 16 leaves room for a model's several end markers).
- An empty ``prompt`` ("" or [] or [[]]) is a 400: there is nothing to run.
- logprobs is normalized across the endpoints: ``logprobs`` says whether to
  report them and ``top_logprobs`` how many alternatives per token (chat's
  top_logprobs; completions' integer logprobs).
- The thinking fields (reasoning_effort, enable_thinking, thinking and their
  chat_template_kwargs spellings) are resolved in the same pass against the
  model's levels (``lse.runtime.chat.thinking``) when its ``ThinkingInfo`` is
  given, after every other field.
- ``parse_special`` (completions, default false; llama-server's name): true
  lets special-token strings in string prompts become special tokens.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from lse.runtime.bounds import check_unicode
from lse.runtime.chat.thinking import CompletionThinking, Level, ThinkingInfo, resolve_thinking
from lse.runtime.errors import LseError, invalid
from lse.runtime.limits import check_operator_cap
from lse.runtime.openai.controls import EndControls, end_controls
from lse.runtime.request_format import ResponseFormat, logit_bias, response_format
from lse.runtime.sampler import SamplingParams

CHAT = "chat.completions"
COMPLETIONS = "completions"

MAX_N = 16
MAX_STOPS = 16
MAX_COMPLETION_LOGPROBS = 5  # OpenAI's legacy completions limit
MAX_TOP_LOGPROBS = 20  # OpenAI's chat limit
PENALTY_BOUND = 2.0


@dataclass(frozen=True)
class ParsedRequest:
    """One checked request. Sampling fields are None when not sent (or sent
    as null); ``effective_sampling`` fills them from the model's defaults."""

    endpoint: str
    model: str | None
    messages: list[Any] | None  # chat; each message is checked elsewhere
    prompts: list[str | list[int]] | None  # completions: one entry per prompt
    stream: bool
    include_usage: bool
    n: int
    max_tokens: int | None  # max_tokens, else max_completion_tokens
    scoring: bool  # completions with max_tokens 0, echo and logprobs
    temperature: float | None
    top_k: int | None
    top_p: float | None
    min_p: float | None
    presence_penalty: float | None
    repetition_penalty: float | None
    frequency_penalty: float | None
    seed: int | None
    stop: list[str]
    logprobs: bool
    top_logprobs: int
    echo: bool
    parse_special: bool  # completions: special-token strings in string prompts are special tokens
    tools: list[dict[str, Any]] | None
    tool_choice: str | dict[str, Any] | None
    response_format: ResponseFormat | None  # None: plain text
    logit_bias: dict[int, float] | None
    chat_template_kwargs: dict[str, Any] | None
    parallel_tool_calls: bool  # false: a forced tool call is one call
    # The thinking fields resolved: chat's level (None: no thinking variables)
    # or completions' CompletionThinking; None when no ThinkingInfo was given.
    thinking: Level | CompletionThinking | None
    ends: EndControls = EndControls()  # ignore_eos, min_tokens, stop_token_ids (controls.py)


def parse_request(body: Any, endpoint: str, *, operator_cap: int,
                  thinking: ThinkingInfo | None = None) -> ParsedRequest:
    """Check ``body`` for ``endpoint`` ("chat.completions" or "completions"),
    and resolve its thinking fields against ``thinking``, the model's levels."""
    if endpoint not in (CHAT, COMPLETIONS):
        raise ValueError(f"unknown endpoint {endpoint!r}")
    if not isinstance(body, dict):
        raise LseError("invalid_request", f"the request body must be a JSON object; got {_json_type(body)}")
    check_unicode(body)
    chat = endpoint == CHAT
    # What to run comes first, so a body without it reports that.
    messages = _messages(body) if chat else None
    prompts = None if chat else _prompts(body)
    stream = _boolean(body, "stream") or False
    echo = False if chat else (_boolean(body, "echo") or False)
    logprobs, top_logprobs = _chat_logprobs(body) if chat else _completion_logprobs(body)
    scoring_allowed = not chat and echo and body.get("logprobs") is not None
    max_tokens = _max_tokens(body, scoring_allowed, operator_cap)
    tools = _tools(body) if chat else None
    _boolean(body, "lse_speculative")  # checked with the others; prepare.py reads it (runtime/speculative.py)
    fields = dict(
        endpoint=endpoint,
        model=_typed(body, "model", str, "a string"),
        messages=messages,
        prompts=prompts,
        stream=stream,
        include_usage=_include_usage(body, stream),
        n=_integer(body, "n", 1, MAX_N) or 1,
        max_tokens=max_tokens,
        scoring=max_tokens == 0,
        temperature=_number(body, "temperature"),
        top_k=_integer(body, "top_k", -1, None),
        top_p=_number(body, "top_p", 0.0, 1.0),
        min_p=_number(body, "min_p", 0.0, 1.0),
        presence_penalty=_number(body, "presence_penalty", -PENALTY_BOUND, PENALTY_BOUND),
        repetition_penalty=_number(body, "repetition_penalty", positive=True),
        frequency_penalty=_number(body, "frequency_penalty", -PENALTY_BOUND, PENALTY_BOUND),
        seed=_integer(body, "seed", 0, None),
        stop=_stop(body),
        logprobs=logprobs,
        top_logprobs=top_logprobs,
        echo=echo,
        parse_special=False if chat else (_boolean(body, "parse_special") or False),
        tools=tools,
        tool_choice=_tool_choice(body, tools) if chat else None,
        response_format=response_format(body),
        logit_bias=logit_bias(body),
        chat_template_kwargs=_typed(body, "chat_template_kwargs", dict, "an object"),
        parallel_tool_calls=body.get("parallel_tool_calls") is not False,
        ends=end_controls(body, max_tokens),
    )
    # The thinking fields last: their errors name the model's levels.
    return ParsedRequest(**fields, thinking=None if thinking is None else resolve_thinking(body, thinking, endpoint))


def effective_sampling(parsed: ParsedRequest, defaults: Any) -> SamplingParams:
    """The request's sampling fields over ``defaults`` (any object with
    temperature, top_k, top_p, min_p, repetition_penalty, presence_penalty).
    A positive frequency_penalty becomes repetition_penalty
    1 + frequency_penalty unless repetition_penalty was sent (docs/spec/lse-api.md);
    zero or negative, it changes nothing."""
    def pick(name: str) -> Any:
        value = getattr(parsed, name)
        return getattr(defaults, name) if value is None else value

    repetition = parsed.repetition_penalty
    if repetition is None and parsed.frequency_penalty is not None and parsed.frequency_penalty > 0:
        repetition = 1.0 + parsed.frequency_penalty
    if repetition is None:
        repetition = defaults.repetition_penalty
    return SamplingParams(
        temperature=float(pick("temperature")),
        top_k=int(pick("top_k")),
        top_p=float(pick("top_p")),
        min_p=float(pick("min_p")),
        presence_penalty=float(pick("presence_penalty")),
        repetition_penalty=float(repetition),
        logit_bias=tuple(sorted((parsed.logit_bias or {}).items())),
    )


# --- one function per field or group of fields --------------------------------

def _messages(body: dict[str, Any]) -> list[Any]:
    messages = body.get("messages")
    if messages is None:
        raise invalid("messages", "messages is required on /v1/chat/completions")
    if not isinstance(messages, list) or not messages:
        got = "an empty array" if messages == [] else _json_type(messages)
        raise invalid("messages", f"messages must be a non-empty array of messages; got {got}")
    return messages


def _prompts(body: dict[str, Any]) -> list[str | list[int]]:
    """A string, an array of strings, an array of token ids, or an array of
    arrays of token ids: one entry per prompt."""
    prompt = body.get("prompt")
    if prompt is None:
        raise invalid("prompt", "prompt is required on /v1/completions")
    if isinstance(prompt, str):
        items: list[Any] = [prompt]
    elif isinstance(prompt, list) and any(_is_int(t) for t in prompt):
        items = [prompt]  # one prompt given as token ids
    elif isinstance(prompt, list):
        items = prompt
    else:
        raise invalid("prompt", "prompt must be a string, an array of strings, an array of token "
                      f"ids or an array of arrays of token ids; got {_json_type(prompt)}")
    if not items:
        raise invalid("prompt", "prompt is empty")
    for item in items:
        if isinstance(item, list) and not all(_is_int(t) and t >= 0 for t in item):
            raise invalid("prompt", "a prompt given as token ids must hold only nonnegative integers")
        if not isinstance(item, (str, list)):
            raise invalid("prompt", "each prompt in the array must be a string or an array of "
                          f"token ids; got {_json_type(item)}")
        if len(item) == 0:
            raise invalid("prompt", "prompt is empty")
    return items


def _include_usage(body: dict[str, Any], stream: bool) -> bool:
    options = body.get("stream_options")
    if options is None:
        return False
    if not stream:
        raise invalid("stream_options", "stream_options is only allowed when stream is true")
    if not isinstance(options, dict):
        raise invalid("stream_options", f"stream_options must be an object; got {_json_type(options)}")
    usage = options.get("include_usage")
    if usage is not None and not isinstance(usage, bool):
        raise invalid("stream_options.include_usage",
                      f"stream_options.include_usage must be a boolean; got {_json_type(usage)}")
    return bool(usage)


def _max_tokens(body: dict[str, Any], scoring_allowed: bool, operator_cap: int) -> int | None:
    """max_tokens wins over max_completion_tokens; each sent one must be a
    positive integer, or 0 in scoring mode (completions, echo, logprobs)."""
    sent: dict[str, int] = {}
    for name in ("max_tokens", "max_completion_tokens"):
        value = body.get(name)
        if value is None:
            continue
        if not _is_int(value) or value < 0:
            raise invalid(name, f"{name} must be a positive integer; got {_show(value)}")
        if value == 0 and not scoring_allowed:
            raise invalid(name, f"{name} must be a positive integer; 0 is accepted only on "
                          "/v1/completions together with echo: true and logprobs (scoring mode)")
        sent[name] = value
    field = "max_tokens" if "max_tokens" in sent else "max_completion_tokens"
    if field not in sent:
        return None
    check_operator_cap(sent[field], operator_cap, field)
    return sent[field]


def _chat_logprobs(body: dict[str, Any]) -> tuple[bool, int]:
    logprobs = _boolean(body, "logprobs") or False
    top = _integer(body, "top_logprobs", 0, MAX_TOP_LOGPROBS)
    if top is not None and not logprobs:
        raise invalid("top_logprobs", "top_logprobs requires logprobs: true")
    return logprobs, top or 0


def _completion_logprobs(body: dict[str, Any]) -> tuple[bool, int]:
    top = _integer(body, "logprobs", 0, MAX_COMPLETION_LOGPROBS)
    return top is not None, top or 0


def _stop(body: dict[str, Any]) -> list[str]:
    stop = body.get("stop")
    if stop is None:
        return []
    stops = [stop] if isinstance(stop, str) else stop
    if not isinstance(stops, list) or not all(isinstance(s, str) for s in stops):
        raise invalid("stop", f"stop must be a string or an array of strings; got {_json_type(stop)}")
    if len(stops) > MAX_STOPS:
        raise invalid("stop", f"stop holds at most {MAX_STOPS} strings; got {len(stops)}")
    if any(s == "" for s in stops):
        raise invalid("stop", "stop strings must not be empty")
    return stops


def _tools(body: dict[str, Any]) -> list[dict[str, Any]] | None:
    tools = body.get("tools")
    if tools is None:
        return None
    if not isinstance(tools, list):
        raise invalid("tools", f"tools must be an array; got {_json_type(tools)}")
    for i, tool in enumerate(tools):
        _check_tool(tool, f"tools[{i}]")
    return tools


def _check_tool(tool: Any, where: str) -> None:
    if not isinstance(tool, dict):
        raise invalid(where, f"{where} must be an object; got {_json_type(tool)}")
    if tool.get("type") != "function":
        raise invalid(f"{where}.type", f"{where}.type must be \"function\"; got {_show(tool.get('type'))}")
    function = tool.get("function")
    if not isinstance(function, dict):
        raise invalid(f"{where}.function", f"{where}.function must be an object; got {_json_type(function)}")
    name = function.get("name")
    if not isinstance(name, str) or not name:
        raise invalid(f"{where}.function.name", f"{where}.function.name must be a non-empty string")
    for key, kind in (("parameters", dict), ("description", str)):
        value = function.get(key)
        if value is not None and not isinstance(value, kind):
            expected = "an object" if kind is dict else "a string"
            raise invalid(f"{where}.function.{key}", f"{where}.function.{key} must be {expected}; "
                          f"got {_json_type(value)}")


def _tool_choice(body: dict[str, Any], tools: list[dict[str, Any]] | None) -> str | dict[str, Any] | None:
    """"none" and "auto" stand without tools; "required" and a named function
    need them, and the named function must be one of them."""
    choice = body.get("tool_choice")
    if choice is None or choice in ("none", "auto"):
        return choice
    names = [t["function"]["name"] for t in tools or []]
    if choice == "required":
        if not names:
            raise invalid("tool_choice", "tool_choice \"required\" needs tools")
        return choice
    if isinstance(choice, dict) and choice.get("type") == "function":
        function = choice.get("function")
        name = function.get("name") if isinstance(function, dict) else None
        if not isinstance(name, str):
            raise invalid("tool_choice.function.name", "tool_choice.function.name must be a string")
        if name not in names:
            raise invalid("tool_choice", f"tool_choice names function {name!r}, which is not in tools")
        return choice
    raise invalid("tool_choice", "tool_choice must be \"none\", \"auto\", \"required\" or "
                  "{\"type\": \"function\", \"function\": {\"name\": ...}}; " f"got {_show(choice)}")


# --- typed getters: None when the field is absent or null ----------------------

def _typed(body: dict[str, Any], name: str, kind: type, what: str) -> Any:
    value = body.get(name)
    if value is not None and not isinstance(value, kind):
        raise invalid(name, f"{name} must be {what}; got {_json_type(value)}")
    return value


def _boolean(body: dict[str, Any], name: str) -> bool | None:
    return _typed(body, name, bool, "a boolean")


def _integer(body: dict[str, Any], name: str, lo: int, hi: int | None) -> int | None:
    value = body.get(name)
    if value is None:
        return None
    if not _is_int(value) or value < lo or (hi is not None and value > hi):
        bounds = f"from {lo} to {hi}" if hi is not None else f"of at least {lo}"
        raise invalid(name, f"{name} must be an integer {bounds}; got {_show(value)}")
    return value


def _number(body: dict[str, Any], name: str, lo: float | None = None, hi: float | None = None,
            *, positive: bool = False) -> float | None:
    value = body.get(name)
    if value is None:
        return None
    number = _finite(value)
    if (number is None or (lo is not None and number < lo) or (hi is not None and number > hi)
            or (positive and number <= 0)):
        where = f" in [{lo:g}, {hi:g}]" if lo is not None and hi is not None else ""
        raise invalid(name, f"{name} must be a number{where}{' above 0' if positive else ''}; "
                      f"got {_show(value)}")
    return number


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _finite(value: Any) -> float | None:
    """``value`` as a finite float, or None if it is not a JSON number."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        number = float(value)
    except OverflowError:  # an integer too large for a float
        return None
    return number if math.isfinite(number) else None


def _show(value: Any) -> str:
    """A rejected value for a message: numbers and strings as written, other
    JSON values by type (an object could be large)."""
    if isinstance(value, (int, float, str)) and not isinstance(value, bool):
        text = repr(value) if isinstance(value, str) else str(value)
        return text if len(text) <= 40 else text[:40] + "..."
    return _json_type(value)


# bool before number: a bool is an int in Python but not a number in JSON.
_JSON_TYPES = ((bool, "a boolean"), ((int, float), "a number"), (str, "a string"),
               (list, "an array"), (dict, "an object"))


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    return next((name for kind, name in _JSON_TYPES if isinstance(value, kind)), type(value).__name__)
