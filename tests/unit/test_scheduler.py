"""The scheduler over a fake backend, seen through RequestEvents: what it
tells a request (deltas, finish, fail, fallback) and nothing else."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from lse.runtime.detokenize import IncrementalDetokenizer
from lse.runtime.errors import LseError
from lse.runtime.limits import TokenLimit
from lse.runtime.sampler import SamplingParams, make_rng
from lse.runtime.scheduler import Scheduler
from lse.runtime.sequence import Sequence
from lse.runtime.stops import StopMatcher

VOCAB = 7
GREEDY = SamplingParams(temperature=0.0, top_k=0, top_p=1.0, min_p=0.0, presence_penalty=0.0,
                        repetition_penalty=1.0)


def _next_of(token: int) -> np.ndarray:
    """Logits whose argmax is token + 1 (mod VOCAB): a reply counts up."""
    out = np.zeros(VOCAB, np.float32)
    out[(int(token) + 1) % VOCAB] = 5.0
    return out


class FakeBackend:
    """prefill / decode / decode_one / all_logits as backend.py's, counting up;
    every decode runs one host group ("fake cause")."""

    buckets: list[int] = []  # a batched step is every slot's

    def __init__(self, fail_decode: bool = False) -> None:
        self.fail_decode = fail_decode
        self.batched = 0

    def prefill(self, tokens, start, slot, on_fallback):
        return _next_of(tokens[-1]), np.zeros((len(tokens), 3), np.float32)

    def decode(self, tokens, positions, on_fallback):
        self.batched += 1
        on_fallback("fake cause")
        if self.fail_decode:
            raise RuntimeError("device lost")
        return np.stack([_next_of(t) for t in tokens])

    def decode_one(self, token, position, slot, on_fallback):
        on_fallback("fake cause")
        if self.fail_decode:
            raise RuntimeError("device lost")
        return _next_of(token)

    def all_logits(self, hidden, on_fallback):
        return np.zeros((hidden.shape[0], VOCAB), np.float32)

    def copy_prefix(self, src, dst, count):
        return False  # like a one-slot artifact


class Recorder:
    """A RequestEvents that writes down what it is told."""

    def __init__(self, seqs: int) -> None:
        self.cancelled = False
        self.events: list[tuple] = []
        self._open = seqs
        self.done = threading.Event()

    def deltas(self, seq, deltas):
        self.events.append(("deltas", seq.index, [d.get("content") for d in deltas]))

    def finish(self, seq, deltas):
        self.events.append(("finish", seq.index, seq.finish))
        self._open -= 1
        if self._open == 0:
            self.done.set()

    def fail(self, error):
        self.events.append(("fail", str(error)))
        self.done.set()

    def fallback(self, cause, count_engine):
        self.events.append(("fallback", cause, count_engine))


def sequence(index: int, prompt: list[int], max_new: int) -> Sequence:
    return Sequence(index=index, prompt_ids=prompt, limit=TokenLimit(max_new, "max_tokens"), params=GREEDY,
                    rng=make_rng(0, index), eos_ids=frozenset(), detok=IncrementalDetokenizer(
                        lambda ids: "".join(chr(ord("a") + i) for i in ids)),
                    stops=StopMatcher([]), parser=None, token_text=str)


@pytest.fixture
def run():
    schedulers = []

    def start(backend, slots: int = 2) -> Scheduler:
        schedulers.append(Scheduler(backend, slots, kv_len=32))
        return schedulers[-1]

    yield start
    for s in schedulers:
        s.stop()


def test_one_sequence_counts_up_and_finishes(run) -> None:
    scheduler = run(FakeBackend(), slots=1)
    request, seq = Recorder(1), sequence(0, [1, 2], max_new=3)
    scheduler.submit(request, [seq])
    assert request.done.wait(5)
    assert seq.generated == [3, 4, 5]
    texts = [e[2] for e in request.events if e[0] == "deltas"]
    assert texts == [["d"], ["e"], ["f"]]
    assert request.events[-1] == ("finish", 0, ("length", "max_tokens"))
    # two decode steps, each one host-group run counted for the engine (a lone row)
    assert [e for e in request.events if e[0] == "fallback"] == [("fallback", "fake cause", True)] * 2


def test_two_requests_share_a_batched_decode(run) -> None:
    backend = FakeBackend()
    scheduler = run(backend, slots=2)
    a, b = Recorder(1), Recorder(1)
    scheduler.submit(a, [sequence(0, [0], max_new=4)])
    scheduler.submit(b, [sequence(0, [3], max_new=4)])
    assert a.done.wait(5) and b.done.wait(5)
    assert a.events[-1][2] == b.events[-1][2] == ("length", "max_tokens")
    assert scheduler.active() == 0


class BucketBackend(FakeBackend):
    """A 4-slot artifact with a 2-row bucket: decode_rows records the slots and
    positions each step names."""

    buckets = [2]

    def __init__(self) -> None:
        super().__init__()
        self.steps: list[tuple[list[int], list[int]]] = []

    def decode_rows(self, slot_ids, tokens, positions, on_fallback):
        self.steps.append((slot_ids.tolist(), positions.tolist()))
        return np.stack([_next_of(t) for t in tokens])


def test_two_streams_among_four_slots_step_as_two_rows(run) -> None:
    """Two running sequences of four slots step through the 2-row bucket,
    each row naming its slot at its own position; three take the full step,
    the idle slot at its free position."""
    backend = BucketBackend()
    scheduler = run(backend, slots=4)
    a, b = Recorder(1), Recorder(1)
    scheduler.submit(a, [sequence(0, [0, 1, 2], max_new=4)])
    scheduler.submit(b, [sequence(0, [3, 5], max_new=4)])
    assert a.done.wait(5) and b.done.wait(5)
    seq_a = [e for e in a.events if e[0] == "deltas"]
    assert len(seq_a) == 4 and a.events[-1][2] == b.events[-1][2] == ("length", "max_tokens")
    two_row = [st for st in backend.steps if sorted(st[0]) == [0, 1]]
    assert two_row, backend.steps  # both prompts' first tokens come from prefill; later steps batch both slots
    for slot, prompt_len in ((0, 3), (1, 2)):  # each row at its own slot's next position, step after step
        seen = [dict(zip(*st))[slot] for st in two_row]
        assert seen == list(range(seen[0], seen[0] + len(seen))) and seen[0] >= prompt_len, seen
    assert backend.batched == 0  # the full 4-row step never ran
    c, d, e = Recorder(1), Recorder(1), Recorder(1)
    for req, prompt in ((c, [1]), (d, [2]), (e, [4])):
        scheduler.submit(req, [sequence(0, prompt, max_new=6)])
    assert c.done.wait(5) and d.done.wait(5) and e.done.wait(5)
    assert backend.batched > 0  # three rows: every slot's step


def test_a_failed_step_fails_the_request_and_frees_the_slot(run) -> None:
    scheduler = run(FakeBackend(fail_decode=True), slots=1)
    request = Recorder(1)
    scheduler.submit(request, [sequence(0, [1], max_new=5)])
    assert request.done.wait(5)
    assert ("fail", "device lost") in request.events
    assert scheduler.wait_idle(5)


def test_a_withdrawn_request_finishes_cancelled(run) -> None:
    scheduler = run(FakeBackend(), slots=1)
    busy, waiting = Recorder(1), Recorder(1)
    scheduler.submit(busy, [sequence(0, [1], max_new=10**6)])  # holds the one slot until cancelled
    waiting_seq = sequence(0, [2], max_new=5)
    scheduler.submit(waiting, [waiting_seq])
    waiting.cancelled = True
    scheduler.withdraw(waiting)
    assert waiting.done.wait(5)
    assert waiting.events[-1] == ("finish", 0, (None, "cancelled"))
    busy.cancelled = True
    assert busy.done.wait(5)


def test_a_closed_queue_refuses_with_its_error(run) -> None:
    scheduler = run(FakeBackend(), slots=1)
    scheduler.close_queue(LseError("shutting_down", "closing"))
    with pytest.raises(LseError) as err:
        scheduler.submit(Recorder(1), [sequence(0, [1], max_new=1)], queue_size=4)
    assert err.value.status == 503


class CopyingBackend(FakeBackend):
    """Records prefills and cross-slot prefix copies."""

    def __init__(self, can_copy: bool = True) -> None:
        super().__init__()
        self.can_copy = can_copy
        self.copies: list[tuple[int, int, int]] = []
        self.prefilled: list[tuple[int, int, int]] = []  # (slot, start, tokens)

    def prefill(self, tokens, start, slot, on_fallback):
        self.prefilled.append((slot, start, len(tokens)))
        return super().prefill(tokens, start, slot, on_fallback)

    def copy_prefix(self, src, dst, count):
        if self.can_copy:
            self.copies.append((src, dst, count))
        return self.can_copy


@pytest.mark.parametrize("can_copy", [True, False])
def test_a_prefix_held_by_a_running_slot_is_copied_not_recomputed(run, can_copy) -> None:
    """While slot 0 generates after a 6-token prompt, a request sharing its
    first 5 tokens lands in slot 1 and takes them from slot 0 (a device copy):
    only its last token is prefilled. A backend that cannot copy (a one-slot
    artifact) prefills the whole prompt."""
    backend = CopyingBackend(can_copy)
    scheduler = run(backend, slots=2)
    system = [3, 1, 4, 1, 5]
    busy, later = Recorder(1), Recorder(1)
    busy_seq = sequence(0, system + [6], max_new=10**6)
    scheduler.submit(busy, [busy_seq])
    while len(busy_seq.generated) < 2:  # slot 0 is generating
        threading.Event().wait(0.001)
    seq = sequence(0, system + [2], max_new=2)
    scheduler.submit(later, [seq])
    assert later.done.wait(5)
    if can_copy:  # the one token left rides a decode step: no prefill for slot 1
        assert backend.copies == [(0, 1, 5)]
        assert seq.cached_tokens == 5 and [p for p in backend.prefilled if p[0] == 1] == []
    else:
        assert seq.cached_tokens == 0 and backend.prefilled[-1] == (1, 0, 6)
    assert seq.generated == [3, 4]
    busy.cancelled = True
    assert busy.done.wait(5)


class RowBackend(CopyingBackend):
    """Records every prefill (CopyingBackend's) and the (token, position) rows
    of every decode step; it cannot copy prefixes, as FakeBackend."""

    def __init__(self) -> None:
        super().__init__(can_copy=False)
        self.rows: list[list[tuple[int, int]]] = []

    def decode(self, tokens, positions, on_fallback):
        self.rows.append(list(zip(tokens.tolist(), positions.tolist())))
        return super().decode(tokens, positions, on_fallback)

    def decode_one(self, token, position, slot, on_fallback):
        self.rows.append([(int(token), int(position))])
        return super().decode_one(token, position, slot, on_fallback)


def test_a_last_prompt_token_rides_the_decode_step(run) -> None:
    """A one-token prompt is never prefilled: its token is a decode row at
    position 0, and that row's logits give the first generated token, as a
    prefill's would. A prompt of two tokens still prefills both."""
    backend = RowBackend()
    scheduler = run(backend, slots=2)
    a, b = Recorder(1), Recorder(1)
    seq_a, seq_b = sequence(0, [4], max_new=3), sequence(0, [2, 5], max_new=3)
    scheduler.submit(a, [seq_a])
    assert a.done.wait(5)
    assert backend.prefilled == [] and backend.rows[0] == [(4, 0)]
    assert seq_a.generated == [5, 6, 0] and seq_a.cached_tokens == 0
    assert [e[2] for e in a.events if e[0] == "deltas"] == [["f"], ["g"], ["a"]]
    scheduler.submit(b, [seq_b])
    assert b.done.wait(5)
    assert backend.prefilled == [(0, 0, 2)] or backend.prefilled == [(1, 0, 2)]
    assert seq_b.generated == [6, 0, 1]


class GateBackend(FakeBackend):
    """decode_one stops at its ``gate_at``-th call until the test opens the
    gate, and records (token, position, slot) of every call."""

    def __init__(self, gate_at: int) -> None:
        super().__init__()
        self.gate_at, self.calls = gate_at, []
        self.reached, self.gate = threading.Event(), threading.Event()

    def decode_one(self, token, position, slot, on_fallback):
        self.calls.append((int(token), int(position), slot))
        if len(self.calls) == self.gate_at:
            self.reached.set()
            assert self.gate.wait(5)
        return _next_of(token)


@pytest.mark.parametrize("gate_at", [1, 2, 3])
def test_a_cancel_during_a_step_leaves_nothing_to_the_next_request_on_the_slot(run, gate_at) -> None:
    """The cancel lands while the slot's decode step is inside the backend
    (the C API's callback returning nonzero, or a client leaving): the
    cancelled request finishes cancelled, and the next request on the same
    slot reuses only the cached prompt and runs as it does on a fresh engine."""
    backend = GateBackend(gate_at)
    scheduler = run(backend, slots=1)
    first = Recorder(1)
    scheduler.submit(first, [sequence(0, [1, 2], max_new=10 ** 6)])
    assert backend.reached.wait(5)
    first.cancelled = True  # what lse_request's cancel sets, from the reader's thread
    scheduler.withdraw(first)
    backend.gate.set()
    assert first.done.wait(5)
    assert first.events[-1] == ("finish", 0, (None, "cancelled"))
    assert scheduler.wait_idle(5)

    backend.calls.clear()
    nxt, seq = Recorder(1), sequence(0, [1, 2], max_new=2)
    scheduler.submit(nxt, [seq])
    assert nxt.done.wait(5)
    # prompt [1, 2] is cached but its last token: it rides decode at position 1
    assert backend.calls == [(2, 1, 0), (3, 2, 0)]
    assert seq.generated == [3, 4] and nxt.events[-1] == ("finish", 0, ("length", "max_tokens"))
