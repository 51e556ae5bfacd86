"""A speculative verification's cost in decode steps: one engine's
``DeviceBackend`` calls, a lone decode call against ``verify`` of 1-4 tokens
at position 300 after a 300-token prefill, median of 30 each, wall and
process CPU time. The default model unless a model (a GGUF file, a model
directory) is given. Record `uptime` beside the figures.

    python dev/verify_cost.py
    python dev/verify_cost.py ~/.cache/lse/bench/scale/1b-q4_k_m-*.gguf
"""

from __future__ import annotations

import statistics
import sys
import time

import numpy as np

from lse.runtime import api


def median_ms(call, n: int = 30) -> tuple[float, float]:
    wall, cpu = [], []
    for _ in range(n):
        w0, c0 = time.perf_counter(), time.process_time()
        call()
        wall.append(time.perf_counter() - w0)
        cpu.append(time.process_time() - c0)
    return statistics.median(wall) * 1e3, statistics.median(cpu) * 1e3


def main() -> None:
    model = {"model": sys.argv[1]} if len(sys.argv) > 1 else {}
    engine = api.lse_open({"threads": 2, "parallel": 1, "speculative": "ngram", **model})  # with the verify entry
    backend = engine.backend
    if not hasattr(backend, "verify_rows"):
        sys.exit(f"{type(backend).__name__}: no compiled verify entry to time")
    quiet = lambda cause: None  # noqa: E731 (a fallback step is reported by the engine's own runs)
    backend.prefill(np.arange(100, 400, dtype=np.int64), 0, 0, quiet)
    one, one_cpu = median_ms(lambda: backend.decode_one(5, 300, 0, quiet))
    print(f"decode call: {one:.2f} ms wall, {one_cpu:.2f} ms CPU")
    for n in (1, 2, 3, 4):
        tokens = np.arange(5, 5 + n, dtype=np.int64)
        wall, cpu = median_ms(lambda tokens=tokens: backend.verify(tokens, 300, 0, quiet))
        rows = backend.verify_rows(n, 300) or "dynamic"
        print(f"verify {n} token(s) ({rows} rows): {wall:.2f} ms wall, {cpu:.2f} ms CPU, "
              f"{wall / one:.2f} decode steps")
    engine.close()


if __name__ == "__main__":
    main()
