"""LSE's real replies against the ``openai`` SDK's reply types and against
LSE's own protocol types (lse.runtime.openai.protocol).

The SDK's types (``openai.types``) are generated from OpenAI's OpenAPI
document, so they stand in for the published schemas. They are read
strictly: pydantic's strict mode coerces nothing ("1" or 1.0 is not an
int) and refuses a missing key the SDK declares without a default. Two
things the SDK cannot say, LSE's protocol types say instead: its models
accept extra keys, and a key OpenAI requires but allows to be null (a chat
message's ``refusal``, a choice's ``logprobs``, an error's ``param``) is an
``Optional`` with a default there, so its absence passes. The error
envelope has no SDK type; the SDK reads ``body["error"]`` as its
``ErrorObject`` (``openai._client.OpenAI._make_status_error``), so that is
what is checked, and the envelope itself against the protocol.

The engine runs on the host interpreter over the tiny llama fixture (no
iree-compile), so every reply here is a real one: chat and completions,
streamed and whole, with logprobs, echo, scoring, n choices, the /v1/models
list and error envelopes.

Where the SDK's types are stricter than OpenAI's real replies, the test
follows the replies; each exception is a subclass below with why.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
from openai.pagination import SyncPage
from openai.types import Completion, ErrorObject, Model
from openai.types.chat import ChatCompletion, ChatCompletionChunk
from openai.types.completion_choice import CompletionChoice, Logprobs
from pydantic import TypeAdapter, ValidationError

from lse.runtime.api import lse_close, lse_model_info, lse_open, lse_request
from lse.runtime.errors import ERROR_TABLE, error_body
from lse.runtime.openai import protocol, replies
from lse.fixtures.make_fixtures import fixture_dir

# ---- EXCEPTIONS: where the SDK's types are stricter than OpenAI's real replies ----
# test_the_exceptions_are_needed shows the SDK's own types refuse each.

FinishReason = CompletionChoice.model_fields["finish_reason"].annotation


class EchoedLogprobs(Logprobs):
    # 2. echo + logprobs: the prompt's first token has no logprob (nothing precedes it), so
    #    token_logprobs[0] and top_logprobs[0] are null, as in OpenAI's own echoed replies.
    token_logprobs: list[float | None] | None = None
    top_logprobs: list[dict[str, float] | None] | None = None


class StreamedCompletionChoice(CompletionChoice):
    # 1. A streamed completion chunk is a Completion ("text_completion") whose choices have
    #    finish_reason null until their last chunk; OpenAI streams exactly that. (The SDK's
    #    client reads each chunk as a Completion but validates nothing by default.)
    finish_reason: FinishReason | None
    logprobs: EchoedLogprobs | None = None


class CompletionReply(Completion):
    choices: list[StreamedCompletionChoice]


def check(kind: Any, reply: Any) -> None:
    """The reply fits the SDK's type, strictly: nothing coerced, no declared key missing."""
    TypeAdapter(kind).validate_python(reply, strict=True)


def check_protocol(kind: Any, reply: Any) -> None:
    """The reply fits LSE's own declaration of it (lse.runtime.openai.protocol)."""
    TypeAdapter(kind).validate_python(reply, strict=True)


@pytest.fixture(scope="module")
def llama():
    engine = lse_open({"model": str(fixture_dir("llama")), "kv_len": 96, "pool": ["cpu:0"]})
    yield engine
    lse_close(engine)


def events(engine, body: dict, endpoint: str) -> tuple[list[dict], dict]:
    chunks, done = [], None
    for ev in lse_request(engine, body, endpoint).events():
        assert ev["type"] != "error", ev
        if ev["type"] == "chunk":
            chunks.append(ev["data"])
        else:
            done = ev["data"]
    return chunks, done


CHAT = [{"role": "user", "content": "hi there"}]
REQUESTS = [
    ("chat.completions", {"messages": CHAT, "max_tokens": 4}),
    ("chat.completions", {"messages": CHAT, "max_tokens": 4, "n": 2, "seed": 1, "logprobs": True,
                          "top_logprobs": 3}),
    ("chat.completions", {"messages": CHAT, "max_tokens": 3, "stream": True,
                          "stream_options": {"include_usage": True}, "logprobs": True}),
    ("completions", {"prompt": "hello", "max_tokens": 4}),
    ("completions", {"prompt": ["a b", "c"], "max_tokens": 3, "logprobs": 2, "echo": True}),
    ("completions", {"prompt": "hello world", "max_tokens": 0, "logprobs": 1, "echo": True}),  # scoring
    ("completions", {"prompt": "hello", "max_tokens": 3, "stream": True, "logprobs": 1}),
]


@pytest.mark.parametrize("endpoint, body", REQUESTS, ids=lambda x: x if isinstance(x, str) else "-".join(x))
def test_replies_validate_against_openai_and_protocol(llama, endpoint: str, body: dict) -> None:
    chunks, done = events(llama, body, endpoint)
    chat = endpoint == "chat.completions"
    for c in chunks:
        check(ChatCompletionChunk if chat else CompletionReply, c)
        check_protocol(protocol.ChatCompletionChunk if chat else protocol.Completion, c)
    check(ChatCompletion if chat else CompletionReply, done)
    check_protocol(protocol.ChatCompletion if chat else protocol.Completion, done)
    if chat:
        for choice in done["choices"]:
            assert choice["message"]["refusal"] is None
            if choice["logprobs"] is not None:
                assert choice["logprobs"]["refusal"] is None
    assert done == replies.fold(endpoint, chunks)


def test_models_list_validates(llama) -> None:
    models = replies.model_list(replies.model_entry_of(lse_model_info(llama), 0))
    check(SyncPage[Model], models)  # what client.models.list() reads the reply as
    check_protocol(protocol.ModelList, models)


@pytest.mark.parametrize("kind", sorted(ERROR_TABLE))
def test_error_envelopes_validate(kind: str) -> None:
    body = error_body(kind, "message", param="field")
    check(ErrorObject, body["error"])
    check_protocol(protocol.ErrorResponse, body)


@pytest.mark.parametrize("fields", [{"n": 0}, {"reasoning_effort": "extreme"}, {"messages": [
    {"role": "user", "content": "word " * 200}]}], ids=["invalid", "thinking", "context_full"])
def test_a_refused_request_validates(llama, fields: dict) -> None:
    status, body = lse_request(llama, {"messages": CHAT, **fields}, "chat.completions").result()
    assert status == 400
    check(ErrorObject, body["error"])
    check_protocol(protocol.ErrorResponse, body)


def test_the_exceptions_are_needed() -> None:
    """Each relaxation answers a real difference: the SDK's Completion alone
    refuses a streamed completion chunk and an echoed prompt's first token."""
    logprobs = {"tokens": ["a"], "token_logprobs": [None], "top_logprobs": [None], "text_offset": [0]}
    reply = {"id": "cmpl-1", "object": "text_completion", "created": 1, "model": "m",
             "choices": [{"index": 0, "text": "a", "logprobs": None, "finish_reason": None}]}
    echoed = {**reply, "choices": [{"index": 0, "text": "a", "logprobs": logprobs, "finish_reason": "length"}]}
    for sent, where in ((reply, "finish_reason"), (echoed, "token_logprobs")):
        check(CompletionReply, sent)
        with pytest.raises(ValidationError, match=where):
            check(Completion, sent)


CHAT_REPLY = {"id": "c", "object": "chat.completion", "created": 1, "model": "m",
              "choices": [{"index": 0, "message": {"role": "assistant", "content": "hi", "refusal": None},
                           "logprobs": None, "finish_reason": "stop"}]}


def _mutated(path: tuple, value: Any = None, drop: bool = False) -> dict:
    reply = copy.deepcopy(CHAT_REPLY)
    *parents, key = path
    node = reply
    for p in parents:
        node = node[p]
    if drop:
        del node[key]
    else:
        node[key] = value
    return reply


@pytest.mark.parametrize("path, value, drop", [
    (("choices", 0, "message", "role"), None, True),  # a key the SDK declares without a default
    (("created",), "1", False),  # lax validation would read "1" as 1
    (("created",), 1.0, False),  # lax validation and JSON Schema both take 1.0 as an integer
    (("choices", 0, "index"), True, False),  # lax validation would read True as 1
], ids=["no-role", "created-str", "created-float", "index-bool"])
def test_the_check_is_strict(path: tuple, value: Any, drop: bool) -> None:
    check(ChatCompletion, CHAT_REPLY)
    with pytest.raises(ValidationError):
        check(ChatCompletion, _mutated(path, value, drop))


def test_refusal_is_required() -> None:
    """Why chat messages carry refusal: null. OpenAI's OpenAPI document lists
    refusal among ChatCompletionResponseMessage's required keys (nullable);
    the SDK generated from it makes it ``Optional[str] = None``, so only the
    protocol can hold LSE to it."""
    reply = _mutated(("choices", 0, "message", "refusal"), drop=True)
    check(ChatCompletion, reply)
    with pytest.raises(ValidationError, match="refusal"):
        check_protocol(protocol.ChatCompletion, reply)
