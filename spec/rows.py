"""The specification as data: every documented item is one frozen row.

A row cites its document and section (a heading path joined by " > "), says
what the document states, which server capabilities it needs to be observable
(``needs``, see ``lse.spec.facts``), and either is bound to a named check in
``lse.spec.checks`` or says in ``manual`` why no HTTP check can see it.

The rows themselves live in ``rows_requests``, ``rows_responses`` and
``rows_behaviour``; ``all_rows()`` gathers them.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

# The documents a row cites, by file name: docs/spec/ holds the three (README.md is the
# spec's own, on where the two documents differ, not the repository's).
LSE_API = "lse-api.md"
OPENAI_API = "openai-compatible-api.md"
README = "README.md"
# The house style names two behaviours the reference docs leave implicit
# (unknown routes get a 404 through the envelope; one error table).
STYLE = "style.md"
# LSE's own API document, for what the reference documents do not cover.
API_DOC = "docs/api.md"
MESSAGES_API = "api-messages.md"  # docs/api-messages.md: the Anthropic Messages routes
RESPONSES_API = "api-responses.md"  # docs/api-responses.md: the OpenAI Responses routes
DOCUMENTS = (LSE_API, OPENAI_API, README, STYLE, API_DOC, MESSAGES_API, RESPONSES_API)

CHAT = "chat"
COMPLETIONS = "completions"
BOTH = (CHAT, COMPLETIONS)
PATHS = {CHAT: "/v1/chat/completions", COMPLETIONS: "/v1/completions"}


class _Missing:
    """The field is left out of the request (not sent as null)."""

    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()


@dataclass(frozen=True)
class Cite:
    doc: str
    section: str

    def __str__(self) -> str:
        return f"{self.doc} § {self.section}"


@dataclass(frozen=True, kw_only=True)
class Row:
    id: str
    cite: Cite
    text: str
    needs: tuple[str, ...] = ()
    manual: str | None = None
    # Where the document is silent or ambiguous: what LSE chose, and why.
    settles: str | None = None


@dataclass(frozen=True)
class Bad:
    """A value that breaks one field, and the error the server must answer.

    ``with_`` sets other fields so the case is well formed (a stream_options
    case needs stream false); ``drop`` removes fields of the base request whose
    own check would fire first (top_logprobs when logprobs is broken).
    """

    value: Any
    status: int = 400
    type: str = "invalid_request_error"
    code: str | None = None
    param: str | None = None
    with_: tuple[tuple[str, Any], ...] = ()
    drop: tuple[str, ...] = ()
    needs: tuple[str, ...] = ()


@dataclass(frozen=True)
class Good:
    """A valid value and the fields it needs beside it (top_logprobs needs
    logprobs: true)."""

    value: Any
    with_: tuple[tuple[str, Any], ...] = ()
    needs: tuple[str, ...] = ()


@dataclass(frozen=True, kw_only=True)
class RequestField(Row):
    endpoints: tuple[str, ...]
    name: str
    type: str
    range: str = ""
    default: Any = None
    default_source: str = ""
    valid: tuple[Good, ...] = ()
    invalid: tuple[Bad, ...] = ()
    # The request strategies draw this field only when True; thinking fields
    # depend on the served model's levels, so strategies build them apart.
    in_strategies: bool = True


@dataclass(frozen=True, kw_only=True)
class ResponseField(Row):
    endpoints: tuple[str, ...]
    path: str
    where: tuple[str, ...]  # "body", "chunk", "final_chunk", "models", "model_info", "status", "error"
    type: str
    invariant: str = ""


@dataclass(frozen=True, kw_only=True)
class ErrorCode(Row):
    status: int
    type: str
    code: str | None
    when: str


@dataclass(frozen=True, kw_only=True)
class StopReason(Row):
    stop_reason: str
    finish_reason: tuple[str, ...]  # empty: the client never sees one
    when: str


@dataclass(frozen=True, kw_only=True)
class ThinkingModel(Row):
    model: str
    fixture: str
    source_file: str | None
    levels: tuple[str, ...]
    default_level: str | None
    with_instruction: tuple[str, ...] = ()
    opening: tuple[str, ...] | None = None  # the levels whose reply opens inside <think>, where the doc shows them


@dataclass(frozen=True, kw_only=True)
class NeutralDefault(Row):
    field: str
    value: Any


@dataclass(frozen=True, kw_only=True)
class LogLine(Row):
    pattern: str  # a regular expression over one log line


@dataclass(frozen=True, kw_only=True)
class FallbackCase(Row):
    case: str
    without_option: str
    with_option: str


@dataclass(frozen=True, kw_only=True)
class Override(Row):
    topic: str
    lean: str
    lse: str


@dataclass(frozen=True, kw_only=True)
class Rule(Row):
    """A documented behaviour that is not a field, code or table entry."""


# LSE's choices where the documents are silent or ambiguous, beside the row
# each one settles (what users of llama-server, vLLM and OpenAI would expect).
SETTLED = {
    "req.model": "accepted and echoed back in the reply's model field (the lean doc); no 404 for other names, "
                 "since one server serves one model (as llama-server does)",
    "req.n": "1..16; each choice has its own seeded stream, so choice 0 is the same whatever n is",
    "req.chat.messages": "special-token strings in content, names, tool results and tool definitions are "
                         "tokenized as text: only the chat template's own markers are control tokens "
                         "(runtime/chat/special.py); a lone surrogate (\\ud800) anywhere in the body is a 400 "
                         "naming the field; role developer (OpenAI's system-level role, which both official "
                         "SDKs' READMEs send) is the template's system turn: a run of adjacent system and "
                         "developer messages holding one is merged into one system message, contents in the "
                         "order sent joined by a blank line (templates know one system turn)",
    "req.completions.prompt": "a string prompt is tokenized as text: special-token strings in it are spelled out, "
                              "unless the request sends parse_special: true (llama-server's name for the "
                              "switch); token-id prompts are used as given",
    "req.stop": "a string or up to 16 strings (OpenAI allows 4); empty strings are a 400",
    "req.ignore_eos": "vLLM's field: the model's end-of-turn tokens do not end the reply and their text is not "
                      "content; a grammar's end (response_format, a forced tool call) still ends it",
    "req.min_tokens": "vLLM's field and meaning: end tokens are masked out of the first min_tokens draws and stop "
                      "strings match from the min_tokens-th token on; above max_tokens it is a 400",
    "req.stop_token_ids": "vLLM's field: each id ends the reply as the end-of-turn token does (finish_reason stop, "
                          "stop_reason stop_token), counted and not shown; at most 64 ids, each inside the vocab",
    "req.presence_penalty": "bounded to [-2, 2] as OpenAI bounds it",
    "req.frequency_penalty": "bounded to [-2, 2]; a negative value has no effect (only positive values map)",
    "req.unknown_fields": "ignored, as OpenAI clients send extras such as user or service_tier",
    "req.response_format": "enforced by constrained decoding (llguidance): a token mask per step, after the "
                           "penalties and before temperature; also on /v1/completions as an LSE extension (the "
                           "same field and shapes), so raw-prompt clients get the same guarantee; strict is "
                           "accepted and changes nothing (the schema is always enforced); JSON has at most one "
                           "space between tokens; keywords llguidance refuses (not, if/then/else, "
                           "dependentRequired, dependentSchemas, unevaluatedProperties, unevaluatedItems, "
                           "uniqueItems, contains, propertyNames, look-around in patterns, unknown formats) are a "
                           "400 naming response_format; the reply parses unless finish_reason is length",
    "req.logit_bias": "both endpoints; keys are token ids as strings, values in [-100, 100]; -100 is an exact "
                      "ban and 100 an exact selection (only the tokens at 100 stay); a grammar's mask wins when "
                      "the bias would leave nothing it allows; an id outside the vocabulary is a 400",
    "req.chat.tool_choice": "required and a named function are enforced with the template's own markers "
                            "(model_info.tool_call_markers), one call per block, arguments matching the tool's "
                            "parameters; parallel_tool_calls false allows one call; a template without markers "
                            "answers a 400 naming tool_choice; none stops tool-call parsing and bans the open "
                            "marker when it is one token",
    "req.chat.tools": "tool calls are parsed from the output only when the request offers tools (as vLLM "
                      "does); otherwise tool-call syntax the model writes stays content",
    "stop.cancelled": "the choice's finish_reason is null (the table gives none) and stop_reason cancelled",
    "resp.timings": "llama-server's names: prompt_n, prompt_ms, prompt_per_second, predicted_n, predicted_ms, "
                    "predicted_per_second, plus cached_n",
    "resp.usage": "the end-of-turn token counts as a completion token (as vLLM counts it); n choices of one "
                  "prompt count the prompt once",
    "stream.final_chunk": "usage is on the final chunk (the lean doc's shape); with "
                          "stream_options.include_usage OpenAI's shape instead: every chunk has usage null and "
                          "one more chunk (choices: []) carries it, so clients that add up every usage they see "
                          "(LangChain stream_usage, pydantic-ai) count it once; lse_context and timings stay on "
                          "the final chunk either way",
    "health.ok": "JSON like llama-server: 200 {status: ok}, 503 {status: loading} while the model loads",
    "surface.no_template": "a model with no chat template answers chat with a 400 naming messages; "
                           "/v1/completions takes raw text",
    "err.not_found": "404 through the envelope: type not_found_error, code not_found",
    "surface.wrong_method": "405 through the envelope with an Allow header: code method_not_allowed",
    "limit.max_length": "when max_length binds first the reply ends with stop_reason max_tokens; a prompt at or "
                        "past max_length gets a reply of 0 tokens (finish_reason length, stop_reason max_tokens), "
                        "not an error: the model's own limit leaves no room though the context may",
    "stop.max_tokens": "when the token limit and the context end the reply at the same token, stop_reason is "
                       "max_tokens (the reply stopped where its limit said); tokens_remaining 0 still tells the "
                       "client the context is full",
    "thinking.completions": "the output's think block is split into reasoning only when the request asks for "
                            "thinking (enable_thinking true or an effort other than none)",
    "err.context_full": "the message also says \"this model's maximum context length is N tokens\", OpenAI's "
                        "phrase, which litellm matches to raise ContextWindowExceededError (its code is "
                        "context_length_exceeded; LSE keeps context_full, the documented code)",
    "err.invalid_json": "code invalid_json (the lean doc gives 400 for a malformed body and names no code): a "
                        "client can tell a body that is not JSON from a bad field (code null)",
    "err.unauthorized": "code invalid_api_key and type authentication_error, OpenAI's own answer to a bad key "
                        "(the lean doc names only the status 401)",
    "err.request_timeout": "type timeout_error, code request_timeout (the lean doc names only the status 408)",
    "err.generation_failed": "type server_error, code generation_failed (the lean doc names only the status 500)",
    "req.completions.logprobs": "0..5 alternatives per token, OpenAI's legacy limit; the lean doc reports only "
                                "the top-1 alternative, LSE reports as many as asked",
    "req.top_k": "an integer of at least -1: 0 and -1 are both off (llama.cpp's and vLLM's spellings); below "
                 "-1 is a 400",
    "err.max_tokens_cap": "max_completion_tokens above the cap is the same 400 with param max_tokens, the "
                          "field lse-api.md names; the message names the spelling sent",
    "fallback.no_backend": "backends are probed in the order cuda, hip, vulkan, local; LSE_BACKENDS limits "
                           "which are probed (an operator's switch, like CUDA_VISIBLE_DEVICES)",
}


# Mutants of python dev/mutants.py that no check can kill, beside the row
# each would violate, and why the change is equivalent where the kit can look.
EQUIVALENT_MUTANTS = {
    "prepare.tool_choice_none_parsed": (
        "tools.none",
        "parsing tool calls under tool_choice none changes nothing while LSE bans the open marker: on a model "
        "whose open marker is one token (every model with markers here, and Qwen's <tool_call>) tool_choice "
        "none sets that token's bias to -100 (runtime/prepare.py _banned_tool_marker), and the ban overrides "
        "a request's own logit_bias for it, so no call text ever reaches the parser. Only a template whose "
        "marker spans several tokens could show the difference; no fixture has one."),
}


def duplicate_ids(rows: tuple[Row, ...]) -> list[str]:
    return sorted(i for i, n in Counter(r.id for r in rows).items() if n > 1)


def duplicate_contents(rows: tuple[Row, ...]) -> list[tuple[str, str]]:
    """Pairs of rows that state the same thing under two ids."""
    seen: dict[tuple, str] = {}
    pairs = []
    for row in rows:
        key = _content_key(row)
        if key in seen:
            pairs.append((seen[key], row.id))
        else:
            seen[key] = row.id
    return pairs


def _content_key(row: Row) -> tuple:
    if isinstance(row, RequestField):
        return ("request", row.endpoints, row.name)
    if isinstance(row, ResponseField):
        return ("response", row.endpoints, row.path, row.where)
    if isinstance(row, ErrorCode):
        return ("error", row.status, row.code, row.when)
    if isinstance(row, StopReason):
        return ("stop", row.stop_reason)
    if isinstance(row, ThinkingModel):
        return ("thinking", row.model)
    if isinstance(row, NeutralDefault):
        return ("neutral", row.field)
    return (type(row).__name__, row.text)
