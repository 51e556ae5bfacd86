"""Embedding prompts through the scheduler: prefill-only sequences.

Each prompt is one ``EmbedSequence``: the scheduler admits it to a slot as
it admits a scoring request (``score_prompt``: no prefix is reused, so every
row is prefilled and pooled), prefills it chunk by chunk between other
requests' decode steps, hands each chunk's final-normed rows to
``keep_hidden``, and ends it (``generate`` False) once the prompt is in.
Other requests are never blocked: the scheduler thread runs these steps as
it runs any prefill, and the backend is touched by no other thread.

A request's prompts enter the queue a window at a time (as many as the
engine has slots): the room check counts that window against the queue, and
each finished prompt lets the next one in, so one request of 2048 inputs
takes turns with other requests rather than holding the queue.
"""

from __future__ import annotations

import threading
import time

import numpy as np

from lse.runtime.embeddings.pooling import Pooler
from lse.runtime.errors import LseError
from lse.runtime.telemetry import RequestRecord

ENDPOINT = "embeddings"


class EmbedSequence:
    """The scheduler's view of one prompt being embedded (the fields it reads of a Sequence)."""

    score_prompt = True  # admitted with no prefix reuse: every row's hidden state is computed
    generate = False  # prefill only

    def __init__(self, index: int, prompt_ids: list[int], pooling: str):
        self.index, self.prompt_ids = index, prompt_ids
        self.pooler = Pooler(pooling)
        self.cached_tokens = self.prefill_done = 0
        self.next_input: int | None = None
        self.finish: tuple[str | None, str] | None = None
        self.t_start = time.perf_counter()
        self.t_admitted: float | None = None
        self.t_end: float | None = None

    def keep_hidden(self, hidden) -> None:
        """One prefill chunk's rows (N, H): pooled at once (the device buffer is reused by the next call)."""
        self.pooler.add(np.array(hidden.to_host()) if hasattr(hidden, "to_host") else hidden)

    def scoring_done(self) -> list[dict]:
        self.finish, self.t_end = ("stop", "embedded"), time.perf_counter()
        return []

    def cancel(self) -> list[dict]:
        self.finish, self.t_end = (None, "cancelled"), time.perf_counter()
        return []


class EmbedJob:
    """One request's prompts: the scheduler's RequestEvents, and the caller's wait."""

    def __init__(self, engine, prompts: list[list[int]], pooling: str):
        self.engine = engine
        self.seqs = [EmbedSequence(i, p, pooling) for i, p in enumerate(prompts)]
        self.vectors: list[np.ndarray | None] = [None] * len(prompts)
        self.cancelled = False
        self.error: LseError | None = None
        self.fallback_counts: dict[str, int] = {}
        self._done = threading.Event()
        self._lock = threading.Lock()
        self._next = 0
        self._left = len(prompts)
        self._t_start = time.perf_counter()

    def start(self, queue_size: int | None) -> None:
        """Queue the first window (503 ``overloaded`` when it does not fit the queue)."""
        window = self.seqs[:max(1, self.engine.slots)]
        self._next = len(window)
        self.engine.scheduler.submit(self, window, queue_size)

    def wait(self, timeout: float | None = None) -> list[np.ndarray]:
        """The pooled rows, in input order; raises the request's error, or 408 after ``timeout`` seconds."""
        if not self._done.wait(timeout):
            self.cancel()
            raise LseError("request_timeout", f"the embeddings took longer than {timeout:g} s")
        if self.error is not None:
            raise self.error
        return list(self.vectors)

    def cancel(self) -> None:
        if not self.cancelled:
            self.cancelled = True
            self.engine.scheduler.withdraw(self)

    # ---- RequestEvents (called on the scheduler thread) -----------------
    def deltas(self, seq, deltas: list[dict]) -> None:  # never called: nothing is generated
        pass

    def finish(self, seq: EmbedSequence, deltas: list[dict]) -> None:
        if seq.finish is None or seq.finish[0] is None or self.cancelled:
            return  # cancelled: the caller has gone
        self.vectors[seq.index] = seq.pooler.result()
        with self._lock:
            self._left -= 1
            follow = self.seqs[self._next] if self._next < len(self.seqs) else None
            self._next += follow is not None
        if follow is not None:
            try:
                self.engine.scheduler.submit(self, [follow], None)  # admitted already: the queue's check was at start
            except LseError as e:  # shutting down
                self.fail(e)
                return
        if self._left == 0:
            self._notify("stop")
            self._done.set()

    def fail(self, error: Exception) -> None:
        if self._done.is_set():
            return
        self.error = error if isinstance(error, LseError) else LseError(
            "generation_failed", f"embedding failed: {type(error).__name__}: {error}")
        self.cancelled = True
        self._notify("error")
        self._done.set()

    def fallback(self, cause: str, count_engine: bool = True) -> None:
        if count_engine or not self.engine.fallback.allowed:  # a refusal raises for every request
            self.engine.fallback.record(cause)
        self.fallback_counts[cause] = self.fallback_counts.get(cause, 0) + 1

    def _notify(self, outcome: str) -> None:
        admitted = [s.t_admitted for s in self.seqs if s.t_admitted is not None]
        self.engine.observers.notify(RequestRecord(
            endpoint=ENDPOINT, outcome=outcome, prompt_tokens=sum(len(s.prompt_ids) for s in self.seqs),
            generated_tokens=0, cached_tokens=0,
            queue_seconds=min(admitted) - self._t_start if admitted else None,
            first_token_seconds=None, per_output_token_seconds=None,
            e2e_seconds=time.perf_counter() - self._t_start))
