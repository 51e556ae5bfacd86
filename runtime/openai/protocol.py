"""The OpenAI wire shapes LSE sends, as typed dicts.

Field order follows OpenAI's own replies (the examples of the API reference:
``id, object, created, model, choices, usage``); LSE's extensions sit in a
marked block after OpenAI's fields, so an OpenAI client reads past them. A
``NotRequired`` key is sent only when it has something to say (``usage``
on the final chunk, ``tool_calls`` on a message that made calls).

These are plain dicts at run time (no cost per streamed token); pydantic
reads the same declarations (``pydantic.TypeAdapter(ChatCompletion)``) to
validate replies in the tests and, later, to write the OpenAPI document.
Every builder lives in ``lse.runtime.openai.replies``.
"""

from __future__ import annotations

from typing import Literal, NotRequired

# typing_extensions' TypedDict: pydantic reads only that one on Python 3.11.
from typing_extensions import TypedDict

# ---- usage and LSE's per-reply accounting -------------------------------------


class PromptTokensDetails(TypedDict):
    cached_tokens: int


class CompletionTokensDetails(TypedDict):
    reasoning_tokens: int  # tokens generated inside the think block, its markers included


class Usage(TypedDict):
    prompt_tokens: int  # n choices of one prompt count it once, as OpenAI does
    completion_tokens: int
    total_tokens: int
    prompt_tokens_details: PromptTokensDetails
    completion_tokens_details: CompletionTokensDetails


class LseContext(TypedDict):  # LSE extension (lse-api.md)
    tokens_used: int
    context_length: int
    tokens_remaining: int


class Timings(TypedDict):  # LSE extension: llama-server's names
    prompt_n: int
    prompt_ms: float
    prompt_per_second: float | None
    predicted_n: int
    predicted_ms: float
    predicted_per_second: float | None
    cached_n: int
    draft_n: NotRequired[int]  # speculative decoding (runtime/speculative.py): tokens drafted
    draft_n_accepted: NotRequired[int]  # ... and accepted


# ---- logprobs ------------------------------------------------------------------


class TopLogprob(TypedDict):
    token: str
    logprob: float
    bytes: list[int] | None


class ChatTokenLogprob(TypedDict):
    token: str
    logprob: float
    bytes: list[int] | None
    top_logprobs: list[TopLogprob]


class ChatLogprobs(TypedDict):
    content: list[ChatTokenLogprob] | None
    refusal: None  # LSE never refuses; OpenAI's schema requires the key


class CompletionLogprobs(TypedDict):
    tokens: list[str]
    token_logprobs: list[float | None]  # the echoed prompt's first token has none
    top_logprobs: list[dict[str, float] | None]
    text_offset: list[int]


# ---- chat ------------------------------------------------------------------------


class FunctionCall(TypedDict):
    name: str
    arguments: str


class ToolCall(TypedDict):
    id: str | None
    type: Literal["function"]
    function: FunctionCall


class ChatMessage(TypedDict):
    role: Literal["assistant"]
    content: str | None  # None only beside tool_calls
    refusal: None
    tool_calls: NotRequired[list[ToolCall]]
    # ---- LSE extension ----
    reasoning_content: NotRequired[str]


class ChatDelta(TypedDict, total=False):
    role: Literal["assistant"]
    content: str
    tool_calls: list[dict]  # ChatCompletionMessageToolCallChunk: index, then any of id, type, function
    # ---- LSE extension ----
    reasoning_content: str


class ChatChoice(TypedDict):
    index: int
    message: ChatMessage
    logprobs: ChatLogprobs | None
    finish_reason: str | None
    # ---- LSE extension ----
    stop_reason: str | None


class ChatChunkChoice(TypedDict):
    index: int
    delta: ChatDelta
    logprobs: ChatLogprobs | None
    finish_reason: str | None
    # ---- LSE extension (the final chunk of a choice) ----
    stop_reason: NotRequired[str]


# ---- completions -------------------------------------------------------------


class CompletionChoice(TypedDict):
    index: int
    text: str
    logprobs: CompletionLogprobs | None
    finish_reason: str | None
    # ---- LSE extensions ----
    stop_reason: NotRequired[str | None]  # always in a whole reply; in a stream, on a choice's final chunk
    reasoning_content: NotRequired[str]


# ---- replies: a whole reply is the fold of its chunks ------------------------


class _Reply(TypedDict):
    id: str
    object: str
    created: int
    model: str
    usage: NotRequired[Usage | None]  # a chunk: the final ones; null on the others under include_usage
    # ---- LSE extensions (final chunk and whole reply) ----
    lse_context: NotRequired[LseContext]
    timings: NotRequired[Timings]
    lse_warnings: NotRequired[list[dict]]  # CPU-fallback notes (runtime/fallback.py)


class ChatCompletion(_Reply):
    choices: list[ChatChoice]


class ChatCompletionChunk(_Reply):
    choices: list[ChatChunkChoice]


class Completion(_Reply):  # a streamed completion chunk has the same shape ("text_completion")
    choices: list[CompletionChoice]


# ---- models ------------------------------------------------------------------


class ModelEntry(TypedDict):
    id: str
    object: Literal["model"]
    created: int
    owned_by: str
    # ---- LSE extensions (docs/spec/lse-api.md): OpenAI clients ignore them ----
    context_length: int
    thinking: dict
    generation_defaults: dict


class ModelList(TypedDict):
    object: Literal["list"]
    data: list[ModelEntry]


# ---- errors (built by lse.runtime.errors.error_body, from ERROR_TABLE) ---------


class ErrorDetail(TypedDict):
    message: str
    type: str
    param: str | None
    code: str | None
    # ---- LSE extensions (docs/spec/lse-api.md) ----
    lse_context: NotRequired[LseContext]  # context_full: how far the prompt reached
    levels: NotRequired[list[str]]  # thinking errors: the model's level ids


class ErrorResponse(TypedDict):
    error: ErrorDetail


# Every shape is closed: pydantic refuses a key a shape does not declare
# (pydantic reads this attribute; a TypedDict's body may hold only fields).
for _shape in (PromptTokensDetails, Usage, LseContext, Timings, TopLogprob, ChatTokenLogprob, ChatLogprobs,
               CompletionLogprobs, FunctionCall, ToolCall, ChatMessage, ChatDelta, ChatChoice, ChatChunkChoice,
               CompletionChoice, _Reply, ChatCompletion, ChatCompletionChunk, Completion, ModelEntry, ModelList,
               ErrorDetail, ErrorResponse):
    _shape.__pydantic_config__ = {"extra": "forbid"}
