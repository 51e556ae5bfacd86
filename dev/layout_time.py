"""The kernels' layout of a GGUF read in place, timed alone: the file
imported in place into a scratch folder (header only), then
kernel_layout.write_layout of every block matrix into OUT; with --phases
first the runs read and decoded (reader.layout_parts) without writing, then
decoded and interleaved, per format. Run under `/usr/bin/time -v` for the
peak RSS, and record `uptime` beside the figures.

    python dev/layout_time.py FILE.gguf OUT [--phases] [--hash]
"""

from __future__ import annotations

import hashlib
import sys
import tempfile
import time
from pathlib import Path

from lse.compiler import kernel_layout
from lse.compiler.gguf.importer import import_gguf
from lse.compiler.weights import gguf_row_runs, read_tensors


def _phases(tensors: dict, weights: dict, names: list[str]) -> None:
    for interleave in (False, True):
        took: dict[str, float] = {}
        for name in names:
            fmt, t, start = weights[name][1], tensors[name], time.perf_counter()
            rows = kernel_layout.ROWS * max(1, kernel_layout.RUN_BYTES // (kernel_layout.ROWS * (t.nbytes // t.shape[0])))
            for run in gguf_row_runs(t, rows):
                parts = run()
                if interleave:
                    kernel_layout._interleaved(fmt, parts)
            took[fmt] = took.get(fmt, 0.0) + time.perf_counter() - start
        what = "read, decode and interleave" if interleave else "read and decode"
        print(f"{what}: {sum(took.values()):.2f} s", {f: round(s, 2) for f, s in sorted(took.items())})


def main() -> None:
    src, out = sys.argv[1], Path(sys.argv[2])
    with tempfile.TemporaryDirectory() as scratch:
        tensors = read_tensors(import_gguf(src, scratch, log=lambda _: None, in_place=True))
        weights = {n: (t.shape, t.dtype) for n, t in tensors.items()}
        weights.update({p.name: (p.shape, p.dtype) for t in tensors.values() if t.parts for p in t.parts.values()})
        names = sorted(n for n in tensors if kernel_layout.interleavable(weights, n))
        print(f"{len(names)} matrices ({', '.join(sorted({weights[n][1] for n in names}))})")
        if "--phases" in sys.argv:
            _phases(tensors, weights, names)
        start = time.perf_counter()
        kernel_layout.write_layout(tensors, weights, names, out)
        print(f"write_layout: {time.perf_counter() - start:.2f} s, {out.stat().st_size / 2**20:.1f} MiB")
    if "--hash" in sys.argv:
        digest = hashlib.sha256()
        with open(out, "rb") as f:
            while block := f.read(1 << 24):
                digest.update(block)
        print("sha256", digest.hexdigest())


if __name__ == "__main__":
    main()
