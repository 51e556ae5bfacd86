"""The Messages routes (docs/api-messages.md): every request field, reply
field, stream event and error of POST /v1/messages and /v1/messages/count_tokens
as a row. The checks are ``lse.spec.checks_messages``'s; the scenarios
``lse.spec.scenarios_messages``'s."""

from __future__ import annotations

from dataclasses import dataclass

from lse.spec.rows import MESSAGES_API, Cite, Row

TITLE = Cite(MESSAGES_API, "Anthropic Messages API")
REQUEST = Cite(MESSAGES_API, "POST /v1/messages > Request")
REPLY = Cite(MESSAGES_API, "POST /v1/messages > Reply")
STREAMING = Cite(MESSAGES_API, "POST /v1/messages > Streaming")
TOOLS = Cite(MESSAGES_API, "Tools")
THINKING = Cite(MESSAGES_API, "Thinking")
COUNT = Cite(MESSAGES_API, "POST /v1/messages/count_tokens")
ERRORS = Cite(MESSAGES_API, "Errors")
AUTH = Cite(MESSAGES_API, "Authentication")


@dataclass(frozen=True, kw_only=True)
class MessagesField(Row):
    """A request field, a reply field or a stream event of the Messages routes."""

    name: str


@dataclass(frozen=True, kw_only=True)
class MessagesError(Row):
    """An error of the Messages routes: its status and Anthropic error type."""

    status: int
    type: str
    when: str


def req(id_: str, name: str, text: str, cite: Cite = REQUEST, **kw) -> MessagesField:
    return MessagesField(id=f"msg.req.{id_}", cite=cite, name=name, text=f"{name}: {text}", **kw)


def resp(id_: str, name: str, text: str, cite: Cite = REPLY, **kw) -> MessagesField:
    return MessagesField(id=f"msg.resp.{id_}", cite=cite, name=name, text=f"{name}: {text}", **kw)


def err(id_: str, status: int, type_: str, when: str, cite: Cite = ERRORS, **kw) -> MessagesError:
    return MessagesError(id=f"msg.err.{id_}", cite=cite, status=status, type=type_, when=when,
                         text=f"{status} {type_}: {when}", **kw)


THINKS = ("template", "thinking")
ROWS = (
    MessagesField(id="msg.routes", cite=TITLE, name="routes",
                  text="POST /v1/messages and POST /v1/messages/count_tokens over the chat route's engine path"),
    req("model", "model", "required string, echoed back in the reply"),
    req("max_tokens", "max_tokens", "required integer >= 1; the reply's token limit, thinking included"),
    req("messages", "messages", "required non-empty array of user and assistant messages; the last one is "
        "the user's; content a string or text blocks"),
    req("system", "system", "a string or an array of text blocks, the system message"),
    req("stop_sequences", "stop_sequences", "up to 16 non-empty strings; the reply ends before the first one"),
    req("temperature", "temperature", "a number in [0, 1]"),
    req("top_p", "top_p", "a number in [0, 1]"),
    req("top_k", "top_k", "an integer >= 0; 0 is off"),
    req("stream", "stream", "a boolean; true answers Anthropic's server-sent events"),
    req("metadata", "metadata", "an object, accepted and not used"),
    req("unknown", "(other fields)", "ignored"),
    req("image", "messages[].content[].type image", "refused with a 400 naming the block: LSE models take "
        "text only"),
    req("prefill", "messages[-1].role assistant", "refused with a 400: a final assistant message is not "
        "continued"),
    req("tools", "tools", "client tools {name, description, input_schema}; server tools refused", cite=TOOLS),
    req("tool_choice", "tool_choice", "{type: auto | any | tool (with name) | none}; any and tool are enforced "
        "by constrained decoding", cite=TOOLS),
    req("tool_result", "messages[].content[].tool_result", "a user turn's tool_result blocks, by tool_use_id, "
        "content a string or text blocks", cite=TOOLS),
    req("thinking", "thinking", "{type: enabled, budget_tokens} | {type: adaptive} | {type: disabled} mapped "
        "onto the template's thinking levels; absent: the model's default level", cite=THINKING, needs=THINKS),
    req("budget_tokens", "thinking.budget_tokens", "an integer >= 1 below max_tokens; the reasoning is closed "
        "when it reaches that many tokens and the answer follows", cite=THINKING,
        manual="the budget is counted in token ids, which HTTP replies do not show; "
               "tests/unit/test_messages_engine.py::test_the_thinking_budget_closes_reasoning_at_n_tokens asserts "
               "the closing marker's id at position N"),
    req("effort", "output_config.effort", "one of the template's thinking levels", cite=THINKING, needs=THINKS),
    req("format", "output_config.format", "{type: json_schema, schema}, enforced by constrained decoding"),
    resp("message", "id, type, role, model", "msg_..., message, assistant, the request's model"),
    resp("content", "content", "thinking, text and tool_use blocks in the order the reply wrote them"),
    resp("stop_reason", "stop_reason", "end_turn, max_tokens, stop_sequence, tool_use or "
         "model_context_window_exceeded (the context filled up)"),
    resp("stop_sequence", "stop_sequence", "the stop sequence that ended the reply, else null"),
    resp("usage", "usage", "input_tokens (computed) + cache_read_input_tokens (from the prefix cache) = the "
         "prompt; output_tokens the reply's tokens"),
    resp("lse_context", "lse_context", "tokens_used, context_length, tokens_remaining"),
    resp("tool_use", "content[].tool_use", "{id toolu_..., name, input object}; stop_reason tool_use",
         cite=TOOLS, needs=("probe_tool_call",)),
    resp("thinking", "content[].thinking", "{thinking, signature \"\"} before the text", cite=THINKING,
         needs=("probe_reasoning",)),
    resp("stream_sequence", "events", "message_start, then per block content_block_start, content_block_delta "
         "(text_delta, thinking_delta, input_json_delta) and content_block_stop, then message_delta (stop "
         "reason, usage) and message_stop", cite=STREAMING),
    resp("stream_fold", "events (fold)", "the non-streamed reply is the fold of the events", cite=STREAMING),
    resp("ping", "ping", "sent every 5 s while the request waits after message_start", cite=STREAMING,
         manual="a ping needs a request held in the queue for 5 seconds; tests/unit/test_api_messages.py "
                "drives it with a shorter interval over a fake engine"),
    resp("stream_error", "error event", "an error after the headers went out is an error event, then the end",
         cite=STREAMING, manual="an in-stream error needs a failure after admission (a timeout or shutdown "
                                "mid-reply); tests/unit/test_api_messages.py drives it over a fake engine"),
    resp("count_tokens", "input_tokens", "the prompt's tokens as the request would run it", cite=COUNT),
    MessagesField(id="msg.auth.x_api_key", cite=AUTH, name="x-api-key",
                  text="the API key is accepted as x-api-key or Authorization: Bearer", needs=("auth",)),
    err("envelope", 400, "invalid_request_error", "every error: {type: error, error: {type, message}} plus "
        "LSE's param and code"),
    err("invalid", 400, "invalid_request_error", "a field that breaks its rule; param names it as the body "
        "spells it"),
    err("unauthorized", 401, "authentication_error", "a missing or wrong key", cite=AUTH, needs=("auth",)),
    err("not_found", 404, "not_found_error", "a path under /v1/messages that is no route"),
    err("wrong_method", 405, "invalid_request_error", "another method than POST, with Allow"),
    err("timeout", 408, "timeout_error", "the request ran past --request-timeout-secs", needs=("times_out",)),
    err("too_large", 413, "invalid_request_error", "a body over --max-body-bytes",
        manual="the kit does not know the server's --max-body-bytes; tests/unit/test_api_messages.py sends a "
               "body over a small limit"),
    err("overloaded", 503, "overloaded_error", "the model is loading, the queue is full or the server drains; "
        "Retry-After", manual="a full queue or a loading model is not held still long enough from outside; "
                              "tests/unit/test_api_messages.py drives both over a fake engine"),
    err("api_error", 500, "api_error", "generation failed", needs=("fallback_refused",)),
)

# LSE's choices where Anthropic's documents leave the server room, beside the
# rows they settle (what users of the official SDKs would expect).
SETTLED = {
    "msg.req.model": "any name is accepted and echoed back: one server serves one model (as on the chat route)",
    "msg.req.unknown": "ignored, as the chat route ignores fields it does not know (service_tier, container, ...)",
    "msg.req.image": "refused rather than dropped: a text model must not answer about a picture it never saw",
    "msg.req.prefill": "refused: the chat template renders a final assistant message as a finished turn, so the "
                       "reply would not continue it",
    "msg.req.thinking": "absent means the model's default level (as on the chat route), not Anthropic's off: a "
                        "template that can't switch thinking off would refuse every plain request; adaptive is "
                        "the thinking level with no budget; display is accepted and not used",
    "msg.req.budget_tokens": "from 1, not Anthropic's 1024 (small models and tests); enforced by forcing the "
                             "template's closing marker at N thinking tokens",
    "msg.req.effort": "the value names a level of the model's template (the chat route's reasoning_effort); a "
                      "value the template lacks is 400 unsupported_reasoning_effort with its levels",
    "msg.resp.stop_reason": "a reply cut by the context is model_context_window_exceeded, Anthropic's own value "
                            "and a member of the SDK's StopReason literal, so a client compacts instead of raising "
                            "max_tokens",
    "msg.resp.usage": "Anthropic's split: input_tokens computed, cache_read_input_tokens from the prefix cache; "
                      "message_start counts the whole prompt as input_tokens (the cache's share is known once "
                      "the request has a slot) and message_delta carries the final counts",
    "msg.resp.thinking": "signature is \"\": LSE does not sign reasoning, and reads one sent back unchecked",
    "msg.err.envelope": "LSE's param, code, levels and lse_context follow Anthropic's type and message",
    "msg.err.overloaded": "503 with Retry-After, not Anthropic's 529: the SDK retries both and LSE's other routes "
                          "answer busy as 503",
    "msg.err.too_large": "type invalid_request_error with code request_too_large: the SDK's ErrorType has no "
                         "request_too_large member",
    "msg.auth.x_api_key": "both spellings on every route: one key, whichever SDK a client uses",
}
