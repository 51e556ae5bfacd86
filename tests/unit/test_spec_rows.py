"""The spec table (lse.spec.rows*) and what drives it: no duplicate rows, no
orphans, every section of the reference documents cited, strategies that
build what the rows say, and named checks that can fail."""

from __future__ import annotations

import copy

import pytest
from hypothesis import given, settings

from lse.runtime.errors import LseError
from lse.runtime.openai.request import parse_request
from lse.spec import (
    checks, checks_behaviour, checks_body, checks_info, checks_messages, checks_responses, checks_stream,
)
from lse.spec.client import Reply, Stream, _data_payloads
from lse.spec.coverage import bindings, manual_and_bound, orphans, unknown_bindings
from lse.spec.facts import CAPABILITIES, LEVELS_PREFIX, Facts
from lse.spec.profiles import PROFILES, chosen
from lse.spec.rows import API_DOC, CHAT, COMPLETIONS, DOCUMENTS, LSE_API, MESSAGES_API, OPENAI_API, README, RESPONSES_API, STYLE, RequestField, duplicate_contents, duplicate_ids
from lse.spec.table import all_rows, fixtures_named
from lse.spec.strategies import THINKING_FIELDS, apply_bad, bad_cases, invalid_request, valid_request

# The section headings of the reference documents, as heading paths. Every one
# must be cited by at least one row; every row must cite one of these.
SECTIONS = {
    LSE_API: (
        "Output limits, context, thinking levels, sampling defaults and CPU fallback",
        "Output limits",
        "Context full",
        "Context full > A reply that fills the context",
        "Context full > A prompt that fills the context",
        "Thinking levels",
        "Thinking levels > /v1/models",
        "Thinking levels > Request fields",
        "Sampling defaults",
        "Sampling defaults > /v1/models",
        "Sampling defaults > LSE's neutral defaults",
        "Sampling defaults > Request fields",
        "CPU fallback",
        "CPU fallback > --no-cpu-fallback",
    ),
    OPENAI_API: (
        "OpenAI-compatible API",
        "Authentication",
        "POST /v1/chat/completions",
        "POST /v1/chat/completions > Request",
        "POST /v1/chat/completions > Response",
        "POST /v1/chat/completions > Streaming",
        "POST /v1/completions",
        "GET /v1/models",
        "GET /health",
        "Errors",
        "Tool calling",
        "Leave room for thinking in max_tokens",
        "Not supported yet",
    ),
    README: ("Where the two differ, this is how LSE behaves",),
    MESSAGES_API: ("Anthropic Messages API", "POST /v1/messages > Request", "POST /v1/messages > Reply",
                   "POST /v1/messages > Streaming", "Tools", "Thinking", "POST /v1/messages/count_tokens", "Errors",
                   "Authentication"),
    RESPONSES_API: ("The OpenAI Responses API", "The request", "The reply", "Streaming", "The store", "Cancel",
                    "Errors"),
    API_DOC: ("Embeddings",),
}
# style.md is cited only where the reference documents are silent.
OPTIONAL_SECTIONS = {STYLE: ("The runtime and the API",),
                     API_DOC: ("Request fields LSE adds > Where a reply ends", "Routes > Several models", "Errors",
                               "Request fields LSE adds > Speculative decoding")}
ROWS = all_rows()


def test_rows_have_unique_ids_and_contents():
    assert duplicate_ids(ROWS) == []
    assert duplicate_contents(ROWS) == []


def test_every_row_has_a_check_or_says_why_not():
    assert orphans() == []
    assert unknown_bindings() == []
    assert manual_and_bound() == []
    assert all(r.manual is None or len(r.manual) > 20 for r in ROWS)


@pytest.mark.parametrize("doc,section", [(d, s) for d, secs in SECTIONS.items() for s in secs])
def test_every_section_is_cited(doc, section):
    assert any(r.cite.doc == doc and r.cite.section == section for r in ROWS), f"no row cites {doc} § {section}"


def test_every_citation_names_a_listed_section():
    listed = {(d, s) for table in (SECTIONS, OPTIONAL_SECTIONS) for d, secs in table.items() for s in secs}
    assert {r.cite.doc for r in ROWS} <= set(DOCUMENTS)
    assert sorted(str(r.cite) for r in ROWS if (r.cite.doc, r.cite.section) not in listed) == []


def test_needs_name_known_capabilities():
    for row in ROWS:
        for need in row.needs:
            assert need in CAPABILITIES or need.startswith(LEVELS_PREFIX), (row.id, need)


def test_fixture_rows_name_the_thinking_fixtures():
    assert fixtures_named() == ("qwen36_like", "qwen38_like", "smollm_like")


def test_request_rows_have_examples_or_are_driven_elsewhere():
    for row in ROWS:
        if isinstance(row, RequestField) and row.in_strategies:
            assert row.valid or row.invalid, row.id
        if isinstance(row, RequestField):
            assert all(b.param for b in row.invalid), row.id


# --- strategies ----------------------------------------------------------------

def fake_facts(*caps: str, levels: tuple[str, ...] = (), cap: int | None = None) -> Facts:
    """Facts as discovery would give them, without a server."""
    level_json = [{"id": lid, "enable_thinking": lid != "none", "reasoning_effort": None, "instruction": None,
                   "opens_reasoning": lid != "none", "default": i == 1} for i, lid in enumerate(levels)]
    thinking = {"supported": bool(levels), "source": "/m/chat_template.jinja", "toggle": "enable_thinking" if levels
                else None, "effort": None, "default_level": levels[1] if levels else None, "levels": level_json}
    return Facts(url="http://x", model_id="m", context_length=512, models_entry={"thinking": thinking},
                 model_info={}, status={}, cap=cap,
                 caps=frozenset(caps) | {"template", LEVELS_PREFIX + ",".join(levels)})


FACTS = (fake_facts("no_thinking"), fake_facts("thinking", "toggle", levels=("none", "on")))
ENDPOINTS = {CHAT: "chat.completions", COMPLETIONS: "completions"}


def _limit(body):
    return body.get("max_tokens") if body.get("max_tokens") is not None else body.get("max_completion_tokens")


@pytest.mark.parametrize("facts", FACTS, ids=("no_thinking", "toggle"))
@pytest.mark.parametrize("endpoint", (CHAT, COMPLETIONS))
def test_valid_requests_are_cheap_and_parse(endpoint, facts):
    @settings(max_examples=60, deadline=None)
    @given(valid_request(endpoint, facts))
    def check(body):
        limit = _limit(body)
        assert limit is not None and 0 <= limit <= 8
        assert limit > 0 or (body.get("echo") is True and body.get("logprobs") is not None)
        assert "stream_options" not in body or body.get("stream") is True
        assert "top_logprobs" not in body or body.get("logprobs") is True
        parse_request(body, ENDPOINTS[endpoint], operator_cap=0)

    check()


@pytest.mark.parametrize("endpoint", (CHAT, COMPLETIONS))
def test_invalid_requests_break_the_named_field(endpoint):
    facts = FACTS[1]

    @settings(max_examples=80, deadline=None)
    @given(invalid_request(endpoint, facts))
    def check(case):
        body, row, bad = case
        assert bad.status == 400 and bad.param
        if row.name in THINKING_FIELDS or row.name == "messages":
            return  # checked past parsing: by the thinking resolver, the chat template
        with pytest.raises(LseError) as refused:
            parse_request(body, ENDPOINTS[endpoint], operator_cap=0)
        assert (refused.value.status, refused.value.param) == (bad.status, bad.param), (row.id, body)

    check()


def test_every_bad_case_applies_to_a_base_request():
    for endpoint in (CHAT, COMPLETIONS):
        base = {"messages": [{"role": "user", "content": "Hi"}]} if endpoint == CHAT else {"prompt": "Hi"}
        for row, bad in bad_cases(endpoint, FACTS[1]):
            body = apply_bad(dict(base, max_tokens=4), row, bad)
            assert body != base, row.id


# --- checks can fail ---------------------------------------------------------

def chat_body(**over):
    body = {"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "m",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": "Hi there"}, "logprobs": None,
                         "finish_reason": "length", "stop_reason": "max_tokens"}],
            "usage": {"prompt_tokens": 5, "completion_tokens": 4, "total_tokens": 9,
                      "prompt_tokens_details": {"cached_tokens": 0}},
            "lse_context": {"tokens_used": 9, "context_length": 512, "tokens_remaining": 503}, "timings": {}}
    body.update(over)
    return body


def with_choice(**over):
    body = chat_body()
    body["choices"][0].update(over)
    return body


REQUEST = {"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 4}
MESSAGES_REQUEST = {"model": "m", "max_tokens": 4, "messages": REQUEST["messages"]}
MESSAGE = {"id": "msg_1", "type": "message", "role": "assistant", "model": "m",
           "content": [{"type": "text", "text": "Hi"}], "stop_reason": "end_turn", "stop_sequence": None,
           "usage": {"input_tokens": 3, "output_tokens": 1, "cache_read_input_tokens": 0},
           "lse_context": {"tokens_used": 4, "context_length": 512, "tokens_remaining": 508}}
RESPONSE = {"id": "resp_1", "object": "response", "created_at": 1, "status": "completed", "error": None,
            "incomplete_details": None, "model": "m", "instructions": None, "max_output_tokens": 4, "tools": [],
            "tool_choice": "auto", "parallel_tool_calls": True, "text": {"format": {"type": "text"}}, "store": True,
            "previous_response_id": None, "temperature": None, "top_p": None, "metadata": {},
            "output": [{"id": "fc_1", "type": "function_call", "call_id": "c", "name": "f", "arguments": "{}"}],
            "usage": {"input_tokens": 3, "output_tokens": 1, "total_tokens": 4}}
RESPONSES_REQUEST = {"input": "hi", "max_output_tokens": 4, "model": "m"}
TIMED_OUT = Stream(200, {"content-type": "text/event-stream"}, chunks=[
    {"type": "response.created"},
    {"type": "response.failed", "response": {"status": "failed", "error": {
        "code": "server_error", "message": "request_timeout: the request ran past 0.001 s"}}}])
FAILING = [
    (checks.envelope_fields, (chat_body(id="cmpl-1"), CHAT)),
    (checks.model_echo, (chat_body(), {"model": "x"}, "m")),
    (checks.choices_indexed, (chat_body(), {"n": 2})),
    (checks.message_shape, (with_choice(message={"role": "user", "content": "x"}),)),
    (checks.reasoning_omitted_when_empty, (with_choice(message={"role": "assistant", "content": "",
                                                                "reasoning_content": ""}),)),
    (checks.stop_reason_maps_finish, (with_choice(finish_reason="stop", stop_reason="max_tokens"),)),
    (checks.no_stop_string, (chat_body(), {"stop": "there"})),
    (checks.error_answer, (Reply(400, {}, "", {"error": {"type": "invalid_request_error", "code": None,
                                                          "param": "n"}}), 400, "invalid_request_error", None, "seed")),
    (checks.error_envelope, (Reply(400, {}, "", {"error": {"message": "", "type": "x"}}),)),
    (checks_body.usage_sums, (chat_body(usage={"prompt_tokens": 5, "completion_tokens": 4, "total_tokens": 10}), CHAT)),
    (checks_body.within_token_limit, (chat_body(), {"max_tokens": 3}, fake_facts())),
    (checks_body.lse_context_invariants, (chat_body(lse_context={"tokens_used": 9, "context_length": 512,
                                                                 "tokens_remaining": 0}), REQUEST, 512)),
    (checks_body.logprobs_shape, (chat_body(), {"logprobs": True}, CHAT)),
    (checks_stream.done_last, (Stream(200, {}, events=["{}"]),)),
    (checks_stream.first_chunk_role, (Stream(200, {}, chunks=[{"choices": [{"index": 0, "delta": {}}]}]),)),
    (checks_stream.fold_equals_body, (with_choice(stop_reason="stop_token", finish_reason="stop"), chat_body(), CHAT)),
    (checks_stream.seed_reproducible, (with_choice(message={"role": "assistant", "content": "x"}), chat_body())),
    (checks_behaviour.stop_trims_reply, (chat_body(), chat_body(), "there")),
    (checks_behaviour.budget_spent_thinking, (chat_body(), "xhigh")),
    (checks_behaviour.reply_fills_context, (chat_body(), 512)),
    (checks_behaviour.log_lines_match, ("lse: CPU FALLBACK (1 so far for this cause): x\n",
                                        [{"cause": "x", "count": 2}])),
    (checks_behaviour.tool_call_shape, (with_choice(finish_reason="stop", stop_reason="stop_token"),)),
    (checks_behaviour.malformed_call_kept, (with_choice(message={
        "role": "assistant", "content": '<tool_call>\n{"name": "f", "arguments": {}}\n</tool_call>'}),)),
    (checks_behaviour.reasoning_split, (with_choice(message={"role": "assistant", "content": "<think>a</think>b"}),)),
    (checks_behaviour.warnings_match_status, (chat_body(), {}, {"fused group 1": 1})),
    (checks_stream.final_chunk_extras, (Stream(200, {}, chunks=[{"choices": [
        {"index": 0, "finish_reason": "stop", "stop_reason": "stop_token"}]}]),)),
    (checks.context_error, (Reply(400, {}, "", {"error": {"type": "invalid_request_error", "code": "context_full",
                                                           "param": "messages"}}), 512, "messages")),
    (checks_info.models_list, (Reply(200, {}, "", {"object": "list", "data": []}),)),
    (checks_info.auth_refused, (Reply(200, {}, "{}", {}),)),
    (checks_info.health_ok, (Reply(200, {}, "fine"),)),
    (checks_info.thinking_object, ({"supported": True, "source": None, "toggle": None, "effort": None,
                                    "default_level": None, "levels": []},)),
    (checks_info.generation_defaults_shape, ({"temperature": 0.7, "sources": {}},)),
    (checks_messages.message_accepted, (Reply(400, {}, "{}", {}),)),
    (checks_messages.message_body, (dict(MESSAGE, stop_reason="stop"), MESSAGES_REQUEST)),
    (checks_messages.message_body, (dict(MESSAGE, usage={"input_tokens": 3, "output_tokens": 9,
                                                         "cache_read_input_tokens": 0}), MESSAGES_REQUEST)),
    (checks_messages.message_events, (Stream(200, {}, chunks=[{"type": "message_start"},
                                                              {"type": "content_block_delta", "index": 0},
                                                              {"type": "message_delta"}, {"type": "message_stop"}]),)),
    (checks_messages.message_fold, (Stream(200, {}, chunks=[{"type": "message_start"}, {
        "type": "message_delta", "delta": {"stop_reason": "end_turn"}}]), MESSAGE)),
    (checks_messages.count_matches, (Reply(200, {}, "", {"input_tokens": 4}), MESSAGE)),
    (checks_messages.tool_use_block, (MESSAGE,)),
    (checks_messages.thinking_block, (MESSAGE,)),
    (checks_messages.messages_error, (Reply(400, {}, "", {"error": {"type": "invalid_request_error", "message": "x",
                                                                     "param": "top_k"}}), 400,
                                      "invalid_request_error", "top_k")),
    (checks_responses.response_object, (dict(RESPONSE, tool_choice="none"), RESPONSES_REQUEST)),
    (checks_responses.response_object, (dict(RESPONSE, store=True), dict(RESPONSES_REQUEST, store=False))),
    (checks_responses.response_object, (dict(RESPONSE, model=None), RESPONSES_REQUEST)),
    (checks_responses.event_stream, (Stream(200, {"content-type": "application/json"}, chunks=[{}]),)),
    (checks_responses.responses_error, (Reply(400, {}, "", {"error": {"type": "invalid_request_error", "code": None,
                                                                       "param": "top_p", "message": "x"}}),
                                        400, None, "temperature")),
    (checks_responses.responses_error, (Reply(400, {}, "", {"error": {"type": "invalid_request_error", "code": None,
                                                                       "param": "top_p", "message": ""}}),
                                        400, None, "top_p")),
    (checks_responses.effort_levels, (Reply(400, {}, "", {"error": {"levels": ["on"]}}), ("none", "on"))),
    (checks_responses.method_refused, (Reply(405, {"allow": "POST"}, "", {"error": {"code": "method_not_allowed"}}),
                                       "GET, DELETE")),
    (checks_responses.stream_failed, (Stream(200, {}, chunks=[{"type": "response.created"},
                                                              {"type": "response.completed"}]), "request_timeout")),
    (checks_responses.stream_failed, (TIMED_OUT, "generation_failed")),
    (checks_responses.cancel_answers_finished, (Reply(200, {}, "", dict(RESPONSE, status="cancelled")), RESPONSE)),
    (checks_responses.forced_function_call, (RESPONSE, "g")),
    (checks_responses.forced_function_call, (dict(RESPONSE, output=[dict(RESPONSE["output"][0], arguments="[")]),
                                             "f")),
]


@pytest.mark.parametrize("check,args", FAILING, ids=[c.check.name for c, _ in FAILING])
def test_check_fails_on_a_reply_off_the_spec(check, args):
    with pytest.raises(checks.CheckFailed) as failed:
        check(*copy.deepcopy(args))
    assert "received" in str(failed.value) and "documented" in str(failed.value)
    assert set(failed.value.rows) <= set(check.check.rows)


def test_checks_pass_on_a_reply_on_the_spec():
    assert "responses.echo" in checks_responses.response_object(RESPONSE, RESPONSES_REQUEST)
    assert checks_responses.stream_failed(TIMED_OUT, "request_timeout")
    assert checks_responses.forced_function_call(RESPONSE, "f")
    assert checks_responses.cancel_answers_finished(Reply(200, {}, "", RESPONSE), RESPONSE)
    assert checks_messages.message_body(MESSAGE, MESSAGES_REQUEST)[0] == "msg.resp.message"
    stream = Stream(200, {}, chunks=[
        {"type": "message_start"}, {"type": "ping"},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hi"}},
        {"type": "content_block_stop", "index": 0},
        {"type": "message_delta", "delta": {"stop_reason": "end_turn"}}, {"type": "message_stop"}])
    assert checks_messages.message_events(stream) == ("msg.resp.stream_sequence",)
    assert checks_messages.message_fold(stream, MESSAGE) == ("msg.resp.stream_fold",)
    assert checks_messages.count_matches(Reply(200, {}, "", {"input_tokens": 3}), MESSAGE)
    body = chat_body()
    assert checks_body.usage_sums(body, CHAT) == ("resp.usage", "resp.usage.total_tokens", "resp.usage.cached_tokens")
    assert checks.stop_reason_maps_finish(body)[-1] == "surface.shared_json"
    assert "stop.max_tokens" in checks_body.within_token_limit(body, REQUEST, fake_facts())
    assert checks.no_stop_string(body, REQUEST) == ()  # no stop strings: nothing exercised


def test_every_named_check_is_bound_to_rows():
    assert all(check.rows for check in checks.CHECKS.values())
    assert set(bindings()) <= {r.id for r in ROWS}


# --- profiles and the SSE reader -----------------------------------------------

def test_profiles(monkeypatch):
    monkeypatch.setenv("LSE_SPEC_PROFILE", "ci")
    assert chosen().name == "ci" and chosen("dev").name == "dev"
    assert PROFILES["dev"].max_examples < PROFILES["ci"].max_examples
    with pytest.raises(ValueError):
        chosen("nightly")


def test_sse_payloads():
    lines = ["data: {\"a\": 1}", "", ": keep-alive", "", "event: x", "data: [DONE]", ""]
    assert list(_data_payloads(iter(lines))) == ['{"a": 1}', "[DONE]"]


def test_every_settled_choice_sits_beside_a_real_row():
    from lse.spec.rows import SETTLED
    from lse.spec.table import rows_by_id
    from lse.spec.rows_messages import SETTLED as MESSAGES_SETTLED
    from lse.spec.rows_responses_api import SETTLED as RESPONSES_SETTLED

    rows = rows_by_id()
    for settled in (SETTLED, MESSAGES_SETTLED, RESPONSES_SETTLED):
        assert sorted(set(settled) - set(rows)) == []
        assert all(rows[i].settles == text for i, text in settled.items())
