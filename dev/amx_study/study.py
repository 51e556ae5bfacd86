"""AMX-BF16 against the AVX-512 f32 GEMM (lse_gemm.c's q4_1 export, the
x86-64-v4 build), two ways (amx_gemm.c: amx, x in three bf16 parts and each
block's sums scaled; amx-w3, the dequantised weights in three parts too): speed at the 1B and 7B shapes, one thread, 512 rows, the
kernels alternating in one process, best of --calls; and each one's error
against an f64 product on the dequantised weights (max |y - ref| / max |ref|,
and the largest error relative to the element's own magnitude among those
above 1% of the maximum). q4_1's values (0..15), f16 d and m per 32 values.

    python dev/amx_study/study.py [--calls 3] [--case 512x2048x2048 ...]

A case is RxNxK (rows of x, columns of y, values a row); N a multiple of 16 * --tn
(one workgroup of 16 * tn columns each), K of 32. Record `uptime` beside it.
"""

from __future__ import annotations

import argparse
import functools
import ctypes
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np

from lse.compiler import cpu_kernel_build as cpu_kernels, kernel_layout

HERE = Path(__file__).parent
AMX_FLAGS = ("-O3", "-march=x86-64-v4", "-mavx512bf16", "-mamx-tile", "-mamx-bf16", "-fPIC", "-shared")
P = ctypes.c_void_p


def build(tmp: Path, tn: int) -> tuple[ctypes.CDLL, ctypes.CDLL]:
    amx, f32 = tmp / "amx.so", tmp / "gemm.so"
    subprocess.run(["cc", *AMX_FLAGS, f"-DTN={tn}", str(HERE / "amx_gemm.c"), "-o", str(amx)], check=True)
    subprocess.run(["cc", *cpu_kernels.cflags("v4"), "-fvisibility=default", "-shared", str(cpu_kernels.GEMM_SOURCE),
                    str(cpu_kernels.SOURCE), "-o", str(f32)], check=True)
    return ctypes.CDLL(str(amx)), ctypes.CDLL(str(f32))


def case(r: int, n: int, k: int, rng, x_scale: float = 1.0):
    values = rng.integers(0, 16, (n, k), dtype=np.uint8)
    d = rng.uniform(0.001, 0.05, (n, k // 32)).astype(np.float16)
    m = rng.uniform(-0.2, 0.0, (n, k // 32)).astype(np.float16)
    x = (rng.standard_normal((r, k)) * x_scale).astype(np.float32)
    w = (d.astype(np.float32)[..., None] * values.reshape(n, -1, 32) + m.astype(np.float32)[..., None]).reshape(n, k)
    packed = values[:, 0::2] | (values[:, 1::2] << 4)
    f32_parts = [kernel_layout.layout_q("q4_1", packed.reshape(n, -1, 16)), kernel_layout.interleave_scales(d),
                 kernel_layout.interleave_scales(m)]
    amx_parts = [f32_parts[0], kernel_layout.interleave_scales(d.astype(np.float32)),
                 kernel_layout.interleave_scales(m.astype(np.float32))]
    return x, f32_parts, amx_parts, x.astype(np.float64) @ w.T.astype(np.float64)


def runner(fn, args: list, wgs: int, first=None):
    """A call of every workgroup in turn (after ``first``: AMX's split of x, once a call), timed."""
    def once() -> float:
        t = time.perf_counter()
        if first:
            first()
        for wg in range(wgs):
            fn(*args, wg)
        return time.perf_counter() - t
    return once


def errors(y: np.ndarray, ref: np.ndarray) -> str:
    err, top = np.abs(y - ref), np.abs(ref).max()
    big = np.abs(ref) > 0.01 * top
    return f"max err / max |ref| {err.max() / top:.2e}, rel (|ref| > 1% of max) {(err[big] / np.abs(ref[big])).max():.2e}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--case", action="append", help="RxNxK")
    ap.add_argument("--calls", type=int, default=3)
    ap.add_argument("--x-scale", type=float, default=1.0, help="x's magnitude (accuracy across scales)")
    ap.add_argument("--tn", type=int, default=16, help="AMX workgroup's column tiles of 16 (amx_gemm.c's TN)")
    a = ap.parse_args()
    amx, f32 = build(Path(tempfile.mkdtemp(prefix="lse-amx-")), a.tn)
    assert amx.amx_request() == 0, "the OS refused AMX's tile data"
    rng = np.random.default_rng(0)
    for spec in a.case or ["512x2048x2048", "512x1024x3584", "512x1024x18944"]:
        r, n, k = map(int, spec.split("x"))
        x, f32_parts, amx_parts, ref = case(r, n, k, rng, a.x_scale)
        ys = {name: np.zeros((r, n), np.float32) for name in ("avx512", "amx", "amx-w3")}
        tile = cpu_kernels.gemm_tile(n)[0]
        fa = [P(x.ctypes.data), 0, *[v for p in f32_parts for v in (P(p.ctypes.data), 0)], P(ys["avx512"].ctypes.data),
              0, r, n, k, tile]
        f32.lse_u4_gemm.argtypes = [P, ctypes.c_size_t] * 5 + [ctypes.c_size_t] * 5
        xs, xsum = np.zeros((r // 16, -(-k // 192), 3, 16, 192), np.uint16), np.empty((r, k // 32), np.float32)
        aa = [P(xs.ctypes.data), P(xsum.ctypes.data), *[P(p.ctypes.data) for p in amx_parts],
              P(ys["amx"].ctypes.data), r, n, k]
        amx.amx_gemm.argtypes = [P] * 6 + [ctypes.c_size_t] * 4
        amx.amx_gemm_w3.argtypes = amx.amx_gemm.argtypes
        aw = [*aa[:5], P(ys["amx-w3"].ctypes.data), r, n, k]
        amx.amx_split.argtypes = [P, ctypes.c_size_t, ctypes.c_size_t, P, P]
        split = [P(x.ctypes.data), r, k, P(xs.ctypes.data), P(xsum.ctypes.data)]
        timers = {"avx512": runner(f32.lse_u4_gemm, fa, -(-n // tile)),
                  "amx": runner(amx.amx_gemm, aa, n // (16 * a.tn), functools.partial(amx.amx_split, *split)),
                  "amx-w3": runner(amx.amx_gemm_w3, aw, n // (16 * a.tn), functools.partial(amx.amx_split, *split))}
        best = {name: min(once() for _ in range(a.calls)) for name, once in timers.items()}
        best = {name: min(best[name], *(once() for _ in range(a.calls))) for name, once in timers.items()}
        for name, t in best.items():
            print(f"{spec} {name:>6}: {t * 1e3:8.2f} ms {2 * r * n * k / t / 1e9:7.1f} GFLOP/s  {errors(ys[name], ref)}")


if __name__ == "__main__":
    main()
