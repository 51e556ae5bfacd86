"""The hand-written matmul kernels against numpy on the dequantized weights,
called through ctypes from shared builds of the same sources: the decode
matvecs (compiler/cpu_kernels/lse_qmv.c) with odd row counts (not a multiple
of the 4-row groups), an odd number of blocks, 1 to 9 rows of x (the 8-row
chunking), several workgroups with a ragged last tile; the prompt GEMM
(lse_gemm.c) with row counts around its 6-row tiles, columns not a multiple
of its 16-column panels, and k across its 192-value chunks, and at most
GEMM_FEW_ROWS rows handed to the matvec; and RMSNorm (lse_norm.c). The
matvecs and the GEMM are built for each x86-64 level this CPU runs (v3, and v4
where it has AVX-512: the 8-row kernels keep more accumulators there)."""

from __future__ import annotations

import ctypes
import subprocess

import numpy as np
import pytest

from lse.compiler import cpu_kernel_build as cpu_kernels, kernel_layout

pytestmark = pytest.mark.skipif(cpu_kernels.kernels_available() is not None,
                                reason=f"kernels not built here: {cpu_kernels.kernels_available()}")


# IREE's task workers run dispatches with MXCSR's flush-to-zero and
# denormals-are-zero bits set (iree_task_worker_main); the tests can set them
# around a call the same way.
MXCSR_HELPERS = """
#include <immintrin.h>
unsigned lse_test_get_mxcsr(void) { return _mm_getcsr(); }
void lse_test_set_mxcsr(unsigned v) { _mm_setcsr(v); }
"""
FTZ_DAZ = 0x8040
LEVELS = ["v3", "v4"] if cpu_kernels.v4_capable() else ["v3"]
# Every level with both lane kinds (cpu_kernel_build.LANES): either runs on any CPU, one of them slowly.
BUILDS = [pytest.param((level, lane), id=f"{level}-{lane}") for level in LEVELS for lane in cpu_kernels.LANES]


@pytest.fixture(scope="module", params=BUILDS)
def lib(tmp_path_factory, request):
    tmp = tmp_path_factory.mktemp("qmv")
    helpers = tmp / "mxcsr.c"
    helpers.write_text(MXCSR_HELPERS)
    out = tmp / "lse_qmv.so"
    subprocess.run(["cc", *cpu_kernels.cflags(*request.param), "-fvisibility=default", "-shared",
                    str(cpu_kernels.SOURCE), str(helpers), "-o", str(out)], check=True)
    lib = ctypes.CDLL(str(out))
    lib.lse_test_get_mxcsr.restype = ctypes.c_uint
    lib.lse_test_set_mxcsr.argtypes = [ctypes.c_uint]
    return lib


@pytest.fixture(scope="module", params=BUILDS)
def gemm(tmp_path_factory, request):
    out = tmp_path_factory.mktemp("gemm") / "lse_gemm.so"
    # with the matvecs it hands a few rows to, as in every executable
    subprocess.run(["cc", *cpu_kernels.cflags(*request.param), "-fvisibility=default", "-shared", str(cpu_kernels.GEMM_SOURCE),
                    str(cpu_kernels.SOURCE), "-o", str(out)], check=True)
    return ctypes.CDLL(str(out))


def _ptr(a: np.ndarray) -> ctypes.c_void_p:
    return ctypes.c_void_p(a.ctypes.data)


def _run(fn, x, parts, n, k, tile):
    """y for x's rows, every workgroup called; 8 rows past the end of y (the
    kernels' MAX_R) must stay as they were."""
    r = x.shape[0]
    guarded = np.full((r + 8, n), 12345.0, np.float32)
    y = guarded[:r]
    args = [_ptr(x), 0]
    for p in parts:
        args += [_ptr(p), 0]
    args += [_ptr(y), 0, r, n, k, tile]
    fn.argtypes = [ctypes.c_void_p, ctypes.c_size_t] * (1 + len(parts)) + [ctypes.c_void_p] + [ctypes.c_size_t] * 6
    for wg in range(-(-n // tile)):
        fn(*args, wg)
    assert (guarded[r:] == 12345.0).all(), "the kernel wrote past its rows"
    return y


def _interleaved(q, *scales, fmt=None):
    """A matrix's parts as the kernels take them: lse-compile's layout of 16
    rows interleaved (kernel_layout.py), from lse-import's q (N, bytes a row:
    4-bit pairs or int8; Q6_K's packed to 6 bits) and scales (a K-quant's:
    factored back into int8 sub-block and f16 super-block scales)."""
    n, nbytes = q.shape
    per = nbytes // scales[0].shape[1]  # a block's bytes: 16 (4-bit), 32, 16 int8 (q6_k)
    qi = kernel_layout.layout_q(fmt, q.reshape(n, -1, per))  # Q6_K's packed to 6 bits: 12 bytes a block
    if fmt in kernel_layout.K_SUPER:
        return [qi, *kernel_layout.k_scale_parts(fmt, *scales, *([None] * (2 - len(scales))))]
    return [qi, *(kernel_layout.interleave_scales(s) for s in scales)]


def _k_scales(rng, n, k, block, lo, hi):
    """A K-quant's per-block scales as lse-import writes them: an f16
    super-block scale (per 256 values) times integer sub-block scales in
    [lo, hi), in f32."""
    sup = rng.uniform(0.0005, 0.003, (n, k // 256)).astype(np.float16).astype(np.float32)
    sub = rng.integers(lo, hi, (n, k // block)).astype(np.float32)
    return (np.repeat(sup, 256 // block, axis=1) * sub).astype(np.float32)


def _k_for(fmt, k):
    """k, whole 256-value super-blocks for a K-quant."""
    return -(-k // 256) * 256 if fmt in kernel_layout.K_SUPER else k


def _u4_case(n, k, r, x_scale=1.0):
    rng = np.random.default_rng(n * k + r)
    values = rng.integers(0, 16, (n, k), dtype=np.uint8)
    packed = values[:, 0::2] | (values[:, 1::2] << 4)  # value 2j low, 2j+1 high: IREE's i4 order
    d = rng.uniform(0.001, 0.05, (n, k // 32)).astype(np.float16)
    m = rng.uniform(-0.2, 0.0, (n, k // 32)).astype(np.float16)
    x = (rng.standard_normal((r, k)) * x_scale).astype(np.float32)
    w = (d.astype(np.float32)[..., None] * values.reshape(n, -1, 32) + m.astype(np.float32)[..., None]).reshape(n, k)
    return x, _interleaved(packed, d, m), x.astype(np.float64) @ w.T.astype(np.float64)


# Past 4 rows with R * K * 4 over 24 KiB, the several-row kernels take x in
# stretches of blocks (lse_qmv.c's stretch_blocks): (11, 1216, 7) is two of 19
# blocks, (13, 1536, 8) two of 24, (9, 1088, 9) 8 rows in two of 17 then 1,
# (6, 4096, 8) five of 22 and one of 18.
@pytest.mark.parametrize("n,k,r,tile", [(7, 320, 1, 4), (13, 1536, 3, 8), (64, 576, 8, 12), (5, 64, 9, 4),
                                        (37, 256, 2, 36), (9, 4096, 2, 4), (11, 1216, 7, 4), (13, 1536, 8, 8),
                                        (9, 1088, 9, 4), (6, 4096, 8, 4)])
def test_u4_matvec_equals_numpy(lib, n, k, r, tile):
    x, parts, want = _u4_case(n, k, r)
    y = _run(lib.lse_u4_matvec, x, parts, n, k, tile)
    np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("x_scale", [1e-30, 1e-6, 1e4, 1e20])
@pytest.mark.parametrize("r", [1, 3])
def test_u4_matvec_any_activation_magnitude(lib, x_scale, r):
    """The 4-bit kernel scales activations by a power of two chosen from
    their largest magnitude: tiny and huge ones give the same relative
    result."""
    x, parts, want = _u4_case(11, 576, r, x_scale)
    y = _run(lib.lse_u4_matvec, x, parts, 11, 576, 4)
    np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-5 * np.abs(want).max())


@pytest.mark.parametrize("fmt", ["q4_1", "q4_0", "q4_k", "q6_k"])
def test_four_bit_rows_of_far_apart_magnitudes(lib, fmt):
    """Rows of one call 1e-30, 1 and 1e20 in scale (a batch's rows unpack
    each block once for all): each row keeps its own precision."""
    if fmt == "q4_1":
        x, parts, want = _u4_case(11, 576, 3)
        export = lib.lse_u4_matvec
    else:
        x, parts, want = _other_case(fmt, 11, 576, 3)
        export = getattr(lib, f"lse_{cpu_kernels.KERNELS[fmt][0]}")
    scales = np.array([1e-30, 1.0, 1e20])[:, None]
    y = _run(export, (x * scales).astype(np.float32), parts, 11, _k_for(fmt, 576), 4)
    for r in range(3):
        np.testing.assert_allclose(y[r], want[r] * scales[r], rtol=1e-5, atol=1e-5 * np.abs(want[r] * scales[r]).max())


def test_u4_matvec_under_iree_worker_fpu_state(lib):
    """With flush-to-zero and denormals-are-zero set, as on IREE's workers,
    the results are unchanged and the caller's MXCSR is given back."""
    x, parts, want = _u4_case(13, 576, 1)
    before = lib.lse_test_get_mxcsr()
    lib.lse_test_set_mxcsr(before | FTZ_DAZ)
    try:
        y = _run(lib.lse_u4_matvec, x, parts, 13, 576, 4)
        during = lib.lse_test_get_mxcsr()
    finally:
        lib.lse_test_set_mxcsr(before)
    assert during == before | FTZ_DAZ
    np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("n,k,r,tile", [(7, 320, 1, 4), (50, 576, 1, 16), (13, 1536, 3, 8), (9, 64, 9, 4),
                                        (11, 1216, 7, 4), (9, 1088, 9, 4), (6, 4096, 8, 4)])
def test_i8_matvec_equals_numpy(lib, n, k, r, tile):
    x, parts, want = _i8_case(n, k, r)
    y = _run(lib.lse_i8_matvec, x, parts, n, k, tile)
    np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-4)


def _i8_case(n, k, r):
    rng = np.random.default_rng(n * k + r + 1)
    q = rng.integers(-128, 128, (n, k), dtype=np.int8)
    d = rng.uniform(0.001, 0.05, (n, k // 32)).astype(np.float16)
    x = rng.standard_normal((r, k)).astype(np.float32)
    w = (d.astype(np.float32)[..., None] * q.reshape(n, -1, 32)).reshape(n, k)
    return x, _interleaved(q, d), x.astype(np.float64) @ w.T.astype(np.float64)


@pytest.mark.parametrize("n,k,r,tile", [
    (7, 320, 19, 16),     # 19 = 3 * 6 + 1 rows, a ragged panel, k across a chunk boundary
    (13, 1536, 17, 16),   # a last tile of 5 rows
    (64, 576, 18, 64),    # full tiles, four panels, three chunks
    (40, 4096, 37, 48),   # 37 = 6 * 6 + 1 rows, a ragged last workgroup
    (200, 64, 23, 32),    # seven workgroups, the last holding 8 columns
    (13, 1536, 5, 16),    # few rows: the matvec's
])
@pytest.mark.parametrize("fmt", ["q4_1", "q8_0"])
def test_prompt_gemm_equals_numpy(gemm, fmt, n, k, r, tile):
    x, parts, want = _u4_case(n, k, r) if fmt == "q4_1" else _i8_case(n, k, r)
    fn = gemm.lse_u4_gemm if fmt == "q4_1" else gemm.lse_i8_gemm
    y = _run(fn, x, parts, n, k, tile)
    np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-5 * np.abs(want).max())


def _other_case(fmt, n, k, r):
    """A block format in lse-import's layout (compiler/gguf/reader.py), 4-bit
    ones interleaved as lse-compile writes them: the parts the kernels take
    and the dequantized matrix."""
    rng = np.random.default_rng(n * k + r + len(fmt))
    block = 16 if fmt == "q6_k" else 32
    k = _k_for(fmt, k)
    lo, hi = {"q4_0": (-8, 8), "q5_0": (-16, 16), "q5_1": (0, 32), "q4_k": (0, 16), "q5_k": (0, 32),
              "q6_k": (-32, 32)}[fmt]
    q = rng.integers(lo, hi, (n, k), dtype=np.int8)
    scale = np.float16 if fmt in ("q4_0", "q5_0", "q5_1") else np.float32
    d = (_k_scales(rng, n, k, block, -128, 128) if fmt == "q6_k" else _k_scales(rng, n, k, block, 0, 64)
         if fmt in kernel_layout.K_SUPER else rng.uniform(0.001, 0.05, (n, k // block)).astype(scale))
    w = d.astype(np.float32)[..., None] * q.reshape(n, -1, block).astype(np.float32)
    parts = [q, d]
    if fmt in ("q4_k", "q5_k", "q5_1"):
        m = (-_k_scales(rng, n, k, block, 0, 64) if fmt != "q5_1"
             else rng.uniform(-0.2, 0.0, (n, k // block)).astype(scale))
        w = w + m.astype(np.float32)[..., None]
        parts.append(m)
    if fmt in ("q4_0", "q4_k"):  # two per byte: value 2j in the low nibble
        nib = q.view(np.uint8) & 0x0F
        parts[0] = nib[:, 0::2] | (nib[:, 1::2] << 4)
    parts = _interleaved(*parts, fmt=fmt)
    x = rng.standard_normal((r, k)).astype(np.float32)
    return x, parts, x.astype(np.float64) @ w.reshape(n, k).T.astype(np.float64)


@pytest.mark.parametrize("n,k,r,tile", [(7, 320, 17, 16), (40, 576, 25, 48), (64, 1536, 6, 64)])
@pytest.mark.parametrize("fmt", ["q4_0", "q5_0", "q5_1", "q4_k", "q5_k", "q6_k"])
def test_prompt_gemm_serves_the_other_block_formats(gemm, fmt, n, k, r, tile):
    """Q4_0, Q5_0/Q5_1 (kept as int8) and the K-quants (Q4_K_M files): int8
    sub-block and f16 super-block scales, signed nibbles, int8 and 6-bit
    values, 16-value blocks; each through the
    export cpu_kernels.GEMMS names for it."""
    x, parts, want = _other_case(fmt, n, k, r)
    y = _run(getattr(gemm, f"lse_{cpu_kernels.GEMMS[fmt][0]}"), x, parts, n, _k_for(fmt, k), tile)
    np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-5 * np.abs(want).max())


@pytest.mark.parametrize("r", [1, 5, cpu_kernels.GEMM_FEW_ROWS, cpu_kernels.GEMM_FEW_ROWS + 1])
@pytest.mark.parametrize("fmt", ["q4_1", "q6_k"])
def test_prompt_gemm_hands_few_rows_to_the_matvec(gemm, fmt, r):
    """Up to GEMM_FEW_ROWS rows, the GEMM export's result is the matvec
    export's, bit for bit, on the GEMM's column tiles; one more row takes the
    panels. Both equal numpy."""
    n, k, tile = 40, _k_for(fmt, 576), 32
    x, parts, want = _u4_case(n, k, r) if fmt == "q4_1" else _other_case(fmt, n, k, r)
    y = _run(getattr(gemm, f"lse_{cpu_kernels.GEMMS[fmt][0]}"), x, parts, n, k, tile)
    via_matvec = _run(getattr(gemm, f"lse_{cpu_kernels.KERNELS[fmt][0]}"), x, parts, n, k, tile)
    assert np.array_equal(y, via_matvec) == (r <= cpu_kernels.GEMM_FEW_ROWS)
    np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-5 * np.abs(want).max())


@pytest.mark.parametrize("n,k,r,tile", [(7, 320, 1, 4), (13, 576, 1, 8), (9, 1536, 3, 4), (12, 256, 9, 12),
                                        (9, 1536, 7, 4)])
@pytest.mark.parametrize("fmt", ["q4_0", "q5_0", "q5_1", "q4_k", "q5_k", "q6_k"])
def test_decode_matvec_serves_the_other_block_formats(lib, fmt, n, k, r, tile):
    """Decode's matvec for Q4_0 (signed nibbles, the -8 through x's block
    sums), Q5_1 (int8 with m) and the K-quants of Q4_K_M / Q5_K_M files (int8
    sub-block and f16 super-block scales; Q6_K's 6-bit values in 16-value
    blocks), one row and several, each through the
    export cpu_kernels.KERNELS names for it."""
    x, parts, want = _other_case(fmt, n, k, r)
    y = _run(getattr(lib, f"lse_{cpu_kernels.KERNELS[fmt][0]}"), x, parts, n, _k_for(fmt, k), tile)
    np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-5 * np.abs(want).max())


@pytest.mark.parametrize("x_scale", [1e-30, 1e20])
@pytest.mark.parametrize("fmt", ["q4_0", "q4_k", "q6_k"])
def test_four_bit_matvecs_any_activation_magnitude(lib, fmt, x_scale):
    """The other 4-bit formats, and Q6_K's 6-bit lanes, share q4_1's
    power-of-two scaling of x."""
    x, parts, want = _other_case(fmt, 11, 576, 1)
    x = (x * x_scale).astype(np.float32)
    want = want * x_scale
    y = _run(getattr(lib, f"lse_{cpu_kernels.KERNELS[fmt][0]}"), x, parts, 11, _k_for(fmt, 576), 4)
    np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-5 * np.abs(want).max())


@pytest.mark.parametrize("rows,width,per", [(1, 576, 8), (37, 576, 8), (5, 40, 2), (9, 24, 4)])
def test_rms_norm_equals_numpy(tmp_path, rows, width, per):
    """lse_norm.c: widths that are and aren't multiples of its 16-wide loop,
    a ragged last workgroup."""
    out = tmp_path / "lse_norm.so"
    subprocess.run(["cc", *cpu_kernels.cflags(), "-fvisibility=default", "-shared", str(cpu_kernels.NORM_SOURCE),
                    "-o", str(out)], check=True)
    fn = ctypes.CDLL(str(out)).lse_rms_norm
    fn.argtypes = [ctypes.c_void_p, ctypes.c_size_t] * 3 + [ctypes.c_size_t] * 5
    rng = np.random.default_rng(rows * width)
    x = (rng.standard_normal((rows, width)) * 3).astype(np.float32)
    w = rng.uniform(0.5, 2.0, width).astype(np.float32)
    eps = np.float32(1e-5)
    y = np.full_like(x, np.nan)
    for wg in range(-(-rows // per)):
        fn(_ptr(x), 0, _ptr(w), 0, _ptr(y), 0, rows, width, int(eps.view(np.uint32)), per, wg)
    x64 = x.astype(np.float64)
    want = x64 / np.sqrt((x64 * x64).mean(-1, keepdims=True) + 1e-5) * w
    np.testing.assert_allclose(y, want, rtol=2e-6, atol=1e-6)
    # with a residual: s = x + b, y = norm(s)
    add = ctypes.CDLL(str(out)).lse_add_rms_norm
    add.argtypes = [ctypes.c_void_p, ctypes.c_size_t] * 5 + [ctypes.c_size_t] * 5
    b = rng.standard_normal((rows, width)).astype(np.float32)
    s, y2 = np.full_like(x, np.nan), np.full_like(x, np.nan)
    for wg in range(-(-rows // per)):
        add(_ptr(x), 0, _ptr(b), 0, _ptr(w), 0, _ptr(s), 0, _ptr(y2), 0, rows, width, int(eps.view(np.uint32)), per, wg)
    np.testing.assert_array_equal(s, x + b)
    s64 = s.astype(np.float64)
    np.testing.assert_allclose(y2, s64 / np.sqrt((s64 * s64).mean(-1, keepdims=True) + 1e-5) * w, rtol=2e-6, atol=1e-6)


def _case(fmt, n, k, r):
    return _u4_case(n, k, r) if fmt == "q4_1" else _i8_case(n, k, r) if fmt == "q8_0" else _other_case(fmt, n, k, r)


@pytest.mark.parametrize("r", [1, 3, 9])
@pytest.mark.parametrize("rows,tile", [((7, 5), 4), ((7, 5, 11), 8), ((9, 3, 3), 12), ((4, 4, 4), 4)])
@pytest.mark.parametrize("fmt", ["q4_1", "q8_0", "q4_0", "q6_k"])
def test_sibling_matvecs_equal_one_matvec_each(lib, fmt, rows, tile, r):
    """lse_<stem>_matvec2 / _matvec3 (a layer's gate and up, its q, k and v,
    in one dispatch): the matrices' rows in sequence, `tile` a workgroup, so
    a workgroup's rows may go on from one matrix into the next. Each result
    is the one-matrix export's on the same x, bit for bit (that export equals
    numpy above), and no y is written past its rows."""
    k = _k_for(fmt, 320)
    x = _case(fmt, 1, k, r)[0]
    parts = [_case(fmt, n, k, r)[1] for n in rows]
    singles = [_run(getattr(lib, f"lse_{cpu_kernels.KERNELS[fmt][0]}"), x, p, n, k, 4) for n, p in zip(rows, parts)]
    guarded = [np.full((r + 8, n), 12345.0, np.float32) for n in rows]
    buffers = [x, *(a for p in parts for a in p), *guarded]
    args = [a for b in buffers for a in (_ptr(b), 0)] + [r, *rows, k, tile]
    fn = getattr(lib, f"lse_{cpu_kernels.KERNELS[fmt][0]}{len(rows)}")
    fn.argtypes = [ctypes.c_void_p, ctypes.c_size_t] * len(buffers) + [ctypes.c_size_t] * (len(rows) + 4)
    for wg in range(-(-sum(rows) // tile)):
        fn(*args, wg)
    for g, single in zip(guarded, singles):
        assert (g[r:] == 12345.0).all(), "the kernel wrote past its rows"
        assert np.array_equal(g[:r], single)


SERVED_K = [2048, 3072, 3584, 8192, 18944]  # the row lengths of 1B-7B models (bench_bytes.SHAPES)


def _any_case(fmt, n, k, r):
    return _u4_case(n, k, r) if fmt == "q4_1" else _i8_case(n, k, r) if fmt == "q8_0" else _other_case(fmt, n, k, r)


@pytest.mark.parametrize("k", SERVED_K)
@pytest.mark.parametrize("fmt", cpu_kernels.KERNELS)
def test_every_format_at_the_served_row_lengths(lib, gemm, fmt, k):
    """Decode's matvec (1, 3 and 8 rows of x: past 256 blocks a row, fewer rows
    of x a pass, as their block sums fit) and the prompt GEMM (17 rows, past
    GEMM_FEW_ROWS: the panels) of every block format at the row lengths of
    Llama-3.2-1B/3B and Qwen2.5-7B, 19 rows (a partial group of 16, a ragged
    last tile); the emitter takes the kernel at each."""
    n = 19
    assert cpu_kernels.supports(fmt, k) and cpu_kernels.gemm_supports(fmt, k)
    for r, fn, tile in ((1, getattr(lib, f"lse_{cpu_kernels.KERNELS[fmt][0]}"), 8),
                        (3, getattr(lib, f"lse_{cpu_kernels.KERNELS[fmt][0]}"), 8),
                        (8, getattr(lib, f"lse_{cpu_kernels.KERNELS[fmt][0]}"), 8),
                        (cpu_kernels.GEMM_FEW_ROWS + 1, getattr(gemm, f"lse_{cpu_kernels.GEMMS[fmt][0]}"), 16)):
        x, parts, want = _any_case(fmt, n, k, r)
        y = _run(fn, x, parts, n, k, tile)
        np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-5 * np.abs(want).max(), err_msg=f"{r} rows")


@pytest.fixture(scope="module")
def lane_builds(tmp_path_factory):
    """lse_qmv.c at this CPU's level, once with each lane kind."""
    libs = {}
    for lane in cpu_kernels.LANES:
        out = tmp_path_factory.mktemp(f"qmv-{lane}") / "lse_qmv.so"
        subprocess.run(["cc", *cpu_kernels.cflags(None, lane), "-fvisibility=default", "-shared",
                        str(cpu_kernels.SOURCE), "-o", str(out)], check=True)
        libs[lane] = ctypes.CDLL(str(out))
    return libs


@pytest.mark.parametrize("x_scale", [1e-6, 1.0, 1e20])
@pytest.mark.parametrize("fmt", cpu_kernels.KERNELS)
def test_denormal_and_converted_lanes_give_the_same_bits(lane_builds, fmt, x_scale):
    """The two lane kinds differ by powers of two only (lse_qmv.c's LANE512), so
    every format's sums are the same floats either way, at 1, 3 and 8 rows of x."""
    for r in (1, 3, 8):
        x, parts, _ = _any_case(fmt, 21, 2048, r)
        x = (x * x_scale).astype(np.float32)
        ys = [_run(getattr(lib, f"lse_{cpu_kernels.KERNELS[fmt][0]}"), x, parts, 21, 2048, 8)
              for lib in lane_builds.values()]
        assert np.array_equal(ys[0], ys[1]), f"{fmt}, {r} rows of x"
