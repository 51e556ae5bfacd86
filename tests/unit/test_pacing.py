"""Fairness (#44): a prompt's prefill chunk fits a running stream's gap budget
at the measured step costs, a large n takes turns with other requests, and a
request cancelled (a 408, a disconnect) during a step leaves its slot at that
step's end. Every step cost is a fake clock's, so nothing here is timed."""

from __future__ import annotations

import threading

import numpy as np
import pytest
from test_scheduler import FakeBackend, Recorder, _next_of, sequence

from lse.compiler.cpu_kernel_build import GEMM_FEW_ROWS
from lse.runtime.pacing import (ALONE_BUDGET, ALONE_MIN_ROWS, HEADROOM, MIN_CHUNK, STREAM_GAP_BUDGET, Pacer,
                                TimedBackend)
from lse.runtime.scheduler import PREFILL_CHUNK, PREFILL_CHUNK_SHARED, Scheduler


class ClockedBackend(FakeBackend):
    """A step advances a fake clock by its known cost: a prefill chunk
    ``overhead + per_token × tokens``, a decode step ``decode``. Records each
    prefill chunk's length and when each slot's decode steps ran."""

    def __init__(self, overhead: float, per_token: float, decode: float) -> None:
        super().__init__()
        self.overhead, self.per_token, self.decode_cost = overhead, per_token, decode
        self.now = 0.0
        self.chunks: list[tuple[int, int]] = []  # (slot, tokens)
        self.decoded_at: dict[int, list[float]] = {}

    def prefill(self, tokens, start, slot, on_fallback):
        self.now += self.overhead + self.per_token * len(tokens)
        self.chunks.append((slot, len(tokens)))
        return super().prefill(tokens, start, slot, on_fallback)

    def decode(self, tokens, positions, on_fallback):
        self.now += self.decode_cost
        for slot in range(len(tokens)):
            self.decoded_at.setdefault(slot, []).append(self.now)
        return np.stack([_next_of(t) for t in tokens])

    def decode_one(self, token, position, slot, on_fallback):
        self.now += self.decode_cost
        self.decoded_at.setdefault(slot, []).append(self.now)
        return _next_of(token)


def _stream_beside_a_long_prompt(backend: ClockedBackend) -> None:
    """A stream (slot 0, its 20-token prompt prefilled alone, so measured)
    runs while a 2000-token prompt (slot 1) is prefilled."""
    pacer = Pacer(PREFILL_CHUNK, PREFILL_CHUNK_SHARED, clock=lambda: backend.now)
    scheduler = Scheduler(backend, 2, kv_len=4096, pacer=pacer)
    stream, long = Recorder(1), Recorder(1)
    try:
        with scheduler.cond:  # both wait before the first admission: slot 0 is the stream's
            scheduler.submit(stream, [sequence(0, list(range(1, 21)), max_new=60)])
            scheduler.submit(long, [sequence(0, [3] * 2000, max_new=1)])
        assert stream.done.wait(10) and long.done.wait(10)
    finally:
        scheduler.stop()
    assert backend.chunks[0] == (0, 20)


def test_a_long_prompt_keeps_a_running_streams_gap_within_the_budget() -> None:
    """At 5 ms a chunk + 2 ms a token and a 50 ms decode step, the fixed 128-token
    chunk gapped the stream 311 ms; chunks sized from the measured costs keep
    every gap within 250 ms while the 2000 tokens are prefilled."""
    backend = ClockedBackend(overhead=0.005, per_token=0.002, decode=0.05)
    _stream_beside_a_long_prompt(backend)
    long_chunks = [n for slot, n in backend.chunks if slot == 1]
    assert sum(long_chunks) == 2000 and len(long_chunks) > 2000 // PREFILL_CHUNK_SHARED
    times = backend.decoded_at[0]
    gaps = [b - a for a, b in zip(times, times[1:])]
    assert max(gaps) <= STREAM_GAP_BUDGET + 1e-9, max(gaps)
    assert max(gaps) > HEADROOM * STREAM_GAP_BUDGET - 0.01  # the budget is used, not wasted on tiny chunks


def test_a_fast_step_takes_longer_chunks_than_the_first_guess() -> None:
    """At 0.1 ms a token the budget holds more than the whole 512-token chunk:
    the long prompt goes in 512-token chunks beside the stream, not 128."""
    backend = ClockedBackend(overhead=0.0, per_token=0.0001, decode=0.01)
    _stream_beside_a_long_prompt(backend)
    assert [n for slot, n in backend.chunks if slot == 1] == [512, 512, 512, 464]


def test_the_chunk_follows_the_measured_costs() -> None:
    pacer = Pacer(512, 128, clock=lambda: 0.0)
    assert pacer.chunk(streams_running=False) == 512
    assert pacer.chunk(streams_running=True) == 128  # nothing measured yet
    pacer.prefilled(100, 0.1)  # 1 ms a token
    pacer.rest_of_iteration(0.05)
    room = HEADROOM * STREAM_GAP_BUDGET - 0.05
    assert pacer.chunk(streams_running=False) == min(512, int(HEADROOM * ALONE_BUDGET / 0.001))
    assert pacer.chunk(streams_running=True) == int(room / 0.001) in (174, 175)  # (0.9 × 250 - 50) ms, 1 ms a token
    pacer.prefilled(100, 0.2)  # a dearer chunk counts at once
    assert pacer.chunk(streams_running=True) == int(room / 0.002)
    pacer.prefilled(100, 0.1)  # a cheaper one gradually
    assert pacer.chunk(streams_running=True) == int(room / (0.002 - 0.3 * 0.001))
    pacer.rest_of_iteration(0.3)  # the rest alone fills the budget: the prompt still advances
    assert pacer.chunk(streams_running=True) == MIN_CHUNK


def test_a_lone_prompt_takes_at_least_alone_min_rows_however_dear_a_row() -> None:
    """At a 7B model's ~60 ms a row the alone budget holds 15 rows, where the
    prompt GEMM runs far below its speed: a lone chunk still takes
    ALONE_MIN_ROWS; with streams running the gap budget still rules."""
    pacer = Pacer(512, 128, clock=lambda: 0.0)
    pacer.prefilled(17, 17 * 0.06)
    pacer.rest_of_iteration(0.05)
    assert int(HEADROOM * ALONE_BUDGET / 0.06) < ALONE_MIN_ROWS
    assert pacer.chunk(streams_running=False) == ALONE_MIN_ROWS
    assert pacer.take(1000, streams_running=False) == ALONE_MIN_ROWS
    assert pacer.chunk(streams_running=True) == MIN_CHUNK


class OrderLog(Recorder):
    """A Recorder that also writes each first token into a log shared by requests."""

    def __init__(self, name: str, seqs: int, log: list) -> None:
        super().__init__(seqs)
        self.name, self.log, self.started = name, log, set()

    def deltas(self, seq, deltas):
        super().deltas(seq, deltas)
        if seq.index not in self.started:
            self.started.add(seq.index)
            self.log.append((self.name, seq.index))


def test_a_large_n_takes_turns_with_the_next_request() -> None:
    """Six choices of one request, then another request, on two slots: the
    other request's first token comes with the first choices', not after all
    six have run."""
    scheduler = Scheduler(FakeBackend(), 2, kv_len=32)
    log: list = []
    big, small = OrderLog("big", 6, log), OrderLog("small", 1, log)
    try:
        with scheduler.cond:
            scheduler.submit(big, [sequence(i, [1, 2], max_new=3) for i in range(6)])
            scheduler.submit(small, [sequence(0, [4, 5], max_new=3)])
        assert big.done.wait(5) and small.done.wait(5)
    finally:
        scheduler.stop()
    assert log[:2] == [("big", 0), ("small", 0)]
    assert [i for name, i in log if name == "big"] == list(range(6))  # one request's choices keep their order


class BlockingPrefill(FakeBackend):
    """The prefill of a prompt starting with 9 blocks until ``release``; every
    decode call records (kind, slots it steps, slots busy then)."""

    def __init__(self) -> None:
        super().__init__()
        self.entered, self.release = threading.Event(), threading.Event()
        self.scheduler: Scheduler | None = None
        self.calls: list[tuple] = []

    def prefill(self, tokens, start, slot, on_fallback):
        if tokens[0] == 9:
            self.entered.set()
            assert self.release.wait(5)
        return super().prefill(tokens, start, slot, on_fallback)

    def _busy(self) -> list[int]:
        return [s.index for s in self.scheduler.slots if s.seq is not None]

    def decode(self, tokens, positions, on_fallback):
        self.calls.append(("decode", list(range(len(tokens))), self._busy()))
        return super().decode(tokens, positions, on_fallback)

    def decode_one(self, token, position, slot, on_fallback):
        self.calls.append(("decode_one", [slot], self._busy()))
        return super().decode_one(token, position, slot, on_fallback)


@pytest.mark.timeout(30)
def test_a_request_cancelled_during_a_prefill_leaves_its_slot_at_that_steps_end() -> None:
    """A stream times out (its handle cancels it) while another prompt's chunk
    runs: the stream's slot is free when that chunk ends, before the decode
    step that follows it, which steps the other sequence alone."""
    backend = BlockingPrefill()
    scheduler = Scheduler(backend, 2, kv_len=32)
    backend.scheduler = scheduler
    timed_out, other = Recorder(1), Recorder(1)
    try:
        with scheduler.cond:
            scheduler.submit(timed_out, [sequence(0, [1, 2], max_new=20)])
            scheduler.submit(other, [sequence(0, [9, 2], max_new=2)])
        assert backend.entered.wait(5)
        timed_out.cancelled = True  # what the handle's cancel sets at a 408
        scheduler.withdraw(timed_out)
        calls_before = len(backend.calls)
        backend.release.set()
        assert timed_out.done.wait(5) and other.done.wait(5)
    finally:
        backend.release.set()
        scheduler.stop()
    assert timed_out.events[-1] == ("finish", 0, (None, "cancelled"))
    assert backend.calls[:calls_before] == [("decode_one", [0], [0, 1])]  # the stream's step before the prefill
    assert backend.calls[calls_before] == ("decode_one", [1], [1])


class PausedPrefill(ClockedBackend):
    """A ClockedBackend whose first prefill chunk waits for ``release``."""

    def __init__(self) -> None:
        super().__init__(overhead=0.0, per_token=0.001, decode=0.01)
        self.entered, self.release = threading.Event(), threading.Event()

    def prefill(self, tokens, start, slot, on_fallback):
        if not self.entered.is_set():
            self.entered.set()
            assert self.release.wait(5)
        return super().prefill(tokens, start, slot, on_fallback)


@pytest.mark.timeout(30)
def test_a_short_prompt_arriving_during_a_long_prefill_goes_next() -> None:
    """A 2000-token prompt is in its first chunk when a 4-token prompt
    arrives: the short prompt's prefill is the next chunk, so its first token
    does not wait for the long prompt's other chunks."""
    backend = PausedPrefill()
    scheduler = Scheduler(backend, 2, kv_len=4096)
    long, short = Recorder(1), Recorder(1)
    try:
        scheduler.submit(long, [sequence(0, [3] * 2000, max_new=1)])
        assert backend.entered.wait(5)
        scheduler.submit(short, [sequence(0, [1, 2, 3, 4], max_new=1)])
        backend.release.set()
        assert long.done.wait(10) and short.done.wait(10)
    finally:
        backend.release.set()
        scheduler.stop()
    assert backend.chunks[:2] == [(0, PREFILL_CHUNK), (1, 4)]
    assert sum(n for slot, n in backend.chunks if slot == 0) == 2000


@pytest.mark.timeout(30)
def test_a_lone_prefill_is_cut_so_a_cancel_frees_the_slot_within_the_alone_budget() -> None:
    """At 4 ms a token a 512-token chunk runs 2 s, and a request cancelled
    (timed out) during it kept its slot that long: after the first chunk
    measures the cost, a lone prompt's chunks take at most ALONE_BUDGET, and
    a cancel stops its prefill at the end of the chunk running then."""
    backend = ClockedBackend(overhead=0.0, per_token=0.004, decode=0.02)
    scheduler = Scheduler(backend, 1, kv_len=4096,
                          pacer=Pacer(PREFILL_CHUNK, PREFILL_CHUNK_SHARED, clock=lambda: backend.now))
    first, timed_out = Recorder(1), Recorder(1)
    try:
        scheduler.submit(first, [sequence(0, [5] * 40, max_new=1)])  # measures the cost: 40 tokens, 160 ms
        assert first.done.wait(5)
        cancel_at = threading.Event()
        real_prefill = backend.prefill

        def prefill(tokens, start, slot, on_fallback):
            out = real_prefill(tokens, start, slot, on_fallback)
            if len(backend.chunks) == 3:  # the second chunk of the long prompt: its request times out
                timed_out.cancelled = True
                cancel_at.set()
            return out

        backend.prefill = prefill
        scheduler.submit(timed_out, [sequence(0, [3] * 2000, max_new=1)])
        assert timed_out.done.wait(5) and cancel_at.is_set()
        assert scheduler.wait_idle(5)
    finally:
        scheduler.stop()
    long_chunks = [n for _, n in backend.chunks[1:]]
    assert long_chunks == [int(HEADROOM * ALONE_BUDGET / 0.004)] * 2  # no chunk after the cancel
    assert long_chunks[0] * 0.004 <= ALONE_BUDGET
    assert timed_out.events[-1] == ("finish", 0, (None, "cancelled"))


@pytest.mark.parametrize("per_token", [0.0001, 0.00043, 0.0019, 0.004])
@pytest.mark.parametrize("length", [17, 300, 527, 2000])
def test_no_chunk_is_short_enough_for_the_matvec_unless_the_whole_prompt_is(per_token, length) -> None:
    """A chunk of at most GEMM_FEW_ROWS rows runs the matvecs, whose sums differ
    from the GEMM's: whatever the measured costs, every chunk of a prompt longer
    than that holds more rows, so its logits do not depend on the load."""
    backend = ClockedBackend(overhead=0.003, per_token=per_token, decode=0.05)
    pacer = Pacer(PREFILL_CHUNK, PREFILL_CHUNK_SHARED, clock=lambda: backend.now)
    scheduler = Scheduler(backend, 2, kv_len=4096, pacer=pacer)
    stream, prompt = Recorder(1), Recorder(1)
    try:
        with scheduler.cond:
            scheduler.submit(stream, [sequence(0, list(range(1, 21)), max_new=80)])
            scheduler.submit(prompt, [sequence(0, [3] * length, max_new=1)])
        assert stream.done.wait(10) and prompt.done.wait(10)
    finally:
        scheduler.stop()
    chunks = [n for slot, n in backend.chunks if slot == 1]
    assert sum(chunks) == length and min(chunks) > GEMM_FEW_ROWS, chunks


def test_take_absorbs_a_short_rest() -> None:
    pacer = Pacer(512, 128, clock=lambda: 0.0)
    assert pacer.take(600, streams_running=False) == 512  # 88 left: a GEMM chunk of its own
    assert pacer.take(512 + MIN_CHUNK - 1, streams_running=False) == 512 + MIN_CHUNK - 1
    assert pacer.take(5, streams_running=False) == 5


def test_timed_backend_keeps_a_lone_decode_and_a_verification_running_time() -> None:
    class Calls:
        now, one, verify_seconds = 0.0, 0.010, 0.016

        def decode_one(self, *args):
            self.now += self.one
            return np.zeros(3)

        def verify(self, *args):
            self.now += self.verify_seconds
            return None if args and args[0] == "none" else np.zeros((4, 3))

    inner = Calls()
    timed = TimedBackend(inner, Pacer(512, 128, clock=lambda: inner.now))
    assert timed.verify_cost() is None
    timed.decode_one()
    assert timed.verify_cost() is None  # until both ran
    timed.verify()
    assert timed.verify_cost() == pytest.approx(1.6)
    inner.verify_seconds = 0.5
    timed.verify("none")  # no verify entry for it (the caller prefills instead): not a verification's time
    assert timed.verify_cost() == pytest.approx(1.6)
    inner.now += 1.0  # idle
    inner.one = 0.020  # the machine slows: the running time follows
    for _ in range(40):
        timed.decode_one()
    assert timed.call_seconds["decode_one"] == pytest.approx(0.020, rel=1e-3)
    assert timed.verify_cost() == pytest.approx(0.8, rel=1e-3)
