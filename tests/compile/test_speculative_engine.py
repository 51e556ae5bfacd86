"""Speculative decoding on compiled modules (--speculative ngram): the same
token ids as plain decoding, greedy and seeded sampled, on a fixture, the
default model and the Gemma 3 architecture's GGUF file, alone and beside
other streams, while drafts were accepted."""

from __future__ import annotations

import threading

import pytest

from lse.runtime.api import lse_close, lse_open, lse_request, lse_status
from lse.runtime.ngram import NgramIndex
from lse.fixtures.make_arch_fixtures import arch_gguf_path
from lse.fixtures.make_fixtures import fixture_dir

PASSAGE = ("The committee met on Tuesday to review the budget. It approved the new library, the road repairs "
           "and the school lunch program, and it asked the mayor to report on the park by June.")
COPY = f"Repeat this paragraph exactly, changing Tuesday to Friday:\n\n{PASSAGE}"
# On the random fixture this prompt's reply drafts (and mostly rejects) from the start.
ECHO = "Repeat: the cat sat on the mat, the cat sat on the mat"
CODE = "def add(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a * b\n"


def _body(content: str, max_tokens: int, **fields) -> dict:
    return {"messages": [{"role": "user", "content": content}], "temperature": 0, "max_tokens": max_tokens,
            **fields}


def _run(engine, bodies: list[dict]) -> list[tuple[list[int], str, str]]:
    """Submit ``bodies`` together; each reply's (token ids, content, stop_reason)."""
    handles = [lse_request(engine, b) for b in bodies]
    results: dict[int, tuple] = {}

    def wait(i: int) -> None:
        status, reply = handles[i].result()
        assert status == 200, reply
        choice = reply["choices"][0]
        results[i] = (handles[i]._request.seqs[0].generated, choice["message"]["content"], choice["stop_reason"])
    threads = [threading.Thread(target=wait, args=(i,)) for i in range(len(handles))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=600)
    return [results[i] for i in range(len(bodies))]


def _both(config: dict, bodies: list[dict], max_streams: int = 1):
    plain = lse_open({**config, "speculative": "off"})
    try:
        want = _run(plain, bodies)
    finally:
        lse_close(plain)
    spec = lse_open({**config, "speculative": "ngram"})
    try:
        spec.scheduler.speculator.max_streams = max_streams
        got = _run(spec, bodies)
        status = lse_status(spec)["engine"]["speculative"]
    finally:
        lse_close(spec)
    return want, got, status


def test_fixture_greedy_output_is_plain_decodings():
    config = {"model": str(fixture_dir("smollm_like")), "kv_len": 256, "parallel": 1}
    want, got, status = _both(config, [_body(ECHO, 48)])
    assert got == want
    assert status["mode"] == "ngram" and status["steps"] > 0
    want, got, _ = _both(config, [_body(COPY, 32)])
    assert got == want


def test_fixture_streams_batched_with_speculating_ones_keep_their_tokens():
    config = {"model": str(fixture_dir("smollm_like")), "kv_len": 256, "parallel": 3}
    bodies = [_body(ECHO, 40), _body(CODE, 30), _body("hi", 12, lse_speculative=False)]
    want, got, status = _both(config, bodies, max_streams=3)
    assert got == want
    assert status["steps"] > 0


SCHEMA = {"type": "object", "properties": {"name": {"type": "string"}, "quote": {"type": "string"}},
          "required": ["name", "quote"], "additionalProperties": False}


@pytest.mark.parametrize("content,fields", [
    (COPY, {}),
    (f"Fix the bug in this function:\n\n{CODE}", {}),
    (COPY, {"temperature": 0.7, "top_p": 0.9, "seed": 3, "repetition_penalty": 1.05}),
    ('Maria Gonzalez said: "I will sail to the island of Chiloe next summer with my brother and his two dogs." '
     "Give her name and her words, exactly, as JSON with the fields name and quote.", {"response_format": {"type": "json_schema", "json_schema": {"name": "p", "schema": SCHEMA}}}),
], ids=["copy", "bugfix", "sampled", "json_schema"])
def test_default_model_output_is_plain_decodings(content, fields):
    want, got, status = _both({"model": None, "kv_len": 512, "parallel": 1}, [_body(content, 64, **fields)])
    assert got == want
    assert status["accepted"] > 0  # the json case too: a draft taken under the grammar's mask


def _oracle(prompt: list[int], reply: list[int]):
    """Drafts from the plain reply itself, every fifth token wrong: the
    verification accepts runs and rejects inside them, whatever the model."""
    def propose(index: NgramIndex, k: int, min_n: int = 2) -> list[int]:
        done = len(index.tokens) - len(prompt)
        return [t + 1 if (done + i) % 5 == 4 else t for i, t in enumerate(reply[done:done + k])]
    return propose


def test_gemma3_gguf_with_forced_drafts_keeps_plain_tokens(monkeypatch):
    """The Gemma 3 architecture (its GGUF file, served by lse_open), drafts
    forced so that every step verifies, greedy and seeded sampled."""
    config = {"model": str(arch_gguf_path("gemma3")), "kv_len": 128, "parallel": 1}
    bodies = [{"prompt": "one two three four one two three four one two", "max_tokens": 24, "temperature": 0},
              {"prompt": "the river runs to the sea and the river", "max_tokens": 24, "temperature": 0.9,
               "seed": 4}]
    for body in bodies:
        plain = lse_open({**config, "speculative": "off"})
        try:
            handle = lse_request(plain, body, "completions")
            status, want = handle.result()
            seq = handle._request.seqs[0]
            want_ids, prompt = list(seq.generated), list(seq.prompt_ids)
        finally:
            lse_close(plain)
        monkeypatch.setattr(NgramIndex, "propose", _oracle(prompt, want_ids))
        spec = lse_open({**config, "speculative": "ngram"})
        try:
            handle = lse_request(spec, body, "completions")
            status2, got = handle.result()
            counts = lse_status(spec)["engine"]["speculative"]
        finally:
            lse_close(spec)
        monkeypatch.undo()
        assert (status, status2) == (200, 200)
        assert list(handle._request.seqs[0].generated) == want_ids
        assert got["choices"][0]["text"] == want["choices"][0]["text"]
        assert counts["accepted"] >= len(want_ids) // 3 and counts["proposed"] > counts["accepted"]
