"""GGUF block formats read in block form (int8 q, per-block d and m) against
gguf-py's own dequantizer, bit for bit, for every format LSE runs natively."""

from __future__ import annotations

import numpy as np
import pytest
from gguf.constants import GGML_QUANT_SIZES
from gguf.constants import GGMLQuantizationType as Q
from gguf.quants import dequantize, quantize

from lse.compiler.gguf.reader import BLOCK_TYPES, Blocks, _blocks_of

ROWS = 3


def _raw(qtype: Q, k: int) -> np.ndarray:
    """(ROWS, bytes per row) of valid blocks: quantized by gguf-py where it can, random valid blocks otherwise."""
    rng = np.random.default_rng(int(qtype))
    if qtype in (Q.Q4_0, Q.Q4_1, Q.Q8_0, Q.Q5_0, Q.Q5_1):
        return quantize(rng.standard_normal((ROWS, k)).astype(np.float32), qtype)
    _, size = GGML_QUANT_SIZES[qtype]
    raw = rng.integers(0, 256, (ROWS * k // 256, size), dtype=np.uint8)
    scales = np.float16(rng.uniform(1e-3, 5e-2, (len(raw), 2))).view(np.uint8).reshape(len(raw), 4)
    if qtype == Q.Q6_K:
        raw[:, 208:210] = scales[:, :2]
    else:
        raw[:, 0:4] = scales
    return raw.reshape(ROWS, -1)


@pytest.mark.parametrize("qtype", list(BLOCK_TYPES), ids=lambda q: q.name)
def test_block_form_equals_ggufs_dequantizer(qtype: Q) -> None:
    k = 512
    raw = _raw(qtype, k)
    block, scale_dtype, has_m = BLOCK_TYPES[qtype]
    _, size = GGML_QUANT_SIZES[qtype]
    q, d, m = _blocks_of(raw.reshape(-1, size), qtype)
    blocks = Blocks(qtype.name.lower(), q.reshape(ROWS, -1, block), d.reshape(ROWS, -1).astype(scale_dtype),
                    None if m is None else m.reshape(ROWS, -1).astype(scale_dtype))
    assert blocks.q.dtype == np.int8 and (blocks.m is not None) == has_m
    want = dequantize(raw, qtype)
    got = blocks.dequantize()
    assert got.shape == want.shape == (ROWS, k)
    assert np.array_equal(got, want)
    assert np.abs(want).max() > 0  # not vacuous: real values


def test_rows_reorder_like_the_rope_unpermutation() -> None:
    raw = _raw(Q.Q4_1, 64)
    q, d, m = _blocks_of(raw.reshape(-1, GGML_QUANT_SIZES[Q.Q4_1][1]), Q.Q4_1)
    blocks = Blocks("q4_1", q.reshape(ROWS, 2, 32), d.reshape(ROWS, 2), m.reshape(ROWS, 2))
    order = np.array([2, 0, 1])
    assert np.array_equal(blocks.take_rows(order).dequantize(), dequantize(raw, Q.Q4_1)[order])
