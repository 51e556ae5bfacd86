"""A prompt's logits are the same bits however the pacer cuts it into
chunks (runtime/pacing.py's Pacer.take): every chunk of more than
GEMM_FEW_ROWS rows runs the prompt GEMM, whose rows do not depend on the
chunk they are in, while a chunk of fewer runs the decode matvecs, whose
sums differ in the last bits. The GGUF fixture: block formats, so the
kernels serve."""

from __future__ import annotations

import numpy as np
import pytest

from lse.compiler.cpu_kernel_build import GEMM_FEW_ROWS
from lse.compiler.gguf.importer import ensure_imported
from lse.fixtures.make_gguf_fixtures import gguf_fixture_path

LENGTH = 97


def _logits(backend, ids, plan, no_fallback):
    start, out = 0, None
    for n in plan:
        out, _ = backend.prefill(ids[start:start + n], start, 0, no_fallback)
        start += n
    assert start == len(ids)
    return np.asarray(out)


@pytest.fixture(scope="module")
def prompt():
    return np.random.default_rng(11).integers(3, 250, LENGTH).astype(np.int64)


def test_chunks_of_more_than_few_rows_give_the_whole_prompts_bits(prompt, open_backend, no_fallback):
    backend = open_backend(ensure_imported(gguf_fixture_path()), slots=1, kv_dtype="f16")
    whole = _logits(backend, prompt, [LENGTH], no_fallback)
    few = GEMM_FEW_ROWS + 1
    for plan in ([48, 49], [few, few, LENGTH - 2 * few], [LENGTH - few, few], [30, 30, 37]):
        assert np.array_equal(_logits(backend, prompt, plan, no_fallback), whole), plan
    # a 5-row last chunk runs the matvecs: close to the GEMM's, not promised equal
    # (on the default model 1e-3 apart: docs/performance.md, "Speculative decoding")
    short = _logits(backend, prompt, [LENGTH - 5, 5], no_fallback)
    np.testing.assert_allclose(short, whole, atol=1e-3)
