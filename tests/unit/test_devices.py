"""The CPU worker pool: --threads reaches IREE before the process's first
local device, and a later engine can't ask for another count."""

from __future__ import annotations

import pytest

from lse.runtime import devices


class FakeFlags:
    def __init__(self):
        self.parsed: list[str] = []

    def parse_flags(self, *flags: str) -> None:
        self.parsed.extend(flags)


class FakeRt:
    def __init__(self):
        self.flags = FakeFlags()


@pytest.fixture
def fresh_pool(monkeypatch):
    monkeypatch.setattr(devices, "_local_pool", None)


def test_threads_set_the_worker_count_before_the_first_local_device(fresh_pool):
    rt = FakeRt()
    devices._local_pool_for(3, rt)
    assert rt.flags.parsed == ["--task_topology_group_count=3"]
    devices._local_pool_for(3, rt)  # the same count again: the pool is shared, no new flag
    devices._local_pool_for(0, rt)  # no preference: shares the pool
    assert rt.flags.parsed == ["--task_topology_group_count=3"]


def test_default_leaves_iree_its_own_topology(fresh_pool):
    rt = FakeRt()
    devices._local_pool_for(0, rt)
    assert rt.flags.parsed == []


@pytest.mark.parametrize("first, later, says", [(2, 4, "started with 2"), (0, 4, "started with IREE's default")])
def test_a_later_engine_asking_another_count_is_refused(fresh_pool, first, later, says):
    rt = FakeRt()
    devices._local_pool_for(first, rt)
    with pytest.raises(devices.DeviceError, match=f"threads={later}: .*{says}"):
        devices._local_pool_for(later, rt)
    assert rt.flags.parsed == ([f"--task_topology_group_count={first}"] if first else [])


def test_a_pool_started_outside_lse_with_another_count_is_refused(fresh_pool, monkeypatch):
    """The pool predates LSE's first local device (made by other code in the
    process): the flag came too late, and the count says so."""
    import iree.runtime as rt

    monkeypatch.setattr(devices, "_local_pool_for", lambda threads, rt: None)
    monkeypatch.setattr(rt, "get_device", lambda driver: object())
    monkeypatch.setattr(devices, "local_threads", lambda: 4)
    with pytest.raises(devices.DeviceError, match="threads=2: this process's CPU workers were already started with 4"):
        devices._open("local", 0, 2)
    assert devices._open("local", 0, 4) is not None  # the count it has is fine
    assert devices._open("local", 0, 0) is not None  # as is no preference
