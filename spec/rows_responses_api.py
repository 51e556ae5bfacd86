"""The OpenAI Responses routes (docs/api-responses.md): POST /v1/responses,
GET / DELETE /v1/responses/{id}, POST /v1/responses/{id}/cancel. Every
request field, reply member, stream event, store rule and error of that page
is a row citing its section. (``rows_responses`` is about chat and
completions replies.) The checks are ``lse.spec.checks_responses``'s; the
scenarios ``lse.spec.scenarios_responses``'s."""

from __future__ import annotations

from dataclasses import dataclass

from lse.spec.rows import RESPONSES_API, Cite, Row, Rule

TITLE = Cite(RESPONSES_API, "The OpenAI Responses API")
REQUEST = Cite(RESPONSES_API, "The request")
REPLY = Cite(RESPONSES_API, "The reply")
STREAMING = Cite(RESPONSES_API, "Streaming")
STORE = Cite(RESPONSES_API, "The store")
CANCEL = Cite(RESPONSES_API, "Cancel")
ERRORS = Cite(RESPONSES_API, "Errors")


@dataclass(frozen=True, kw_only=True)
class ResponsesError(Row):
    """One line of docs/api-responses.md's error table: the status, error.type, the codes and the param."""

    status: int
    type: str
    codes: tuple[str | None, ...]
    param: str
    when: str


def rule(id_, text, cite=REQUEST, **kw) -> Rule:
    return Rule(id=id_, cite=cite, text=text, **kw)


def err(id_, status, codes, param, when, type_="invalid_request_error", **kw) -> ResponsesError:
    shown = " or ".join(str(c) if c else "null" for c in codes)
    return ResponsesError(id=id_, cite=ERRORS, status=status, type=type_, codes=codes, param=param, when=when,
                          text=f"HTTP {status} {type_} {shown}: /v1/responses {when} (param {param})", **kw)


def bad(id_, param, when, code=None, **kw) -> ResponsesError:
    return err(id_, 400, (code,), param, when, **kw)


ROWS = (
    # --- the routes (the page's opening) -------------------------------------------------------------------------
    rule("responses.routes", "POST /v1/responses creates a response; GET and DELETE /v1/responses/{id} read and "
         "forget a stored one; POST /v1/responses/{id}/cancel stops a running one", cite=TITLE, needs=("template",)),
    rule("responses.in_process", "in-process and through C, lse_request(engine, body, \"responses\") (or "
         "lse_request_json with /v1/responses) creates a response: chunk events of stream events, then done with "
         "the response; each engine keeps its own store", cite=TITLE,
         manual="not HTTP: tests/unit/test_responses_schemas.py::test_the_in_process_and_c_path_serves_responses"),
    # --- the request ---------------------------------------------------------------------------------------------
    rule("responses.input", "input: a string (one user message) or an array of message, function_call and "
         "function_call_output items; messages take a string or input_text parts", needs=("template",)),
    rule("responses.instructions", "instructions: a system message before the conversation, not carried over "
         "by previous_response_id", needs=("template",)),
    rule("responses.model", "model: accepted and echoed in the reply, as on chat (one model per server)",
         needs=("template",)),
    rule("responses.max_output_tokens", "max_output_tokens: the reply's token limit; a reply it ends has status "
         "incomplete and incomplete_details.reason max_output_tokens", needs=("template",)),
    rule("responses.sampling", "temperature and top_p are chat's, checked the same and echoed in the reply",
         needs=("template",)),
    rule("responses.tools", "tools: function tools {type function, name, description?, parameters?, strict?}, "
         "echoed in the reply", needs=("template",)),
    rule("responses.tool_choice", "tool_choice: none, auto, required or {type function, name}, as chat's "
         "(required and a named function enforced with the template's tool-call markers), echoed; auto when not "
         "sent", needs=("template",)),
    rule("responses.parallel_tool_calls", "parallel_tool_calls: a boolean, as chat's (false allows one forced "
         "call), echoed; true when not sent", needs=("template",)),
    rule("responses.function_call_output", "a function_call_output item answers a call by call_id: a turn of "
         "function_call then function_call_output continues the tool-use loop",
         manual="needs a model that writes tool calls: tests/e2e/test_responses_openai.py's three-turn loop"),
    rule("responses.reasoning_effort", "reasoning.effort is chat's reasoning_effort: the same levels, the same "
         "errors (named reasoning.effort); reasoning.summary is accepted and ignored", needs=("no_thinking",)),
    rule("responses.text_format", "text.format json_object or json_schema goes through chat's structured output: "
         "a completed reply's output_text parses (and matches the schema); text.verbosity is accepted and ignored",
         needs=("template",)),
    rule("responses.stream", "stream: true answers server-sent events (text/event-stream)", needs=("template",)),
    rule("responses.store", "store true (the default) keeps the response: GET /v1/responses/{id} answers it; "
         "store false keeps nothing (GET is the 404)",
         needs=("template",)),
    rule("responses.previous_response_id", "previous_response_id continues the stored conversation: the new "
         "prompt starts with the previous one, and cached_tokens shows the prefix cache reused it",
         needs=("template",)),
    rule("responses.metadata", "metadata: an object echoed in the reply", needs=("template",)),
    rule("responses.extensions", "LSE's chat extensions (top_k, min_p, seed, stop, presence_penalty, "
         "frequency_penalty, repetition_penalty, chat_template_kwargs) pass through unchanged: accepted, and "
         "checked by chat's rules under their own names", needs=("template",)),
    rule("responses.unknown_fields", "other fields (user, include, truncation, service_tier, ...) are ignored, "
         "as on chat", needs=("template",)),
    # --- the reply -----------------------------------------------------------------------------------------------
    rule("responses.reply", "the reply: {id resp_..., object response, created_at, status, output, usage, "
         "incomplete_details, error, the request's settings echoed}", cite=REPLY, needs=("template",)),
    rule("responses.status", "status: completed, incomplete (max_output_tokens or the context ended it), "
         "cancelled, in_progress (GET while it runs) or failed (an error inside a stream)", cite=REPLY,
         needs=("template",)),
    rule("responses.output_message", "a reply's text is a message item (role assistant) with one output_text "
         "part", cite=REPLY, needs=("template",)),
    rule("responses.reasoning_item", "a reply's think block is a reasoning item with one reasoning_text part, "
         "streamed as response.reasoning_text.delta; its tokens are output_tokens_details.reasoning_tokens",
         cite=REPLY, needs=("probe_reasoning",)),
    rule("responses.function_call", "a tool call is a function_call item {call_id, name, arguments}, streamed as "
         "response.function_call_arguments.delta", cite=REPLY, needs=("probe_tool_call",)),
    rule("responses.usage", "usage: {input_tokens, input_tokens_details.cached_tokens, output_tokens, "
         "output_tokens_details.reasoning_tokens, total_tokens = input + output}", cite=REPLY, needs=("template",)),
    rule("responses.echo", "the request's settings are echoed (instructions, max_output_tokens, tools, "
         "tool_choice, parallel_tool_calls, text, store, previous_response_id, ...), OpenAI's defaults where not "
         "sent", cite=REPLY, needs=("template",)),
    # --- streaming -----------------------------------------------------------------------------------------------
    rule("responses.stream_events", "stream: true: server-sent events (event: <type>, data: <json>), each with "
         "sequence_number 0, 1, ...: response.created, response.in_progress, per item output_item.added, "
         "content_part.added, the deltas and their done events, output_item.done; last response.completed or "
         "response.incomplete", cite=STREAMING, needs=("template",)),
    rule("responses.stream_fold", "the non-streamed reply is the fold of the stream: the last event's response "
         "holds the output_item.done items in order, and their text is the deltas joined", cite=STREAMING,
         needs=("template",)),
    rule("responses.stream_refusal", "a request refused before it starts (a bad field, a full context) gets its "
         "HTTP status and JSON error, streamed or not", cite=STREAMING, needs=("template",)),
    rule("responses.stream_failed", "an error after the stream began (--request-timeout-secs, an engine failure) "
         "ends it with response.failed: status failed, error {code server_error, message starting with LSE's "
         "code}", cite=STREAMING, needs=("times_out",)),
    rule("responses.keepalive", "while the request waits in the queue its stream sends an SSE comment (: queued) "
         "every 5 seconds until its first output item", cite=STREAMING,
         manual="a request held in the queue for 5 seconds is not held still from outside; "
                "tests/unit/test_api_responses.py::test_keepalive_while_queued_then_timeout_is_response_failed "
                "drives it with a shorter interval over a fake engine"),
    # --- the store -----------------------------------------------------------------------------------------------
    rule("responses.delete", "DELETE /v1/responses/{id} answers {id, object response.deleted, deleted true}; the "
         "id is then unknown", cite=STORE, needs=("template",)),
    rule("responses.store_status", "/v1/lse/status reports responses_store: entries, bytes, running, "
         "max_entries, max_bytes, ttl_secs, evicted, expired, too_large", cite=STORE),
    rule("responses.store_bounds", "the store holds at most --responses-store-entries responses and "
         "--responses-store-bytes bytes, each for --responses-store-ttl-secs; past a cap the oldest goes; a "
         "response larger than the byte cap alone is not kept", cite=STORE,
         manual="operator options: tests/e2e/test_responses_openai.py (a server with 3 entries), "
                "tests/unit/test_api_responses.py::test_the_store_byte_cap_over_http and "
                "tests/unit/test_responses_wire.py (bytes, TTL)"),
    # --- cancel --------------------------------------------------------------------------------------------------
    rule("responses.cancel", "POST /v1/responses/{id}/cancel stops a running response: it ends with status "
         "cancelled (the stream's last event response.incomplete)", cite=CANCEL,
         manual="needs a reply long enough to cancel mid-way: tests/e2e/test_responses_openai.py "
                "test_cancel_stops_a_running_response"),
    rule("responses.cancel_finished", "cancelling a finished response answers it unchanged", cite=CANCEL,
         needs=("template",)),
    # --- errors: one row per line of the page's table ------------------------------------------------------------
    rule("err.responses.envelope", "every error is OpenAI's envelope {error: {message, type, param, code}}, "
         "param naming the field as the Responses API spells it", cite=ERRORS, needs=("template",)),
    bad("err.responses.input", "input", "input missing, empty or not a string / array"),
    bad("err.responses.item_type", "input[i].type", "an input item or content part of a type LSE does not take "
        "(images, files, item_reference), named in the message"),
    bad("err.responses.item", "input[i].role, input[i].call_id, ...", "a malformed item: a bad role, a "
        "function_call without call_id / name or with arguments not a JSON object, a function_call_output "
        "without call_id or with another output"),
    bad("err.responses.tool_type", "tools[i].type", "a tool other than a function tool, named in the message"),
    bad("err.responses.tool_choice_type", "tool_choice.type", "a tool_choice naming another tool type"),
    bad("err.responses.tool_choice", "tool_choice", "a tool_choice function not in tools, or required without "
        "tools"),
    bad("err.responses.max_output_tokens", "max_output_tokens", "max_output_tokens not a positive integer"),
    bad("err.responses.max_tokens_cap", "max_output_tokens", "max_output_tokens above the operator's "
        "--max-tokens cap", needs=("cap",)),
    bad("err.responses.sampling", "that field", "top_p out of [0, 1], temperature not a number (chat's checks)"),
    bad("err.responses.unsupported_reasoning_effort", "reasoning.effort", "reasoning.effort a level the model's "
        "template does not define; error.levels lists the model's levels", code="unsupported_reasoning_effort",
        needs=("thinking",)),
    bad("err.responses.thinking_unsupported", "reasoning.effort", "reasoning.effort on a model without thinking "
        "controls", code="thinking_unsupported", needs=("no_thinking",)),
    bad("err.responses.not_object", "reasoning, text", "reasoning or text not an object"),
    bad("err.responses.text_format", "text.format", "a text.format chat's response_format refuses"),
    bad("err.responses.types", "that field", "store not a boolean; instructions or previous_response_id not a "
        "string"),
    bad("err.responses.unsupported", "background or conversation", "background true or conversation"),
    bad("err.responses.context_full", "input", "the conversation does not fit the context", code="context_full"),
    bad("err.responses.invalid_json", "null", "a body that is not JSON", code="invalid_json"),
    err("err.responses.unauthorized", 401, ("invalid_api_key",), "null", "a missing or wrong key",
        type_="authentication_error", needs=("auth",)),
    err("err.responses.previous_not_found", 404, ("response_not_found",), "previous_response_id",
        "a previous_response_id the store does not hold (never stored, store false, deleted, expired, evicted): "
        "never a silent fresh start"),
    err("err.response_not_found", 404, ("response_not_found",), "null", "GET, DELETE or cancel of an id the "
        "store does not hold"),
    err("err.responses.wrong_method", 405, ("method_not_allowed",), "null", "another method on these paths, "
        "with Allow"),
    err("err.responses.timeout", 408, ("request_timeout",), "null", "past --request-timeout-secs (streamed: "
        "response.failed)", type_="timeout_error", needs=("times_out",)),
    err("err.responses.too_large", 413, ("request_too_large",), "null", "a body over --max-body-bytes",
        manual="the kit does not know the server's --max-body-bytes; tests/unit/test_api_responses.py::"
               "test_http_layer_errors_in_openais_envelope sends a body over a small limit"),
    err("err.responses.unavailable", 503, ("model_loading", "server_overloaded", "server_shutting_down"), "null",
        "the model loading, the queue full (Retry-After), the server draining, as on chat",
        type_="unavailable_error",
        manual="a loading model or a full queue is not held still long enough from outside; "
               "tests/unit/test_api_responses.py::test_unavailable_is_a_503_as_on_chat and "
               "test_a_loading_model_is_a_503_on_every_route drive them over a fake engine"),
)

SETTLED = {
    "responses.input": "developer messages are system messages; several text parts join with newlines; "
                       "consecutive function_call items (and the reasoning item before them) are one assistant "
                       "turn; images, files and item_reference are refused",
    "responses.max_output_tokens": "any positive integer (OpenAI's floor of 16 is not applied)",
    "responses.stream_events": "no [DONE] (OpenAI sends none on this API)",
    "responses.stream_failed": "response.failed's error.code is server_error (the SDK's type allows only OpenAI's "
                               "codes there), so LSE's code leads the message",
    "responses.previous_response_id": "instructions are not carried over (OpenAI's rule); an unknown or evicted "
                                      "id is a 404, never a fresh start",
    "responses.store": "a response is listed by GET while it runs (status in_progress), stored or not",
    "responses.cancel": "any running response can be cancelled (LSE has no background mode); a cancelled stream "
                        "ends response.incomplete with status cancelled (OpenAI's event list has no "
                        "response.cancelled)",
    "responses.cancel_finished": "answered as it is, not a 400: cancel is idempotent for a client that raced the "
                                 "end of its response",
    "responses.usage": "input_tokens_details.cache_write_tokens is 0: LSE's prefix cache has no separate write "
                       "accounting",
    "err.responses.unsupported": "refused rather than ignored: both change what a reply means",
}
