"""Structured output through the real ``openai`` SDK against live servers on
fixture models: ``chat.completions.parse`` with a pydantic model, a
json_schema with nested objects and enums (both endpoints, streamed, n > 1),
forced tool calls (the template's markers, and the generic form without them), a three-turn tool-use
loop, logit_bias, one model by id, and the tokenizer routes.

The fixtures' weights are random, so nothing here depends on what a model
would say, only on what the constraint allows; the scripted tool-call
fixture answers its script, which the forced call must keep."""

from __future__ import annotations

import json
from enum import Enum

import httpx
import openai
import pytest
from pydantic import BaseModel, Field

KEY = "e2e-structured"
ROOM = 200  # max_tokens: room for a whole small JSON reply in the fixtures' byte-level tokens


class Colour(str, Enum):
    RED = "red"
    GREEN = "green"


class Size(BaseModel):
    width: int = Field(ge=0, le=99)
    unit: Colour


class Verdict(BaseModel):
    colour: Colour
    ok: bool
    size: Size


SCHEMA = {"type": "object", "properties": {
    "answer": {"enum": ["yes", "no"]},
    "detail": {"type": "object", "properties": {
        "score": {"type": "integer", "minimum": 0, "maximum": 9},
        "tags": {"type": "array", "items": {"enum": ["a", "b"]}, "maxItems": 2}},
        "required": ["score", "tags"], "additionalProperties": False}},
    "required": ["answer", "detail"], "additionalProperties": False}
JSON_SCHEMA = {"type": "json_schema", "json_schema": {"name": "verdict", "schema": SCHEMA, "strict": True}}
WEATHER = {"type": "function", "function": {"name": "get_weather", "parameters": {
    "type": "object", "properties": {"city": {"type": "string"}}}}}
CLOCK = {"type": "function", "function": {"name": "get_time", "parameters": {
    "type": "object", "properties": {"zone": {"enum": ["utc", "local"]}}, "required": ["zone"],
    "additionalProperties": False}}}
HI = [{"role": "user", "content": "Hi"}]


@pytest.fixture(scope="module")
def base_url(lse_server, fixture_model):
    with lse_server(fixture_model("smollm_like"), "--kv-len", "512", "--api-key", KEY) as (url, _process):
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


def _check(value, answer=("yes", "no")) -> None:
    assert value["answer"] in answer and set(value) == {"answer", "detail"}
    assert 0 <= value["detail"]["score"] <= 9 and set(value["detail"]["tags"]) <= {"a", "b"}


def test_parse_with_a_pydantic_model(client):
    for seed in (1, 2):
        completion = client.chat.completions.parse(model="m", messages=HI, response_format=Verdict,
                                                   max_tokens=ROOM, seed=seed, temperature=1.0)
        parsed = completion.choices[0].message.parsed
        assert isinstance(parsed, Verdict) and 0 <= parsed.size.width <= 99


def test_a_nested_schema_with_enums_on_both_endpoints_streamed_and_n(client):
    chat = client.chat.completions.create(model="m", messages=HI, response_format=JSON_SCHEMA, max_tokens=ROOM,
                                          n=3, seed=5, temperature=1.0)
    assert len(chat.choices) == 3
    for choice in chat.choices:
        assert choice.finish_reason == "stop"
        _check(json.loads(choice.message.content))
    stream = client.chat.completions.create(model="m", messages=HI, response_format=JSON_SCHEMA, max_tokens=ROOM,
                                            n=3, seed=5, temperature=1.0, stream=True)
    texts = {i: "" for i in range(3)}
    for chunk in stream:
        for c in chunk.choices:
            texts[c.index] += c.delta.content or ""
    assert [texts[i] for i in range(3)] == [c.message.content for c in chat.choices]
    # /v1/completions takes response_format too (an LSE extension), streamed or not.
    plain = client.completions.create(model="m", prompt="Once", max_tokens=ROOM, seed=3,
                                      extra_body={"response_format": JSON_SCHEMA})
    _check(json.loads(plain.choices[0].text))
    streamed = "".join(c.choices[0].text for c in client.completions.create(
        model="m", prompt="Once", max_tokens=ROOM, seed=3, stream=True, extra_body={"response_format": JSON_SCHEMA}))
    assert streamed == plain.choices[0].text


def test_json_object_and_a_cut_reply(client):
    reply = client.chat.completions.create(model="m", messages=HI, response_format={"type": "json_object"},
                                           max_tokens=ROOM, seed=9)
    assert isinstance(json.loads(reply.choices[0].message.content), dict)
    cut = client.chat.completions.create(model="m", messages=HI, response_format=JSON_SCHEMA, max_tokens=3)
    assert cut.choices[0].finish_reason == "length"


@pytest.mark.parametrize("fmt, says", [
    ({"type": "json_schema", "json_schema": {"name": "x", "schema": {"type": "array", "uniqueItems": True}}},
     "uniqueItems"),
    ({"type": "json_schema", "json_schema": {"name": "x", "schema": {"not": {}}}}, "not"),
    ({"type": "xml"}, "response_format.type"),
])
def test_refused_formats_name_response_format(client, fmt, says):
    with pytest.raises(openai.BadRequestError) as exc:
        client.chat.completions.create(model="m", messages=HI, response_format=fmt, max_tokens=4)
    err = exc.value.body
    assert err["param"] == "response_format" and says in err["message"]


def test_logit_bias_ban_changes_the_greedy_answer_and_force_repeats(client, http):
    args = dict(model="m", prompt="Once upon a time", max_tokens=6, temperature=0)
    greedy = client.completions.create(**args).choices[0].text
    first = http.post("/tokenize", json={"content": greedy}).json()["tokens"][0]
    banned = client.completions.create(**args, logit_bias={str(first): -100}).choices[0].text
    assert banned != greedy
    assert http.post("/tokenize", json={"content": banned}).json()["tokens"][0] != first
    forced = client.chat.completions.create(model="m", messages=HI, max_tokens=4, logit_bias={"65": 100})
    text = http.post("/detokenize", json={"tokens": [65]}).json()["content"]
    assert forced.choices[0].message.content == text * 4
    with pytest.raises(openai.BadRequestError) as exc:
        client.completions.create(**args, logit_bias={"99999": 1})
    assert exc.value.body["param"] == "logit_bias"


def test_forced_tool_calls_use_the_template_markers(scripted_url):
    with openai.OpenAI(base_url=f"{scripted_url}/v1", api_key="x", max_retries=0) as c:
        named = c.chat.completions.create(model="m", messages=HI, tools=[CLOCK, WEATHER], temperature=0,
                                          tool_choice={"type": "function", "function": {"name": "get_weather"}})
        call = named.choices[0].message.tool_calls[0]
        assert named.choices[0].finish_reason == "tool_calls"
        assert (call.function.name, json.loads(call.function.arguments)) == ("get_weather", {"city": "Paris"})
        other = c.chat.completions.create(model="m", messages=HI, tools=[CLOCK, WEATHER], temperature=0,
                                          tool_choice={"type": "function", "function": {"name": "get_time"}},
                                          max_tokens=ROOM)
        calls = other.choices[0].message.tool_calls
        assert [x.function.name for x in calls] == ["get_time"]
        assert json.loads(calls[0].function.arguments)["zone"] in ("utc", "local")
        required = c.chat.completions.create(model="m", messages=HI, tools=[CLOCK, WEATHER], temperature=0,
                                             tool_choice="required", max_tokens=ROOM)
        assert required.choices[0].finish_reason == "tool_calls"
        none = c.chat.completions.create(model="m", messages=HI, tools=[WEATHER], tool_choice="none", max_tokens=8)
        assert not none.choices[0].message.tool_calls and none.choices[0].finish_reason != "tool_calls"


def test_a_three_turn_tool_loop_through_chat(scripted_url):
    """The chat API's tool-use loop as agents run it: each turn's call answered by a tool message, the
    SDK's own assistant message sent back; the earlier turns' prompt comes from the prefix cache."""
    messages: list[dict] = [{"role": "user", "content": "What is the weather in Paris?"}]
    prompts = []
    with openai.OpenAI(base_url=f"{scripted_url}/v1", api_key="x", max_retries=0) as c:
        for turn in range(3):
            reply = c.chat.completions.create(model="m", messages=messages, tools=[WEATHER], temperature=0,
                                              max_tokens=ROOM)
            choice = reply.choices[0]
            [call] = choice.message.tool_calls
            assert choice.finish_reason == "tool_calls"
            assert (call.function.name, json.loads(call.function.arguments)) == ("get_weather", {"city": "Paris"})
            prompts.append(reply.usage.prompt_tokens)
            if turn:
                assert reply.usage.prompt_tokens_details.cached_tokens > 0
            messages += [choice.message.model_dump(exclude_none=True),
                         {"role": "tool", "tool_call_id": call.id, "content": f"sunny, {20 + turn} C"}]
    assert prompts[0] < prompts[1] < prompts[2]


def test_forcing_a_call_without_template_markers_takes_the_generic_form(client, http):
    """smollm_like's template writes no tool-call markers: the call is one JSON
    object the prompt asks for, constrained by the grammar, parsed into tool_calls."""
    # parallel_tool_calls false: one call, so a random-weight model cannot keep the array open
    for choice in ({"type": "function", "function": {"name": "get_time"}}, "required"):
        reply = client.chat.completions.create(model="m", messages=HI, tools=[CLOCK], tool_choice=choice,
                                               parallel_tool_calls=False, temperature=0, max_tokens=ROOM)
        message = reply.choices[0].message
        assert reply.choices[0].finish_reason == "tool_calls" and message.content is None
        assert [c.function.name for c in message.tool_calls] == ["get_time"]
        assert json.loads(message.tool_calls[0].function.arguments)["zone"] in ("utc", "local")
    info = http.get("/v1/lse/model_info").json()
    assert (info["tool_call_markers"], info["tool_call_form"]) == (None, "generic")


def test_one_model_by_id_and_its_404(client, http):
    listed = client.models.list().data[0]
    assert client.models.retrieve(listed.id).model_dump() == listed.model_dump()
    with pytest.raises(openai.NotFoundError) as exc:
        client.models.retrieve("no-such-model")
    assert exc.value.body["code"] == "model_not_found"


def test_tokenizer_routes_and_their_key(base_url, http):
    tokens = http.post("/tokenize", json={"content": "Hello <|im_end|>", "add_special": False}).json()["tokens"]
    assert http.post("/detokenize", json={"tokens": tokens}).json()["content"] == "Hello <|im_end|>"
    info = http.get("/tokenizer_info").json()
    assert info["eos_token"] == "<|im_end|>" and tokens[-1] == info["eos_token_id"]
    # lm-evaluation-harness' remote tokenizer spells the fields as vLLM does.
    assert http.post("/tokenize", json={"prompt": "Hello", "add_special_tokens": False}).json()["tokens"] == tokens[:-2]
    for method, path in (("POST", "/tokenize"), ("POST", "/detokenize"), ("GET", "/tokenizer_info"),
                         ("GET", "/v1/models/x")):
        assert httpx.request(method, base_url + path, json={}).status_code == 401
