"""Request fields of /v1/chat/completions and /v1/completions, one row each.

Each row lists valid values (``Good``) and values that are invalid by
construction (``Bad``) with the exact answer: status, error.type, error.code,
error.param. A field-level 400 has ``code: null``: the only documented code
for a bad field value is the lean doc's envelope example (§ Errors), which
shows ``"code": null``; LSE's named codes are for context and thinking.
Ranges the docs leave open (penalties, n, stop, logprobs) are those LSE's
request validation enforces, after OpenAI's reference.
"""

from __future__ import annotations

from lse.spec.rows import (
    API_DOC, BOTH, CHAT, COMPLETIONS, LSE_API, MISSING, OPENAI_API, README, Bad, Cite, Good, RequestField,
)

CHAT_REQUEST = Cite(OPENAI_API, "POST /v1/chat/completions > Request")
COMPLETIONS_REQUEST = Cite(OPENAI_API, "POST /v1/completions")
SAMPLING = Cite(LSE_API, "Sampling defaults > Request fields")
LIMITS = Cite(LSE_API, "Output limits")
THINKING = Cite(LSE_API, "Thinking levels > Request fields")
GAPS = Cite(OPENAI_API, "Not supported yet")
OVERRIDES = Cite(README, "Where the two differ, this is how LSE behaves")

THINKING_FIELDS = ("reasoning_effort", "thinking_level", "chat_template_kwargs", "reasoning",
                   "enable_thinking", "thinking")
USER = [{"role": "user", "content": "Hi"}]
DEFAULTS_ORDER = "request, generation_config.json, config.json, LSE's neutral default (lse-api.md)"


def bad(value, param, **kw) -> Bad:
    return Bad(value, param=param, **kw)


def thinking_bad(value, param) -> Bad:
    return Bad(value, code="invalid_thinking", param=param, drop=THINKING_FIELDS)


def goods(*values) -> tuple[Good, ...]:
    return tuple(Good(v) for v in values)


def numeric(name, cite, range_, valid, invalid, default=None, text="") -> RequestField:
    return RequestField(
        id=f"req.{name}", cite=cite, endpoints=BOTH, name=name, type="number", range=range_,
        default=default, default_source=DEFAULTS_ORDER, valid=goods(*valid, None),
        invalid=tuple(bad(v, name) for v in invalid), text=text or f"{name}: {range_}")


# developer: OpenAI's system-level role, rendered as the template's system turn
# (merged with an adjacent system message; see SETTLED in rows.py).
MESSAGES = RequestField(
    id="req.chat.messages", cite=CHAT_REQUEST, endpoints=(CHAT,), name="messages", type="array",
    range="roles system, user, assistant (and developer, as system)", default=MISSING, default_source="required",
    valid=goods(USER, [{"role": "system", "content": "Be brief."}] + USER,
                [{"role": "developer", "content": "Be brief."}] + USER,
                [{"role": "system", "content": "Be kind."}, {"role": "developer", "content": "Be brief."}] + USER,
                USER + [{"role": "assistant", "content": "Hello."}, {"role": "user", "content": "Go on"}]),
    invalid=(bad(MISSING, "messages"), bad("Hi", "messages"), bad([], "messages"),
             bad([{"role": "robot", "content": "Hi"}], "messages")),
    text="messages is required: an array of {role, content}, roles system, user, assistant")

PROMPT = RequestField(
    id="req.completions.prompt", cite=COMPLETIONS_REQUEST, endpoints=(COMPLETIONS,), name="prompt",
    type="string or array", default=MISSING, default_source="required",
    valid=goods("Once upon a time", ["Once upon a time"]),
    invalid=(bad(MISSING, "prompt"), bad(5, "prompt"), bad(None, "prompt")),
    text="prompt is required: a string or an array; no chat template is applied")

MODEL = RequestField(
    id="req.model", cite=CHAT_REQUEST, endpoints=BOTH, name="model", type="string",
    default="the served model", default_source="server", valid=goods("lse-spec-any-name"),
    invalid=(bad(5, "model"),),
    text="model is accepted and echoed back; the server serves whatever it was launched with")

MAX_TOKENS = RequestField(
    id="req.max_tokens", cite=LIMITS, endpoints=BOTH, name="max_tokens", type="integer",
    range="positive; 0 only in /v1/completions scoring mode; at most the operator's cap",
    default="no limit of LSE's own", default_source="request, --max-tokens, max_new_tokens, none",
    valid=goods(1, 8, None),
    invalid=(bad(0, "max_tokens", drop=("echo",)), bad(-1, "max_tokens"), bad(1.5, "max_tokens"),
             bad("8", "max_tokens")),
    text="max_tokens must be a positive integer; null means not sent")

MAX_COMPLETION_TOKENS = RequestField(
    id="req.max_completion_tokens", cite=LIMITS, endpoints=BOTH, name="max_completion_tokens",
    type="integer", range="positive", default=None, default_source="as max_tokens",
    valid=goods(1, 8, None),
    invalid=tuple(bad(v, "max_completion_tokens", drop=("max_tokens", "echo")) for v in (0, -1, "8")),
    text="max_completion_tokens is max_tokens' other spelling; max_tokens wins when both are sent")

TEMPERATURE = numeric("temperature", SAMPLING, "number; 0 or less is greedy", (0, 0.7, 1.0, -1),
                      ("hot", [1]), default=1.0)
TOP_P = numeric("top_p", SAMPLING, "number in [0, 1]; 1 turns it off", (0.0, 0.5, 1.0),
                (1.5, -0.1, "x"), default=1.0)
MIN_P = numeric("min_p", SAMPLING, "number in [0, 1]", (0.0, 0.05, 1.0), (1.5, -0.1), default=0.0)
PRESENCE = numeric("presence_penalty", SAMPLING, "number in [-2, 2]", (-2, 0, 1.5, 2),
                   (2.5, -2.5, "x"), default=0.0)
FREQUENCY = numeric("frequency_penalty", SAMPLING,
                    "number in [-2, 2]; positive maps to repetition_penalty = 1 + value", (-2, 0, 1, 2),
                    (2.5, -2.5), default=0.0)
REPETITION = numeric("repetition_penalty", SAMPLING, "number > 0", (0.5, 1.0, 1.3), (0, -1, "x"),
                     default=1.0)

TOP_K = RequestField(
    id="req.top_k", cite=SAMPLING, endpoints=BOTH, name="top_k", type="integer",
    range="integer >= -1; 0 or -1 turns it off", default=0, default_source=DEFAULTS_ORDER,
    valid=goods(0, -1, 1, 40, None), invalid=tuple(bad(v, "top_k") for v in (-2, 1.5, "5")),
    text="top_k: integer; 0 or -1 turns it off")

SEED = RequestField(
    id="req.seed", cite=SAMPLING, endpoints=BOTH, name="seed", type="integer", range="nonnegative",
    default="random", default_source="lean doc", valid=goods(0, 42, 2**32, None),
    invalid=tuple(bad(v, "seed") for v in (-1, 1.5, "1")), text="seed: nonnegative integer")

STREAM = RequestField(
    id="req.stream", cite=CHAT_REQUEST, endpoints=BOTH, name="stream", type="boolean", default=False,
    default_source="lean doc", valid=goods(False, True),
    invalid=(bad("yes", "stream", drop=("stream_options",)),),
    text="stream: server-sent events instead of one JSON body")

STREAM_OPTIONS = RequestField(
    id="req.stream_options", cite=Cite(OPENAI_API, "POST /v1/chat/completions > Streaming"),
    endpoints=BOTH, name="stream_options", type="object", range="only with stream: true",
    valid=(Good({"include_usage": True}, with_=(("stream", True),)),),
    invalid=(bad({"include_usage": True}, "stream_options", with_=(("stream", False),)),),
    text="stream_options is accepted only with stream: true (usage is in the final chunk either way)")

STOP = RequestField(
    id="req.stop", cite=COMPLETIONS_REQUEST, endpoints=BOTH, name="stop", type="string or array",
    range="at most 16 strings", default=None, default_source="unset",
    valid=goods("\n\n", ["###"], [f"<{i}>" for i in range(16)], None),
    invalid=(bad([f"<{i}>" for i in range(17)], "stop"), bad(5, "stop"), bad([1], "stop")),
    text="stop: stop strings, trimmed from the output")

ENDS = Cite(API_DOC, "Request fields LSE adds > Where a reply ends")

IGNORE_EOS = RequestField(
    id="req.ignore_eos", cite=ENDS, endpoints=BOTH, name="ignore_eos", type="boolean", default=False,
    default_source="vLLM", valid=goods(False, None), invalid=(bad(1, "ignore_eos"), bad("yes", "ignore_eos")),
    text="ignore_eos: the model's end-of-turn tokens do not end the reply")

MIN_TOKENS = RequestField(
    id="req.min_tokens", cite=ENDS, endpoints=BOTH, name="min_tokens", type="integer",
    range="0..max_tokens", default=0, default_source="vLLM", valid=goods(0, 1, None),
    invalid=(bad(-1, "min_tokens"), bad(1.5, "min_tokens"), bad("2", "min_tokens"),
             bad(9, "min_tokens", with_=(("max_tokens", 8),))),
    text="min_tokens: no end-of-turn token, stop_token_ids id or stop string before this many tokens")

STOP_TOKEN_IDS = RequestField(
    id="req.stop_token_ids", cite=ENDS, endpoints=BOTH, name="stop_token_ids", type="array",
    range="at most 64 token ids inside the vocab", default=None, default_source="unset",
    valid=goods([], [0], None), invalid=(bad(5, "stop_token_ids"), bad([-1], "stop_token_ids"),
                                         bad(list(range(65)), "stop_token_ids")),
    text="stop_token_ids: token ids that end the reply as the end-of-turn token does")

N = RequestField(
    id="req.n", cite=GAPS, endpoints=BOTH, name="n", type="integer", range="1..16", default=1,
    default_source="OpenAI", valid=goods(1, 2, 16, None),
    invalid=tuple(bad(v, "n") for v in (0, 17, "2", 1.5)),
    text="n: several choices per request (the lean doc's gap is not LSE's limit, README.md)")

CHAT_LOGPROBS = RequestField(
    id="req.chat.logprobs", cite=Cite(OPENAI_API, "OpenAI-compatible API"), endpoints=(CHAT,),
    name="logprobs", type="boolean", default=False, default_source="OpenAI", valid=goods(False, True),
    invalid=(bad("yes", "logprobs", drop=("top_logprobs",)),),
    text="chat logprobs: boolean, as in OpenAI's schema the API is shaped like")

TOP_LOGPROBS = RequestField(
    id="req.chat.top_logprobs", cite=Cite(OPENAI_API, "OpenAI-compatible API"), endpoints=(CHAT,),
    name="top_logprobs", type="integer", range="0..20, needs logprobs: true",
    valid=(Good(0, with_=(("logprobs", True),)), Good(20, with_=(("logprobs", True),))),
    invalid=(bad(2, "top_logprobs", with_=(("logprobs", False),)),
             bad(21, "top_logprobs", with_=(("logprobs", True),))),
    text="top_logprobs: 0..20 alternatives per token, only with logprobs: true")

COMPLETIONS_LOGPROBS = RequestField(
    id="req.completions.logprobs", cite=COMPLETIONS_REQUEST, endpoints=(COMPLETIONS,), name="logprobs",
    type="integer", range="0..5", default=None, default_source="unset", valid=goods(0, 1, 5, None),
    invalid=tuple(bad(v, "logprobs", drop=("max_tokens",)) for v in (6, -1, "2")),
    text="logprobs: return per-token logprobs with that many alternatives")

ECHO = RequestField(
    id="req.completions.echo", cite=COMPLETIONS_REQUEST, endpoints=(COMPLETIONS,), name="echo",
    type="boolean", default=False, default_source="lean doc", valid=goods(False, True),
    invalid=(bad("yes", "echo", drop=("max_tokens",)),),
    text="echo: include the prompt in the response, with its logprobs when scoring")

SCORING = RequestField(
    id="req.completions.scoring_mode", cite=OVERRIDES, endpoints=(COMPLETIONS,), name="max_tokens",
    type="integer", range="0 with echo: true and logprobs", default=None, default_source="request",
    valid=(Good(0, with_=(("echo", True), ("logprobs", 1), ("n", 1), ("stream", False))),),
    invalid=(bad(0, "max_tokens", with_=(("echo", True),), drop=("logprobs",)),
             bad(0, "max_tokens", with_=(("logprobs", 1), ("echo", False)))),
    text="max_tokens: 0 is scoring mode, accepted only on /v1/completions with echo and logprobs")

ENUM_SCHEMA = {"type": "object", "properties": {"answer": {"enum": ["yes", "no"]}}, "required": ["answer"],
               "additionalProperties": False}
RESPONSE_FORMAT = RequestField(
    id="req.response_format", cite=GAPS, endpoints=BOTH, name="response_format", type="object",
    range='{"type": "text" | "json_object" | "json_schema", "json_schema": {name, schema, strict}}',
    valid=goods({"type": "text"}, {"type": "json_object"},
                {"type": "json_schema", "json_schema": {"name": "a", "schema": ENUM_SCHEMA, "strict": True}},
                {"type": "json_schema", "json_schema": {"name": "b", "schema": {"type": "array", "items": {
                    "type": "integer"}, "maxItems": 3}, "strict": False}}),
    invalid=(bad({"type": "xml"}, "response_format"), bad("text", "response_format"),
             bad({"type": "json_schema"}, "response_format"),
             bad({"type": "json_schema", "json_schema": {"schema": []}}, "response_format"),
             bad({"type": "json_schema", "json_schema": {"name": "u", "schema": {
                 "type": "array", "uniqueItems": True}}}, "response_format"),
             bad({"type": "json_schema", "json_schema": {"name": "n", "schema": {"not": {"type": "string"}}}},
                 "response_format")),
    text="response_format: the reply is JSON (json_object) or JSON matching the schema (json_schema); a "
         "schema keyword the constrained decoder cannot enforce is a 400 naming response_format")

LOGIT_BIAS = RequestField(
    id="req.logit_bias", cite=GAPS, endpoints=BOTH, name="logit_bias", type="object",
    range="token id (a string key) -> number in [-100, 100]",
    valid=goods({}, {"1": 2.5}, {"3": -100}, {"4": -1, "5": 1}),
    invalid=(bad([1], "logit_bias"), bad({"x": 1}, "logit_bias"), bad({"1": 101}, "logit_bias"),
             bad({"1": "1"}, "logit_bias")),
    text="logit_bias: each bias is added to its token's logit before sampling; -100 bans, 100 selects")

TOOLS = RequestField(
    id="req.chat.tools", cite=Cite(OPENAI_API, "Tool calling"), endpoints=(CHAT,), name="tools",
    type="array", valid=goods([{"type": "function", "function": {
        "name": "get_time", "description": "The time now", "parameters": {"type": "object", "properties": {}}}}]),
    text="tools on the request are forwarded to the chat template")

FORCED_TOOL = {"type": "function", "function": {"name": "pick", "parameters": {
    "type": "object", "properties": {"choice": {"enum": ["a", "b"]}}, "required": ["choice"],
    "additionalProperties": False}}}
TOOL_CHOICE = RequestField(
    id="req.chat.tool_choice", cite=Cite(OPENAI_API, "Tool calling"), endpoints=(CHAT,),
    name="tool_choice", type="string or object",
    # Every model: a template without tool-call markers takes the generic form
    # (a JSON object the prompt asks for, as llama-server's generic handler).
    valid=goods("auto", "none") + (
        Good("required", with_=(("tools", [FORCED_TOOL]),)),
        Good({"type": "function", "function": {"name": "pick"}}, with_=(("tools", [FORCED_TOOL]),))),
    invalid=(bad("sometimes", "tool_choice"), bad("required", "tool_choice", drop=("tools",)),
             bad({"type": "function", "function": {"name": "nope"}}, "tool_choice", with_=(("tools", [FORCED_TOOL]),))),
    text="tool_choice: \"required\" forces one or more calls to the offered tools, a named function a call "
         "to it, \"none\" forbids calls; a template without tool-call markers gets the generic form")

UNKNOWN = RequestField(
    id="req.unknown_fields", cite=Cite(OPENAI_API, "OpenAI-compatible API"), endpoints=BOTH, name="user",
    type="any", valid=goods("lse-spec", {"nested": [1]}),
    text="fields LSE does not know (user, which OpenAI SDKs send) are ignored, so SDKs work unchanged")


def _thinking(name, type_, bads, text, endpoints=BOTH) -> RequestField:
    return RequestField(id=f"req.{name}", cite=THINKING, endpoints=endpoints, name=name, type=type_,
                        invalid=bads, in_strategies=False, text=text)


THINKING_ROWS = (
    _thinking("reasoning_effort", "string: a levels[].id",
              (thinking_bad(5, "reasoning_effort"), thinking_bad(["low"], "reasoning_effort")),
              "reasoning_effort: a levels[].id"),
    _thinking("thinking_level", "string: a levels[].id", (thinking_bad(5, "thinking_level"),),
              "thinking_level: reasoning_effort's other spelling"),
    _thinking("chat_template_kwargs", "object", (
        thinking_bad({"reasoning_effort": 5}, "chat_template_kwargs.reasoning_effort"),
        thinking_bad({"enable_thinking": "yes"}, "chat_template_kwargs.enable_thinking")),
        "chat_template_kwargs.reasoning_effort and .enable_thinking: the level and switch spelled for the template"),
    _thinking("reasoning", "object", (thinking_bad({"effort": 5}, "reasoning.effort"),),
              "reasoning.effort: reasoning_effort's OpenAI Responses spelling"),
    _thinking("enable_thinking", "boolean", (thinking_bad("yes", "enable_thinking"),),
              "enable_thinking: the switch"),
    _thinking("thinking", 'boolean or {"type": "enabled" | "disabled"}',
              (thinking_bad("yes", "thinking"), thinking_bad(3, "thinking"),
               thinking_bad({"type": "sometimes"}, "thinking")),
              "thinking: the switch as a boolean or an object"),
)

ROWS = (
    MESSAGES, PROMPT, MODEL, MAX_TOKENS, MAX_COMPLETION_TOKENS, TEMPERATURE, TOP_K, TOP_P, MIN_P,
    PRESENCE, FREQUENCY, REPETITION, SEED, STREAM, STREAM_OPTIONS, STOP, IGNORE_EOS, MIN_TOKENS, STOP_TOKEN_IDS,
    N, CHAT_LOGPROBS,
    TOP_LOGPROBS, COMPLETIONS_LOGPROBS, ECHO, SCORING, RESPONSE_FORMAT, LOGIT_BIAS, TOOLS,
    TOOL_CHOICE, UNKNOWN,
) + THINKING_ROWS
