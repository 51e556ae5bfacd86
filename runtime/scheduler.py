"""The scheduler: one thread that owns the backend and the KV-cache slots,
at a lower priority than IREE's workers (SCHEDULER_NICE), since it waits on
their steps partly by spinning.

Each iteration admits waiting sequences into free slots, the request holding
the fewest slots first (runtime/pacing.py; the slot whose cached tokens share
the longest prefix with the prompt wins and that prefix is reused, its K/V
copied over on the device from a slot holding a longer one), runs one prefill
chunk for one admitted sequence, sized to running streams' gap budget
(pacing.Pacer), then one batched decode step for every generating sequence. A
sequence with one prompt token left joins that step at once: eight requests
sharing a prompt start together. A cancelled request leaves the queue at once
(``withdraw``) and its slots before the next admission, so a disconnect or a
timeout never holds a place another request could take.

The scheduler tells a request what happened through ``RequestEvents`` (a
choice's deltas, its finish, a failure, a host-group run) and nothing else:
it builds no JSON, and logprobs are the sequence's own.
"""

from __future__ import annotations

import collections
import logging
import math
import os
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Callable, Protocol

import numpy as np

from lse.runtime.errors import LseError
from lse.runtime.kv_ring import chunk_rows, slot_reuse
from lse.runtime.pacing import Pacer, TimedBackend, next_prefill, take_fairly
from lse.runtime.sequence import Sequence

log = logging.getLogger("lse")
PREFILL_CHUNK = 512
# While other slots are generating, a prompt's chunk fits their gap budget
# (runtime/pacing.py, from measured step costs); this until a step was measured.
PREFILL_CHUNK_SHARED = 128
# The scheduler thread's nice value (Linux, where a thread has its own). While
# a step runs, the thread that called into IREE waits partly by spinning, on
# a core its workers need, so it yields that core to them (a one-row decode
# step is faster: docs/performance.md). Between steps the workers sleep, so
# the thread still gets a core.
SCHEDULER_NICE = 10
# Retry-After for a full queue: at the rate the last RELEASE_WINDOW freed slots show, up to RETRY_AFTER_MAX s.
RELEASE_WINDOW = 32
RETRY_AFTER_MAX = 60


class RequestEvents(Protocol):
    """The request a sequence belongs to, as the scheduler sees it (lse.runtime.request_state.RequestState)."""

    cancelled: bool  # set by the reader's side; the scheduler frees the request's places

    def deltas(self, seq: Sequence, deltas: list[dict]) -> None:
        """``seq`` produced ``deltas`` (and maybe logprobs)."""

    def finish(self, seq: Sequence, deltas: list[dict]) -> None:
        """``seq`` ended (``seq.finish`` says how), its last ``deltas`` with it."""

    def fail(self, error: Exception) -> None:
        """The request failed; its error event goes out once."""

    def fallback(self, cause: str, count_engine: bool) -> None:
        """A host group ran for this request (``count_engine``: count it for the engine too)."""


@dataclass
class Slot:
    index: int
    kv_tokens: list[int] = field(default_factory=list)  # tokens whose K/V the cache holds
    seq: Sequence | None = None
    owner: RequestEvents | None = None  # the request the sequence belongs to


def common_prefix(a: list[int], b: list[int]) -> int:
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


class Scheduler:
    def __init__(self, backend, slots: int, kv_len: int, pacer: Pacer | None = None):
        self.pacer = pacer or Pacer(PREFILL_CHUNK, PREFILL_CHUNK_SHARED)
        self.layout = getattr(backend, "layout", None)  # compiler/kv_layout.KvLayout: rings bound chunks, reuse
        self.pacer.max_rows, self.backend = chunk_rows(self.layout), TimedBackend(backend, self.pacer)
        self.kv_len = kv_len
        self.slots = [Slot(i) for i in range(slots)]
        self.waiting: collections.deque[tuple[RequestEvents, Sequence]] = collections.deque()
        self.cond = threading.Condition()
        self.stopping = False
        self.closed: LseError | None = None  # set at shutdown: the error new submissions get
        self._in_step: list[Slot] = []  # slots whose requests the running step serves
        self._released: collections.deque[float] = collections.deque(maxlen=RELEASE_WINDOW)  # when slots freed
        self.speculator = None  # lse.runtime.speculative.Speculator (--speculative), set by the engine
        self.thread = threading.Thread(target=self._loop, name="lse-scheduler", daemon=True)
        self.thread.start()

    # ---- called from other threads -------------------------------------
    def check_room(self, sequences: int, queue_size: int) -> None:
        """503 overloaded (or the shutdown error) unless ``sequences`` more fit the queue."""
        with self.cond:
            self._check_room(sequences, queue_size)

    def _check_room(self, sequences: int, queue_size: int | None) -> None:
        """Room is the free slots plus the queue: on an idle server a burst of slots + queue_size is
        taken, not refused while slots are free."""
        if self.closed is not None:
            raise self.closed
        waiting = len(self.waiting)
        free = sum(1 for s in self.slots if s.seq is None)
        if queue_size is not None and waiting + sequences > queue_size + free:
            raise LseError("overloaded", f"{waiting} sequences are waiting for a slot (limit {queue_size}); "
                           "retry shortly", extra={"retry_after": self.retry_after(waiting + sequences - queue_size - free)})

    def retry_after(self, ahead: int) -> int:
        """Seconds until ``ahead`` more slots are freed (each lets one waiting
        sequence in, and so one place of the queue), at the rate slots were
        freed lately (1 to RETRY_AFTER_MAX; 1 before any were)."""
        released = self._released
        if len(released) < 2 or released[-1] <= released[0]:
            return 1
        rate = (len(released) - 1) / (released[-1] - released[0])  # sequences ended per second
        return max(1, min(RETRY_AFTER_MAX, math.ceil(ahead / rate)))

    def submit(self, request: RequestEvents, seqs: list[Sequence], queue_size: int | None = None) -> None:
        """Queue ``seqs``; the room check and the append are one step, so two requests prepared at
        once can't both take the last places."""
        with self.cond:
            self._check_room(len(seqs), queue_size)
            self.waiting.extend((request, s) for s in seqs)
            self.cond.notify_all()

    def withdraw(self, request: RequestEvents) -> None:
        """A cancelled request's waiting sequences leave the queue now."""
        with self.cond:
            mine = [s for r, s in self.waiting if r is request]
            if mine:
                self.waiting = collections.deque(item for item in self.waiting if item[0] is not request)
            self.cond.notify_all()
        for seq in mine:
            request.finish(seq, seq.cancel())

    def close_queue(self, error: LseError) -> None:
        """Shutdown, step one: refuse new requests and fail the waiting ones with ``error``."""
        with self.cond:
            self.closed = error
            waiting, self.waiting = self.waiting, collections.deque()
            self.cond.notify_all()
        for request in dict.fromkeys(r for r, _ in waiting):
            _fail_and_cancel(request, error)

    def wait_idle(self, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds for every slot to be free; True if they are."""
        with self.cond:
            return self.cond.wait_for(lambda: not self.waiting and not self.active(), timeout)

    def fail_running(self, error: LseError) -> None:
        """Shutdown, last step: end every running request with ``error``."""
        for request in dict.fromkeys(s.owner for s in self.slots if s.owner is not None):
            _fail_and_cancel(request, error)
        self.wake()

    def wake(self) -> None:
        with self.cond:
            self.cond.notify_all()

    def queued(self) -> int:
        with self.cond:
            return len(self.waiting)

    def active(self) -> int:
        return sum(1 for s in self.slots if s.seq is not None)

    def kv_tokens(self) -> int:
        """Tokens whose K/V the slots hold: running sequences' and the prefixes idle slots keep for reuse."""
        return sum(len(s.kv_tokens) for s in self.slots)

    def stop(self) -> None:
        with self.cond:
            self.stopping = True
            self.cond.notify_all()
        self.thread.join(timeout=30)

    # ---- the loop -----------------------------------------------------
    def _loop(self) -> None:
        _lower_priority(SCHEDULER_NICE)
        while True:
            with self.cond:
                self.cond.wait_for(lambda: self.stopping or self.waiting or self.active())
                if self.stopping:
                    return
            self._drop_cancelled()  # first, so their slots count in this admission
            with self.cond:
                self._admit()
            self._guarded(self._prefill_step)
            self._drop_cancelled()  # a request cancelled during the prefill leaves before the decode step
            self._guarded(self._decode_step)

    def _guarded(self, step) -> None:
        """A failed step fails the requests in it; the engine serves on."""
        try:
            step()
        except Exception as e:
            if isinstance(e, LseError):
                log.warning("lse: request failed: %s", e.message)
            else:
                log.exception("lse: generation step failed")
            for slot in self._in_step:
                if slot.owner is None:  # it failed alone earlier in the step (_fail_alone)
                    continue
                slot.owner.fail(e)
                self._release(slot)
        finally:
            self._in_step = []

    def _admit(self) -> None:
        free = [s for s in self.slots if s.seq is None]
        holding: dict[int, int] = collections.Counter(id(s.owner) for s in self.slots if s.owner is not None)
        while free and self.waiting:
            request, seq = take_fairly(self.waiting, holding)
            if request.cancelled:
                request.finish(seq, seq.cancel())
                continue
            best = max(free, key=lambda s: common_prefix(s.kv_tokens, seq.prompt_ids))
            free.remove(best)
            common = min(common_prefix(best.kv_tokens, seq.prompt_ids), len(seq.prompt_ids) - 1)
            reuse = 0 if seq.score_prompt else slot_reuse(self.layout, len(best.kv_tokens), common)
            del best.kv_tokens[reuse:]
            if not seq.score_prompt:
                reuse = self._copy_longer_prefix(best, seq.prompt_ids, reuse)
            seq.cached_tokens = seq.prefill_done = reuse
            if seq.generate and not seq.score_prompt and len(seq.prompt_ids) - reuse == 1:
                # One prompt token left (a reused prefix, or a one-token prompt): it
                # rides the next decode step as a row, whose logits give the first
                # token as a one-token prefill's would, without a step of its own.
                seq.next_input, seq.prefill_done = seq.prompt_ids[-1], len(seq.prompt_ids)
            seq.t_admitted = time.perf_counter()
            best.seq, best.owner = seq, request

    def _copy_longer_prefix(self, slot: Slot, prompt: list[int], reuse: int) -> int:
        """Where another slot (running or idle) holds a longer prefix of the
        prompt than ``slot`` does, copy its K/V on the device instead of
        recomputing them: a system prompt shared by many users is prefilled
        once per server, not once per slot. Returns the positions reused."""
        donor = max((s for s in self.slots if s is not slot), key=lambda s: common_prefix(s.kv_tokens, prompt),
                    default=None)
        if donor is None:
            return reuse
        longer = min(common_prefix(donor.kv_tokens, prompt), len(prompt) - 1)
        longer = slot_reuse(self.layout, len(donor.kv_tokens), longer)  # a ring model copies the whole slot
        if longer <= reuse:
            return reuse
        try:
            if not self.backend.copy_prefix(donor.index, slot.index, longer):
                return reuse
        except Exception:  # the prompt is prefilled as if no slot held it
            log.exception("lse: copying a prefix between slots failed")
            return reuse
        log.debug("lse: slot %d takes %d prefix positions from slot %d", slot.index, longer, donor.index)
        slot.kv_tokens[:] = donor.kv_tokens[:longer]
        return longer

    def _drop_cancelled(self) -> None:
        for slot in self.slots:
            if slot.seq is not None and slot.owner.cancelled:
                slot.owner.finish(slot.seq, slot.seq.cancel())
                self._release(slot)

    def _release(self, slot: Slot) -> None:
        slot.seq, slot.owner = None, None
        self._released.append(time.monotonic())
        with self.cond:
            self.cond.notify_all()

    def _prefill_step(self) -> None:
        slot = next_prefill(self.slots)
        if slot is None:
            return
        self._in_step = [slot]
        seq, request = slot.seq, slot.owner
        start = seq.prefill_done
        decoding = any(s.seq is not None and s.seq.next_input is not None for s in self.slots)
        chunk = seq.prompt_ids[start:start + self.pacer.take(len(seq.prompt_ids) - start, decoding)]
        on_fallback = _fallback_for([slot])
        logits, hidden = self.backend.prefill(np.asarray(chunk, np.int64), start, slot.index, on_fallback)
        slot.kv_tokens.extend(chunk)
        seq.prefill_done += len(chunk)
        if seq.keep_hidden is not None:  # embeddings (runtime/embeddings/job.py): the final-normed rows
            seq.keep_hidden(hidden)
        elif seq.score_prompt:
            seq.score_prompt_rows(self.backend.all_logits(hidden, on_fallback), start)
        if seq.prefill_done < len(seq.prompt_ids):
            return
        if not seq.generate:
            request.finish(seq, seq.scoring_done())
            self._release(slot)
            return
        self._deliver(slot, logits)

    def _deliver(self, slot: Slot, logits: np.ndarray) -> None:
        seq, request = slot.seq, slot.owner
        try:
            deltas = seq.on_logits(logits)
        except Exception as e:  # its own grammar, sampler or detokenizer: this request alone fails
            self._fail_alone(slot, e)
            return
        request.deltas(seq, deltas)
        if seq.finish is not None:
            request.finish(seq, [])
            self._release(slot)

    def _fail_alone(self, slot: Slot, error: Exception) -> None:
        """One sequence failed after its step: its request alone ends, with its own error; its
        other choices leave at the next iteration; the rest of the step is delivered."""
        if isinstance(error, LseError):
            log.warning("lse: request failed: %s", error.message)
        else:
            log.exception("lse: choice %d of a request failed", slot.seq.index)
            error = LseError("generation_failed", f"generation failed in choice {slot.seq.index}: "
                             f"{type(error).__name__}: {error}")
        _fail_and_cancel(slot.owner, error)
        self._release(slot)

    def _decode_step(self) -> None:
        rows = [s for s in self.slots if s.seq is not None and s.seq.next_input is not None and s.seq.finish is None]
        if rows and self.speculator is not None:  # slots with a draft verify it; the rest decode plainly
            rows = self.speculator.step(self, rows)
        if not rows:
            return
        self._in_step = rows
        if len(rows) == 1:
            self._decode_one(rows[0])
            return
        # the smallest compiled step that holds the rows: a bucket (rows name
        # their slots) or every slot; idle slots fill the rest
        bucket = next((b for b in self.backend.buckets if b >= len(rows)), len(self.slots))
        step = rows + [s for s in self.slots if s not in rows][:bucket - len(rows)]
        if bucket == len(self.slots):
            step.sort(key=lambda s: s.index)  # decode: row b is slot b
        tokens = np.zeros(len(step), np.int64)
        positions = np.zeros(len(step), np.int64)
        for i, s in enumerate(step):
            if s in rows:
                tokens[i], positions[i] = s.seq.next_input, len(s.kv_tokens)
            else:  # an idle row writes just past its cached prefix, which stays intact
                positions[i] = min(len(s.kv_tokens), self.kv_len - 1)
                del s.kv_tokens[positions[i]:]
        on_fallback = _fallback_for(rows)
        if bucket == len(self.slots):
            logits = self.backend.decode(tokens, positions, on_fallback)
        else:
            slot_ids = np.asarray([s.index for s in step], np.int64)
            logits = self.backend.decode_rows(slot_ids, tokens, positions, on_fallback)
        for i, s in enumerate(step):
            if s in rows:
                s.kv_tokens.append(s.seq.next_input)
                s.seq.next_input = None
                self._deliver(s, logits[i])

    def _decode_one(self, slot: Slot) -> None:
        """A lone stream: one row, leaving the other slots' caches untouched."""
        logits = self.backend.decode_one(slot.seq.next_input, len(slot.kv_tokens), slot.index,
                                         _fallback_for([slot]))
        slot.kv_tokens.append(slot.seq.next_input)
        slot.seq.next_input = None
        self._deliver(slot, logits)


def _lower_priority(nice: int) -> None:
    """This thread's nice value raised by ``nice`` (Linux only; elsewhere priorities are the
    process's, and the workers' would drop with it)."""
    if sys.platform != "linux":
        return
    try:
        tid = threading.get_native_id()
        os.setpriority(os.PRIO_PROCESS, tid, os.getpriority(os.PRIO_PROCESS, tid) + nice)
    except OSError as e:  # a sandbox may forbid it: serve at the same priority
        log.debug("lse: scheduler thread priority unchanged: %s", e)


def _fail_and_cancel(request: RequestEvents, error: LseError) -> None:
    request.fail(error)
    request.cancelled = True


def _fallback_for(rows: list[Slot]) -> Callable[[str], None]:
    """A decode step's host-group runs count once for the engine and once for each request in the batch."""
    def record(cause: str) -> None:
        for i, s in enumerate(rows):
            s.owner.fallback(cause, count_engine=(i == 0))
    return record
