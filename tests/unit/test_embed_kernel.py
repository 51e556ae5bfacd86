"""lse_<stem>_embed (lse_gemm.c): an embedding table's rows by token id,
read from the kernels' interleaved layout, against the import's own
dequantisation (d * q + m in f32) of the same blocks, bit for bit, for every
block format the kernels take; a row count that leaves the last group
ragged, several workgroups, and an id past the table (a row of zeros)."""

from __future__ import annotations

import ctypes
import subprocess

import numpy as np
import pytest
from gguf.constants import GGML_QUANT_SIZES, GGMLQuantizationType as Q

from lse.compiler import cpu_kernel_build as cpu_kernels, kernel_layout
from lse.compiler.gguf.reader import BLOCK_TYPES, _blocks_of

pytestmark = pytest.mark.skipif(cpu_kernels.kernels_available() is not None, reason="needs the kernels' C compiler")

# where each format's f16 scales sit in its block (d, then m or dmin), set to finite values
SCALES = {Q.Q4_0: (0,), Q.Q4_1: (0, 2), Q.Q8_0: (0,), Q.Q5_0: (0,), Q.Q5_1: (0, 2), Q.Q4_K: (0, 2),
          Q.Q5_K: (0, 2), Q.Q6_K: (208,)}


@pytest.fixture(scope="module")
def lib(tmp_path_factory):
    out = tmp_path_factory.mktemp("embed") / "lse_gemm.so"
    subprocess.run(["cc", *cpu_kernels.cflags(cpu_kernels.isa()), "-fvisibility=default", "-shared",
                    str(cpu_kernels.GEMM_SOURCE), str(cpu_kernels.SOURCE), "-o", str(out)], check=True)
    return ctypes.CDLL(str(out))


def _table(qtype: Q, n: int, k: int, rng) -> dict[str, np.ndarray]:
    """Random valid blocks of ``qtype`` as lse-import's parts (q stored, d, m)."""
    block, size = GGML_QUANT_SIZES[qtype]
    raw = rng.integers(0, 256, (n * k // block, size), dtype=np.uint8)
    for at in SCALES[qtype]:
        raw[:, at:at + 2] = np.float16(rng.uniform(1e-3, 3e-2, len(raw))).view(np.uint8).reshape(-1, 2)
    q, d, m = _blocks_of(raw, qtype)
    b, dtype, _ = BLOCK_TYPES[qtype]
    parts = {"q": q.reshape(n, k // b, b), "d": d.reshape(n, k // b).astype(dtype)}
    if m is not None:
        parts["m"] = m.reshape(n, k // b).astype(dtype)
    fmt = qtype.name.lower()
    if fmt in ("q4_0", "q4_1", "q4_k"):  # stored two values a byte, value 2j low
        nib = parts["q"].view(np.uint8) & 0x0F
        parts["q"] = nib[..., 0::2] | (nib[..., 1::2] << 4)
    return parts


def _dequantized(qtype: Q, parts: dict[str, np.ndarray], n: int, k: int) -> np.ndarray:
    q = parts["q"]
    if qtype.name.lower() in ("q4_0", "q4_1", "q4_k"):
        q = np.stack([q & 0x0F, q >> 4], axis=-1).reshape(n, k // 32, 32).astype(np.int8)
        q = q - 16 * (q >= 8) if qtype == Q.Q4_0 else q
    w = parts["d"].astype(np.float32)[..., None] * q.astype(np.float32)
    if "m" in parts:
        w = w + parts["m"].astype(np.float32)[..., None]
    return w.reshape(n, k)


@pytest.mark.parametrize("qtype", list(SCALES), ids=lambda q: q.name.lower())
def test_embedding_rows_from_the_layout_equal_the_imports_dequantisation(lib, qtype):
    fmt, n, k = qtype.name.lower(), 37, 512
    rng = np.random.default_rng(len(fmt) * 7 + qtype.value)
    parts = _table(qtype, n, k, rng)
    layout = kernel_layout._interleaved(fmt, parts)
    stem, has_m = cpu_kernels.EMBEDS[fmt][0], cpu_kernels.EMBEDS[fmt][1]
    tokens = np.array([0, 36, 17, 5, 31, 36, 2, 33, 16, 15, 1, 20, 3, 35, 8, 9, 10, 37 + 4, 30], np.int64)
    y = np.full((len(tokens), k), np.nan, np.float32)
    bufs = [layout[p] for p in ("qi", "di", "mi") if p in layout]
    assert len(bufs) == 2 + has_m
    fn = getattr(lib, f"lse_{stem}")
    fn.argtypes = [ctypes.c_void_p, ctypes.c_size_t] * (2 + len(bufs)) + [ctypes.c_size_t] * 5
    args = [ctypes.c_void_p(tokens.ctypes.data), 0]
    for b in bufs:
        args += [ctypes.c_void_p(b.ctypes.data), 0]
    args += [ctypes.c_void_p(y.ctypes.data), 0, len(tokens), n, k, 8]
    for wg in range(-(-len(tokens) // 8)):
        fn(*args, wg)
    want = _dequantized(qtype, parts, n, k)
    inside = tokens < n
    assert np.array_equal(y[inside], want[tokens[inside]]), fmt
    assert np.array_equal(y[~inside], np.zeros((1, k), np.float32))
    assert len(np.unique(want[tokens[inside]], axis=0)) == len(set(tokens[inside].tolist()))  # rows differ
