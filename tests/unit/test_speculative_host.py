"""Speculative decoding on the host interpreter (pool cpu:0) over a fixture:
the stream's chunks, greedy and seeded sampled token ids are plain decoding's.
A random fixture's replies rarely repeat their prompts, so the drafts come
from an oracle: the plain reply itself, every fifth token wrong, so that
verification steps accept runs and reject inside them on the real kernels."""

from __future__ import annotations

import pytest

from lse.runtime.api import lse_close, lse_open, lse_request, lse_status
from lse.runtime.ngram import NgramIndex
from lse.fixtures.make_fixtures import fixture_dir

ECHO = "Repeat: the cat sat on the mat, the cat sat on the mat"


def _stream(engine, body: dict) -> tuple[list, list[int], list[int]]:
    handle = lse_request(engine, {**body, "stream": True})
    chunks = [e["data"] for e in handle.events() if e["type"] == "chunk"]
    parts = [(c["choices"][0].get("delta"), c["choices"][0].get("finish_reason"), c["choices"][0].get("logprobs"))
             for c in chunks if c["choices"]]
    seq = handle._request.seqs[0]
    return parts, list(seq.generated), list(seq.prompt_ids)


def _oracle(prompt: list[int], reply: list[int]):
    def propose(index: NgramIndex, k: int, min_n: int = 2) -> list[int]:
        done = len(index.tokens) - len(prompt)
        return [t + 1 if (done + i) % 5 == 4 else t for i, t in enumerate(reply[done:done + k])]
    return propose


@pytest.fixture(scope="module")
def engines():
    config = {"model": str(fixture_dir("smollm_like")), "kv_len": 160, "pool": ["cpu:0"]}
    opened = {mode: lse_open({**config, "speculative": mode}) for mode in ("off", "ngram")}
    yield opened
    for e in opened.values():
        lse_close(e)


@pytest.mark.parametrize("fields", [
    {"temperature": 0},
    {"temperature": 0.8, "top_p": 0.9, "seed": 11, "presence_penalty": 0.5},
    {"temperature": 1.0, "top_k": 40, "seed": 5, "stop": ["the m"], "logprobs": True, "top_logprobs": 2},
], ids=["greedy", "sampled", "stop_logprobs"])
def test_streams_and_tokens_are_plain_decodings(engines, fields, monkeypatch) -> None:
    body = {"messages": [{"role": "user", "content": ECHO}], "max_tokens": 40, **fields}
    want = _stream(engines["off"], body)
    monkeypatch.setattr(NgramIndex, "propose", _oracle(want[2], want[1]))
    before = dict(lse_status(engines["ngram"])["engine"]["speculative"])
    got = _stream(engines["ngram"], body)
    assert got[1] == want[1]
    if "logprobs" not in fields:  # logprob values differ in the last digits between the prompt path and decode's
        assert got[0] == want[0]
    else:
        assert [p[:2] for p in got[0]] == [p[:2] for p in want[0]]
    after = lse_status(engines["ngram"])["engine"]["speculative"]
    assert after["accepted"] - before["accepted"] >= len(want[1]) // 3  # runs were accepted
    assert after["proposed"] - after["accepted"] > before["proposed"] - before["accepted"]  # and rejected
