"""Reasoning and tool calls split from real compiled output (scripted
fixtures: greedy decoding follows a fixed token chain)."""

from __future__ import annotations

import json

import pytest

from lse.runtime.api import lse_close, lse_open, lse_request
from lse.fixtures.make_fixtures import scripted_fixture_dir

TOOLS = [{"type": "function", "function": {"name": "get_weather", "parameters": {
    "type": "object", "properties": {"city": {"type": "string"}}}}}]


@pytest.fixture(scope="module")
def engines():
    opened = {name: lse_open({"model": str(scripted_fixture_dir(name)), "kv_len": 512})
              for name in ("reasoning", "tool_call", "bad_tool_call")}
    yield opened
    for engine in opened.values():
        lse_close(engine)


def run(engine, stream=False, **fields):
    body = {"messages": [{"role": "user", "content": "hi"}], "temperature": 0, "stream": stream, **fields}
    events = list(lse_request(engine, body).events())
    assert events[-1]["type"] == "done", events[-1]
    return events


def deltas(events):
    return [c["delta"] for e in events if e["type"] == "chunk" for c in e["data"]["choices"] if c.get("delta")]


def test_reasoning_is_split_from_content(engines):
    events = run(engines["reasoning"], stream=True)
    message = events[-1]["data"]["choices"][0]["message"]
    assert message == {"role": "assistant", "content": "Done", "refusal": None, "reasoning_content": "abc"}
    streamed = deltas(events)
    assert "".join(d.get("reasoning_content", "") for d in streamed) == "abc"
    assert "".join(d.get("content", "") for d in streamed) == "Done"
    assert not any("<think>" in d.get("content", "") + d.get("reasoning_content", "") for d in streamed)


@pytest.mark.parametrize("stream", [False, True])
def test_tool_call_becomes_tool_calls(engines, stream):
    events = run(engines["tool_call"], stream=stream, tools=TOOLS)
    choice = events[-1]["data"]["choices"][0]
    assert choice["finish_reason"] == "tool_calls"
    assert choice["message"]["content"] is None
    [call] = choice["message"]["tool_calls"]
    assert call["id"].startswith("call_") and call["type"] == "function"
    assert call["function"]["name"] == "get_weather"
    assert json.loads(call["function"]["arguments"]) == {"city": "Paris"}
    assert any("tool_calls" in d for d in deltas(events))


def test_tool_call_syntax_without_tools_stays_content(engines):
    events = run(engines["tool_call"])
    message = events[-1]["data"]["choices"][0]["message"]
    assert "tool_calls" not in message and message["content"].startswith("<tool_call>")


def test_malformed_tool_call_is_returned_as_content(engines):
    events = run(engines["bad_tool_call"], tools=TOOLS)
    choice = events[-1]["data"]["choices"][0]
    assert choice["finish_reason"] == "stop"
    assert choice["message"]["content"] == '<tool_call>\n{"name": get_weather}\n</tool_call>'
