"""Streamed usage is reported once (issue #44): with stream_options.include_usage
OpenAI's shape (every chunk "usage": null, then one chunk with choices [] and
the usage); without it the usage rides on the final chunk (the seed's shape,
openai-compatible-api.md § Streaming). A client that adds up every usage it
sees (LangChain's stream_usage, pydantic-ai) then counts the reply once.

The engine runs on the host interpreter over the tiny llama fixture (no
iree-compile); the spec kit's checks are run over the same chunks."""

from __future__ import annotations

import json

import pytest

from lse.runtime.api import lse_close, lse_open, lse_request
from lse.spec import checks_limits, checks_stream
from lse.spec.checks import CheckFailed
from lse.spec.client import DONE, Stream
from lse.fixtures.make_fixtures import fixture_dir

BODIES = {
    # greedy, so each reply is the same 3 tokens, none of them a stop token
    "chat.completions": {"messages": [{"role": "user", "content": "hi there"}], "max_tokens": 3, "stream": True,
                         "temperature": 0},
    "completions": {"prompt": "hello", "max_tokens": 3, "stream": True, "temperature": 0},
}


@pytest.fixture(scope="module")
def llama():
    engine = lse_open({"model": str(fixture_dir("llama")), "kv_len": 96, "pool": ["cpu:0"]})
    yield engine
    lse_close(engine)


def streamed(engine, endpoint: str, include_usage: bool | None) -> tuple[list[dict], dict]:
    body = dict(BODIES[endpoint])
    if include_usage is not None:
        body["stream_options"] = {"include_usage": include_usage}
    chunks, done = [], None
    for ev in lse_request(engine, body, endpoint).events():
        assert ev["type"] != "error", ev
        if ev["type"] == "chunk":
            chunks.append(ev["data"])
        else:
            done = ev["data"]
    return chunks, done


@pytest.mark.parametrize("endpoint", sorted(BODIES))
def test_include_usage_is_openais_shape(llama, endpoint):
    chunks, done = streamed(llama, endpoint, True)
    *rest, last = chunks
    assert all("usage" in c and c["usage"] is None for c in rest), [c.get("usage", "absent") for c in rest]
    assert last["choices"] == [] and last["usage"] == done["usage"]
    assert last["usage"]["completion_tokens"] == 3
    final = rest[-1]  # the finish_reason chunk keeps LSE's extras, usage null
    assert final["choices"][0]["finish_reason"] == "length"
    assert final["usage"] is None and final["lse_context"] == done["lse_context"] and "timings" in final
    assert sum(c["usage"]["completion_tokens"] for c in chunks if c.get("usage")) == 3


@pytest.mark.parametrize("include_usage", [None, False])
@pytest.mark.parametrize("endpoint", sorted(BODIES))
def test_without_include_usage_the_final_chunk_carries_it(llama, endpoint, include_usage):
    chunks, done = streamed(llama, endpoint, include_usage)
    with_usage = [c for c in chunks if "usage" in c]
    assert with_usage == [chunks[-1]]
    assert chunks[-1]["choices"][0]["finish_reason"] == "length"
    assert chunks[-1]["usage"] == done["usage"] and done["usage"]["completion_tokens"] == 3


def kit_stream(chunks: list[dict]) -> Stream:
    return Stream(200, {"content-type": "text/event-stream"}, events=[json.dumps(c) for c in chunks] + [DONE],
                  chunks=chunks)


@pytest.mark.parametrize("include_usage", [True, False])
def test_the_kits_checks_pass_on_the_engines_streams(llama, include_usage):
    stream = kit_stream(streamed(llama, "chat.completions", include_usage)[0])
    checks_stream.final_chunk_extras(stream, include_usage)
    checks_limits.usage_chunk_as_asked(stream, include_usage)


USAGE = {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}
CTX = {"tokens_used": 5, "context_length": 512, "tokens_remaining": 507}
TIMINGS = {"prompt_n": 3, "predicted_n": 2}


def finish_chunk(**extra) -> dict:
    return {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "m",
            "choices": [{"index": 0, "delta": {}, "finish_reason": "stop", "stop_reason": "stop_token"}], **extra}


def usage_chunk() -> dict:
    return {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "m", "choices": [],
            "usage": USAGE}


TWICE = [finish_chunk(usage=USAGE, lse_context=CTX, timings=TIMINGS), usage_chunk()]  # the bug's shape
NO_NULL = [finish_chunk(lse_context=CTX, timings=TIMINGS), usage_chunk()]  # "usage" absent, not null


@pytest.mark.parametrize("check,chunks", [
    (checks_limits.usage_chunk_as_asked, TWICE),
    (checks_stream.final_chunk_extras, TWICE),
    (checks_limits.usage_chunk_as_asked, NO_NULL),
    (checks_stream.final_chunk_extras, NO_NULL),
], ids=["twice-count", "twice-final", "no-null-count", "no-null-final"])
def test_the_kit_refuses_usage_counted_twice_or_not_null(check, chunks):
    with pytest.raises(CheckFailed):
        check(kit_stream(chunks), True)
