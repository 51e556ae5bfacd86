"""A request in flight, on the scheduler's side: its choices, its ending, and
the typed events (lse.runtime.request_events) it puts on its channel.

The scheduler thread calls ``deltas`` / ``finish`` / ``fail`` / ``fallback``
(lse.runtime.scheduler.RequestEvents); each puts plain values on the channel,
never JSON: the reader's ``ReplyStream`` (lse.runtime.openai.reply_stream)
builds the chunks, the fold and the error body from them.
"""

from __future__ import annotations

import threading
import time

from lse.runtime.channel import Channel
from lse.runtime.errors import LseError
from lse.runtime.fallback import FallbackAccounting
from lse.runtime.openai import replies
from lse.runtime.request_events import Deltas, Failed, Finished, Started, Totals
from lse.runtime.sequence import Sequence
from lse.runtime.telemetry import Observers, RequestRecord


class RequestState:
    """One request in flight: the scheduler's RequestEvents on one side, the
    channel its reader takes typed events from on the other."""

    def __init__(self, endpoint: str, model: str, seqs: list[Sequence], context_length: int,
                 include_usage: bool, fallback: FallbackAccounting, token_text, echo_texts: list[str] | None,
                 observers: Observers | None = None):
        self.endpoint, self.model = endpoint, model
        self.id, self.created = replies.new_id(endpoint), replies.now()
        self.seqs = seqs
        self.context_length = context_length
        self.include_usage = include_usage
        self.accounting = fallback  # the engine-wide counts (lse_status)
        self.token_text = token_text  # the reader's, for logprobs' token texts
        self.channel = Channel()
        self.cancelled = False
        self.failed = False
        self.finished = False
        self.fallback_counts: dict[str, int] = {}
        self._open = len(seqs)
        self._lock = threading.Lock()
        self._observers = observers
        self.channel.put(Started(tuple(s.index for s in seqs), tuple(echo_texts) if echo_texts is not None else None))

    # ---- events ---------------------------------------------------------
    def deltas(self, seq: Sequence, deltas: list[dict]) -> None:
        entries = seq.take_logprobs()
        if not deltas and not entries:
            return
        self.channel.put(Deltas(seq.index, tuple(deltas), tuple(entries)))

    def finish(self, seq: Sequence, deltas: list[dict]) -> None:
        if deltas or seq.pending_logprobs:
            self.deltas(seq, deltas)
        finish_reason, stop_reason = seq.finish
        with self._lock:
            self._open -= 1
            last = self._open == 0
        ends = last and not self.failed
        if ends:
            self.finished = True
        self.channel.put(Finished(seq.index, finish_reason, stop_reason, self._totals() if ends else None))
        if ends:
            self._notify(self._outcome())

    def fail(self, error: Exception) -> None:
        if self.failed or self.finished:
            return
        self.failed = True
        err = error if isinstance(error, LseError) else LseError("generation_failed", f"generation failed: {error}")
        self.channel.put(Failed(err))
        self._notify("error")

    def fallback(self, cause: str, count_engine: bool = True) -> None:
        if count_engine or not self.accounting.allowed:  # a refusal raises for every request
            self.accounting.record(cause)
        self.fallback_counts[cause] = self.fallback_counts.get(cause, 0) + 1

    # ---- what observers are told (lse.runtime.telemetry) ---------------
    def _outcome(self) -> str:
        finish = self.seqs[0].finish
        return "error" if finish is None else finish[0] or finish[1]

    def _notify(self, outcome: str) -> None:
        if self._observers is None:
            return
        first = self.seqs[0]
        end = first.t_end or time.perf_counter()
        admitted = [s.t_admitted for s in self.seqs if s.t_admitted is not None]
        gaps = len(first.generated) - 1
        self._observers.notify(RequestRecord(
            endpoint=self.endpoint, outcome=outcome,
            prompt_tokens=sum(len(s.prompt_ids) for s in self._distinct_prompts()),
            generated_tokens=sum(len(s.generated) for s in self.seqs),
            cached_tokens=sum(s.cached_tokens for s in self._distinct_prompts()),
            queue_seconds=min(admitted) - first.t_start if admitted else None,
            first_token_seconds=first.t_first - first.t_start if first.t_first is not None else None,
            per_output_token_seconds=(end - first.t_first) / gaps if first.t_first is not None and gaps > 0 else None,
            e2e_seconds=end - first.t_start))

    # ---- the final chunk's numbers --------------------------------------
    def _totals(self) -> Totals:
        prompts = self._distinct_prompts()
        first = self.seqs[0]
        return Totals(
            prompt_tokens=sum(len(s.prompt_ids) for s in prompts), completion_tokens=sum(len(s.generated) for s in self.seqs),
            cached_tokens=sum(s.cached_tokens for s in prompts), reasoning_tokens=sum(s.reasoning_tokens for s in self.seqs),
            tokens_used=max(s.tokens_used for s in self.seqs), context_length=self.context_length,
            prompt_n=len(first.prompt_ids) - first.cached_tokens, cached_n=first.cached_tokens,
            predicted_n=len(first.generated), t_start=first.t_start, t_first=first.t_first,
            t_end=first.t_end or time.perf_counter(),
            draft=first.draft.timings() if first.draft is not None else None, fallbacks=dict(self.fallback_counts))

    def _distinct_prompts(self) -> list[Sequence]:
        """n choices of one prompt count the prompt once (OpenAI's usage)."""
        seen, out = set(), []
        for s in self.seqs:
            key = tuple(s.prompt_ids)
            if key not in seen:
                seen.add(key)
                out.append(s)
        return out
