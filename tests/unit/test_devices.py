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
    monkeypatch.setattr(devices, "_pool_maker", "an earlier engine", raising=False)


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


class PoolStartingLate:
    """The named-thread listing of a pool whose workers name themselves late:
    ``before`` while no device exists, then each of ``after`` in turn (the
    last one repeating) once the device is made."""

    def __init__(self, before, after):
        self.before, self.after, self.made = before, list(after), False

    def device(self, driver):
        self.made = True
        return object()

    def count(self):
        if not self.made:
            return self.before
        return self.after.pop(0) if len(self.after) > 1 else self.after[0]


def _late_pool(monkeypatch, before, after):
    import iree.runtime as rt

    pool, fake = PoolStartingLate(before, after), FakeRt()
    real = devices._local_pool_for
    monkeypatch.setattr(devices, "_local_pool_for", lambda threads, _rt: real(threads, fake))
    monkeypatch.setattr(rt, "get_device", pool.device)
    monkeypatch.setattr(devices, "local_threads", pool.count)
    monkeypatch.setattr(devices, "SETTLE_STEADY_S", 0.05, raising=False)
    monkeypatch.setattr(devices, "SETTLE_LIMIT_S", 0.5, raising=False)
    return fake.flags


def test_a_pool_lse_starts_is_the_count_it_asked_for_not_a_partial_listing(fresh_pool, monkeypatch):
    """LSE makes the pool (no worker was there before): one worker of two has
    named itself when the device comes back, and the count is still 2."""
    flags = _late_pool(monkeypatch, None, [1, 1, 2])
    assert devices._open("local", 0, 2) is not None
    assert flags.parsed == ["--task_topology_group_count=2"]
    assert devices.local_workers() == 2
    with pytest.raises(devices.DeviceError, match="threads=3: this process's CPU workers were started with 2 by "
                                                  "an earlier engine"):
        devices._open("local", 0, 3)


def test_a_pool_started_outside_lse_is_counted_once_it_has_settled(fresh_pool, monkeypatch):
    """The outside pool of 4 shows 2, then 3 named workers before all 4: a
    request for 2 is refused with the settled 4, one for 4 is taken."""
    _late_pool(monkeypatch, None, [4])
    seen = iter([2, 3, 4])
    monkeypatch.setattr(devices, "local_threads", lambda: next(seen, 4))
    with pytest.raises(devices.DeviceError, match="threads=2: this process's CPU workers were already started with 4"):
        devices._open("local", 0, 2)
    seen = iter([2, 2, 3, 3, 4])
    assert devices._open("local", 0, 4) is not None
    assert devices.local_workers() == 4
    with pytest.raises(devices.DeviceError, match="threads=3: this process's CPU workers were started with 4 by "
                                                  "code outside LSE"):
        devices._open("local", 0, 3)


def test_a_settled_count_below_the_asked_one_waits_out_the_limit(monkeypatch):
    """A count that holds still below the one asked for is waited on (more
    workers may yet name themselves) up to SETTLE_LIMIT_S, then read."""
    monkeypatch.setattr(devices, "SETTLE_STEADY_S", 0.05)
    monkeypatch.setattr(devices, "SETTLE_LIMIT_S", 0.3)
    seen = iter([1] * 3 + [2])
    monkeypatch.setattr(devices, "local_threads", lambda: next(seen, 2))
    assert devices.settled_local_threads(2) == 2  # the second worker came within the limit
    monkeypatch.setattr(devices, "local_threads", lambda: 1)
    assert devices.settled_local_threads(2) == 1  # it never came: the limit's count


def test_a_pool_of_iree_s_own_count_is_reported_once_settled(fresh_pool, monkeypatch):
    """threads 0: IREE picks the count, so the startup line reads the named
    workers once they hold still (1, then 2 of them), and once a process."""
    monkeypatch.setattr(devices, "_default_pool", None, raising=False)
    monkeypatch.setattr(devices, "SETTLE_STEADY_S", 0.05, raising=False)
    assert devices.local_workers() is None  # no local device yet
    monkeypatch.setattr(devices, "_local_pool", 0)
    seen = iter([1, 1, 2])
    monkeypatch.setattr(devices, "local_threads", lambda: next(seen, 2))
    assert devices.local_workers() == 2
    monkeypatch.setattr(devices, "local_threads", lambda: 5)
    assert devices.local_workers() == 2
