"""A request in flight: its choices, the chunks they produce, and its ending.

The scheduler thread calls ``deltas`` / ``finish`` / ``fail`` / ``fallback``
(lse.runtime.scheduler.RequestEvents);
the reader takes events from the channel. When the last choice finishes, the
final chunk carries usage, lse_context, timings and any lse_warnings (with
stream_options.include_usage, usage comes instead in one more chunk whose
choices are [], and every other chunk says "usage": null); the ``done``
event carries the fold of every chunk.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from lse.runtime.channel import Channel
from lse.runtime.errors import LseError
from lse.runtime.fallback import FallbackAccounting, warnings_for
from lse.runtime.openai import replies
from lse.runtime.sequence import Sequence
from lse.runtime.telemetry import Observers, RequestRecord


class RequestState:
    """One request in flight: the scheduler's RequestEvents on one side, the
    channel its reader takes chunks and the ending from on the other."""

    def __init__(self, endpoint: str, model: str, seqs: list[Sequence], context_length: int,
                 include_usage: bool, fallback: FallbackAccounting, token_text, echo_texts: list[str] | None,
                 observers: Observers | None = None):
        self.endpoint, self.model = endpoint, model
        self.id, self.created = replies.new_id(endpoint), replies.now()
        self.seqs = seqs
        self.context_length = context_length
        self.include_usage = include_usage
        self.accounting = fallback  # the engine-wide counts (lse_status)
        self.token_text = token_text
        self.channel = Channel()
        self.chunks: list[dict] = []
        self.cancelled = False
        self.failed = False
        self.finished = False
        self._offsets = {s.index: 0 for s in seqs}  # completions text_offset, per choice
        self.fallback_counts: dict[str, int] = {}
        self._open = len(seqs)
        self._lock = threading.Lock()
        self._observers = observers
        self._start(echo_texts)

    # ---- events ---------------------------------------------------------
    def _put_chunk(self, choices: list[dict], **extra: Any) -> None:
        if self.include_usage:  # OpenAI's shape: "usage": null on every chunk but the usage chunk
            extra.setdefault("usage", None)
        c = replies.chunk(self.endpoint, self.id, self.created, self.model, choices, **extra)
        self.chunks.append(c)
        self.channel.put({"type": "chunk", "data": c})

    def _start(self, echo_texts: list[str] | None) -> None:
        if self.endpoint == replies.CHAT:
            self._put_chunk([replies.choice_delta(self.endpoint, s.index, {"role": "assistant", "content": ""})
                             for s in self.seqs])
        elif echo_texts is not None:
            self._put_chunk([replies.choice_delta(self.endpoint, s.index, {"content": echo_texts[i]})
                             for i, s in enumerate(self.seqs)])

    def deltas(self, seq: Sequence, deltas: list[dict]) -> None:
        entries = seq.take_logprobs()
        if not deltas and not entries:
            return
        if not deltas:
            deltas = [{"content": ""}]
        logprobs = self._format_logprobs(seq.index, entries)
        choices = [replies.choice_delta(self.endpoint, seq.index, d, logprobs if i == 0 else None)
                   for i, d in enumerate(deltas)]
        for ch in choices:
            self._put_chunk([ch])

    def finish(self, seq: Sequence, deltas: list[dict]) -> None:
        if deltas or seq.pending_logprobs:
            self.deltas(seq, deltas)
        finish_reason, stop_reason = seq.finish
        with self._lock:
            self._open -= 1
            last = self._open == 0
        extra = self._final_extras() if last and not self.failed else {}
        # With stream_options.include_usage the usage moves to a chunk of its
        # own (choices [], after the final chunk), as OpenAI sends it; without
        # it, the final chunk carries it (openai-compatible-api.md, Streaming).
        usage = extra.pop("usage", None) if self.include_usage else None
        self._put_chunk([replies.choice_final(self.endpoint, seq.index, finish_reason, stop_reason)], **extra)
        if last and not self.failed:
            self.finished = True
            if self.include_usage:
                self._put_chunk([], usage=usage)
            self.channel.put({"type": "done", "data": replies.fold(self.endpoint, self.chunks)})
            self._notify(self._outcome())

    def fail(self, error: Exception) -> None:
        if self.failed or self.finished:
            return
        self.failed = True
        err = error if isinstance(error, LseError) else LseError("generation_failed", f"generation failed: {error}")
        self.channel.put({"type": "error", "status": err.status, "data": err.body()})
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

    # ---- the final chunk's extras --------------------------------------
    def _final_extras(self) -> dict:
        prompts = self._distinct_prompts()
        first = self.seqs[0]
        extra: dict[str, Any] = {
            "usage": replies.usage(sum(len(s.prompt_ids) for s in prompts), sum(len(s.generated) for s in self.seqs),
                                   sum(s.cached_tokens for s in prompts), sum(s.reasoning_tokens for s in self.seqs)),
            "lse_context": replies.lse_context(max(s.tokens_used for s in self.seqs), self.context_length),
            "timings": replies.timings(len(first.prompt_ids) - first.cached_tokens, first.cached_tokens,
                                       len(first.generated), first.t_start, first.t_first, first.t_end),
        }
        if first.draft is not None:  # speculative decoding saw it: proposed and accepted tokens
            extra["timings"].update(first.draft.timings())
        if self.fallback_counts:
            extra["lse_warnings"] = warnings_for(self.fallback_counts)
        return extra

    def _distinct_prompts(self) -> list[Sequence]:
        """n choices of one prompt count the prompt once (OpenAI's usage)."""
        seen, out = set(), []
        for s in self.seqs:
            key = tuple(s.prompt_ids)
            if key not in seen:
                seen.add(key)
                out.append(s)
        return out

    # ---- logprobs -------------------------------------------------------
    def _format_logprobs(self, index: int, entries: list[dict]) -> Any:
        if not entries:
            return None
        if self.endpoint == replies.CHAT:
            return replies.chat_logprobs(entries, self.token_text)
        out, self._offsets[index] = replies.completion_logprobs(entries, self.token_text, self._offsets[index])
        return out
