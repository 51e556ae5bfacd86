"""The prompt GEMM with and without AMX in the engine: two engines in one
process on a bench scale file (`LSE_KERNEL_AMX=0` and `1`: each its own
artifact), the same random 512-token prompt alternating, prefill-512 as
time to the first token. Record `uptime` beside the figures.

    python dev/amx_prefill.py 1b q4_k_m [rounds]
"""

from __future__ import annotations

import sys

import numpy as np

from lse.bench.bench_scale import runners_by_env, scale_gguf


def main() -> None:
    scale, mix = sys.argv[1], sys.argv[2]
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 3
    path = scale_gguf(scale, mix)
    runners = runners_by_env(path, 2, "LSE_KERNEL_AMX")
    rng = np.random.default_rng(0)
    times = {k: [] for k in runners}
    for _ in range(rounds):
        ids = rng.integers(1000, 40000, 512).tolist()
        for k, r in runners.items():
            times[k].append(r.prefill(ids))
    for k, v in times.items():
        print(f"LSE_KERNEL_AMX={k}: prefill-512 s {' '.join(f'{t:.3f}' for t in v)}, median {np.median(v):.3f}")
    print(f"without / with AMX: {np.median(times['0']) / np.median(times['1']):.2f}")
    for r in runners.values():
        r.close()


if __name__ == "__main__":
    main()
