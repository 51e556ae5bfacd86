"""One thread's speed of the decode matvecs (compiler/cpu_kernels/lse_qmv.c),
G values a second: each source built as the unit tests build it (a shared
object, cpu_kernel_build.cflags), called through ctypes on the matrix's two
workgroups in turn (as a 2-core machine splits it, here both on one thread),
best of `--calls` calls, the sources alternating in one process so that the
machine's load falls on each alike. The weights are random bytes in the
layout's shapes (any byte is a valid value of every format; timing does not
depend on what they hold), the matrix repeated, so from L3 once it is bigger
than L2.

    python dev/kernel_speed.py                          # this tree's lse_qmv.c
    python dev/kernel_speed.py --source old=/tmp/old.c --source new=compiler/cpu_kernels/lse_qmv.c
    python dev/kernel_speed.py --case q6_k:2048x8192 --case q4_k:8192x2048 --rows 1 --rows 8
    python dev/kernel_speed.py --gemm --source v3=compiler/cpu_kernels/lse_gemm.c@v3 \
        --source v4=compiler/cpu_kernels/lse_gemm.c --case q4_k:2048x3584 --rows 512 --calls 2

--gemm times the prompt GEMM (lse_gemm.c, linked with this tree's lse_qmv.c)
on cpu_kernel_build.gemm_tile's workgroups instead, G values a second
counting every row (GFLOP/s is twice that). A source's `@level` builds it
for that x86-64 level instead of --level. --threads 2 shares the workgroups
between two threads, as a 2-core machine's IREE workers do.

On a CPU whose FMAs take a microcode assist for a denormal operand (Intel's:
docs/kernels.md), --keep-daz times the instruction stream without the
assists (the sums are then wrong). Record `uptime` beside any figure: the
machine is shared.
"""

from __future__ import annotations

import argparse
import ctypes
import statistics
import subprocess
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

from lse.compiler import cpu_kernel_build as cpu_kernels

# format -> (values a block, q bytes a row's block in the layout, K-quant super-block scales per 256 values (0: f16 d))
SHAPES = {"q6_k": (16, 12, 1), "q4_k": (32, 16, 2), "q4_0": (32, 16, 0), "q4_1": (32, 16, 0), "q8_0": (32, 32, 0)}


# MXCSR from Python, as the unit tests set it (IREE's workers run with FTZ and DAZ set).
MXCSR_HELPERS = """
#include <immintrin.h>
unsigned lse_speed_get_mxcsr(void) { return _mm_getcsr(); }
void lse_speed_set_mxcsr(unsigned v) { _mm_setcsr(v); }
"""
FTZ_DAZ = 0x8040
WORKGROUPS = 2  # the matrix's rows in two workgroups, as a 2-core machine's matvecs split them; all on this thread


def build(source: Path, level: str, out: Path, keep_daz: bool, extra: tuple[str, ...] = ()) -> ctypes.CDLL:
    """A shared object of ``source``; keep_daz: a copy whose DAZ mask is 0, so
    the kernel leaves MXCSR's denormals-are-zero bit set (the caller's) and its
    denormal lanes read as zeros: wrong sums, but the instruction stream's own
    time on a CPU whose FMAs take a microcode assist for a denormal operand."""
    if keep_daz:
        text = source.read_text()
        assert "#define DAZ 0x40u" in text, "no DAZ mask to zero"
        copy = out.with_suffix(".c")
        copy.write_text(text.replace("#define DAZ 0x40u", "#define DAZ 0x0u"))
        source = copy
    helpers = out.with_name(out.stem + "_mxcsr.c")
    helpers.write_text(MXCSR_HELPERS)
    subprocess.run(["cc", *cpu_kernels.cflags(level), "-fvisibility=default", "-shared", f"-I{cpu_kernels.SOURCE.parent}",
                    str(source), *extra, str(helpers), "-o", str(out)], check=True)
    lib = ctypes.CDLL(str(out))
    lib.lse_speed_set_mxcsr.argtypes = [ctypes.c_uint]
    lib.lse_speed_get_mxcsr.restype = ctypes.c_uint
    return lib


def parts(fmt: str, n: int, k: int, rng) -> list[np.ndarray]:
    B, qb, ks = SHAPES[fmt]
    g, nb = -(-n // 16), k // B
    q = rng.integers(0, 256, (g, nb * 16 * qb), dtype=np.uint8)
    if ks:  # K-quant: int8 sub-block scales, f16 super-block scales
        d = rng.integers(1, 64, (g, nb * 16 * ks), dtype=np.int8)
        m = rng.uniform(0.0005, 0.003, (g, nb // (256 // B) * 16 * ks)).astype(np.float16)
        return [q, d, m]
    d = rng.uniform(0.001, 0.05, (g, nb * 16)).astype(np.float16)
    if cpu_kernels.FORMAT_EXPORTS[fmt][1]:  # q4_1's m, an f16 per block
        return [q, d, rng.uniform(-0.05, 0.0, (g, nb * 16)).astype(np.float16)]
    return [q, d]


def timer(lib: ctypes.CDLL, fmt: str, ps: list[np.ndarray], x: np.ndarray, n: int, k: int, keep_daz: bool,
          gemm: bool = False, threads: int = 1):
    stem = (cpu_kernels.GEMMS if gemm else cpu_kernels.KERNELS)[fmt][0]
    fn = getattr(lib, f"lse_{stem}")
    y = np.zeros((x.shape[0], n), np.float32)
    args = [ctypes.c_void_p(x.ctypes.data), 0]
    for p in ps:
        args += [ctypes.c_void_p(p.ctypes.data), 0]
    tile = cpu_kernels.gemm_tile(n)[0] if gemm else -(-n // WORKGROUPS // 16) * 16
    args += [ctypes.c_void_p(y.ctypes.data), 0, x.shape[0], n, k, tile]
    fn.argtypes = [ctypes.c_void_p, ctypes.c_size_t] * (1 + len(ps)) + [ctypes.c_void_p] + [ctypes.c_size_t] * 6
    wgs = range(-(-n // tile))
    pool = ThreadPoolExecutor(threads) if threads > 1 else None

    def run(share: range) -> None:
        for wg in share:
            fn(*args, wg)

    def once() -> float:
        csr = lib.lse_speed_get_mxcsr()
        if keep_daz:  # only around the calls: Python itself misbehaves with it set
            lib.lse_speed_set_mxcsr(csr | FTZ_DAZ)
        t = time.perf_counter()
        if pool:  # ctypes lets go of the GIL during a call: each thread takes every threads-th workgroup
            list(pool.map(run, [wgs[i::threads] for i in range(threads)]))
        else:
            run(wgs)
        t = time.perf_counter() - t
        assert y.shape  # y lives as long as this closure: the calls write it
        lib.lse_speed_set_mxcsr(csr)
        return t
    return once


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--source", action="append", help="name=path of an lse_qmv.c (default: this tree's)")
    ap.add_argument("--case", action="append", help="fmt:NxK (rows x values a row), default q6_k:2048x8192")
    ap.add_argument("--rows", action="append", type=int, help="rows of x (default 1)")
    ap.add_argument("--level", default=cpu_kernels.isa(), help="x86-64 level (v3, v4)")
    ap.add_argument("--calls", type=int, default=15)
    ap.add_argument("--rounds", type=int, default=3, help="alternations of the sources")
    ap.add_argument("--median", action="store_true",
                    help="each round's median call and the median over rounds, with each source's speed-up over the "
                         "first per round (from DRAM a best call flatters whichever source met the fast mode)")
    ap.add_argument("--gemm", action="store_true", help="time lse_gemm.c's exports (sources are lse_gemm.c files)")
    ap.add_argument("--threads", type=int, default=1, help="threads sharing the workgroups (with --gemm: as IREE's workers)")
    ap.add_argument("--keep-daz", action="store_true",
                    help="run with MXCSR's DAZ set and kept (timing only: denormal lanes read as zero)")
    a = ap.parse_args()
    default = cpu_kernels.GEMM_SOURCE if a.gemm else cpu_kernels.SOURCE
    sources = [s.split("=", 1) for s in a.source] if a.source else [["tree", str(default)]]
    tmp = Path(tempfile.mkdtemp(prefix="lse-speed-"))
    extra = (str(cpu_kernels.SOURCE),) if a.gemm else ()
    libs = {}
    for i, (name, spec) in enumerate(sources):
        path, _, level = spec.partition("@")
        libs[name] = build(Path(path), level or a.level, tmp / f"{i}.so", a.keep_daz, extra)
    rng = np.random.default_rng(0)
    for case in a.case or ["q6_k:2048x8192"]:
        fmt, shape = case.split(":")
        n, k = map(int, shape.split("x"))
        ps = parts(fmt, n, k, rng)
        for r in a.rows or [1]:
            x = rng.standard_normal((r, k)).astype(np.float32)
            timers = {name: timer(lib, fmt, ps, x, n, k, a.keep_daz, a.gemm, a.threads) for name, lib in libs.items()}
            per_round = {name: [] for name in libs}
            for _ in range(a.rounds):
                for name, once in timers.items():
                    once()  # warm: the matrix into cache, the code paged in
                    calls = [once() for _ in range(a.calls)]
                    per_round[name].append(statistics.median(calls) if a.median else min(calls))
            first = next(iter(libs))
            for name, times in per_round.items():
                t = statistics.median(times) if a.median else min(times)
                rate = n * k * (r if a.gemm else 1) / t / 1e9
                line = f"{fmt} {n}x{k} rows {r} {name:>8}: {t * 1e3:7.3f} ms  {rate:6.2f} G values/s"
                if a.median and name != first:
                    ratios = [f / o for f, o in zip(per_round[first], times)]
                    line += f"  {first}/{name} per round: median {statistics.median(ratios):.3f} ({min(ratios):.3f}-{max(ratios):.3f})"
                print(line)


if __name__ == "__main__":
    main()
