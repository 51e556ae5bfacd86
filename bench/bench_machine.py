"""The machine under ``lse.bench.bench``: CPU, cores, memory, load, versions,
and its memory bandwidth measured with numpy on the benchmark's thread count."""

from __future__ import annotations

import os
import platform
import subprocess
import threading
import time
from importlib import metadata
from pathlib import Path

import numpy as np

PACKAGES = ("lse", "iree-base-runtime", "iree-base-compiler", "numpy", "llama-cpp-python", "torch", "transformers")


def cpu_model() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown CPU"


def memory_bytes() -> int:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemTotal:"):
            return int(line.split()[1]) * 1024
    return 0


def load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def versions() -> dict[str, str]:
    out = {"python": platform.python_version()}
    for name in PACKAGES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = "not installed"
    commit = _git_commit()
    if commit:
        out["lse"] += f" (git {commit})"
    return out


def _git_commit() -> str | None:
    repo = Path(__file__).resolve().parent.parent
    try:
        run = subprocess.run(["git", "-C", str(repo), "rev-parse", "--short", "HEAD"], capture_output=True,
                             text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    if run.returncode != 0:
        return None
    dirty = subprocess.run(["git", "-C", str(repo), "status", "--porcelain", "--untracked-files=no"],
                           capture_output=True, text=True, timeout=10).stdout.strip()
    return run.stdout.strip() + ("+changes" if dirty else "")


def _parallel(threads: int, work) -> float:
    """Seconds for ``work(i)`` on ``threads`` threads at once (numpy drops the GIL)."""
    pool = [threading.Thread(target=work, args=(i,)) for i in range(threads)]
    t0 = time.perf_counter()
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    return time.perf_counter() - t0


def measure_bandwidth(threads: int, mib: int = 512, repeats: int = 5) -> dict[str, list[float]]:
    """GB/s reading and copying a ``mib`` MiB buffer, far beyond the caches,
    split into one slice per thread; a copy counts its read and its write.
    The read is ``max``, which numpy vectorizes; ``sum`` is pairwise and
    compute-bound at about 8 GB/s per core on this CPU."""
    n = mib * 2**20 // 4
    src = np.ones(n, np.float32)
    dst = np.empty_like(src)
    bounds = np.linspace(0, n, threads + 1, dtype=np.int64)
    parts = [(int(bounds[i]), int(bounds[i + 1])) for i in range(threads)]

    def read(i: int) -> None:
        lo, hi = parts[i]
        src[lo:hi].max()

    def copy(i: int) -> None:
        lo, hi = parts[i]
        np.copyto(dst[lo:hi], src[lo:hi])

    copy(0), read(0)  # fault the pages in before timing
    for i in range(threads):
        copy(i)
    out: dict[str, list[float]] = {"read_gbs": [], "copy_gbs": []}
    for _ in range(repeats):
        out["read_gbs"].append(round(src.nbytes / _parallel(threads, read) / 1e9, 2))
        out["copy_gbs"].append(round(2 * src.nbytes / _parallel(threads, copy) / 1e9, 2))
    return out


def machine(threads: int) -> dict:
    return {"cpu": cpu_model(), "cores": os.cpu_count(), "threads": threads, "memory_bytes": memory_bytes(),
            "load": {"start": load()}}
