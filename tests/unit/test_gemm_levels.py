"""The prompt GEMM's AVX-512 microkernel (lse_gemm.c built for x86-64-v4:
6 rows x up to 4 panels in zmm registers, sums written into y through lane
masks) against its AVX2 one (the x86-64-v3 build), both built here: every
column's sum runs over k in the same order, so every block format gives the
same bits, at row counts past the 6-row tiles (17, 33, 100), tiles of 1 to 4
panels with ragged last panels and workgroups, and k across the 192-value
chunks. The matrices are random bytes in the layout's shapes (any byte is a
value of every format), the scales positive and finite."""

from __future__ import annotations

import ctypes
import subprocess

import numpy as np
import pytest

from lse.compiler import cpu_kernel_build as cpu_kernels

pytestmark = pytest.mark.skipif(cpu_kernels.kernels_available() is not None or not cpu_kernels.v4_capable(),
                                reason="needs the kernels and a CPU with AVX-512 (both builds run here)")

# stem → (q bytes a row's block in the layout, values a block, K-quant super-block scales per 256 values)
LAYOUT = {"u4": (16, 32, 0), "i8": (32, 32, 0), "q5_1": (32, 32, 0), "q4_0": (16, 32, 0), "q4_k": (16, 32, 2),
          "q5_k": (32, 32, 2), "q6_k": (12, 16, 1)}


@pytest.fixture(scope="module")
def builds(tmp_path_factory):
    libs = {}
    for level in ("v3", "v4"):
        out = tmp_path_factory.mktemp(f"gemm-{level}") / "lse_gemm.so"
        subprocess.run(["cc", *cpu_kernels.cflags(level), "-fvisibility=default", "-shared",
                        str(cpu_kernels.GEMM_SOURCE), str(cpu_kernels.SOURCE), "-o", str(out)], check=True)
        libs[level] = ctypes.CDLL(str(out))
    return libs


def _parts(stem: str, has_m: bool, n: int, k: int, rng) -> list[np.ndarray]:
    qb, block, ks = LAYOUT[stem]
    groups, nb = -(-n // 16), k // block
    q = rng.integers(0, 256, groups * nb * 16 * qb, dtype=np.uint8)
    if ks:  # int8 sub-block scales (ks a block), f16 super-block scales (ks per 256 values)
        return [q, rng.integers(-64, 64, groups * nb * 16 * ks, dtype=np.int8),
                rng.uniform(0.0005, 0.003, groups * (k // 256) * 16 * ks).astype(np.float16)]
    d = rng.uniform(0.001, 0.05, groups * nb * 16).astype(np.float16)
    return [q, d, rng.uniform(-0.2, 0.0, d.size).astype(np.float16)] if has_m else [q, d]


def _split(lib, x: np.ndarray) -> list[np.ndarray]:
    """lse_split_x (the AMX build) of x, two tiles of 16 rows a workgroup."""
    r, k = x.shape
    tiles = -(-r // 16)
    xt, xs = np.zeros(tiles * k // 32 * 1536, np.uint16), np.zeros(tiles * k // 32 * 16, np.float32)
    lib.lse_split_x.argtypes = [ctypes.c_void_p, ctypes.c_size_t] * 3 + [ctypes.c_size_t] * 4
    for wg in range(-(-tiles // 2)):
        lib.lse_split_x(x.ctypes.data, 0, xt.ctypes.data, 0, xs.ctypes.data, 0, r, k, 2, wg)
    return [xt, xs]


def _gemm(lib, stem: str, x: np.ndarray, parts: list[np.ndarray], n: int, tile: int, split: bool = False) -> np.ndarray:
    r, k = x.shape
    y = np.full((r, n), np.nan, np.float32)
    fn = getattr(lib, f"lse_{stem}_gemm")
    parts = (_split(lib, x) if split else []) + parts
    fn.argtypes = [ctypes.c_void_p, ctypes.c_size_t] * (1 + len(parts)) + [ctypes.c_void_p] + [ctypes.c_size_t] * 6
    args = [ctypes.c_void_p(x.ctypes.data), 0]
    for p in parts:
        args += [ctypes.c_void_p(p.ctypes.data), 0]
    args += [ctypes.c_void_p(y.ctypes.data), 0, r, n, k, tile]
    for wg in range(-(-n // tile)):
        fn(*args, wg)
    return y


@pytest.mark.parametrize("r", [17, 33, 100])
@pytest.mark.parametrize("fmt", cpu_kernels.GEMMS)
def test_avx512_and_avx2_gemms_give_the_same_bits(builds, fmt, r):
    stem, has_m = cpu_kernels.GEMMS[fmt][0].removesuffix("_gemm"), cpu_kernels.GEMMS[fmt][1]
    rng = np.random.default_rng(r * 31 + len(fmt))
    for n, k, tile in ((40, 768, 64), (100, 1024, 48), (37, 512, 32), (21, 256, 16)):
        x = rng.standard_normal((r, k)).astype(np.float32)
        parts = _parts(stem, has_m, n, k, rng)
        ys = [_gemm(lib, stem, x, parts, n, tile) for lib in builds.values()]
        assert np.isfinite(ys[0]).all(), f"{fmt}: a column left unwritten"
        assert np.array_equal(ys[0], ys[1]), f"{fmt}, {r} rows, n={n}, k={k}, tile={tile}"


def _amx_granted() -> bool:
    """The CPU has AMX-BF16 and the OS gives this process the tiles (the
    kernel asks the same way, and runs the f32 kernel where refused)."""
    if not all(f in cpu_kernels._cpu_flags() for f in cpu_kernels.AMX_CPU_FLAGS):
        return False
    return ctypes.CDLL(None).syscall(158, 0x1023, 18) == 0  # arch_prctl(ARCH_REQ_XCOMP_PERM, XTILEDATA)


needs_amx = pytest.mark.skipif(not _amx_granted(), reason="needs a CPU with AMX-BF16 and the OS's grant of its tiles")


@pytest.fixture(scope="module")
def amx_build(tmp_path_factory):
    out = tmp_path_factory.mktemp("gemm-amx") / "lse_gemm.so"
    subprocess.run(["cc", *cpu_kernels.cflags("v4"), *cpu_kernels.AMX_CFLAGS, "-fvisibility=default", "-shared",
                    str(cpu_kernels.GEMM_SOURCE), str(cpu_kernels.SOURCE), "-o", str(out)], check=True)
    return ctypes.CDLL(str(out))


@needs_amx
@pytest.mark.parametrize("r", [17, 75, 130])
@pytest.mark.parametrize("fmt", cpu_kernels.GEMMS)
def test_amx_gemm_agrees_with_the_f32_kernel(builds, amx_build, fmt, r):
    """The AMX form (lse_gemm_amx.h: x split by lse_split_x into three bf16
    parts, each block's sums scaled) against the f32 kernel: as close as two f32 summation orders, and
    not the same bits (so the AMX form ran: the kernel asks the OS for the
    tiles, and takes the f32 kernel where refused), for row counts from its
    least (17) with ragged 16-row tiles, ragged columns, 1 to 16 groups a
    workgroup and k across its chunks; x spread over 2^-40..2^40 in some rows,
    which only exact parts of x keep. Q6_K's tiles hold sc * q in two parts
    (its 16-value blocks): the same check."""
    stem, has_m = cpu_kernels.GEMMS[fmt][0].removesuffix("_gemm"), cpu_kernels.GEMMS[fmt][1]
    rng = np.random.default_rng(r * 7 + len(fmt))
    for n, k, tile in ((40, 768, 128), (200, 1024, 128), (37, 512, 16), (256, 256, 256), (100, 1536, 64)):
        x = rng.standard_normal((r, k)).astype(np.float32)
        x[::5] *= np.exp2(rng.integers(-40, 40, (len(x[::5]), k))).astype(np.float32)
        parts = _parts(stem, has_m, n, k, rng)
        ref, got = _gemm(builds["v4"], stem, x, parts, n, 64), _gemm(amx_build, stem, x, parts, n, tile, True)
        assert np.isfinite(got).all(), f"{fmt}: a column left unwritten"
        scale = np.abs(ref).max(axis=1, keepdims=True)  # each row's own magnitude
        err = float((np.abs(got - ref) / scale).max())
        assert err < 2e-6, f"{fmt}, {r} rows, n={n}, k={k}, tile={tile}: {err:.2e}"
        assert not np.array_equal(got, ref), f"{fmt}: the same bits as the f32 kernel (did the AMX form run?)"
