"""Greedy identity in each of the scale bench's mixes (bench/bench_scale.py:
Q4_K_M's Q4_K + Q6_K, Q4_0 with a Q6_K output, Q8_0) on a small file of
that writer whose FFN is 4608 wide, so ffn_down's rows (K = 4608) are longer
than the 4096 values the decode kernels once stopped at: the compiled
modules equal the numpy reference on the dequantised weights, for a short
prompt (the matvecs) and one of 41 tokens (past GEMM_FEW_ROWS: the prompt
GEMM, AVX-512 where the CPU has it)."""

from __future__ import annotations

import numpy as np
import pytest
from test_compiled_vs_reference import greedy_compiled, greedy_reference

from lse.compiler import cpu_kernel_build as cpu_kernels
from lse.runtime.reference import ReferenceModel
from lse.bench import bench_bytes, bench_scale
from lse.compiler.gguf.importer import default_gguf_path, ensure_imported

PROMPT = [504, 3575, 282, 4649, 314, 17, 9, 4000, 250]
LONG_PROMPT = [(37 * i + 11) % 4000 + 4 for i in range(41)]
STEPS = 16
SHAPE = bench_bytes.Shape(256, 4608, 1, 4, 2)


@pytest.mark.parametrize("prompt", [PROMPT, LONG_PROMPT], ids=["9-tokens", "41-tokens"])
@pytest.mark.parametrize("mix", list(bench_bytes.MIXES))
def test_each_mix_matches_the_reference(tmp_path, open_backend, no_fallback, mix, prompt):
    assert len(LONG_PROMPT) > cpu_kernels.GEMM_FEW_ROWS  # the long prompt's prefill takes the GEMM
    assert cpu_kernels.supports(bench_bytes.MIXES[mix]["ffn_down"], SHAPE.ffn)
    path = tmp_path / f"{mix}.gguf"
    bench_scale.write_scale_gguf(path, SHAPE, bench_bytes.MIXES[mix], default_gguf_path())
    model_dir = ensure_imported(path, cache_dir=tmp_path / "cache")
    want, want_logits = greedy_reference(ReferenceModel.from_dir(model_dir), prompt, STEPS)
    got, got_logits = greedy_compiled(open_backend(model_dir), prompt, STEPS, no_fallback)
    assert float(np.abs(np.asarray(got_logits) - np.asarray(want_logits)).max()) < 1e-4
    assert got == want
