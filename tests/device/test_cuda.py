"""The cuda target on a real GPU (opt-in: LSE_DEVICE_TESTS=1 on a machine
with an NVIDIA driver; ``python -m lse.tools.device_check`` runs this tier
with its artifacts compiled ahead, docs/device-check.md). The module is
compiled for sm_80 (IREE 3.13 does not know sm_90); Hopper JIT-compiles its
PTX. Each engine is a case of lse.tools.device_cases, the table the check
compiles from."""

from __future__ import annotations

import json

import numpy as np
import pytest

from lse.runtime.api import lse_close, lse_open, lse_request, lse_status
from lse.runtime.reference import ReferenceModel
from lse.tools.device_cases import DEFAULT_CASE, DEVICE, FALLBACK_CASE, FIXTURE_CASES, GGUF_CASES, TARGET

PROMPT = [5, 17, 200, 3, 99, 42, 7]
STEPS = 16
CAUSES = [f"fused group 11 (3 nodes: matmul, silu, mul); {TARGET}: no kernel for silu",
          f"fused group 23 (3 nodes: matmul, silu, mul); {TARGET}: no kernel for silu"]


def no_fallback(cause: str) -> None:
    raise AssertionError(f"unexpected host group: {cause}")


def greedy(backend, prompt: list[int], n: int) -> tuple[np.ndarray, list[int]]:
    """The prompt's last logits and ``n`` argmax ids, one slot, step by step."""
    logits, _ = backend.prefill(np.asarray(prompt, np.int64), 0, 0, no_fallback)
    got = [int(np.argmax(logits))]
    for i in range(n - 1):
        step = backend.decode(np.asarray([got[-1]], np.int64), np.asarray([len(prompt) + i], np.int64), no_fallback)
        got.append(int(np.argmax(step[0])))
    return logits, got


def ask(engine, max_tokens=3, **fields):
    return lse_request(engine, {"messages": [{"role": "user", "content": "hi"}], "temperature": 0,
                                "max_tokens": max_tokens, **fields}).result()


@pytest.mark.parametrize("case", FIXTURE_CASES + GGUF_CASES, ids=lambda c: c.name)
def test_fixture_matches_the_reference(case):
    engine = lse_open(case.engine_config())
    try:
        assert lse_status(engine)["engine"]["device"] == DEVICE
        ref = ReferenceModel.from_dir(case.model_dir())
        logits, ids = greedy(engine.backend, PROMPT, STEPS)
        # block weights get an f16 KV cache (the engine's default for them): its rounding, against the f32 reference's
        atol = 1e-2 if engine.backend.kv_dtype == "f16" else 1e-3
        np.testing.assert_allclose(logits, ref.forward(PROMPT)[-1], atol=atol)
        assert ids == ref.greedy(PROMPT, STEPS)
        status, body = ask(engine, max_tokens=8)
        assert status == 200 and body["usage"]["completion_tokens"] >= 1
    finally:
        lse_close(engine)


def _chat_ids(model_dir) -> list[int]:
    import jinja2
    from tokenizers import Tokenizer

    template = json.loads((model_dir / "tokenizer_config.json").read_text())["chat_template"]
    text = jinja2.Environment().from_string(template).render(
        messages=[{"role": "user", "content": "What is the capital of France?"}], add_generation_prompt=True)
    return Tokenizer.from_file(str(model_dir / "tokenizer.json")).encode(text, add_special_tokens=False).ids


def test_default_model_greedy_replies_are_the_f32_references():
    """SmolLM2-135M (Q4_1 blocks, an f16 KV cache: the engine's defaults):
    64 greedy ids identical to the numpy f32 reference's, and the reply."""
    model_dir = DEFAULT_CASE.model_dir()
    prompt = _chat_ids(model_dir)
    engine = lse_open(DEFAULT_CASE.engine_config())
    try:
        _, ids = greedy(engine.backend, prompt, 64)
        assert ids == ReferenceModel.from_dir(model_dir).greedy(prompt, 64)
        status, body = lse_request(engine, {"messages": [{"role": "user", "content": "What is the capital of France?"}],
                                            "temperature": 0, "max_tokens": 16}).result()
    finally:
        lse_close(engine)
    assert status == 200
    assert body["choices"][0]["message"]["content"] == "The capital of France is Paris."
    assert body["choices"][0]["stop_reason"] == "stop_token"


def test_host_groups_on_a_gpu_pool_are_counted_and_reported():
    engine = lse_open(FALLBACK_CASE.engine_config())
    try:
        assert lse_status(engine)["engine"]["device"] == DEVICE
        assert [f"lse: plan: host group: {c}" for c in CAUSES] == \
            [line for line in engine.log_lines if line.startswith("lse: plan: host group")]
        status, body = ask(engine, max_tokens=3)  # 1 prefill + 2 decode steps = 3 runs per cause
        fallback = lse_status(engine)["engine"]["cpu_fallback"]
    finally:
        lse_close(engine)
    assert status == 200
    assert body["lse_warnings"] == [{"type": "cpu_fallback", "cause": c, "count": 3} for c in CAUSES]
    assert fallback == {"allowed": True, "total": 6, "events": [{"cause": c, "count": 3} for c in CAUSES]}


def test_no_cpu_fallback_refuses_a_host_group_on_a_gpu_pool():
    engine = lse_open(FALLBACK_CASE.engine_config(disable_cpu_fallback=True))
    try:
        first, second = ask(engine), ask(engine, stream=True)
        fallback = lse_status(engine)["engine"]["cpu_fallback"]
    finally:
        lse_close(engine)
    for status, body in (first, second):
        assert status == 500
        assert body["error"]["type"] == "server_error"
        assert body["error"]["message"] == f"CPU fallback disabled: {CAUSES[0]}"
    assert fallback == {"allowed": False, "total": 0, "events": []}


def test_no_cpu_fallback_serves_a_model_the_gpu_runs_whole():
    engine = lse_open(FIXTURE_CASES[0].engine_config(disable_cpu_fallback=True))
    try:
        status, body = ask(engine)
        state = lse_status(engine)["engine"]
    finally:
        lse_close(engine)
    assert state["device"] == DEVICE
    assert status == 200 and "lse_warnings" not in body
    assert state["cpu_fallback"] == {"allowed": False, "total": 0, "events": []}
