"""The tokenizer routes get the completion routes' bounds and errors, and no
request's preparation runs on the event loop or queues everyone's (#44)."""

from __future__ import annotations

import asyncio
import threading
from types import SimpleNamespace

import pytest
from api_fake_engine import CHAT, FakeRuntime, assert_error, reply_events, run
from test_special_tokens import engine_for

from lse.api import prepare_pools
from lse.runtime.errors import LseError
from lse.runtime.tokens import detokenize, tokenize


@pytest.fixture(scope="module")
def engine():
    ctx = engine_for("smollm_like")
    return SimpleNamespace(tokenizer=ctx.tokenizer, prompts=ctx.prompts, kv_len=ctx.context_length,
                           cfg=SimpleNamespace(vocab_size=ctx.vocab_size))


@pytest.mark.parametrize("name", ["content", "prompt"])
def test_tokenize_refuses_a_lone_surrogate_with_a_400(engine, name: str) -> None:
    with pytest.raises(LseError) as err:
        tokenize(engine, {name: "ab\ud800"})
    e = err.value
    assert (e.status, e.kind, e.param) == (400, "invalid_request", name)
    assert "lone surrogate (\\ud800)" in e.message


def test_tokenize_refuses_a_text_no_prompt_could_be_before_tokenizing(engine, monkeypatch) -> None:
    limit = engine.kv_len * engine.prompts.chars_per_token
    monkeypatch.setattr(engine, "tokenizer", None)  # tokenizing would fail the test
    with pytest.raises(LseError) as err:
        tokenize(engine, {"content": "a" * (limit + 1)})
    e = err.value
    assert (e.status, e.kind, e.param) == (400, "context_full", "content")
    assert e.extra["lse_context"]["context_length"] == engine.kv_len


def test_tokenize_at_the_bound_and_detokenize_up_to_the_context(engine) -> None:
    assert tokenize(engine, {"content": "hello"})["tokens"] == engine.tokenizer.encode("hello").ids
    assert detokenize(engine, {"tokens": [0] * engine.kv_len})["content"] == engine.tokenizer.decode(
        [0] * engine.kv_len, skip_special_tokens=False)
    with pytest.raises(LseError) as err:
        detokenize(engine, {"tokens": [0] * (engine.kv_len + 1)})
    assert (err.value.status, err.value.param) == (400, "tokens")
    assert f"at most {engine.kv_len} ids" in err.value.message


def test_tokenizer_bodies_and_replies_are_serialized_on_the_prepare_pool(monkeypatch) -> None:
    threads: list[str] = []
    real_dumps, real_parse = prepare_pools.dumps, prepare_pools.parse_json_object

    def dumps(obj):
        threads.append(threading.current_thread().name)
        return real_dumps(obj)

    def parse(data):
        threads.append(threading.current_thread().name)
        return real_parse(data)

    monkeypatch.setattr(prepare_pools, "dumps", dumps)
    monkeypatch.setattr(prepare_pools, "parse_json_object", parse)

    async def scenario(client, runtime, app):
        assert (await client.post("/tokenize", json={"content": "ab"})).json() == {"tokens": [97, 98]}
        assert_error(await client.post("/tokenize", content=b"{x", headers={"content-type": "application/json"}),
                     400, "invalid_request_error", "invalid_json")
    run(scenario)
    assert len(threads) == 3 and all(t.startswith("lse-prepare") for t in threads), threads


def test_a_large_body_is_prepared_apart_from_small_ones() -> None:
    """A body past HEAVY_BODY_BYTES whose preparation blocks leaves a small
    request's preparation free to run."""
    release = threading.Event()
    large = {**CHAT, "messages": [{"role": "user", "content": "x" * (prepare_pools.HEAVY_BODY_BYTES + 1)}]}

    def script(body, endpoint):
        if body["messages"][0]["content"].startswith("x"):
            assert release.wait(10)
        return reply_events(["ok"])

    async def scenario(client, runtime, app):
        slow = asyncio.ensure_future(client.post("/v1/chat/completions", json=large))
        await asyncio.sleep(0.05)
        fast = await asyncio.wait_for(client.post("/v1/chat/completions", json=CHAT), 5)
        assert fast.status_code == 200 and not slow.done()
        release.set()
        assert (await slow).status_code == 200
    try:
        run(scenario, FakeRuntime(script))
    finally:
        release.set()


def test_a_prompt_array_is_refused_at_the_first_prompt_that_cannot_fit(monkeypatch) -> None:
    from dataclasses import replace

    from lse.runtime.prepare import prepare_request

    model = replace(engine_for("smollm_like"), context_length=64)
    encoded: list[int] = []
    real = model.prompts.text_only.encode_batch

    class Counting:
        def encode_batch(self, texts, *args, **kw):
            encoded.extend(len(t) for t in texts)
            return real(texts, *args, **kw)

    monkeypatch.setattr(model.prompts, "text_only", Counting())
    too_long = "a b " * 100  # 400 characters (within the character bound), 200 tokens
    with pytest.raises(LseError) as err:
        prepare_request(model, {"prompt": ["ok", too_long, too_long, "fine"]}, "completions")
    e = err.value
    assert (e.status, e.kind, e.param) == (400, "context_full", "prompt")
    assert encoded == [2, 400]  # the third and fourth prompts were never tokenized


@pytest.mark.parametrize("key", ["add_generation_prompt", "messages", "tools", "tool_choice"])
def test_a_reserved_chat_template_kwarg_is_a_400_naming_it(key: str) -> None:
    from lse.runtime.prepare import prepare_request

    body = {"messages": [{"role": "user", "content": "hi"}], "chat_template_kwargs": {key: False, "x": 1}}
    with pytest.raises(LseError) as err:
        prepare_request(engine_for("smollm_like"), body, "chat.completions")
    e = err.value
    assert (e.status, e.kind, e.param) == (400, "invalid_request", f"chat_template_kwargs.{key}")
    assert e.message.startswith(f"chat_template_kwargs.{key} is set by LSE from the request")


def test_other_chat_template_kwargs_reach_the_template() -> None:
    from lse.runtime.prepare import prepare_request

    body = {"messages": [{"role": "user", "content": "hi"}], "chat_template_kwargs": {"custom_flag": True}}
    seqs, *_ = prepare_request(engine_for("smollm_like"), body, "chat.completions")
    assert seqs[0].prompt_ids
