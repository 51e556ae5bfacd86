"""Decode tok/s of one engine in this process: a bench scale file (or any
model path), greedy, EOS ignored, after the same random 16-token prompt,
`rounds` timed decodes of `tokens` each, printed on one line under `label`.
For an A/B of two kernel sources, run it once per source in turn with the
source copied over compiler/cpu_kernels/lse_qmv.c (each source compiles
its own artifact, cached after the first), and read the rounds side by
side. Record `uptime` beside the figures.

    python dev/decode_rounds.py 1b q8_0 [rounds] [tokens] [label]
    python dev/decode_rounds.py path/to/model.gguf path [rounds] [tokens] [label]
"""

from __future__ import annotations

import sys

import numpy as np

from lse.bench.bench_scale import LseScaleRunner, scale_gguf


def main() -> None:
    path = sys.argv[1] if sys.argv[2] == "path" else scale_gguf(sys.argv[1], sys.argv[2])
    rounds, tokens = (int(a) for a in (sys.argv[3:5] + ["3", "64"][len(sys.argv[3:5]):]))
    label = sys.argv[5] if len(sys.argv) > 5 else ""
    runner = LseScaleRunner(path, 2)
    ids = np.random.default_rng(0).integers(1000, 40000, 16).tolist()
    runner.decode(ids, 8)  # the first step's one-time costs
    rates = []
    for _ in range(rounds):
        n, seconds = runner.decode(ids, tokens)
        rates.append((n - 1) / seconds)
    print(label, " ".join(f"{r:.2f}" for r in rates), flush=True)
    runner.close()


if __name__ == "__main__":
    main()
