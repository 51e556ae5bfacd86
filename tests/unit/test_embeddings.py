"""POST /v1/embeddings' engine side and body: the pooled, normalised final
hidden states of the host interpreter equal the numpy reference's, and every
documented body error has its status, code and param."""

from __future__ import annotations

import base64
import json

import numpy as np
import pytest
from openai.types import CreateEmbeddingResponse, Embedding, ErrorObject
from pydantic import TypeAdapter, ValidationError

from lse.runtime import scheduler
from lse.runtime.api import LseStartupError, lse_close, lse_embed, lse_open, lse_request, lse_request_json
from lse.runtime.embeddings.body import MAX_INPUTS
from lse.runtime.embeddings.pooling import choose_pooling, encode, model_pooling, normalize, pool
from lse.runtime.errors import LseError
from lse.runtime.reference import ReferenceModel
from lse.fixtures.make_fixtures import fixture_dir

KV = 96


@pytest.fixture(scope="module")
def model_dir():
    return fixture_dir("llama")


@pytest.fixture(scope="module")
def reference(model_dir):
    return ReferenceModel.from_dir(model_dir)


@pytest.fixture(scope="module")
def engine(model_dir):
    e = lse_open({"model": str(model_dir), "kv_len": KV, "pool": ["cpu:0"], "embeddings": True, "parallel": 2})
    yield e
    lse_close(e)


@pytest.fixture(scope="module")
def mean_engine(model_dir):
    e = lse_open({"model": str(model_dir), "kv_len": KV, "pool": ["cpu:0"], "embeddings": True, "pooling": "mean"})
    yield e
    lse_close(e)


def _vector(reply: dict, i: int = 0) -> np.ndarray:
    return np.asarray(reply["data"][i]["embedding"], np.float32)


def test_last_pooling_equals_the_reference(engine, reference):
    prompts = [[1, 2, 3, 4, 5], [7, 8], [9], [10, 11, 12], [13, 14, 15, 16, 17, 18]]  # more than the 2 slots
    reply = lse_embed(engine, {"input": prompts})
    assert [d["index"] for d in reply["data"]] == [0, 1, 2, 3, 4]
    assert reply["usage"] == {"prompt_tokens": 17, "total_tokens": 17}
    for i, ids in enumerate(prompts):
        want = reference.hidden(ids)[-1]
        np.testing.assert_allclose(_vector(reply, i), want / np.linalg.norm(want), atol=1e-5)
    assert engine.scheduler.active() == 0 and engine.scheduler.queued() == 0


def test_mean_pooling_over_prefill_chunks_equals_the_reference(mean_engine, reference, monkeypatch):
    monkeypatch.setattr(scheduler, "PREFILL_CHUNK", 3)  # 8 rows in chunks of 3, 3 and 2
    ids = [3, 1, 4, 1, 5, 9, 2, 6]
    got = _vector(lse_embed(mean_engine, {"input": ids}))
    want = reference.hidden(ids).mean(axis=0)
    np.testing.assert_allclose(got, want / np.linalg.norm(want), atol=1e-5)


def test_a_cached_prefix_is_recomputed(mean_engine, reference):
    """The second prompt shares the first's prefix in a slot: its rows are all prefilled again (mean needs them)."""
    lse_embed(mean_engine, {"input": [[5, 6, 7, 8, 9, 10]]})
    got = lse_embed(mean_engine, {"input": [5, 6, 7, 8]})
    want = reference.hidden([5, 6, 7, 8]).mean(axis=0)
    np.testing.assert_allclose(_vector(got), want / np.linalg.norm(want), atol=1e-5)


def test_strings_are_tokenized_with_special_tokens(engine, reference):
    ids = engine.tokenizer.encode("hello world", add_special_tokens=True).ids
    reply = lse_embed(engine, {"input": ["hello world"], "model": "mine"})
    assert reply["model"] == "mine" and reply["usage"]["prompt_tokens"] == len(ids)
    want = reference.hidden(ids)[-1]
    np.testing.assert_allclose(_vector(reply), want / np.linalg.norm(want), atol=1e-5)


def test_base64_and_dimensions(engine):
    floats = _vector(lse_embed(engine, {"input": [1, 2, 3]}))
    b64 = lse_embed(engine, {"input": [1, 2, 3], "encoding_format": "base64"})["data"][0]["embedding"]
    np.testing.assert_array_equal(np.frombuffer(base64.b64decode(b64), "<f4"), floats)
    cut = _vector(lse_embed(engine, {"input": [1, 2, 3], "dimensions": 8}))
    assert cut.shape == (8,)
    np.testing.assert_allclose(cut, floats[:8] / np.linalg.norm(floats[:8]), atol=1e-6)
    assert abs(float(np.linalg.norm(cut)) - 1) < 1e-6


def test_in_process_and_c_paths(engine):
    status, body = lse_request(engine, {"input": [1, 2]}, "embeddings").result()
    assert status == 200 and body["object"] == "list" and body["data"][0]["object"] == "embedding"
    status, body = lse_request_json(engine, json.dumps({"input": []}).encode(), "/v1/embeddings").result()
    assert (status, body["error"]["code"], body["error"]["param"]) == (400, None, "input")


@pytest.mark.parametrize("body, status, code, param", [
    ({}, 400, None, "input"),
    ({"input": ""}, 400, None, "input"),
    ({"input": []}, 400, None, "input"),
    ({"input": ["a", ""]}, 400, None, "input[1]"),
    ({"input": [[1], []]}, 400, None, "input[1]"),
    ({"input": [1, "a"]}, 400, None, "input"),
    ({"input": 5}, 400, None, "input"),
    ({"input": [True]}, 400, None, "input"),
    ({"input": [1, 99999]}, 400, None, "input"),
    ({"input": [[1], [2, -1]]}, 400, None, "input[1]"),
    ({"input": ["a"] * (MAX_INPUTS + 1)}, 400, None, "input"),
    ({"input": list(range(1, KV + 2))}, 400, "context_full", "input"),
    ({"input": "x" * (KV * 16 + 1)}, 400, "context_full", "input"),
    ({"input": "a", "encoding_format": "int8"}, 400, None, "encoding_format"),
    ({"input": "a", "dimensions": 0}, 400, None, "dimensions"),
    ({"input": "a", "dimensions": 49}, 400, None, "dimensions"),
    ({"input": "a", "dimensions": 2.5}, 400, None, "dimensions"),
    ({"input": "a", "model": 3}, 400, None, "model"),
])
def test_body_errors(engine, body, status, code, param):
    with pytest.raises(LseError) as info:
        lse_embed(engine, body)
    err = info.value.body()["error"]
    assert (info.value.status, err["type"], err["code"], err["param"]) == (status, "invalid_request_error", code, param)


def test_disabled_is_501(model_dir):
    e = lse_open({"model": str(model_dir), "kv_len": KV, "pool": ["cpu:0"]})
    try:
        status, body = lse_request(e, {"input": "a"}, "embeddings").result()
    finally:
        lse_close(e)
    assert status == 501
    assert (body["error"]["type"], body["error"]["code"]) == ("not_supported_error", "embeddings_disabled")
    assert "--embeddings" in body["error"]["message"]


def test_pooling_without_embeddings_is_refused(model_dir):
    with pytest.raises(LseStartupError, match="add --embeddings"):
        lse_open({"model": str(model_dir), "kv_len": KV, "pool": ["cpu:0"], "pooling": "mean"})


def test_pooling_math():
    rows = np.asarray([[1.0, 0.0], [3.0, 4.0], [0.0, 2.0]])
    assert pool(rows, "last").tolist() == [0.0, 2.0]
    assert pool(rows, "cls").tolist() == [1.0, 0.0]
    assert pool(rows, "mean").tolist() == [4 / 3, 2.0]
    assert normalize(np.asarray([3.0, 4.0])).tolist() == pytest.approx([0.6, 0.8])
    assert normalize(np.asarray([3.0, 4.0, 12.0]), 2).tolist() == pytest.approx([0.6, 0.8])
    assert normalize(np.zeros(3)).tolist() == [0.0, 0.0, 0.0]
    assert encode(np.asarray([1.0, -2.0]), "base64") == base64.b64encode(np.asarray([1, -2], "<f4").tobytes()).decode()
    assert encode(np.asarray([0.5]), "float") == [0.5]


def test_pooling_choice(tmp_path):
    assert choose_pooling(None, tmp_path) == ("last", "the default for decoder models")
    (tmp_path / "config.json").write_text(json.dumps({"pooling_type": 1}))
    assert model_pooling(tmp_path) == ("mean", "config.json pooling_type (the GGUF's)")
    (tmp_path / "1_Pooling").mkdir()
    (tmp_path / "1_Pooling" / "config.json").write_text(json.dumps({"pooling_mode_mean_tokens": False,
                                                                   "pooling_mode_lasttoken": True}))
    assert choose_pooling(None, tmp_path) == ("last", "1_Pooling/config.json")
    assert choose_pooling("mean", tmp_path) == ("mean", "--pooling")
    with pytest.raises(ValueError):
        choose_pooling("max", tmp_path)


def test_gguf_pooling_type_reaches_config_json():
    from lse.compiler.gguf.importer import pooling_type

    assert pooling_type({"general.architecture": "qwen3", "qwen3.pooling_type": 3}) == {"pooling_type": 3}
    assert pooling_type({"general.architecture": "llama"}) == {}


def test_embeddings_beside_a_generating_request(engine, reference):
    """A completion's greedy reply is the same alone and while 6 inputs are embedded beside it."""
    import threading

    body = {"prompt": [1, 2, 3], "max_tokens": 12, "temperature": 0}
    alone = lse_request(engine, body, "completions").result()[1]["choices"][0]["text"]
    prompts = [[i, i + 1, i + 2, i + 3] for i in range(1, 7)]
    got: dict = {}
    thread = threading.Thread(target=lambda: got.update(lse_embed(engine, {"input": prompts})))
    handle = lse_request(engine, body, "completions")
    thread.start()
    beside = handle.result()[1]["choices"][0]["text"]
    thread.join(timeout=60)
    assert beside == alone
    for i, ids in enumerate(prompts):
        want = reference.hidden(ids)[-1]
        np.testing.assert_allclose(_vector(got, i), want / np.linalg.norm(want), atol=1e-5)


class Base64Embedding(Embedding):
    # The SDK's Embedding declares the vector as floats only: with encoding_format base64 the wire carries
    # the string and the SDK's post-parser (openai.resources.embeddings) decodes it before its type applies.
    embedding: str


class Base64Reply(CreateEmbeddingResponse):
    data: list[Base64Embedding]


@pytest.mark.parametrize("body", [
    {"input": "hello world"},
    {"input": ["a", "b c", "d e f"], "encoding_format": "float", "model": "m"},
    {"input": [[1, 2], [3, 4, 5]], "dimensions": 8},
    {"input": [1, 2, 3], "encoding_format": "base64"},
    {"input": ["a", "b"], "encoding_format": "base64", "dimensions": 4},
])
def test_replies_fit_the_sdk_types(engine, body):
    """Each reply read strictly by the openai SDK's own type (nothing coerced, no declared key missing); a
    base64 reply by it with the one field the SDK decodes before typing."""
    status, reply = lse_request(engine, body, "embeddings").result()
    assert status == 200
    kind = Base64Reply if body.get("encoding_format") == "base64" else CreateEmbeddingResponse
    TypeAdapter(kind).validate_python(reply, strict=True)
    assert sorted(reply) == ["data", "model", "object", "usage"]
    if kind is Base64Reply:  # the exception is needed: the SDK's own type refuses the wire's string
        with pytest.raises(ValidationError):
            TypeAdapter(CreateEmbeddingResponse).validate_python(reply, strict=True)


@pytest.mark.parametrize("body", [{"input": []}, {"input": "a", "dimensions": 0}, {"input": "x" * (KV * 16 + 1)}])
def test_errors_fit_the_sdk_error_object(engine, body):
    """The SDK reads ``body["error"]`` as its ErrorObject (as test_openai_schemas.py checks chat's)."""
    status, reply = lse_request(engine, body, "embeddings").result()
    assert status == 400
    TypeAdapter(ErrorObject).validate_python(reply["error"], strict=True)


def test_the_window_counts_against_the_queue(model_dir):
    """With 2 slots and no queue, 5 inputs are taken: the queue sees a window of 2 at a time, not 5."""
    e = lse_open({"model": str(model_dir), "kv_len": KV, "pool": ["cpu:0"], "embeddings": True, "parallel": 2,
                  "queue_size": 0})
    seen: list[int] = []
    submit = e.scheduler.submit
    try:
        e.scheduler.submit = lambda request, seqs, queue_size=None: (seen.append(len(seqs)),
                                                                    submit(request, seqs, queue_size))
        reply = lse_embed(e, {"input": [[1, 2], [3], [4, 5], [6], [7, 8]]})
    finally:
        lse_close(e)
    assert [d["index"] for d in reply["data"]] == [0, 1, 2, 3, 4]
    assert seen == [2, 1, 1, 1]  # the first window, then one input as each finishes


def test_a_timeout_withdraws_the_inputs_not_yet_embedded(engine):
    """Past the timeout the reply is 408 request_timeout and the request's inputs leave the slots and queue."""
    prompts = [list(range(1, KV - 1))] * 400  # 400 prefill calls of 94 rows on 2 slots: far longer than 10 ms
    with pytest.raises(LseError) as info:
        lse_embed(engine, {"input": prompts}, timeout=0.01)
    assert (info.value.status, info.value.body()["error"]["code"]) == (408, "request_timeout")
    assert engine.scheduler.wait_idle(10) and engine.scheduler.queued() == 0


def test_a_window_that_does_not_fit_is_503_overloaded(model_dir):
    """One slot and a queue of one, both taken by completions: the window does not fit, and nothing is queued."""
    e = lse_open({"model": str(model_dir), "kv_len": 1024, "pool": ["cpu:0"], "embeddings": True, "parallel": 1,
                  "queue_size": 1})
    body = {"prompt": [1, 2], "max_tokens": 1000, "ignore_eos": True, "stream": True}
    try:
        busy = [lse_request(e, body, "completions") for _ in range(2)]
        events = [b.events() for b in busy]
        assert next(events[0])["type"] == "chunk"  # the first holds the slot, the second the queue
        assert e.scheduler.queued() == 1
        with pytest.raises(LseError) as info:
            lse_embed(e, {"input": ["a", "b"]})
        assert e.scheduler.queued() == 1
        for b, ev in zip(busy, events):
            b.cancel()
            list(ev)
    finally:
        lse_close(e)
    err = info.value.body()["error"]
    assert (info.value.status, err["type"], err["code"]) == (503, "unavailable_error", "server_overloaded")
