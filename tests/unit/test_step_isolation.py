"""One sequence's failure inside a shared decode step ends that sequence's
request alone: its neighbours in the batch stream on, and no error they see
carries anything of the request that failed (#44)."""

from __future__ import annotations

import numpy as np
from test_scheduler import FakeBackend, Recorder, sequence

from lse.runtime.scheduler import Scheduler

SECRET = "attacker-schema-^a{1000000}$"


class RaisingConstraint:
    """A grammar whose matcher fails on the second token it is given, its
    error text holding the request's own schema (as llguidance's did)."""

    def __init__(self) -> None:
        self.taken = 0

    def allowed(self) -> np.ndarray:
        return np.ones(7, dtype=bool)

    def advance(self, token: int) -> None:
        self.taken += 1
        if self.taken == 2:
            raise RuntimeError(f"lexer error: too many expressions constructed in {SECRET}")


def test_one_sequences_grammar_failure_ends_it_alone() -> None:
    backend = FakeBackend()
    scheduler = Scheduler(backend, 3, kv_len=32)
    try:
        _attack_and_check(scheduler, backend)
    finally:
        scheduler.stop()


def _attack_and_check(scheduler: Scheduler, backend: FakeBackend) -> None:
    victims = [Recorder(1), Recorder(1)]
    attacker = Recorder(1)
    bad = sequence(0, [2], max_new=6)
    bad.constraint = RaisingConstraint()
    # all three are admitted together and step in one batched decode
    with scheduler.cond:
        scheduler.waiting.append((victims[0], sequence(0, [0], max_new=6)))
        scheduler.waiting.append((attacker, bad))
        scheduler.waiting.append((victims[1], sequence(0, [3], max_new=6)))
        scheduler.cond.notify_all()
    assert attacker.done.wait(5) and all(v.done.wait(5) for v in victims)
    assert backend.batched > 0
    for v in victims:
        assert [e for e in v.events if e[0] == "fail"] == []
        assert v.events[-1] == ("finish", 0, ("length", "max_tokens"))
        assert len([e for e in v.events if e[0] == "deltas"]) == 6
        assert SECRET not in repr(v.events)
    fails = [e for e in attacker.events if e[0] == "fail"]
    assert fails == [("fail", f"generation failed in choice 0: RuntimeError: lexer error: too many "
                              f"expressions constructed in {SECRET}")]
    assert attacker.cancelled  # its other choices leave at the next iteration
    assert scheduler.wait_idle(5)
