"""Every format's matvecs on integer dot products (compiler/cpu_kernels/lse_qmv_dots.h),
built where the CPU has AVX512-VNNI and VBMI: they run (their sums are not
the FMA loop's bits), they agree with the FMA loop and numpy within f32's
own rounding of the sums, and every row count gives each row the same bits,
so a verification's rows are decode's."""

from __future__ import annotations

import ctypes
import subprocess

import numpy as np
import pytest
from test_cpu_kernels import _any_case, _run

from lse.compiler import cpu_kernel_build as cpu_kernels

pytestmark = [pytest.mark.unit,
              pytest.mark.skipif(not cpu_kernels.v4_capable()
                                 or not all(f in cpu_kernels._cpu_flags() for f in cpu_kernels.DOTS_CPU_FLAGS),
                                 reason="needs a CPU with AVX-512, VNNI and VBMI")]
INT_FORMATS = ["q4_0", "q4_1", "q4_k", "q6_k", "q8_0", "q5_0", "q5_1", "q5_k"]  # the 4-bit, q6_k and 8-bit paths of lse_qmv_dots.h


@pytest.fixture(scope="module")
def builds(tmp_path_factory):
    libs = {}
    for dots in (False, True):
        out = tmp_path_factory.mktemp(f"qmv-dots-{dots}") / "lse_qmv.so"
        subprocess.run(["cc", *cpu_kernels.cflags("v4", None, dots), "-fvisibility=default", "-shared",
                        str(cpu_kernels.SOURCE), "-o", str(out)], check=True)
        libs[dots] = ctypes.CDLL(str(out))
    return libs


def _matvec(lib, fmt, x, parts, n, k, tile=8):
    return _run(getattr(lib, f"lse_{cpu_kernels.KERNELS[fmt][0]}"), x, parts, n, k, tile)


@pytest.mark.parametrize("fmt", INT_FORMATS)
@pytest.mark.parametrize("k", [256, 2048, 8192])
def test_integer_sums_agree_with_the_fma_loop_and_numpy(builds, fmt, k):
    n = 37
    x, parts, want = _any_case(fmt, n, k, 3)
    fma, ints = (_matvec(builds[d], fmt, x, parts, n, k) for d in (False, True))
    assert not np.array_equal(fma, ints), "the same bits as the FMA loop: did the integer path run?"
    scale = np.abs(want).max()
    np.testing.assert_allclose(ints, want, rtol=1e-5, atol=1e-5 * scale)
    # no further from numpy than the FMA loop is, give or take f32's rounding of the sums
    assert np.abs(ints - want).max() <= 2 * np.abs(fma - want).max() + 1e-6 * scale


@pytest.mark.parametrize("fmt", INT_FORMATS)
def test_each_row_gets_the_same_bits_at_any_row_count(builds, fmt):
    n, k = 45, 1024
    x, parts, _ = _any_case(fmt, n, k, 8)
    alone = np.concatenate([_matvec(builds[True], fmt, x[i:i + 1], parts, n, k) for i in range(8)])
    for r in (2, 3, 4, 8):
        together = _matvec(builds[True], fmt, x[:r], parts, n, k)
        assert np.array_equal(together, alone[:r]), f"{r} rows"


def test_the_build_asks_for_them_unless_told_not_to(monkeypatch):
    assert cpu_kernels.int_dots()
    assert "-DLSE_INT_DOTS=1" in cpu_kernels.cflags() and "-DLSE_INT_DOTS=1" not in cpu_kernels.cflags("v3")
    monkeypatch.setenv("LSE_KERNEL_DOTS", "0")
    assert not cpu_kernels.int_dots() and "-DLSE_INT_DOTS=1" not in cpu_kernels.cflags()
