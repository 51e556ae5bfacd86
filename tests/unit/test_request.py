"""parse_request: a table of valid bodies and the values they parse to, and a
table of invalid bodies with the exact status, type, code and param."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from lse.runtime.errors import LseError
from lse.runtime.openai.request import CHAT, COMPLETIONS, effective_sampling, parse_request
from lse.runtime.request_format import ResponseFormat
from lse.runtime.sampler import SamplingParams

CAP = 100  # the operator cap the tables run under
BASE = {
    CHAT: {"messages": [{"role": "user", "content": "hi"}]},
    COMPLETIONS: {"prompt": "hi"},
}
TOOL_F = {"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}


def parse(endpoint: str, changes: dict[str, Any], cap: int = CAP) -> Any:
    body = {**BASE[endpoint], **changes}
    return parse_request(body, endpoint, operator_cap=cap)


VALID = [
    # endpoint, fields sent, the parsed values that follow
    (CHAT, {}, {"model": None, "prompts": None, "stream": False, "include_usage": False, "n": 1,
                "max_tokens": None, "scoring": False, "temperature": None, "top_k": None,
                "top_p": None, "min_p": None, "presence_penalty": None,
                "repetition_penalty": None, "frequency_penalty": None, "seed": None, "stop": [],
                "logprobs": False, "top_logprobs": 0, "echo": False, "tools": None,
                "tool_choice": None, "response_format": None, "chat_template_kwargs": None}),
    (CHAT, {"model": "smollm2"}, {"model": "smollm2"}),
    (CHAT, {"model": None, "stream": None, "n": None, "seed": None, "stop": None},
     {"model": None, "stream": False, "n": 1, "seed": None, "stop": []}),
    (CHAT, {"max_tokens": 10, "max_completion_tokens": 20}, {"max_tokens": 10}),
    (CHAT, {"max_completion_tokens": 20}, {"max_tokens": 20}),
    (CHAT, {"max_tokens": None, "max_completion_tokens": 5}, {"max_tokens": 5}),
    (CHAT, {"max_tokens": CAP}, {"max_tokens": CAP, "scoring": False}),
    (CHAT, {"stream": True, "stream_options": {"include_usage": True}},
     {"stream": True, "include_usage": True}),
    (CHAT, {"stream": True, "stream_options": {}}, {"include_usage": False}),
    (CHAT, {"stream": False, "stream_options": None}, {"include_usage": False}),
    (CHAT, {"n": 16}, {"n": 16}),
    (CHAT, {"temperature": 0}, {"temperature": 0.0}),
    (CHAT, {"temperature": -1, "top_p": 0, "min_p": 1}, {"temperature": -1.0, "top_p": 0.0, "min_p": 1.0}),
    (CHAT, {"temperature": 1.7, "top_p": 1, "min_p": 0.05}, {"temperature": 1.7, "top_p": 1.0, "min_p": 0.05}),
    (CHAT, {"top_k": -1}, {"top_k": -1}),
    (CHAT, {"top_k": 0}, {"top_k": 0}),
    (CHAT, {"top_k": 40}, {"top_k": 40}),
    (CHAT, {"presence_penalty": -2, "frequency_penalty": 2},
     {"presence_penalty": -2.0, "frequency_penalty": 2.0}),
    (CHAT, {"repetition_penalty": 0.01}, {"repetition_penalty": 0.01}),
    (CHAT, {"seed": 0}, {"seed": 0}),
    (CHAT, {"seed": 2**70}, {"seed": 2**70}),
    (CHAT, {"stop": "x"}, {"stop": ["x"]}),
    (CHAT, {"stop": []}, {"stop": []}),
    (CHAT, {"stop": [str(i) for i in range(16)]}, {"stop": [str(i) for i in range(16)]}),
    (CHAT, {"logprobs": True}, {"logprobs": True, "top_logprobs": 0}),
    (CHAT, {"logprobs": True, "top_logprobs": 20}, {"logprobs": True, "top_logprobs": 20}),
    (CHAT, {"logprobs": False, "top_logprobs": None}, {"logprobs": False, "top_logprobs": 0}),
    (CHAT, {"tools": [TOOL_F], "tool_choice": "required"}, {"tools": [TOOL_F], "tool_choice": "required"}),
    (CHAT, {"tools": [TOOL_F], "tool_choice": {"type": "function", "function": {"name": "f"}}},
     {"tool_choice": {"type": "function", "function": {"name": "f"}}}),
    (CHAT, {"tools": [{"type": "function", "function": {"name": "g"}}]},
     {"tools": [{"type": "function", "function": {"name": "g"}}]}),
    (CHAT, {"tools": [], "tool_choice": "none"}, {"tools": [], "tool_choice": "none"}),
    (CHAT, {"tool_choice": "auto"}, {"tool_choice": "auto"}),
    (CHAT, {"response_format": {"type": "text"}}, {"response_format": None}),
    (CHAT, {"response_format": {"type": "json_object"}},
     {"response_format": ResponseFormat("json_object", {"type": "object"})}),
    (CHAT, {"response_format": {"type": "json_schema", "json_schema": {"name": "x", "strict": True,
                                                                        "schema": {"type": "array"}}}},
     {"response_format": ResponseFormat("json_schema", {"type": "array"})}),
    (CHAT, {"response_format": {"type": "json_schema", "json_schema": {"name": "x"}}},
     {"response_format": ResponseFormat("json_schema", {"type": "object"})}),
    (CHAT, {"logit_bias": {"5": 1, "7": -100, "9": 100.0}}, {"logit_bias": {5: 1.0, 7: -100.0, 9: 100.0}}),
    (CHAT, {"logit_bias": {}}, {"logit_bias": None}),
    (CHAT, {"chat_template_kwargs": {"enable_thinking": False}},
     {"chat_template_kwargs": {"enable_thinking": False}}),
    # unknown fields, the other endpoint's fields, and the thinking fields are not checked here
    (CHAT, {"user": "u1", "echo": "yes", "prompt": 5}, {"echo": False}),
    (CHAT, {"thinking": "garbage", "reasoning_effort": 5}, {}),
    (CHAT, {"max_tokens": 10**9}, {"max_tokens": 10**9}, 0),  # no cap: any positive size
    (COMPLETIONS, {}, {"prompts": ["hi"], "messages": None, "echo": False, "logprobs": False,
                       "top_logprobs": 0, "scoring": False, "tools": None, "response_format": None}),
    (COMPLETIONS, {"prompt": ["a", "b"]}, {"prompts": ["a", "b"]}),
    (COMPLETIONS, {"prompt": [1, 2, 3]}, {"prompts": [[1, 2, 3]]}),
    (COMPLETIONS, {"prompt": [0]}, {"prompts": [[0]]}),
    (COMPLETIONS, {"prompt": [[1, 2], [3]]}, {"prompts": [[1, 2], [3]]}),
    (COMPLETIONS, {"max_tokens": 0, "echo": True, "logprobs": 0},
     {"max_tokens": 0, "scoring": True, "echo": True, "logprobs": True, "top_logprobs": 0}),
    (COMPLETIONS, {"max_tokens": 0, "echo": True, "logprobs": 5},
     {"scoring": True, "logprobs": True, "top_logprobs": 5}),
    (COMPLETIONS, {"max_completion_tokens": 0, "echo": True, "logprobs": 1}, {"scoring": True}),
    (COMPLETIONS, {"logprobs": 3}, {"logprobs": True, "top_logprobs": 3}),
    (COMPLETIONS, {"echo": True, "max_tokens": 7}, {"echo": True, "max_tokens": 7, "scoring": False}),
    (COMPLETIONS, {"temperature": 0.2, "top_k": 5, "presence_penalty": 1, "stop": ["\n"]},
     {"temperature": 0.2, "top_k": 5, "presence_penalty": 1.0, "stop": ["\n"]}),
    (COMPLETIONS, {"tools": "x", "top_logprobs": 99}, {"tools": None, "top_logprobs": 0}),
    # response_format and logit_bias are LSE extensions on /v1/completions
    (COMPLETIONS, {"response_format": {"type": "json_object"}, "logit_bias": {"3": -1.5}},
     {"response_format": ResponseFormat("json_object", {"type": "object"}), "logit_bias": {3: -1.5}}),
]


@pytest.mark.parametrize("row", VALID, ids=lambda row: f"{row[0]}-{sorted(row[1])}")
def test_valid_bodies(row: tuple[Any, ...]) -> None:
    endpoint, changes, expected = row[:3]
    cap = row[3] if len(row) > 3 else CAP
    parsed = parse(endpoint, changes, cap)
    assert {k: getattr(parsed, k) for k in expected} == expected
    assert parsed.endpoint == endpoint
    assert parsed.thinking is None  # resolved only against a model's ThinkingInfo (test_thinking_in_the_same_pass)


def test_messages_are_passed_on_unchanged() -> None:
    messages = [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}]
    assert parse_request({"messages": messages}, CHAT, operator_cap=0).messages == messages


SEVENTEEN = [str(i) for i in range(17)]
INVALID = [
    # endpoint, fields sent (None deletes the base field), param
    (CHAT, {"messages": None}, "messages"),
    (CHAT, {"messages": []}, "messages"),
    (CHAT, {"messages": "hi"}, "messages"),
    (CHAT, {"model": 5}, "model"),
    (CHAT, {"stream": "yes"}, "stream"),
    (CHAT, {"stream": 1}, "stream"),
    (CHAT, {"stream_options": {"include_usage": True}}, "stream_options"),
    (CHAT, {"stream": False, "stream_options": {}}, "stream_options"),
    (CHAT, {"stream": True, "stream_options": "x"}, "stream_options"),
    (CHAT, {"stream": True, "stream_options": {"include_usage": "yes"}}, "stream_options.include_usage"),
    (CHAT, {"n": 0}, "n"),
    (CHAT, {"n": 17}, "n"),
    (CHAT, {"n": 2.0}, "n"),
    (CHAT, {"n": True}, "n"),
    (CHAT, {"max_tokens": 0}, "max_tokens"),
    (CHAT, {"max_tokens": -1}, "max_tokens"),
    (CHAT, {"max_tokens": 1.5}, "max_tokens"),
    (CHAT, {"max_tokens": True}, "max_tokens"),
    (CHAT, {"max_tokens": "10"}, "max_tokens"),
    (CHAT, {"max_tokens": CAP + 1}, "max_tokens"),
    (CHAT, {"max_completion_tokens": 0}, "max_completion_tokens"),
    (CHAT, {"max_completion_tokens": -5}, "max_completion_tokens"),
    (CHAT, {"max_tokens": 10, "max_completion_tokens": 0}, "max_completion_tokens"),
    (CHAT, {"max_completion_tokens": CAP + 1}, "max_tokens"),  # the cap's param, as documented
    (CHAT, {"max_tokens": 0, "echo": True, "logprobs": True}, "max_tokens"),  # scoring is completions-only
    (CHAT, {"temperature": "hot"}, "temperature"),
    (CHAT, {"temperature": True}, "temperature"),
    (CHAT, {"temperature": float("nan")}, "temperature"),
    (CHAT, {"temperature": float("inf")}, "temperature"),
    (CHAT, {"temperature": 10**400}, "temperature"),
    (CHAT, {"top_k": -2}, "top_k"),
    (CHAT, {"top_k": 1.5}, "top_k"),
    (CHAT, {"top_k": False}, "top_k"),
    (CHAT, {"top_p": -0.1}, "top_p"),
    (CHAT, {"top_p": 1.01}, "top_p"),
    (CHAT, {"top_p": "0.5"}, "top_p"),
    (CHAT, {"min_p": -0.01}, "min_p"),
    (CHAT, {"min_p": 1.5}, "min_p"),
    (CHAT, {"presence_penalty": 2.5}, "presence_penalty"),
    (CHAT, {"presence_penalty": -2.01}, "presence_penalty"),
    (CHAT, {"frequency_penalty": 3}, "frequency_penalty"),
    (CHAT, {"repetition_penalty": 0}, "repetition_penalty"),
    (CHAT, {"repetition_penalty": -1}, "repetition_penalty"),
    (CHAT, {"repetition_penalty": True}, "repetition_penalty"),
    (CHAT, {"seed": -1}, "seed"),
    (CHAT, {"seed": 1.5}, "seed"),
    (CHAT, {"seed": "1"}, "seed"),
    (CHAT, {"stop": ""}, "stop"),
    (CHAT, {"stop": ["a", ""]}, "stop"),
    (CHAT, {"stop": SEVENTEEN}, "stop"),
    (CHAT, {"stop": [1]}, "stop"),
    (CHAT, {"stop": 5}, "stop"),
    (CHAT, {"stop": {}}, "stop"),
    (CHAT, {"logprobs": 1}, "logprobs"),
    (CHAT, {"logprobs": "true"}, "logprobs"),
    (CHAT, {"logprobs": True, "top_logprobs": 21}, "top_logprobs"),
    (CHAT, {"logprobs": True, "top_logprobs": -1}, "top_logprobs"),
    (CHAT, {"top_logprobs": 2}, "top_logprobs"),
    (CHAT, {"logprobs": False, "top_logprobs": 0}, "top_logprobs"),
    (CHAT, {"tools": "x"}, "tools"),
    (CHAT, {"tools": [5]}, "tools[0]"),
    (CHAT, {"tools": [{"type": "code"}]}, "tools[0].type"),
    (CHAT, {"tools": [{"type": "function"}]}, "tools[0].function"),
    (CHAT, {"tools": [{"type": "function", "function": {"name": ""}}]}, "tools[0].function.name"),
    (CHAT, {"tools": [{"type": "function", "function": {"name": "f", "parameters": []}}]},
     "tools[0].function.parameters"),
    (CHAT, {"tools": [{"type": "function", "function": {"name": "f", "description": 3}}]},
     "tools[0].function.description"),
    (CHAT, {"tools": [TOOL_F, {"type": "function", "function": {}}]}, "tools[1].function.name"),
    (CHAT, {"tool_choice": "sometimes"}, "tool_choice"),
    (CHAT, {"tool_choice": 5}, "tool_choice"),
    (CHAT, {"tool_choice": "required"}, "tool_choice"),
    (CHAT, {"tools": [TOOL_F], "tool_choice": {"type": "function", "function": {"name": "g"}}}, "tool_choice"),
    (CHAT, {"tools": [TOOL_F], "tool_choice": {"type": "function", "function": {}}}, "tool_choice.function.name"),
    (CHAT, {"response_format": {"type": "xml"}}, "response_format"),
    (CHAT, {"response_format": {"type": "json_schema"}}, "response_format"),
    (CHAT, {"response_format": {"type": "json_schema", "json_schema": {"schema": []}}}, "response_format"),
    (CHAT, {"response_format": {"type": "json_schema", "json_schema": {"strict": "yes"}}}, "response_format"),
    (CHAT, {"response_format": {"type": "json_schema", "json_schema": {"name": 5}}}, "response_format"),
    (CHAT, {"response_format": "text"}, "response_format"),
    (COMPLETIONS, {"response_format": {"type": "json_schema", "json_schema": 5}}, "response_format"),
    (CHAT, {"logit_bias": [1]}, "logit_bias"),
    (CHAT, {"logit_bias": {"a": 1}}, "logit_bias"),
    (CHAT, {"logit_bias": {"-1": 1}}, "logit_bias"),
    (CHAT, {"logit_bias": {"5": 101}}, "logit_bias"),
    (CHAT, {"logit_bias": {"5": -100.5}}, "logit_bias"),
    (CHAT, {"logit_bias": {"5": "1"}}, "logit_bias"),
    (CHAT, {"logit_bias": {"5": True}}, "logit_bias"),
    (COMPLETIONS, {"logit_bias": {"1.5": 1}}, "logit_bias"),
    (CHAT, {"chat_template_kwargs": []}, "chat_template_kwargs"),
    (COMPLETIONS, {"prompt": None}, "prompt"),
    (COMPLETIONS, {"prompt": ""}, "prompt"),
    (COMPLETIONS, {"prompt": []}, "prompt"),
    (COMPLETIONS, {"prompt": [[]]}, "prompt"),
    (COMPLETIONS, {"prompt": ["a", ""]}, "prompt"),
    (COMPLETIONS, {"prompt": [1, -2]}, "prompt"),
    (COMPLETIONS, {"prompt": [1, "a"]}, "prompt"),
    (COMPLETIONS, {"prompt": [[1], [2.5]]}, "prompt"),
    (COMPLETIONS, {"prompt": [True]}, "prompt"),
    (COMPLETIONS, {"prompt": 5}, "prompt"),
    (COMPLETIONS, {"prompt": {"text": "hi"}}, "prompt"),
    (COMPLETIONS, {"echo": "yes"}, "echo"),
    (COMPLETIONS, {"logprobs": True}, "logprobs"),
    (COMPLETIONS, {"logprobs": 6}, "logprobs"),
    (COMPLETIONS, {"logprobs": -1}, "logprobs"),
    (COMPLETIONS, {"max_tokens": 0}, "max_tokens"),
    (COMPLETIONS, {"max_tokens": 0, "echo": True}, "max_tokens"),
    (COMPLETIONS, {"max_tokens": 0, "logprobs": 1}, "max_tokens"),
    (COMPLETIONS, {"max_tokens": 0, "echo": False, "logprobs": 1}, "max_tokens"),
    (COMPLETIONS, {"max_tokens": 0, "echo": True, "logprobs": None}, "max_tokens"),
    (COMPLETIONS, {"max_tokens": -1, "echo": True, "logprobs": 1}, "max_tokens"),
    (COMPLETIONS, {"max_tokens": CAP + 1}, "max_tokens"),
    (COMPLETIONS, {"top_p": 2}, "top_p"),
    (COMPLETIONS, {"repetition_penalty": 0.0}, "repetition_penalty"),
    (COMPLETIONS, {"stream_options": {"include_usage": True}}, "stream_options"),
    (COMPLETIONS, {"chat_template_kwargs": "x"}, "chat_template_kwargs"),
]


@pytest.mark.parametrize("endpoint, changes, param", INVALID,
                         ids=[f"{e}-{p}-{i}" for i, (e, _, p) in enumerate(INVALID)])
def test_invalid_bodies(endpoint: str, changes: dict[str, Any], param: str) -> None:
    body = {k: v for k, v in {**BASE[endpoint], **changes}.items() if v is not None or k not in BASE[endpoint]}
    with pytest.raises(LseError) as exc:
        parse_request(body, endpoint, operator_cap=CAP)
    err = exc.value.body()["error"]
    assert (exc.value.status, err["type"], err["code"], err["param"]) == \
        (400, "invalid_request_error", None, param), err["message"]


@pytest.mark.parametrize("changes, message", [
    ({"top_p": 1.5}, "top_p must be a number in [0, 1]; got 1.5"),
    ({"top_k": -2}, "top_k must be an integer of at least -1; got -2"),
    ({"n": 17}, "n must be an integer from 1 to 16; got 17"),
    ({"max_tokens": -1}, "max_tokens must be a positive integer; got -1"),
    ({"max_tokens": 0}, "max_tokens must be a positive integer; 0 is accepted only on /v1/completions "
                        "together with echo: true and logprobs (scoring mode)"),
    ({"max_completion_tokens": 101}, "max_completion_tokens is 101, above this server's cap of 100 "
                                     "tokens (lse-server --max-tokens); send at most 100"),
    ({"response_format": {"type": "xml"}},
     "response_format.type must be one of text, json_object, json_schema; got 'xml'"),
    ({"logit_bias": {"5": 200}}, "logit_bias values must be numbers in [-100, 100]; got 200 for 5"),
    ({"stream_options": {}}, "stream_options is only allowed when stream is true"),
    ({"temperature": True}, "temperature must be a number; got a boolean"),
    ({"repetition_penalty": 0}, "repetition_penalty must be a number above 0; got 0"),
    ({"messages": None}, "messages is required on /v1/chat/completions"),
    ({"messages": [], "model": 5}, "messages must be a non-empty array of messages; got an empty array"),
])
def test_error_messages(changes: dict[str, Any], message: str) -> None:
    body = {k: v for k, v in {**BASE[CHAT], **changes}.items() if v is not None}
    with pytest.raises(LseError) as exc:
        parse_request(body, CHAT, operator_cap=CAP)
    assert exc.value.message == message


@pytest.mark.parametrize("body, message", [
    ({}, "prompt is required on /v1/completions"),
    ({"prompt": "", "n": 0}, "prompt is empty"),
    ({"prompt": [1, -2]}, "a prompt given as token ids must hold only nonnegative integers"),
    ({"prompt": [None]}, "each prompt in the array must be a string or an array of token ids; got null"),
])
def test_prompt_error_messages(body: dict[str, Any], message: str) -> None:
    with pytest.raises(LseError) as exc:
        parse_request(body, COMPLETIONS, operator_cap=0)
    assert (exc.value.param, exc.value.message) == ("prompt", message)


@pytest.mark.parametrize("body, kind", [([], "an array"), ("x", "a string"), (None, "null"), (3, "a number")])
def test_body_must_be_an_object(body: Any, kind: str) -> None:
    with pytest.raises(LseError) as exc:
        parse_request(body, CHAT, operator_cap=0)
    assert exc.value.body() == {"error": {
        "message": f"the request body must be a JSON object; got {kind}",
        "type": "invalid_request_error", "param": None, "code": None}}


def test_unknown_endpoint_is_a_programming_error() -> None:
    with pytest.raises(ValueError):
        parse_request({}, "embeddings", operator_cap=0)


# --- effective sampling -------------------------------------------------------------

DEFAULTS = SimpleNamespace(temperature=0.7, top_k=20, top_p=0.8, min_p=0.0,
                           repetition_penalty=1.05, presence_penalty=0.0)


@pytest.mark.parametrize("changes, expected", [
    ({}, SamplingParams(0.7, 20, 0.8, 0.0, 0.0, 1.05)),
    ({"temperature": 0}, SamplingParams(0.0, 20, 0.8, 0.0, 0.0, 1.05)),    # 0 is sent, not unset
    ({"temperature": None, "top_k": 0}, SamplingParams(0.7, 0, 0.8, 0.0, 0.0, 1.05)),
    ({"top_k": -1, "top_p": 1, "min_p": 0.1, "presence_penalty": 1.5},
     SamplingParams(0.7, -1, 1.0, 0.1, 1.5, 1.05)),
    ({"frequency_penalty": 0.5}, SamplingParams(0.7, 20, 0.8, 0.0, 0.0, 1.5)),
    ({"frequency_penalty": 0.5, "repetition_penalty": 1.2}, SamplingParams(0.7, 20, 0.8, 0.0, 0.0, 1.2)),
    ({"frequency_penalty": 0}, SamplingParams(0.7, 20, 0.8, 0.0, 0.0, 1.05)),
    ({"frequency_penalty": -0.5}, SamplingParams(0.7, 20, 0.8, 0.0, 0.0, 1.05)),
    ({"repetition_penalty": 1.0}, SamplingParams(0.7, 20, 0.8, 0.0, 0.0, 1.0)),
])
def test_effective_sampling(changes: dict[str, Any], expected: SamplingParams) -> None:
    assert effective_sampling(parse(CHAT, changes), DEFAULTS) == expected


def test_thinking_in_the_same_pass() -> None:
    """With the model's levels, the thinking fields are checked in the same
    pass as every other field, with the thinking resolver's own errors."""
    from lse.runtime.chat.thinking import CompletionThinking, probe_thinking

    none = probe_thinking(None)
    assert parse_request({"prompt": "hi", "enable_thinking": True}, COMPLETIONS, operator_cap=0,
                         thinking=none).thinking == CompletionThinking(split_reasoning=True)
    with pytest.raises(LseError) as err:
        parse_request({**BASE[CHAT], "enable_thinking": "yes"}, CHAT, operator_cap=0, thinking=none)
    assert (err.value.kind, err.value.param) == ("invalid_thinking", "enable_thinking")
