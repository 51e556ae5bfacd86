"""The compiled llvm-cpu modules against the plain numpy forward pass.

Tolerance: 1e-4 absolute on the tiny fixtures' logits (|logits| ~ 1), where
f32 reassociation in the compiled reductions gives ~2e-6 (measured): both
sides are f32, so anything near 1e-4 is a bug, not rounding. Greedy token ids
must be identical for 64 steps. SmolLM2-135M is in test_smollm2.py.
"""

from __future__ import annotations

import numpy as np
import pytest

from lse.runtime.reference import ReferenceModel
from lse.fixtures.make_fixtures import fixture_dir

FIXTURES = ["llama", "qwen2_bias", "qwen3_qk_norm", "tied_embeddings"]
PROMPT = [5, 17, 200, 3, 99, 42, 7]


def greedy_compiled(backend, prompt: list[int], steps: int, on_fallback) -> tuple[list[int], list[np.ndarray]]:
    logits, _ = backend.prefill(np.asarray(prompt, np.int64), 0, 0, on_fallback)
    out, all_logits = [int(np.argmax(logits))], [logits]
    for i in range(steps - 1):
        pos = len(prompt) + i
        lg = backend.decode(np.asarray([out[-1]], np.int64), np.asarray([pos], np.int64), on_fallback)[0]
        all_logits.append(lg)
        out.append(int(np.argmax(lg)))
    return out, all_logits


def greedy_reference(ref: ReferenceModel, prompt: list[int], steps: int) -> tuple[list[int], list[np.ndarray]]:
    ids, out, all_logits = list(prompt), [], []
    for _ in range(steps):
        lg = ref.forward(ids)[-1]
        all_logits.append(lg)
        out.append(int(np.argmax(lg)))
        ids.append(out[-1])
    return out, all_logits


@pytest.mark.parametrize("name", FIXTURES)
def test_prefill_logits_match_reference(name, no_fallback, open_backend):
    model = fixture_dir(name)
    backend = open_backend(model)
    logits, hidden = backend.prefill(np.asarray(PROMPT, np.int64), 0, 0, no_fallback)
    ref = ReferenceModel.from_dir(model).forward(PROMPT)
    np.testing.assert_allclose(logits, ref[-1], atol=1e-4)
    all_rows = backend.all_logits(hidden, no_fallback)
    np.testing.assert_allclose(all_rows, ref, atol=1e-4)


@pytest.mark.parametrize("name", FIXTURES)
def test_greedy_tokens_match_reference_for_64_steps(name, no_fallback, open_backend):
    model = fixture_dir(name)
    backend = open_backend(model)
    got, got_logits = greedy_compiled(backend, PROMPT, 64, no_fallback)
    want, want_logits = greedy_reference(ReferenceModel.from_dir(model), PROMPT, 64)
    assert got == want
    np.testing.assert_allclose(np.stack(got_logits), np.stack(want_logits), atol=1e-4)


def test_prefill_in_a_second_slot_and_at_an_offset(no_fallback, open_backend):
    """A prompt prefilled in two chunks into slot 1 equals one prefill."""
    model = fixture_dir("llama")
    backend = open_backend(model, slots=2)
    backend.prefill(np.asarray(PROMPT[:4], np.int64), 0, 1, no_fallback)
    logits, _ = backend.prefill(np.asarray(PROMPT[4:], np.int64), 4, 1, no_fallback)
    ref = ReferenceModel.from_dir(model).forward(PROMPT)
    np.testing.assert_allclose(logits, ref[-1], atol=1e-4)


def test_batched_decode_rows_are_independent(no_fallback, open_backend):
    """Two slots decoding together give each its own sequence's logits."""
    model = fixture_dir("llama")
    backend = open_backend(model, slots=2)
    a, b = PROMPT, [9, 8, 7]
    la, _ = backend.prefill(np.asarray(a, np.int64), 0, 0, no_fallback)
    lb, _ = backend.prefill(np.asarray(b, np.int64), 0, 1, no_fallback)
    ta, tb = int(np.argmax(la)), int(np.argmax(lb))
    rows = backend.decode(np.asarray([ta, tb], np.int64), np.asarray([len(a), len(b)], np.int64), no_fallback)
    ref = ReferenceModel.from_dir(model)
    np.testing.assert_allclose(rows[0], ref.forward(a + [ta])[-1], atol=1e-4)
    np.testing.assert_allclose(rows[1], ref.forward(b + [tb])[-1], atol=1e-4)


def test_lone_row_decode_of_one_slot(no_fallback, open_backend):
    """With several slots the artifact has a one-row decode: it writes and reads only its slot."""
    model = fixture_dir("llama")
    backend = open_backend(model, slots=3)
    assert "decode1_0" in backend.entries
    a, b = PROMPT, [9, 8, 7]
    backend.prefill(np.asarray(a, np.int64), 0, 0, no_fallback)
    lb, _ = backend.prefill(np.asarray(b, np.int64), 0, 2, no_fallback)
    tb = int(np.argmax(lb))
    row = backend.decode_one(tb, len(b), 2, no_fallback)
    ref = ReferenceModel.from_dir(model)
    np.testing.assert_allclose(row, ref.forward(b + [tb])[-1], atol=1e-4)
    la = backend.decode_one(3, len(a), 0, no_fallback)  # slot 0's cache was left intact
    np.testing.assert_allclose(la, ref.forward(a + [3])[-1], atol=1e-4)
