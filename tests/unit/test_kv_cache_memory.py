"""The KV cache on the CPU (backend._zero_cache): zeros, and resident only
where written, so --parallel auto's idle slots cost address space, not
memory. Its counterpart, a copy of zeros, makes every page resident."""

from __future__ import annotations

import numpy as np
import pytest

rt = pytest.importorskip("iree.runtime")

from lse.runtime.backend import _zero_cache  # noqa: E402

# 72 MiB of f16: past glibc's largest mmap threshold (32 MiB), so a fresh mapping
# rather than heap memory this process used before (which the cache would
# find not zero, and copy zeros into, as it does on other devices).
SHAPE = (6, 2, 2, 8192, 3, 64)
NBYTES = int(np.prod(SHAPE)) * 2


def _rss() -> int:
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmRSS:"))


@pytest.fixture(scope="module")
def device():
    return rt.get_device("local-task")


def test_the_cpu_cache_is_zeros_and_costs_no_memory_until_written(device):
    before = _rss()
    cache = _zero_cache(device, "local:0", SHAPE, np.float16)
    host = cache.to_host()  # a mapping on the CPU, not a copy
    assert host.shape == SHAPE and host.dtype == np.float16
    assert not host.view(np.uint16).any()
    assert _rss() - before < NBYTES // 4
    host[0, 0, 0, :1024] = 1.0  # writing a slot's first positions makes those pages resident
    assert _rss() - before < NBYTES // 4
    host[:] = 1.0
    assert _rss() - before >= NBYTES * 3 // 4


def test_another_device_gets_a_copy_of_zeros(device):
    before = _rss()
    cache = _zero_cache(device, "cuda:0", SHAPE, np.float32)  # the name picks the path; the copy lands here
    assert not cache.to_host().any()
    assert _rss() - before >= NBYTES * 2 * 3 // 4
