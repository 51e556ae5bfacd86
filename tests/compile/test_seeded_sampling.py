"""A seeded reply on the default model depends on nothing but the request
(#44): not on the prefix cache, the stream flag, other requests in the
batch, or the number of choices. The first request below prefills its whole
prompt in the GEMM path; the later ones reuse the cached prefix and feed the
last prompt token as a decode row, whose logits round differently."""

from __future__ import annotations

import threading

import pytest

from lse.runtime.api import lse_close, lse_open, lse_request

HELLO = {"messages": [{"role": "user", "content": "Hello"}], "max_tokens": 6, "temperature": 1.0}


@pytest.fixture(scope="module")
def engine():
    engine = lse_open({"model": None, "parallel": 2})
    yield engine
    lse_close(engine)


def _content(engine, body: dict) -> tuple[str, int]:
    status, reply = lse_request(engine, body).result()
    assert status == 200, reply
    return reply["choices"][0]["message"]["content"], reply["usage"]["prompt_tokens_details"]["cached_tokens"]


def _streamed_content(engine, body: dict) -> str:
    handle = lse_request(engine, {**body, "stream": True})
    parts = [c["delta"].get("content") or "" for e in handle.events() if e["type"] == "chunk"
             for c in e["data"]["choices"]]
    return "".join(parts)


@pytest.mark.parametrize("seed", [1234, 7, 99])
def test_a_seeded_reply_is_the_same_with_and_without_the_prefix_cache(engine, seed):
    body = {**HELLO, "seed": seed, "messages": [{"role": "user", "content": f"Hello number {seed}"}]}
    replies = [_content(engine, body) for _ in range(4)]
    # the first prefills past the shared system prompt; the rest reuse all but the last token
    assert replies[0][1] < min(cached for _, cached in replies[1:])
    assert len({text for text, _ in replies}) == 1, replies


def test_a_seeded_reply_is_the_same_streamed_batched_and_as_choice_zero(engine):
    body = {**HELLO, "seed": 4321}
    want, _ = _content(engine, body)
    assert _streamed_content(engine, body) == want
    status, two = lse_request(engine, {**body, "n": 2}).result()
    assert status == 200 and two["choices"][0]["message"]["content"] == want

    # beside another stream that decodes the whole time
    other = lse_request(engine, {"messages": [{"role": "user", "content": "Tell me a long story"}],
                                 "max_tokens": 64, "temperature": 0, "stream": True})
    started = threading.Event()

    def drain() -> None:
        for _ in other.events():
            started.set()
    reader = threading.Thread(target=drain)
    reader.start()
    started.wait(60)
    try:
        assert _content(engine, body)[0] == want
    finally:
        reader.join(120)
