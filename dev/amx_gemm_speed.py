"""The prompt GEMM's AMX form against its f32 kernel, both built here from
this tree's lse_gemm.c (the f32 kernel for x86-64-v4 at 64 columns a
workgroup, the AMX build at --tile columns, its lse_split_x inside the
timing), called through ctypes on 2 threads sharing the workgroups as a
2-core machine's IREE workers do: how far apart the two results are (max
|y_amx - y_f32| / max |y_f32|) and G multiply-adds a second, best of 6.
The weights are random bytes in the layout's shapes (dev/kernel_speed.py).

    python dev/amx_gemm_speed.py --case q4_k:2048x2048 --case q6_k:2048x8192 --rows 512 --rows 170

Record `uptime` beside any figure: the machine is shared.
"""

from __future__ import annotations

import argparse
import ctypes
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

from lse.compiler import cpu_kernel_build as cpu_kernels

sys.path.insert(0, str(Path(__file__).parent))
from kernel_speed import parts  # noqa: E402

P, S = ctypes.c_void_p, ctypes.c_size_t


def build(out: Path, amx: bool) -> ctypes.CDLL:
    flags = (*cpu_kernels.cflags("v4"), *(cpu_kernels.AMX_CFLAGS if amx else ()))
    subprocess.run(["cc", *flags, "-fvisibility=default", "-shared", f"-I{cpu_kernels.SOURCE.parent}",
                    str(cpu_kernels.GEMM_SOURCE), str(cpu_kernels.SOURCE), "-o", str(out)], check=True)
    return ctypes.CDLL(str(out))


def runner(lib, stem: str, ps: list[np.ndarray], x: np.ndarray, n: int, tile: int, split: bool, pool):
    """(y, a timed call): every workgroup, the two threads taking turns; the split first where ``split``."""
    rows, k = x.shape
    tiles = -(-rows // 16)
    y = np.zeros((rows, n), np.float32)
    xt, xs = np.zeros(tiles * k // 32 * 1536, np.uint16), np.zeros(tiles * k // 32 * 16, np.float32)
    fn = getattr(lib, f"lse_{stem}")
    bound = [x, *([xt, xs] if split else []), *ps]
    fn.argtypes = [P, S] * len(bound) + [P] + [S] * 6
    args = [a for b in bound for a in (P(b.ctypes.data), 0)] + [P(y.ctypes.data), 0, rows, n, k, tile]
    if split:
        lib.lse_split_x.argtypes = [P, S] * 3 + [S] * 4
    wgs, swgs = list(range(-(-n // tile))), list(range(-(-tiles // 2)))

    def run(share):
        for wg in share:
            fn(*args, wg)

    def split_run(share):
        for wg in share:
            lib.lse_split_x(x.ctypes.data, 0, xt.ctypes.data, 0, xs.ctypes.data, 0, rows, k, 2, wg)

    def once() -> float:
        t = time.perf_counter()
        if split:
            list(pool.map(split_run, [swgs[0::2], swgs[1::2]]))
        list(pool.map(run, [wgs[0::2], wgs[1::2]]))
        return time.perf_counter() - t
    return y, once


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--case", action="append", help="fmt:NxK, default q4_k:2048x2048")
    ap.add_argument("--rows", action="append", type=int, help="rows of x (default 512)")
    ap.add_argument("--tile", type=int, default=128, help="the AMX build's columns a workgroup")
    a = ap.parse_args()
    ctypes.CDLL(None).syscall(158, 0x1023, 18)  # the tiles' grant (the kernel asks too)
    tmp = Path(tempfile.mkdtemp(prefix="lse-amx-"))
    f32, amx = build(tmp / "f32.so", False), build(tmp / "amx.so", True)
    rng, pool = np.random.default_rng(1), ThreadPoolExecutor(2)
    for case in a.case or ["q4_k:2048x2048"]:
        fmt, shape = case.split(":")
        n, k = map(int, shape.split("x"))
        ps, stem = parts(fmt, n, k, rng), cpu_kernels.GEMMS[fmt][0]
        for rows in a.rows or [512]:
            x = rng.standard_normal((rows, k)).astype(np.float32)
            (yf, tf), (ya, ta) = (runner(f32, stem, ps, x, n, 64, False, pool),
                                  runner(amx, stem, ps, x, n, a.tile, True, pool))
            tf(), ta()
            err = np.abs(ya - yf).max() / np.abs(yf).max()
            bf = min(min(tf() for _ in range(3)), min(tf() for _ in range(3)))
            ba = min(min(ta() for _ in range(3)), min(ta() for _ in range(3)))
            g = rows * n * k / 1e9
            print(f"{case} rows {rows}: apart {err:.1e}  f32 {bf * 1e3:.1f} ms {g / bf:.0f} G/s  "
                  f"AMX {ba * 1e3:.1f} ms {g / ba:.0f} G/s  {bf / ba:.2f}x")


if __name__ == "__main__":
    main()
