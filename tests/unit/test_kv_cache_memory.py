"""The KV cache on the CPU (backend._zero_cache): zeros, and resident only
where written, so --parallel auto's idle slots cost address space, not
memory. Its counterpart, a copy of zeros, makes every page resident.

Each check runs in a fresh interpreter: in a long test process the shared
local-task device's allocator may hand back a block an earlier test made
resident, whose writes then raise no RSS (seen in a full-suite run)."""

from __future__ import annotations

import json
import math
import subprocess
import sys

import pytest

pytest.importorskip("iree.runtime")

# 72 MiB of f16: past glibc's largest mmap threshold (32 MiB), so a fresh mapping
# rather than heap memory this process used before (which the cache would
# find not zero, and copy zeros into, as it does on other devices).
SHAPE = (6, 2, 2, 8192, 3, 64)
NBYTES = math.prod(SHAPE) * 2

PRELUDE = f"""
import json
import numpy as np
import iree.runtime as rt
from lse.runtime.backend import _zero_cache

SHAPE = {SHAPE!r}


def rss():
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmRSS:"))


device = rt.get_device("local-task")
before = rss()
"""


def _fresh(code: str) -> dict:
    """Run PRELUDE + ``code`` in a new interpreter; the JSON its last line prints."""
    done = subprocess.run([sys.executable, "-c", PRELUDE + code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_the_cpu_cache_is_zeros_and_costs_no_memory_until_written():
    seen = _fresh("""
cache = _zero_cache(device, "local:0", SHAPE, np.float16)
host = cache.to_host()  # a mapping on the CPU, not a copy
zeros, shape, dtype = not host.view(np.uint16).any(), list(host.shape), str(host.dtype)
mapped = rss() - before
host[0, 0, 0, :1024] = 1.0  # writing a slot's first positions makes those pages resident
one_slot = rss() - before
host[:] = 1.0
print(json.dumps(dict(zeros=zeros, shape=shape, dtype=dtype, mapped=mapped, one_slot=one_slot, all=rss() - before)))
""")
    assert seen["shape"] == list(SHAPE) and seen["dtype"] == "float16" and seen["zeros"]
    assert seen["mapped"] < NBYTES // 4
    assert seen["one_slot"] < NBYTES // 4
    assert seen["all"] >= NBYTES * 3 // 4


def test_another_device_gets_a_copy_of_zeros():
    seen = _fresh("""
cache = _zero_cache(device, "cuda:0", SHAPE, np.float32)  # the name picks the path; the copy lands here
print(json.dumps(dict(zeros=not cache.to_host().any(), grown=rss() - before)))
""")
    assert seen["zeros"]
    assert seen["grown"] >= NBYTES * 2 * 3 // 4
