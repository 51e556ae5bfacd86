"""The verify entry (compiler/emit_verify.py): a slot's rows at consecutive
positions against its KV cache, every row's logits in one call, against the
numpy forward pass and against today's path (prefill, then lm_head_all)."""

from __future__ import annotations

import numpy as np
import pytest

from lse.compiler.cache import compiled_artifact
from lse.compiler.pipeline import CompileOptions
from lse.runtime.reference import ReferenceModel
from lse.compiler.gguf.importer import ensure_imported
from lse.fixtures.make_fixtures import fixture_dir
from lse.fixtures.make_gguf_fixtures import gguf_fixture_path

PROMPT = [5, 17, 200, 3, 99, 42, 7]
ROWS = [11, 4, 250, 4, 8]  # a last token and K = 4 proposals


def test_manifest_names_the_verify_entry():
    _, manifest = compiled_artifact(fixture_dir("llama"), CompileOptions(slots=2, speculative=True), report=lambda m: None)
    entries = {e.name: e for e in manifest.targets["llvm-cpu"].entry_points}
    verify = entries["verify_0"]
    assert (verify.mode, verify.inputs, verify.scalars, verify.uses_cache, verify.outputs) == (
        "verify", ("tokens", "positions"), ("slot",), True, ("logits",))


@pytest.mark.parametrize("name", ["llama", "tied_embeddings"])
def test_verify_rows_match_reference_in_a_second_slot(name, no_fallback, open_backend):
    model = fixture_dir(name)
    backend = open_backend(model, slots=2, speculative=True)
    backend.prefill(np.asarray(PROMPT, np.int64), 0, 1, no_fallback)
    logits = backend.verify(np.asarray(ROWS, np.int64), len(PROMPT), 1, no_fallback)
    ref = ReferenceModel.from_dir(model).forward(PROMPT + ROWS)
    assert logits.shape == (len(ROWS), ref.shape[1])
    np.testing.assert_allclose(logits, ref[len(PROMPT):], atol=1e-4)


@pytest.mark.parametrize("k,entry", [(1, "verify4"), (3, "verify4"), (4, None), (8, None)])
def test_verify_rows_go_through_the_decode_shaped_entry(k, entry, no_fallback, open_backend):
    """Up to 4 rows of a slot run as verify4 (decode's matvec and attention
    kernels, the rows padded; lse_attn.c's causal rows of one slot), their
    logits the prefill path's, in slot 1. The artifact has no prefill-shaped
    verify beside it (emit_verify.entry_modes), so more rows get None: the
    speculator then prefills them and takes lm_head_all's rows.
    The GGUF fixture: block formats, so the matvec kernels serve."""
    backend = open_backend(ensure_imported(gguf_fixture_path()), slots=2, kv_dtype="f16", speculative=True)
    assert "verify4_0" in backend.entries and "verify_0" not in backend.entries
    backend.prefill(np.asarray(PROMPT, np.int64), 0, 1, no_fallback)
    calls, run = [], backend._run
    backend._run = lambda name, *a, **kw: calls.append(name) or run(name, *a, **kw)
    rows = np.asarray((ROWS * 2)[:k + 1], np.int64)
    got = backend.verify(rows, len(PROMPT), 1, no_fallback)
    assert calls == ([entry] if entry else [])
    if entry is None:
        assert got is None
        return
    _, hidden = backend.prefill(rows, len(PROMPT), 1, no_fallback)
    want = backend.all_logits(hidden, no_fallback)
    assert got.shape == want.shape == (k + 1, backend.cfg.vocab_size)
    np.testing.assert_allclose(got, want, atol=1e-4)
    assert list(got.argmax(1)) == list(want.argmax(1))


def test_verify4_rows_are_decodes_bit_for_bit(no_fallback, open_backend):
    """verify4's logits are those of decoding the same tokens one by one
    (the same sums in the same order), so greedy ties break alike."""
    backend = open_backend(ensure_imported(gguf_fixture_path()), slots=2, kv_dtype="f16", speculative=True)
    rows = np.asarray(ROWS[:3], np.int64)
    backend.prefill(np.asarray(PROMPT, np.int64), 0, 1, no_fallback)
    got = backend.verify(rows, len(PROMPT), 1, no_fallback)
    backend.prefill(np.asarray(PROMPT, np.int64), 0, 1, no_fallback)
    want = [np.asarray(backend.decode_one(int(t), len(PROMPT) + j, 1, no_fallback)).reshape(-1)
            for j, t in enumerate(rows)]
    assert np.array_equal(got, np.stack(want))


def test_near_the_context_end_verify4_does_not_fit_and_the_caller_prefills(no_fallback, open_backend):
    """verify4 writes 4 cache positions whatever the tokens: where fewer are
    left (start + 4 > kv_len) the backend runs nothing and answers None (the
    speculator then prefills the rows: test_speculative_verify.py)."""
    backend = open_backend(ensure_imported(gguf_fixture_path()), slots=2, kv_dtype="f16", speculative=True)
    start = backend.kv_len - 4
    assert backend.verify_rows(2, start) == 4 and backend.verify_rows(2, start + 1) == 0
    calls, run = [], backend._run
    backend._run = lambda name, *a, **kw: calls.append(name) or run(name, *a, **kw)
    assert backend.verify(np.asarray(ROWS[:2], np.int64), start + 1, 1, no_fallback) is None and calls == []
