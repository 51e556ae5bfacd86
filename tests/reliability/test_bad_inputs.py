"""The bad-input battery, as data: each row is a body (or raw bytes) sent to a
live server and the one status and param it must get, streamed or not."""

from __future__ import annotations

import json

import httpx
import pytest
from conftest import QUEUE

USER = [{"role": "user", "content": "hi"}]
HUGE = "a " * 3_900_000  # 7.8 MB: under --max-body-bytes, far past any context

# (id, path, body or raw bytes, status, param)
ROWS = [
    ("surrogate-content", "/v1/chat/completions", {"messages": [{"role": "user", "content": "\ud800"}]}, 400,
     "messages[0].content"),
    ("surrogate-model", "/v1/chat/completions", {"model": "\udfff", "messages": USER}, 400, "model"),
    ("surrogate-prompt", "/v1/completions", {"prompt": "x\ud800"}, 400, "prompt"),
    ("surrogate-tool-name", "/v1/chat/completions", {"messages": [{"role": "user", "content": "a", "name": "\ud800"}]},
     400, "messages[0].name"),
    ("n-times-prompts-above-queue", "/v1/completions", {"prompt": ["a", "b"], "n": QUEUE}, 400, "n"),
    ("prompts-above-queue", "/v1/completions", {"prompt": ["a"] * (QUEUE + 1)}, 400, "prompt"),
    ("chat-n-above-queue", "/v1/chat/completions", {"messages": USER, "n": QUEUE + 1}, 400, "n"),
    ("8000-prompts", "/v1/completions", {"prompt": ["hello"] * 8000, "max_tokens": 1}, 400, "prompt"),
    ("huge-message", "/v1/chat/completions", {"messages": [{"role": "user", "content": HUGE}]}, 400, "messages"),
    ("huge-prompt", "/v1/completions", {"prompt": HUGE}, 400, "prompt"),
    ("token-id-out-of-vocab", "/v1/completions", {"prompt": [10**9]}, 400, "prompt"),
    ("negative-max-tokens", "/v1/chat/completions", {"messages": USER, "max_tokens": -1}, 400, "max_tokens"),
    ("nan", "/v1/chat/completions", b'{"messages": [{"role": "user", "content": "a"}], "temperature": NaN}', 400,
     None),
    ("not-json", "/v1/chat/completions", b"{", 400, None),
    ("not-utf8", "/v1/chat/completions", b'{"messages": "\xff"}', 400, None),
    ("array-body", "/v1/completions", b"[]", 400, None),
    ("deep-nesting", "/v1/chat/completions", b"[" * 100_000, 400, None),
    ("too-large", "/v1/completions", b'{"prompt": "' + b"a" * (9 * 1024 * 1024) + b'"}', 413, None),
    ("bad-role", "/v1/chat/completions", {"messages": [{"role": "robot", "content": "a"}]}, 400, "messages"),
    ("parse-special-not-bool", "/v1/completions", {"prompt": "a", "parse_special": "yes"}, 400, "parse_special"),
    # #44: the tokenizer routes' bounds, reserved template variables, a pattern no lexer should build
    ("tokenize-surrogate", "/tokenize", {"content": "ab\ud800"}, 400, "content"),
    ("tokenize-huge", "/tokenize", {"content": HUGE}, 400, "content"),
    ("detokenize-past-the-context", "/detokenize", {"tokens": [1] * 100_000}, 400, "tokens"),
    ("template-kwargs-reserved", "/v1/chat/completions", {"messages": USER, "chat_template_kwargs": {"tools": []}},
     400, "chat_template_kwargs.tools"),
    ("pattern-past-the-bound", "/v1/chat/completions", {"messages": USER, "response_format": {
        "type": "json_schema", "json_schema": {"name": "x", "schema": {"type": "string", "pattern": "^a{1000000}$"}}}},
     400, "response_format"),
]


def _send(http: httpx.Client, path: str, body, stream: bool) -> httpx.Response:
    if isinstance(body, bytes):
        return http.post(path, content=body, headers={"content-type": "application/json"})
    return http.post(path, content=json.dumps({**body, "stream": stream}).encode(),
                     headers={"content-type": "application/json"})


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("row", ROWS, ids=[r[0] for r in ROWS])
def test_bad_input_gets_its_status_and_param(server, figures, row, stream):
    _, path, body, status, param = row
    base_url, _ = server
    with httpx.Client(base_url=base_url, timeout=60) as http:
        response = _send(http, path, body, stream)
    assert response.status_code == status, response.text[:500]
    assert response.headers["content-type"] == "application/json"
    assert response.json()["error"]["param"] == param
    figures["battery_requests"] = figures.get("battery_requests", 0) + 1
