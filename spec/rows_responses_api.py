"""Rows of the OpenAI Responses API (POST /v1/responses, GET / DELETE
/v1/responses/{id}, POST /v1/responses/{id}/cancel): its request fields,
reply, stream events, store and errors. (``rows_responses`` is about chat
and completions replies.) The reference documents have no section on this
API; the rows cite the OpenAI-compatible surface they extend, and each
choice LSE made is in SETTLED and docs/api-responses.md."""

from __future__ import annotations

from lse.spec.rows import OPENAI_API, Cite, ErrorCode, Rule

SURFACE = Cite(OPENAI_API, "OpenAI-compatible API")
ERRORS = Cite(OPENAI_API, "Errors")


def rule(id_, text, **kw) -> Rule:
    return Rule(id=id_, cite=SURFACE, text=text, **kw)


def bad(id_, param, when, code=None, status=400) -> ErrorCode:
    return ErrorCode(id=id_, cite=ERRORS, status=status, type="invalid_request_error", code=code,
                     when=f"/v1/responses: {when}; param {param}",
                     text=f"HTTP {status} invalid_request_error {code}: /v1/responses {when} (param {param})")


ROWS = (
    rule("responses.input", "input: a string (one user message) or an array of message, function_call and "
         "function_call_output items; messages take a string or input_text parts", needs=("template",)),
    rule("responses.instructions", "instructions: a system message before the conversation, not carried over "
         "by previous_response_id", needs=("template",)),
    rule("responses.max_output_tokens", "max_output_tokens: the reply's token limit; a reply it ends has status "
         "incomplete and incomplete_details.reason max_output_tokens", needs=("template",)),
    rule("responses.sampling", "temperature and top_p are chat's, checked the same and echoed in the reply",
         needs=("template",)),
    rule("responses.metadata", "metadata: an object echoed in the reply", needs=("template",)),
    rule("responses.reply", "the reply: {id resp_..., object response, created_at, status, output, usage, "
         "incomplete_details, error, the request's settings echoed}", needs=("template",)),
    rule("responses.output_message", "a reply's text is a message item (role assistant) with one output_text "
         "part", needs=("template",)),
    rule("responses.usage", "usage: {input_tokens, input_tokens_details.cached_tokens, output_tokens, "
         "output_tokens_details.reasoning_tokens, total_tokens = input + output}", needs=("template",)),
    rule("responses.stream_events", "stream: true: server-sent events (event: <type>, data: <json>), each with "
         "sequence_number 0, 1, ...: response.created, response.in_progress, per item output_item.added, "
         "content_part.added, the deltas and their done events, output_item.done; last response.completed or "
         "response.incomplete", needs=("template",)),
    rule("responses.stream_fold", "the non-streamed reply is the fold of the stream: the last event's response "
         "holds the output_item.done items in order, and their text is the deltas joined", needs=("template",)),
    rule("responses.store", "store true (the default) keeps the response: GET /v1/responses/{id} answers it; "
         "store false keeps nothing (GET is the 404)",
         needs=("template",)),
    rule("responses.previous_response_id", "previous_response_id continues the stored conversation: the new "
         "prompt starts with the previous one, and cached_tokens shows the prefix cache reused it",
         needs=("template",)),
    rule("responses.delete", "DELETE /v1/responses/{id} answers {id, object response.deleted, deleted true}; the "
         "id is then unknown", needs=("template",)),
    rule("responses.store_status", "/v1/lse/status reports responses_store: entries, bytes, running, "
         "max_entries, max_bytes, ttl_secs, evicted, expired, too_large"),
    rule("responses.reasoning_item", "a reply's think block is a reasoning item with one reasoning_text part, "
         "streamed as response.reasoning_text.delta; its tokens are output_tokens_details.reasoning_tokens",
         needs=("probe_reasoning",)),
    rule("responses.function_call", "a tool call is a function_call item {call_id, name, arguments}, streamed as "
         "response.function_call_arguments.delta", needs=("probe_tool_call",)),
    rule("responses.tools", "tools: function tools ({type function, name, parameters}); tool_choice none, auto, "
         "required or {type function, name}; parallel_tool_calls as on chat",
         manual="needs a model that writes a tool call for these tools: tests/e2e/test_responses_openai.py's "
                "three-turn loop on the scripted tool-call fixture"),
    rule("responses.function_call_output", "a function_call_output item answers a call by call_id: a turn of "
         "function_call then function_call_output continues the tool-use loop",
         manual="needs a model that writes tool calls: tests/e2e/test_responses_openai.py's three-turn loop"),
    rule("responses.reasoning_effort", "reasoning.effort is chat's reasoning_effort: the same levels, the same "
         "errors (named reasoning.effort)", needs=("no_thinking",)),
    rule("responses.text_format", "text.format json_object or json_schema goes through chat's structured output: "
         "a completed reply's output_text parses (and matches the schema)", needs=("template",)),
    rule("responses.cancel", "POST /v1/responses/{id}/cancel stops a running response: it ends with status "
         "cancelled (the stream's last event response.incomplete)",
         manual="needs a reply long enough to cancel mid-way: tests/e2e/test_responses_openai.py "
                "test_cancel_stops_a_running_response"),
    rule("responses.store_bounds", "the store holds at most --responses-store-entries responses and "
         "--responses-store-bytes bytes, each for --responses-store-ttl-secs; past a cap the oldest goes",
         manual="operator options: tests/e2e/test_responses_openai.py (a server with 3 entries) and "
                "tests/unit/test_responses_wire.py (bytes, TTL)"),
    bad("err.responses.input", "input", "input missing, empty or not a string / array"),
    bad("err.responses.item_type", "input[i].type", "an input item or content part of a type LSE does not take "
        "(images, files, item_reference), named in the message"),
    bad("err.responses.tool_type", "tools[i].type", "a tool other than a function tool, named in the message"),
    bad("err.responses.max_output_tokens", "max_output_tokens", "max_output_tokens not a positive integer"),
    bad("err.responses.text_format", "text.format", "a text.format chat's response_format refuses"),
    bad("err.responses.unsupported", "background or conversation", "background true or conversation"),
    ErrorCode(id="err.response_not_found", cite=ERRORS, status=404, type="invalid_request_error",
              code="response_not_found", when="GET, DELETE or cancel of an unknown, deleted, unstored, expired or "
              "evicted id (param null), or such a previous_response_id (param previous_response_id)",
              text="HTTP 404 invalid_request_error response_not_found: an unknown response id"),
)

SETTLED = {
    "responses.input": "developer messages are system messages; several text parts join with newlines; "
                       "consecutive function_call items (and the reasoning item before them) are one assistant "
                       "turn; images, files and item_reference are refused",
    "responses.max_output_tokens": "any positive integer (OpenAI's floor of 16 is not applied)",
    "responses.stream_events": "no [DONE] (OpenAI sends none on this API); an error after the stream began is "
                               "a response.failed event whose error.code is server_error and whose message starts "
                               "with LSE's code",
    "responses.previous_response_id": "instructions are not carried over (OpenAI's rule); an unknown or evicted "
                                      "id is a 404, never a fresh start",
    "responses.store": "a response is listed by GET while it runs (status in_progress), stored or not",
    "responses.cancel": "any running response can be cancelled (LSE has no background mode); cancelling a "
                        "finished one answers it unchanged",
    "err.responses.unsupported": "refused rather than ignored: both change what a reply means",
}
