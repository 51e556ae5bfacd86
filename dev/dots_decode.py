"""Decode with and without the integer matvecs (4-bit and q6_k) in the engine: two
engines in one process (`LSE_KERNEL_DOTS=0` and `1`: each its own
artifact), 128 greedy tokens after the same random 16-token prompt,
alternating, tok/s per round and the medians. A bench scale file, or any
model given as a path. Record `uptime` beside the figures.

    python dev/dots_decode.py 1b q4_k_m [rounds]
    python dev/dots_decode.py path/to/model.gguf path [rounds]
"""

from __future__ import annotations

import statistics
import sys

import numpy as np

from lse.bench.bench_scale import runners_by_env, scale_gguf


def main() -> None:
    path = sys.argv[1] if sys.argv[2] == "path" else scale_gguf(sys.argv[1], sys.argv[2])
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 4
    runners = runners_by_env(path, 2, "LSE_KERNEL_DOTS")
    rng = np.random.default_rng(0)
    got: dict[str, list[float]] = {k: [] for k in runners}
    for _ in range(rounds):
        ids = rng.integers(1000, 40000, 16).tolist()
        for dots, runner in runners.items():
            n, seconds = runner.decode(ids, 128)
            got[dots].append((n - 1) / seconds)
        print({k: round(v[-1], 2) for k, v in got.items()}, flush=True)
    medians = {k: statistics.median(v) for k, v in got.items()}
    print(f"median tok/s: FMA loop {medians['0']:.2f}, integer {medians['1']:.2f}, "
          f"ratio {medians['1'] / medians['0']:.3f}")
    for runner in runners.values():
        runner.close()


if __name__ == "__main__":
    main()
