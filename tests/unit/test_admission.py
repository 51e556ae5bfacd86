"""Admission counts free slots: a burst on an idle server is taken up to
slots + --queue-size, and a full queue's Retry-After is the scheduler's
estimate from the queue and the rate slots were freed (#44)."""

from __future__ import annotations

import pytest
from api_fake_engine import CHAT, FakeRuntime, error_event, run
from test_scheduler import FakeBackend, Recorder, sequence

from lse.runtime.errors import LseError
from lse.runtime.scheduler import RETRY_AFTER_MAX, Scheduler


@pytest.fixture
def still():
    """A scheduler whose loop has stopped: what is submitted stays waiting."""
    scheduler = Scheduler(FakeBackend(), 4, kv_len=32)
    scheduler.stop()
    return scheduler


def test_a_burst_on_an_idle_server_takes_free_slots_plus_the_queue(still: Scheduler) -> None:
    for _ in range(4 + 2):
        still.submit(Recorder(1), [sequence(0, [1], max_new=2)], queue_size=2)
    with pytest.raises(LseError) as err:
        still.submit(Recorder(1), [sequence(0, [1], max_new=2)], queue_size=2)
    assert (err.value.status, err.value.kind) == (503, "overloaded")
    assert err.value.extra == {"retry_after": 1}  # no slot was freed yet: nothing measured


def test_busy_slots_leave_only_the_queue(still: Scheduler) -> None:
    for slot in still.slots[:3]:
        slot.seq = sequence(0, [1], max_new=2)
    still.submit(Recorder(1), [sequence(0, [1], max_new=2)], queue_size=2)
    still.check_room(2, 2)  # 1 free slot + 2 places, 1 taken
    with pytest.raises(LseError):
        still.check_room(3, 2)


def test_retry_after_is_the_queue_ahead_over_the_release_rate(still: Scheduler) -> None:
    still._released.extend([10.0, 12.0, 14.0, 16.0, 18.0])  # 4 slots freed in 8 s: one every 2 s
    assert still.retry_after(3) == 6
    assert still.retry_after(10_000) == RETRY_AFTER_MAX
    for slot in still.slots:
        slot.seq = sequence(0, [1], max_new=2)
    still.submit(Recorder(1), [sequence(0, [1], max_new=2)] * 3, queue_size=3)
    with pytest.raises(LseError) as err:
        still.check_room(2, 3)
    assert err.value.extra == {"retry_after": 4}  # 2 places short: two slots to free, one every 2 s


@pytest.mark.parametrize("retry_after, header", [(7, "7"), (None, "1")])
def test_the_retry_after_header_carries_the_estimate(retry_after, header) -> None:
    extra = {"retry_after": retry_after} if retry_after is not None else None
    event = error_event("overloaded", "full", extra=extra)

    async def scenario(client, runtime, app):
        response = await client.post("/v1/chat/completions", json=CHAT)
        assert response.status_code == 503 and response.headers["retry-after"] == header
    run(scenario, FakeRuntime(lambda body, endpoint: [event]))
