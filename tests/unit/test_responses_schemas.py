"""Real /v1/responses replies and stream events, in-process (the host
interpreter over tiny fixtures, no iree-compile, no server), against the
``openai`` SDK's own types (openai.types.responses) read strictly, as
test_openai_schemas.py does for chat: every event of a stream, the
non-streamed reply (the fold of the stream), a tool call, GET's stored
response, the deletion reply and error envelopes."""

from __future__ import annotations

import pytest
from openai.types import ErrorObject
from openai.types.responses import Response, ResponseStreamEvent
from pydantic import TypeAdapter

from lse.runtime.api import lse_close, lse_open, lse_request
from lse.runtime.responses.items import fold
from lse.runtime.responses.service import ResponsesService
from lse.runtime.responses.store import ResponseStore
from lse.fixtures.make_fixtures import fixture_dir, scripted_fixture_dir

WEATHER = {"type": "function", "name": "get_weather",
           "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}


def check(kind, value) -> None:
    TypeAdapter(kind).validate_python(value, strict=True)


@pytest.fixture(scope="module")
def llama():
    engine = lse_open({"model": str(fixture_dir("llama")), "kv_len": 96, "pool": ["cpu:0"]})
    yield engine
    lse_close(engine)


@pytest.fixture(scope="module")
def scripted():
    engine = lse_open({"model": str(scripted_fixture_dir("tool_call")), "kv_len": 512, "pool": ["cpu:0"]})
    yield engine
    lse_close(engine)


def service_for(engine):
    service = ResponsesService(ResponseStore())
    return service, (lambda chat: lse_request(engine, chat, "chat.completions"))


def run(engine, body, service=None):
    own, submit = service_for(engine)
    handle = (service or own).create(body, submit)
    events, done = [], None
    for ev in handle.events():
        if ev["type"] == "chunk":
            events.append(ev["data"])
        else:
            done = ev
    return events, done


@pytest.mark.parametrize("body", [
    {"input": "hi there", "max_output_tokens": 4},
    {"input": "hi there", "max_output_tokens": 3, "stream": True, "instructions": "Be brief", "temperature": 0.7,
     "top_p": 0.9, "seed": 2, "metadata": {"k": "v"}},
    {"input": [{"role": "user", "content": [{"type": "input_text", "text": "hi"}]}], "max_output_tokens": 2,
     "store": False},
])
def test_events_and_reply_validate_against_the_sdk(llama, body):
    events, done = run(llama, body)
    assert done["type"] == "done"
    for e in events:
        check(ResponseStreamEvent, e)
    reply = done["data"]
    check(Response, reply)
    assert events[-1]["response"] == reply
    assert reply["output"] == fold(events)
    assert [e["sequence_number"] for e in events] == list(range(len(events)))
    assert reply["status"] == "incomplete" and reply["incomplete_details"] == {"reason": "max_output_tokens"}
    assert reply["usage"]["output_tokens"] == body["max_output_tokens"]
    assert reply["usage"]["output_tokens_details"] == {"reasoning_tokens": 0}


def test_a_tool_call_is_a_function_call_item(scripted):
    events, done = run(scripted, {"input": "weather?", "tools": [WEATHER], "max_output_tokens": 40})
    for e in events:
        check(ResponseStreamEvent, e)
    reply = done["data"]
    check(Response, reply)
    assert reply["status"] == "completed"
    [call] = reply["output"]
    assert (call["type"], call["name"], call["arguments"]) == ("function_call", "get_weather", '{"city": "Paris"}')
    assert call["call_id"].startswith("call")
    kinds = [e["type"] for e in events]
    assert "response.function_call_arguments.delta" in kinds and "response.function_call_arguments.done" in kinds


def test_stored_response_get_delete_and_continuation(llama):
    service, submit = service_for(llama)
    first = service.create({"input": "hi there", "max_output_tokens": 3}, submit).result()[1]
    assert service.get(first["id"]) == first
    check(Response, service.get(first["id"]))
    status, second = service.create({"input": "more", "max_output_tokens": 3, "previous_response_id": first["id"]},
                                    submit).result()
    assert status == 200 and second["previous_response_id"] == first["id"]
    # the second prompt starts with the whole first prompt: the prefix cache holds it
    assert first["usage"]["input_tokens"] <= second["usage"]["input_tokens_details"]["cached_tokens"] < second[
        "usage"]["input_tokens"]
    deleted = service.delete(first["id"])
    assert deleted == {"id": first["id"], "object": "response.deleted", "deleted": True}
    status, body = service.create({"input": "x", "previous_response_id": first["id"]}, submit).result()
    assert status == 404
    check(ErrorObject, body["error"])
    assert (body["error"]["code"], body["error"]["param"]) == ("response_not_found", "previous_response_id")


def test_engine_errors_are_renamed_to_responses_fields(llama):
    events, done = run(llama, {"input": "hi", "reasoning": {"effort": "high"}})
    assert events == [] and done["status"] == 400
    err = done["data"]["error"]
    check(ErrorObject, err)
    assert (err["code"], err["param"]) == ("thinking_unsupported", "reasoning.effort")
    assert "reasoning.effort" in err["message"]
    events, done = run(llama, {"input": "word " * 200})
    assert (done["status"], done["data"]["error"]["code"], done["data"]["error"]["param"]) == (
        400, "context_full", "input")


@pytest.fixture(scope="module")
def reasoning():
    engine = lse_open({"model": str(scripted_fixture_dir("reasoning")), "kv_len": 512, "pool": ["cpu:0"]})
    yield engine
    lse_close(engine)


def test_reasoning_is_a_reasoning_item_and_counts_its_tokens(reasoning):
    # the script: <think> "\nabc" </think> "\n\nDone" <|im_end|>: three tokens inside the think block
    events, done = run(reasoning, {"input": "hi", "stream": True})
    for e in events:
        check(ResponseStreamEvent, e)
    reply = done["data"]
    check(Response, reply)
    assert reply["status"] == "completed"
    thought, message = reply["output"]
    assert (thought["type"], thought["content"]) == ("reasoning", [{"type": "reasoning_text", "text": "abc"}])
    assert (message["type"], message["content"][0]["text"]) == ("message", "Done")
    assert reply["usage"]["output_tokens"] == 5
    assert reply["usage"]["output_tokens_details"] == {"reasoning_tokens": 3}
    kinds = [e["type"] for e in events]
    assert kinds.index("response.reasoning_text.done") < kinds.index("response.output_text.delta")


def test_chat_usage_counts_reasoning_tokens_too(reasoning):
    status, body = lse_request(reasoning, {"messages": [{"role": "user", "content": "hi"}]}).result()
    assert status == 200
    assert body["usage"]["completion_tokens"] == 5
    assert body["usage"]["completion_tokens_details"] == {"reasoning_tokens": 3}


def test_the_in_process_and_c_path_serves_responses(llama):
    from lse.runtime.api import lse_request_json

    status, first = lse_request_json(llama, b'{"input": "hi", "max_output_tokens": 2}', "/v1/responses").result()
    assert status == 200
    check(Response, first)
    body = b'{"input": "more", "max_output_tokens": 2, "previous_response_id": "%s"}' % first["id"].encode()
    status, second = lse_request_json(llama, body, "/v1/responses").result()
    assert (status, second["previous_response_id"]) == (200, first["id"])
    assert second["usage"]["input_tokens_details"]["cached_tokens"] >= first["usage"]["input_tokens"]
    handle = lse_request_json(llama, b'{"input": "hi", "max_output_tokens": 2, "stream": true}', "/v1/responses")
    assert handle.stream
    kinds = [e["data"]["type"] for e in handle.events() if e["type"] == "chunk"]
    assert kinds[0] == "response.created" and kinds[-1] == "response.incomplete"
    status, body = lse_request_json(llama, b'{"input": []}', "/v1/responses").result()
    assert (status, body["error"]["param"]) == (400, "input")


def test_running_from_the_first_read_to_the_last(llama):
    service, submit = service_for(llama)
    handle = service.create({"input": "hi", "max_output_tokens": 2, "stream": True}, submit)
    assert service.store.status()["running"] == 0  # not read yet: nothing to show or leak
    events = handle.events()
    first = next(events)
    assert first["data"]["type"] == "response.created"
    assert service.get(handle.id)["status"] == "in_progress"
    rest = list(events)
    assert rest[-1]["type"] == "done" and service.store.status()["running"] == 0
    handle.cancel()  # after the end: changes nothing
    assert service.get(handle.id) == rest[-1]["data"]
    abandoned = service.create({"input": "hi", "max_output_tokens": 2}, submit)
    it = abandoned.events()
    next(it)
    it.close()  # the reader went away mid-way
    assert service.store.status()["running"] == 0
    abandoned.cancel()


def test_replies_and_requests_fit_the_published_schemas(llama):
    import jsonschema

    from lse.runtime.responses import schema

    body = {"input": [{"role": "user", "content": [{"type": "input_text", "text": "hi"}]}], "max_output_tokens": 2,
            "tools": [WEATHER], "tool_choice": "auto", "text": {"format": {"type": "json_object"}}}
    jsonschema.validate(body, schema.REQUEST)
    jsonschema.validate(run(llama, body)[1]["data"], schema.RESPONSE)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"input": []}, schema.REQUEST)  # the 400's case is outside the schema too
