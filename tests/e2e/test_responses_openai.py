"""The Responses API through the real ``openai`` SDK, unchanged, against live
servers on fixture models: ``responses.create`` (string input, items),
``responses.stream``, ``previous_response_id`` over the store (with the
prefix cache's ``cached_tokens``), GET / DELETE / cancel, ``responses.parse``
with a pydantic model, a three-turn tool-use loop on the scripted tool-call
fixture, the errors the SDK raises, and the store's figures in
/v1/lse/status. Replies read over raw HTTP are validated against the SDK's
own types in strict mode.

The smollm_like fixture's weights are random: sampled, a reply may draw its
end-of-text token early, so the tests that need a reply cut at
max_output_tokens (status incomplete) decode greedily, whose reply to the
same prompt is the same every run; nothing depends on the words;
the scripted fixture answers its tool call whatever the prompt."""

from __future__ import annotations

import json
import threading
import time

import httpx
import openai
import pytest
from openai.types.responses import Response, ResponseStreamEvent
from pydantic import BaseModel, Field, TypeAdapter

KEY = "e2e-responses"
MODEL = "lse-fixture"  # one model per server: any name is accepted and echoed
ROOM = 200  # max_output_tokens for a whole small JSON reply in the fixtures' byte-level tokens
WEATHER = {"type": "function", "name": "get_weather", "description": "The weather in a city",
           "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}


class Verdict(BaseModel):
    ok: bool
    score: int = Field(ge=0, le=9)


def strict(kind, value):
    return TypeAdapter(kind).validate_python(value, strict=True)


@pytest.fixture(scope="module")
def base_url(lse_server, fixture_model):
    with lse_server(fixture_model("smollm_like"), "--kv-len", "512", "--api-key", KEY,
                    "--responses-store-entries", "3") as (url, _process):
        yield url


@pytest.fixture(scope="module")
def scripted_url(lse_server):
    from lse.fixtures.make_fixtures import scripted_fixture_dir

    with lse_server(scripted_fixture_dir("tool_call"), "--kv-len", "2048") as (url, _process):
        yield url


@pytest.fixture
def client(base_url):
    with openai.OpenAI(base_url=f"{base_url}/v1", api_key=KEY, max_retries=0) as c:
        yield c


@pytest.fixture
def http(base_url):
    with httpx.Client(base_url=base_url, headers={"authorization": f"Bearer {KEY}"}, timeout=120) as c:
        yield c


def test_create_with_string_input(client, http):
    reply = client.responses.create(model="any", input="Hi", instructions="Be brief", max_output_tokens=6,
                                   temperature=0)
    assert reply.object == "response" and reply.id.startswith("resp_")
    assert reply.status == "incomplete" and reply.incomplete_details.reason == "max_output_tokens"
    assert reply.model == "any" and reply.instructions == "Be brief"
    [message] = reply.output
    assert message.type == "message" and message.role == "assistant"
    assert message.content[0].type == "output_text" and reply.output_text == message.content[0].text
    assert reply.usage.output_tokens == 6 and reply.usage.output_tokens_details.reasoning_tokens == 0
    assert reply.usage.total_tokens == reply.usage.input_tokens + 6
    raw = http.post("/v1/responses", json={"input": "Hi", "max_output_tokens": 3}).json()
    strict(Response, raw)


def test_stream_events_fold_into_the_reply(client, http):
    hi = [{"role": "user", "content": [{"type": "input_text", "text": "Hi"}]}]
    with client.responses.stream(model=MODEL, input=hi, max_output_tokens=5, temperature=0) as stream:
        events = list(stream)
    kinds = [e.type for e in events]
    assert kinds[:4] == ["response.created", "response.in_progress", "response.output_item.added",
                         "response.content_part.added"]
    assert kinds.count("response.output_text.delta") >= 1
    assert kinds[-4:] == ["response.output_text.done", "response.content_part.done", "response.output_item.done",
                          "response.incomplete"]
    assert [e.sequence_number for e in events] == list(range(len(events)))
    text = "".join(e.delta for e in events if e.type == "response.output_text.delta")
    assert events[-1].response.output[0].content[0].text == text
    # raw SSE: event: and data: lines, each data an SDK stream event (strict), no [DONE]
    with http.stream("POST", "/v1/responses", json={"input": "Hi", "max_output_tokens": 2, "stream": True}) as r:
        assert r.headers["content-type"].startswith("text/event-stream")
        body = r.read().decode()
    frames = [f for f in body.split("\n\n") if f]
    assert "[DONE]" not in body
    for f in frames:
        event_line, data_line = f.split("\n")
        data = json.loads(data_line.removeprefix("data: "))
        assert event_line == f"event: {data['type']}"
        strict(ResponseStreamEvent, data)


def test_previous_response_id_continues_with_the_prefix_cache(client, http):
    first = client.responses.create(model=MODEL, input="Tell me about the weather", max_output_tokens=4)
    second = client.responses.create(model=MODEL, input="And tomorrow?", previous_response_id=first.id,
                                     max_output_tokens=4)
    assert second.previous_response_id == first.id
    assert second.usage.input_tokens > first.usage.input_tokens + first.usage.output_tokens - 1
    assert second.usage.input_tokens_details.cached_tokens >= first.usage.input_tokens
    assert client.responses.retrieve(first.id).model_dump() == first.model_dump()
    strict(Response, http.get(f"/v1/responses/{second.id}").json())
    client.responses.delete(first.id)
    with pytest.raises(openai.NotFoundError) as e:
        client.responses.retrieve(first.id)
    assert e.value.body["code"] == "response_not_found"
    with pytest.raises(openai.NotFoundError) as e:
        client.responses.create(model=MODEL, input="x", previous_response_id=first.id)
    assert (e.value.body["code"], e.value.body["param"]) == ("response_not_found", "previous_response_id")
    with pytest.raises(openai.NotFoundError):
        client.responses.delete(first.id)


def test_the_store_evicts_past_its_cap_and_reports_it(client, http):
    ids = [client.responses.create(model=MODEL, input="x", max_output_tokens=1).id for _ in range(4)]
    with pytest.raises(openai.NotFoundError):
        client.responses.create(model=MODEL, input="y", previous_response_id=ids[0], max_output_tokens=1)
    unstored = client.responses.create(model=MODEL, input="x", max_output_tokens=1, store=False)
    with pytest.raises(openai.NotFoundError):
        client.responses.retrieve(unstored.id)
    store = http.get("/v1/lse/status").json()["responses_store"]
    assert store["entries"] == 3 and store["max_entries"] == 3 and store["evicted"] >= 1


def test_parse_with_a_pydantic_model(client):
    reply = client.responses.parse(model=MODEL, input="Judge this", text_format=Verdict, max_output_tokens=ROOM)
    assert reply.status == "completed"
    assert isinstance(reply.output_parsed, Verdict)
    assert Verdict.model_validate_json(reply.output_text) == reply.output_parsed
    # greedy: a sampled reply of the random fixture may leave a JSON string open at ROOM tokens
    obj = client.responses.create(model=MODEL, input="x", text={"format": {"type": "json_object"}},
                                  max_output_tokens=ROOM, temperature=0)
    assert obj.status == "completed"
    assert isinstance(json.loads(obj.output_text), dict)


@pytest.mark.parametrize("fields,status,code,param", [
    ({"tools": [{"type": "web_search"}]}, 400, None, "tools[0].type"),
    ({"tool_choice": {"type": "file_search"}}, 400, None, "tool_choice.type"),
    ({"reasoning": {"effort": "high"}}, 400, "thinking_unsupported", "reasoning.effort"),
    ({"max_output_tokens": 0}, 400, None, "max_output_tokens"),
    ({"top_p": 2}, 400, None, "top_p"),
    ({"text": {"format": {"type": "yaml"}}}, 400, None, "text.format"),
    ({"input": [{"role": "user", "content": [{"type": "input_image", "image_url": "x"}]}]}, 400, None,
     "input[0].content[0].type"),
])
def test_errors_name_the_responses_field(http, fields, status, code, param):
    for stream in (False, True):
        r = http.post("/v1/responses", json={"input": "x", **fields, "stream": stream})
        err = r.json()["error"]
        assert (r.status_code, err["code"], err["param"]) == (status, code, param)
        assert err["type"] == "invalid_request_error"


def test_sdk_raises_bad_request_and_auth(client, base_url):
    with pytest.raises(openai.BadRequestError) as e:
        client.responses.create(model=MODEL, input="x", tools=[{"type": "web_search"}])
    assert "'web_search' is not supported" in e.value.body["message"]
    with openai.OpenAI(base_url=f"{base_url}/v1", api_key="wrong", max_retries=0) as bad:
        with pytest.raises(openai.AuthenticationError):
            bad.responses.create(model=MODEL, input="x")


def test_cancel_stops_a_running_response(lse_server, fixture_model):
    """On an 8192-token context a greedy reply of the fixture runs for seconds
    (at 512 it ends ~0.1 s after response.created, and the cancel can land
    after it on a loaded machine)."""
    seen: dict = {}
    with lse_server(fixture_model("smollm_like"), "--kv-len", "8192") as (url, _process), \
            openai.OpenAI(base_url=f"{url}/v1", api_key="none", max_retries=0) as client:

        def consume():
            with client.responses.stream(model=MODEL, input="Talk", max_output_tokens=8000, temperature=0) as stream:
                for event in stream:
                    if event.type == "response.created":
                        seen["id"] = event.response.id
                    seen["last"] = event

        reader = threading.Thread(target=consume)
        reader.start()
        deadline = time.monotonic() + 60
        while "id" not in seen and time.monotonic() < deadline:
            time.sleep(0.01)
        cancelled = client.responses.cancel(seen["id"])
        reader.join(60)
        assert cancelled.status == "cancelled"
        assert seen["last"].type == "response.incomplete" and seen["last"].response.status == "cancelled"
        assert seen["last"].response.usage.output_tokens < 8000
        assert client.responses.retrieve(seen["id"]).status == "cancelled"


def test_three_turn_tool_loop(scripted_url):
    with openai.OpenAI(base_url=f"{scripted_url}/v1", api_key="none", max_retries=0) as client:
        turn = client.responses.create(model=MODEL, input="What is the weather in Paris?", tools=[WEATHER])
        history = [{"role": "user", "content": "What is the weather in Paris?"}]
        inputs = []
        for _ in range(3):
            assert turn.status == "completed"
            [call] = turn.output
            assert (call.type, call.name, json.loads(call.arguments)) == ("function_call", "get_weather",
                                                                          {"city": "Paris"})
            inputs.append(turn.usage.input_tokens)
            output = {"type": "function_call_output", "call_id": call.call_id, "output": "sunny"}
            history += [call.model_dump(exclude_none=True), output]
            turn = client.responses.create(model=MODEL, input=[output], previous_response_id=turn.id,
                                           tools=[WEATHER])
        assert inputs[0] < inputs[1] < inputs[2]
        assert turn.usage.input_tokens_details.cached_tokens >= inputs[2]
        # the same conversation sent whole, unstored: the same prompt
        whole = client.responses.create(model=MODEL, input=history, tools=[WEATHER], store=False)
        assert whole.usage.input_tokens == turn.usage.input_tokens
        with client.responses.stream(model=MODEL, input="weather?", tools=[WEATHER]) as stream:
            kinds = [e.type for e in stream]
            final = stream.get_final_response()
        assert kinds[-1] == "response.completed" and "response.function_call_arguments.delta" in kinds
        assert final.output[0].type == "function_call" and final.output[0].arguments == '{"city": "Paris"}'
