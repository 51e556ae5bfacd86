"""SmolLM2-135M-Instruct (the default model, imported from the packaged
GGUF): the compiled llvm-cpu module against the numpy reference.

Tolerance 5e-4 absolute on logits that reach 25: both are f32, but 30
layers accumulate in a different order; measured 5.4e-5 on the Paris prompt.
Greedy ids must agree for 64 steps."""

from __future__ import annotations

import json

import jinja2
import numpy as np
import pytest

from lse.runtime.api import lse_close, lse_open, lse_request
from lse.runtime.reference import ReferenceModel
from lse.compiler.gguf.importer import ensure_default_model

PARIS = [504, 3575, 282, 4649, 314, 7042, 30]  # "The capital of France is Paris."


@pytest.fixture(scope="module")
def smollm2():
    return ensure_default_model()


@pytest.fixture(scope="module")
def prompt_ids(smollm2):
    from tokenizers import Tokenizer

    template = json.loads((smollm2 / "tokenizer_config.json").read_text())["chat_template"]
    text = jinja2.Environment().from_string(template).render(
        messages=[{"role": "user", "content": "What is the capital of France?"}], add_generation_prompt=True)
    return Tokenizer.from_file(str(smollm2 / "tokenizer.json")).encode(text, add_special_tokens=False).ids


def test_compiled_logits_and_64_greedy_steps_match_reference(smollm2, prompt_ids, open_backend, no_fallback):
    backend = open_backend(smollm2, kv_len=256)
    ref = ReferenceModel.from_dir(smollm2)
    want = ref.greedy(prompt_ids, 64)
    logits, _ = backend.prefill(np.asarray(prompt_ids, np.int64), 0, 0, no_fallback)
    ref_logits = ref.forward(prompt_ids)[-1]
    diff = float(np.abs(logits - ref_logits).max())
    assert diff < 5e-4, diff
    got = [int(np.argmax(logits))]
    for i in range(len(want) - 1):
        pos = len(prompt_ids) + i
        step = backend.decode(np.asarray([got[-1]], np.int64), np.asarray([pos], np.int64), no_fallback)
        got.append(int(np.argmax(step[0])))
    assert got == want


def test_f16_kv_cache_keeps_64_greedy_steps(smollm2, prompt_ids, open_backend, no_fallback):
    """The default model's default cache (f16 for its GGUF block weights): the
    same 64 greedy tokens as the f32 reference."""
    backend = open_backend(smollm2, kv_len=256, kv_dtype="f16")
    want = ReferenceModel.from_dir(smollm2).greedy(prompt_ids, 64)
    logits, _ = backend.prefill(np.asarray(prompt_ids, np.int64), 0, 0, no_fallback)
    got = [int(np.argmax(logits))]
    for i in range(len(want) - 1):
        step = backend.decode(np.asarray([got[-1]], np.int64), np.asarray([len(prompt_ids) + i], np.int64),
                              no_fallback)
        got.append(int(np.argmax(step[0])))
    assert got == want


def test_default_engine_answers_paris():
    engine = lse_open({"model": None})
    try:
        status, body = lse_request(engine, {"messages": [{"role": "user", "content": "What is the capital of France?"}],
                                            "temperature": 0, "max_tokens": 16}).result()
    finally:
        lse_close(engine)
    assert status == 200
    assert body["choices"][0]["message"]["content"] == "The capital of France is Paris."
    assert body["choices"][0]["stop_reason"] == "stop_token"
    assert body["usage"]["completion_tokens"] == len(PARIS) + 1  # the end-of-turn token counts
