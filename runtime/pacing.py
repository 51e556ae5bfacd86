"""Fairness between requests: how much prompt one scheduler iteration
prefills, and which waiting sequence takes a freed slot.

A running stream waits for every iteration's prefill chunk and decode step
before its next token. ``Pacer`` keeps that gap within ``STREAM_GAP_BUDGET``:
it measures on this machine what a prefilled token costs and what the rest of
an iteration costs (decode step, sampling, delivery: the time from one decode
call to the next, less the prefill between them), and sizes the chunk so
that chunk + rest fit the budget. Before anything was measured it takes ``first_chunk``. With
no stream running a chunk may take ``ALONE_BUDGET`` (up to ``alone_chunk``
tokens, at least ``ALONE_MIN_ROWS``): a backend call is never interrupted, so
this is also how long a cancelled request (a 408, a disconnect) can keep its
slot, and how long a new request waits before its own prefill starts.

``take_fairly`` interleaves requests at admission: a freed slot goes to the
waiting sequence whose request holds the fewest slots, so the choices of a
large ``n`` (n=16 over 4 prompts is 64 sequences) take turns with other
requests instead of holding every slot until all 64 have run.
``next_prefill`` prefills the prompt with the fewest tokens left first, so a
short prompt's first token does not wait behind a long prompt's chunks.
"""

from __future__ import annotations

import collections
import time
from typing import Callable

from lse.compiler.cpu_kernel_build import GEMM_FEW_ROWS

# A running stream's gap between tokens, at most (seconds), while another
# request's prompt is prefilled.
STREAM_GAP_BUDGET = 0.25
# The share of the budget a chunk is sized for: equal chunks on a busy 2-core
# machine vary by about 10%, and a prompt's tokens cost more as it grows.
HEADROOM = 0.9
# A prefill chunk's time with no stream running: the longest a cancelled
# request keeps its slot, and a new request waits, unless ALONE_MIN_ROWS take longer.
ALONE_BUDGET = 1.0
# A lone prompt's chunk holds at least this many rows (where the prompt has
# them): the prompt GEMM runs faster a row the more rows a call has (AMX's, at
# the 3B shapes: 1.1-1.3x the f32 kernel at 64 rows, 1.2-1.5x at 128, up to
# 1.6x at 256; docs/kernels.md), so at 7B, where a row costs ~50 ms, a cancel
# may wait ~6 s (llama-server's 512-row batches: ~30 s there).
ALONE_MIN_ROWS = 128
# A prompt still advances when a decode step alone fills the budget. A chunk
# of at most GEMM_FEW_ROWS rows runs the decode matvecs rather than the
# prompt GEMM, whose sums differ in the last bits (logits ~1e-3 apart on the
# default model), so chunks hold more rows than that: see Pacer.take.
MIN_CHUNK = GEMM_FEW_ROWS + 1
# Two decode calls further apart than this had an idle wait between them: not an iteration's cost.
IDLE_AFTER = 4 * STREAM_GAP_BUDGET
SMOOTHING = 0.3  # weight of a lower newest measurement in the running estimates
CALL_WEIGHT = 0.2  # the newest call's weight in a call's running time (TimedBackend.call_seconds)


class Pacer:
    """The prefill chunk size from the measured step costs."""

    def __init__(self, alone_chunk: int, first_chunk: int, budget: float = STREAM_GAP_BUDGET,
                 clock: Callable[[], float] = time.perf_counter) -> None:
        self.alone_chunk, self.first_chunk, self.budget = alone_chunk, first_chunk, budget
        self.clock = clock
        self.per_token: float | None = None  # seconds per prefilled token (chunk cost / its length)
        self.rest: float | None = None  # seconds of an iteration besides its prefill chunk
        # the most rows a chunk may have: a ring KV cache's slack + 1 (compiler/kv_layout.py), else None
        self.max_rows: int | None = None

    def chunk(self, streams_running: bool) -> int:
        """Prompt tokens the next prefill chunk may take."""
        if self.per_token is None or self.per_token <= 0:
            return self.first_chunk if streams_running else self.alone_chunk
        # A chunk's cost over its length includes the call's fixed cost, so the
        # estimate per token is high for longer chunks: the gap stays under budget.
        if streams_running:
            return max(MIN_CHUNK, min(self.alone_chunk, int((HEADROOM * self.budget - (self.rest or 0.0))
                                                            / self.per_token)))
        return min(self.alone_chunk, max(ALONE_MIN_ROWS, int(HEADROOM * ALONE_BUDGET / self.per_token)))

    def take(self, left: int, streams_running: bool) -> int:
        """Prompt tokens the next chunk takes of the ``left`` a prompt has:
        the chunk size, or all of them where fewer than MIN_CHUNK would be
        left over. Every chunk then runs the GEMM unless the prompt's whole
        rest is that short, so a prompt's logits are the same bits however
        the measured costs cut it (a greedy near-tie breaks alike under any load).
        No chunk exceeds max_rows (a ring's slack bounds a step's rows)."""
        size = max(MIN_CHUNK, self.chunk(streams_running))
        if self.max_rows is not None:
            size = min(size, self.max_rows)
            if left > self.max_rows:
                return size
        return left if left - size < MIN_CHUNK else size

    def prefilled(self, tokens: int, seconds: float) -> None:
        if tokens > 0:
            self.per_token = _smooth(self.per_token, seconds / tokens)

    def rest_of_iteration(self, seconds: float) -> None:
        self.rest = _smooth(self.rest, seconds)


def _smooth(old: float | None, new: float) -> float:
    """A running average that takes a higher cost at once (one chunk over the
    budget, not several) and a lower one gradually."""
    return new if old is None or new > old else old + SMOOTHING * (new - old)


class TimedBackend:
    """The backend with its calls timed into a Pacer: each prefill chunk's
    cost, and between the starts of two decode calls the time not spent in
    prefill. A lone slot's decode call and a verification call also keep
    their own running times (``call_seconds``), which give speculation a
    verification's cost in decode steps. Everything else passes through."""

    def __init__(self, backend, pacer: Pacer) -> None:
        self._backend, self._pacer = backend, pacer
        self._last_decode: float | None = None  # when the last decode call started
        self._prefill_since = 0.0  # prefill seconds since then
        self.call_seconds: dict[str, float] = {}  # "decode_one", "verify" -> running seconds a call

    def __getattr__(self, name: str):
        return getattr(self._backend, name)

    def prefill(self, tokens, start, slot, on_fallback):
        t0 = self._pacer.clock()
        out = self._backend.prefill(tokens, start, slot, on_fallback)
        took = self._pacer.clock() - t0
        self._pacer.prefilled(len(tokens), took)
        self._prefill_since += took
        return out

    def _timed_decode(self, name: str, *args):
        now = self._pacer.clock()
        if self._last_decode is not None and now - self._last_decode < IDLE_AFTER:
            self._pacer.rest_of_iteration(now - self._last_decode - self._prefill_since)
        self._last_decode, self._prefill_since = now, 0.0
        out = getattr(self._backend, name)(*args)
        took = self._pacer.clock() - now
        if self._pacer.rest is None:  # until an iteration was measured, the decode call alone
            self._pacer.rest_of_iteration(took)
        if name in ("decode_one", "verify") and out is not None:
            old = self.call_seconds.get(name)
            self.call_seconds[name] = took if old is None else old + CALL_WEIGHT * (took - old)
        return out

    def verify_cost(self) -> float | None:
        """A verification call's running time over a lone decode call's (None until both ran)."""
        verify, one = self.call_seconds.get("verify"), self.call_seconds.get("decode_one")
        return verify / one if verify and one else None

    def decode(self, *args):
        return self._timed_decode("decode", *args)

    def decode_one(self, *args):
        return self._timed_decode("decode_one", *args)

    def decode_rows(self, *args):
        return self._timed_decode("decode_rows", *args)

    def verify(self, *args):
        """A speculative step, timed as a decode iteration of a few rows (None: the backend has no verify)."""
        return self._timed_decode("verify", *args) if hasattr(self._backend, "verify") else None


def take_fairly(waiting: collections.deque, holding: dict[int, int]):
    """Pop and return the waiting (request, seq) whose request holds the
    fewest slots (``holding``: id(request) -> slots held); the earliest
    such entry wins a tie, so one request's choices keep their order."""
    best_i, best = 0, None
    for i, (request, _) in enumerate(waiting):
        held = holding.get(id(request), 0)
        if best is None or held < best:
            best_i, best = i, held
            if held == 0:
                break
    item = waiting[best_i]
    del waiting[best_i]
    holding[id(item[0])] = holding.get(id(item[0]), 0) + 1
    return item


def next_prefill(slots: list):
    """The slot whose sequence has the fewest prompt tokens left to prefill
    (the lowest slot in a tie), or None when no sequence is prefilling."""
    prefilling = [s for s in slots if s.seq is not None and s.seq.next_input is None and s.seq.finish is None]
    return min(prefilling, key=lambda s: len(s.seq.prompt_ids) - s.seq.prefill_done, default=None)
