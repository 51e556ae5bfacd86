"""LSE's real replies against OpenAI's published schemas (tests/openai_schemas)
and against LSE's own protocol types (lse.runtime.openai.protocol).

The engine runs on the host interpreter over the tiny llama fixture (no
iree-compile), so every reply here is a real one: chat and completions,
streamed and whole, with logprobs, echo, scoring, n choices, the /v1/models
list and error envelopes.

Where the published document is stricter than OpenAI's real replies, the
test follows the replies; each exception is in EXCEPTIONS below with why.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from pydantic import TypeAdapter
from referencing import Registry
from referencing.jsonschema import DRAFT202012

from lse.runtime.api import lse_close, lse_model_info, lse_open, lse_request
from lse.runtime.errors import ERROR_TABLE, error_body
from lse.runtime.openai import protocol, replies
from lse.tools.make_fixtures import fixture_dir

DOC = json.loads((Path(__file__).parents[1] / "openai_schemas" / "openai_schemas.json").read_text())


def _nullable(node: Any) -> Any:
    """The document is OpenAPI 3.1 but still writes 3.0's ``nullable: true``
    in places (stream choices' finish_reason and logprobs, logprobs.refusal,
    usage), which JSON Schema ignores; it means "or null", so it is read so."""
    if isinstance(node, list):
        return [_nullable(v) for v in node]
    if not isinstance(node, dict):
        return node
    out = {k: _nullable(v) for k, v in node.items() if k != "nullable"}
    return {"anyOf": [out, {"type": "null"}]} if node.get("nullable") is True else out


def _relax(schemas: dict[str, Any]) -> dict[str, Any]:
    """EXCEPTIONS: where the published schema is stricter than OpenAI's real replies."""
    s = copy.deepcopy(schemas)
    choice = s["CreateCompletionResponse"]["properties"]["choices"]["items"]["properties"]
    # 1. A streamed completion chunk is a CreateCompletionResponse ("text_completion") whose
    #    choices have finish_reason null until their last chunk; OpenAI streams exactly that.
    choice["finish_reason"] = {"anyOf": [choice["finish_reason"], {"type": "null"}]}
    logprobs = choice["logprobs"]["anyOf"][0]["properties"]
    # 2. echo + logprobs: the prompt's first token has no logprob (nothing precedes it), so
    #    token_logprobs[0] and top_logprobs[0] are null, as in OpenAI's own echoed replies.
    logprobs["token_logprobs"]["items"] = {"anyOf": [{"type": "number"}, {"type": "null"}]}
    logprobs["top_logprobs"]["items"] = {"anyOf": [logprobs["top_logprobs"]["items"], {"type": "null"}]}
    return s


def _registry(schemas: dict[str, Any]) -> Registry:
    return Registry().with_resource("openai", DRAFT202012.create_resource({"components": {"schemas": schemas}}))


SCHEMAS = _relax(_nullable(DOC["components"]["schemas"]))
REGISTRY = _registry(SCHEMAS)


def check(name: str, reply: Any, registry: Registry = REGISTRY) -> None:
    schema = {"$ref": f"openai#/components/schemas/{name}"}
    jsonschema.Draft202012Validator(schema, registry=registry).validate(reply)


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
        check("CreateChatCompletionStreamResponse" if chat else "CreateCompletionResponse", c)
        check_protocol(protocol.ChatCompletionChunk if chat else protocol.Completion, c)
    check("CreateChatCompletionResponse" if chat else "CreateCompletionResponse", done)
    check_protocol(protocol.ChatCompletion if chat else protocol.Completion, done)
    if chat:
        for choice in done["choices"]:
            assert choice["message"]["refusal"] is None
            if choice["logprobs"] is not None:
                assert choice["logprobs"]["refusal"] is None
    assert done == replies.fold(endpoint, chunks)


def test_models_list_validates(llama) -> None:
    models = replies.model_list(replies.model_entry_of(lse_model_info(llama), 0))
    check("ListModelsResponse", models)
    check_protocol(protocol.ModelList, models)


@pytest.mark.parametrize("kind", sorted(ERROR_TABLE))
def test_error_envelopes_validate(kind: str) -> None:
    body = error_body(kind, "message", param="field")
    check("ErrorResponse", body)
    check_protocol(protocol.ErrorResponse, body)


@pytest.mark.parametrize("fields", [{"n": 0}, {"reasoning_effort": "extreme"}, {"messages": [
    {"role": "user", "content": "word " * 200}]}], ids=["invalid", "thinking", "context_full"])
def test_a_refused_request_validates(llama, fields: dict) -> None:
    status, body = lse_request(llama, {"messages": CHAT, **fields}, "chat.completions").result()
    assert status == 400
    check("ErrorResponse", body)
    check_protocol(protocol.ErrorResponse, body)


def test_the_exceptions_are_needed() -> None:
    """Each relaxation answers a real difference: the published schema alone
    refuses a streamed completion chunk and an echoed prompt's first token."""
    strict = _registry(_nullable(DOC["components"]["schemas"]))
    logprobs = {"tokens": ["a"], "token_logprobs": [None], "top_logprobs": [None], "text_offset": [0]}
    reply = {"id": "cmpl-1", "object": "text_completion", "created": 1, "model": "m",
             "choices": [{"index": 0, "text": "a", "logprobs": None, "finish_reason": None}]}
    echoed = {**reply, "choices": [{"index": 0, "text": "a", "logprobs": logprobs, "finish_reason": "length"}]}
    for sent in (reply, echoed):
        check("CreateCompletionResponse", sent)
        with pytest.raises(jsonschema.ValidationError):
            check("CreateCompletionResponse", sent, strict)


def test_refusal_is_required() -> None:
    """Why chat messages and chat logprobs carry refusal: null."""
    message = {"role": "assistant", "content": "hi"}
    reply = {"id": "c", "object": "chat.completion", "created": 1, "model": "m",
             "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": "stop"}]}
    with pytest.raises(jsonschema.ValidationError, match="refusal"):
        check("CreateChatCompletionResponse", reply)
    with pytest.raises(Exception, match="refusal"):
        check_protocol(protocol.ChatCompletion, reply)
