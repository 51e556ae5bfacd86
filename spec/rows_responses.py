"""Response fields: where each appears (body, stream chunk, final chunk,
/v1/models, /v1/lse/model_info, /v1/lse/status), its type and invariant."""

from __future__ import annotations

from lse.spec.rows import BOTH, CHAT, COMPLETIONS, LSE_API, OPENAI_API, Cite, ResponseField

CHAT_RESPONSE = Cite(OPENAI_API, "POST /v1/chat/completions > Response")
STREAMING = Cite(OPENAI_API, "POST /v1/chat/completions > Streaming")
COMPLETIONS_DOC = Cite(OPENAI_API, "POST /v1/completions")
SHAPE = Cite(OPENAI_API, "OpenAI-compatible API")
REPLY_FULL = Cite(LSE_API, "Context full > A reply that fills the context")
MODELS = Cite(OPENAI_API, "GET /v1/models")
THINKING_MODELS = Cite(LSE_API, "Thinking levels > /v1/models")
DEFAULTS_MODELS = Cite(LSE_API, "Sampling defaults > /v1/models")
FALLBACK = Cite(LSE_API, "CPU fallback")
BODY = ("body",)
BODY_FINAL = ("body", "final_chunk")
INFO = ("models", "model_info")


def field(id_, cite, path, where, type_, invariant="", endpoints=BOTH, **kw) -> ResponseField:
    return ResponseField(id=id_, cite=cite, path=path, where=where, type=type_, invariant=invariant,
                         endpoints=endpoints, text=f"{path}: {type_}" + (f"; {invariant}" if invariant else ""),
                         **kw)


COMPLETION = (
    field("resp.id", CHAT_RESPONSE, "id", ("body", "chunk"), "string",
          "chat ids start with chatcmpl-"),
    field("resp.object", CHAT_RESPONSE, "object", ("body", "chunk"), "string",
          "chat.completion, chat.completion.chunk; text_completion on /v1/completions"),
    field("resp.created", CHAT_RESPONSE, "created", ("body", "chunk"), "integer", "Unix seconds"),
    field("resp.model", CHAT_RESPONSE, "model", ("body", "chunk"), "string",
          "the request's model echoed back, else the served model's id"),
    field("resp.choices", CHAT_RESPONSE, "choices", ("body", "chunk"), "array",
          "n choices indexed 0..n-1, each generated independently"),
    field("resp.message.role", CHAT_RESPONSE, "choices[].message.role", BODY, "string",
          "assistant", endpoints=(CHAT,)),
    field("resp.message.content", CHAT_RESPONSE, "choices[].message.content", BODY, "string or null",
          "null only when the turn made tool calls", endpoints=(CHAT,)),
    field("resp.message.reasoning_content", CHAT_RESPONSE, "choices[].message.reasoning_content", BODY,
          "string", "the <think> block split out of content; omitted entirely when empty", endpoints=(CHAT,)),
    field("resp.text", REPLY_FULL, "choices[].text", BODY, "string",
          "/v1/completions choices carry text instead of message", endpoints=(COMPLETIONS,)),
    field("resp.finish_reason", CHAT_RESPONSE, "choices[].finish_reason", BODY_FINAL, "string",
          "stop, length or tool_calls"),
    field("resp.stop_reason", REPLY_FULL, "choices[].stop_reason", BODY_FINAL, "string",
          "stop_token, stop_sequence, max_tokens, context_full or cancelled; agrees with finish_reason"),
    field("resp.logprobs", REPLY_FULL, "choices[].logprobs", BODY, "null or object",
          "null unless logprobs was requested"),
    field("resp.logprobs.chat", SHAPE, "choices[].logprobs.content", BODY, "array",
          "one entry per completion token, each with token, logprob <= 0 and top_logprobs of the asked length",
          endpoints=(CHAT,)),
    field("resp.logprobs.completions", COMPLETIONS_DOC, "choices[].logprobs", BODY,
          "{tokens, token_logprobs, top_logprobs, text_offset}",
          "one entry per token; top_logprobs entries hold up to logprobs + 1 alternatives",
          endpoints=(COMPLETIONS,)),
    field("resp.usage", CHAT_RESPONSE, "usage", BODY_FINAL, "{prompt_tokens, completion_tokens, total_tokens}",
          "nonnegative integers; completion_tokens <= max_tokens * n"),
    field("resp.usage.total_tokens", CHAT_RESPONSE, "usage.total_tokens", BODY_FINAL, "integer",
          "prompt_tokens + completion_tokens"),
    field("resp.usage.cached_tokens", REPLY_FULL, "usage.prompt_tokens_details.cached_tokens", BODY_FINAL,
          "integer", "0 <= cached_tokens <= prompt_tokens"),
    field("resp.lse_context", REPLY_FULL, "lse_context", BODY_FINAL, "object",
          "every completion response carries it; in a stream, on the final chunk"),
    field("resp.lse_context.tokens_used", REPLY_FULL, "lse_context.tokens_used", BODY_FINAL, "integer",
          "prompt_tokens + completion_tokens, never above context_length"),
    field("resp.lse_context.context_length", REPLY_FULL, "lse_context.context_length", BODY_FINAL,
          "integer", "the same as /v1/models context_length"),
    field("resp.lse_context.tokens_remaining", REPLY_FULL, "lse_context.tokens_remaining", BODY_FINAL,
          "integer", "max(0, context_length - tokens_used)"),
    field("resp.timings", REPLY_FULL, "timings", BODY_FINAL, "object"),
    field("resp.lse_warnings", FALLBACK, "lse_warnings", BODY_FINAL,
          "[{type: cpu_fallback, cause, count}]", "present on a response whose request caused a CPU fallback"),
)

STREAM = (
    field("stream.content_type", STREAMING, "Content-Type", ("chunk",), "text/event-stream"),
    field("stream.first_chunk_role", STREAMING, "choices[].delta.role", ("chunk",), "string",
          "the first chunk carries role assistant", endpoints=(CHAT,)),
    field("stream.deltas", STREAMING, "choices[].delta.content / reasoning_content", ("chunk",), "string",
          "the deltas fold into the non-streamed reply with the same seed", endpoints=(CHAT,)),
    field("stream.text_deltas", COMPLETIONS_DOC, "choices[].text", ("chunk",), "string",
          "the text deltas fold into the non-streamed reply with the same seed", endpoints=(COMPLETIONS,)),
    field("stream.final_chunk", REPLY_FULL, "final chunk", ("final_chunk",), "object",
          "the chunk with finish_reason carries stop_reason, usage, lse_context and timings"),
    field("stream.finish_once", STREAMING, "choices[].finish_reason", ("chunk",), "null or string",
          "null on every chunk but each choice's last"),
    field("stream.done", STREAMING, "data: [DONE]", ("chunk",), "literal", "the last event, once"),
)

ECHO_AND_SCORING = (
    field("resp.echo", COMPLETIONS_DOC, "choices[].text with echo", BODY, "string",
          "with echo: true the text starts with the prompt", endpoints=(COMPLETIONS,)),
    field("resp.echo.logprobs", COMPLETIONS_DOC, "choices[].logprobs.tokens", BODY, "array",
          "with echo and logprobs, prompt tokens are scored too; the first has logprob null",
          endpoints=(COMPLETIONS,)),
    field("resp.scoring", COMPLETIONS_DOC, "choices[].logprobs in scoring mode", BODY, "object",
          "max_tokens 0 + echo + logprobs: per-token prompt logprobs and nothing generated",
          endpoints=(COMPLETIONS,)),
)

MODEL_LIST = tuple(
    field(f"models.{name}", MODELS, path, ("models",), type_, inv, endpoints=())
    for name, path, type_, inv in (
        ("object", "object", "string", "list"),
        ("data", "data", "array", "one entry: the one model this server hosts"),
        ("id", "data[].id", "string", "the id responses echo when a request names no model"),
        ("model_object", "data[].object", "string", "model"),
        ("created", "data[].created", "integer", ""),
        ("owned_by", "data[].owned_by", "string", ""),
    )
) + (
    field("models.context_length", REPLY_FULL, "data[].context_length", ("models",), "integer",
          "> 0; the engine's --kv-len; lse_context.context_length equals it", endpoints=()),
)

THINKING_INFO = tuple(
    field(f"thinking.{name.replace('[].', '.')}", THINKING_MODELS, f"thinking.{name}", INFO, type_, inv,
          endpoints=())
    for name, type_, inv in (
        ("supported", "boolean", "true when the template defines at least one level"),
        ("source", "string or null", "the template's file; null when the model has none"),
        ("toggle", "string or null", '"enable_thinking" when the template has the switch'),
        ("effort", "string or null", '"reasoning_effort" when the template has effort levels'),
        ("default_level", "string or null", "the level a request that names none gets"),
        ("levels[].id", "string", "the value to send as reasoning_effort"),
        ("levels[].enable_thinking", "boolean or null", "null without a toggle"),
        ("levels[].reasoning_effort", "string or null", "null when none"),
        ("levels[].instruction", "string or null", "template text placed first in the system prompt"),
        ("levels[].opens_reasoning", "boolean", "the reply starts inside <think>: its text is reasoning_content"),
        ("levels[].default", "boolean", "true for default_level only"),
    )
) + (
    field("thinking.model_info", THINKING_MODELS, "thinking", ("model_info",), "object",
          "/v1/lse/model_info has the same object as /v1/models (and under served)", endpoints=()),
)

GENERATION_DEFAULTS = tuple(
    field(f"defaults.{name}", DEFAULTS_MODELS, f"generation_defaults.{name}", INFO, type_, inv, endpoints=())
    for name, type_, inv in (
        ("temperature", "number", ""), ("top_k", "integer", ""), ("top_p", "number", ""),
        ("min_p", "number", ""), ("repetition_penalty", "number", ""), ("presence_penalty", "number", ""),
        ("max_new_tokens", "integer or null", ""), ("max_length", "integer or null", ""),
        ("sources", "object", "one entry per field: generation_config.json, config.json, server_option "
                              "or lse_default"),
    )
) + (
    field("defaults.model_info", DEFAULTS_MODELS, "generation_defaults", ("model_info",), "object",
          "/v1/lse/model_info has the same object as /v1/models", endpoints=()),
)

STATUS = (
    field("status.cpu_fallback", FALLBACK, "engine.cpu_fallback", ("status",),
          "{allowed, total, events: [{cause, count}]}", "total is the sum of the events' counts",
          endpoints=()),
    field("health.ok", Cite(OPENAI_API, "GET /health"), "GET /health", ("health",), "ok",
          "status 200 and the body ok", endpoints=()),
)

ROWS = COMPLETION + STREAM + ECHO_AND_SCORING + MODEL_LIST + THINKING_INFO + GENERATION_DEFAULTS + STATUS
