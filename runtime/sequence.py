"""One choice of one request: from sampled tokens to streamed deltas.

Per token: end-of-turn check, incremental detokenization, stop strings (held
back across token boundaries, trimmed), then the output parser that splits
reasoning and tool calls. The ending (finish_reason, stop_reason) follows
docs/spec/lse-api.md's table.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from lse.runtime.detokenize import IncrementalDetokenizer
from lse.runtime.limits import TokenLimit
from lse.runtime.sampler import PENALTY_WINDOW, SamplingParams, sample_token, token_logprobs
from lse.runtime.stops import StopMatcher


@dataclass
class Logprobs:
    """Which logprobs to report: 0 top alternatives means only the sampled one."""

    top: int


@dataclass
class Sequence:
    index: int
    prompt_ids: list[int]
    limit: TokenLimit
    params: SamplingParams
    rng: np.random.Generator
    eos_ids: frozenset[int]
    detok: IncrementalDetokenizer
    stops: StopMatcher
    parser: Any | None  # lse.runtime.chat.output.OutputParser, or None for plain text
    token_text: Callable[[int], str]
    logprobs: Logprobs | None = None
    score_prompt: bool = False  # echo + logprobs: report the prompt's logprobs too
    generate: bool = True  # False in scoring mode: prefill only
    constraint: Any | None = None  # lse.runtime.structured.Constraint: the grammar's mask per step
    # Where the reply may end (runtime/openai/controls.py): the ids that end
    # it (None: eos_ids), and how many tokens come before any end or stop.
    end_ids: frozenset[int] | None = None
    min_tokens: int = 0
    # A reasoning budget: after this many tokens inside the think block, the
    # reply is given ``close_reasoning`` (the template's closing marker as
    # token ids) instead of sampled tokens, and the answer follows.
    reasoning_budget: int | None = None
    close_reasoning: tuple[int, ...] = ()
    speculative: bool = True  # lse_speculative: may the engine's speculator draft for it
    # state
    generated: list[int] = field(default_factory=list)
    finish: tuple[str | None, str] | None = None
    cached_tokens: int = 0
    reasoning_tokens: int = 0  # generated inside the think block (usage's completion_tokens_details)
    prefill_done: int = 0  # prompt tokens already in the slot's cache
    next_input: int | None = None
    t_start: float = field(default_factory=time.perf_counter)
    t_admitted: float | None = None  # when the scheduler gave it a slot
    t_first: float | None = None
    t_end: float | None = None
    pending_logprobs: list[dict] = field(default_factory=list)
    forced: list[int] = field(default_factory=list)  # ids the reply is given next instead of sampled ones
    reasoning_closed: bool = False  # the budget was reached and the closing marker queued
    draft: Any | None = None  # lse.runtime.speculative.Draft, once the speculator has seen it
    keep_hidden = None  # not a field: an embedding sequence's (runtime/embeddings/job.py) takes prefill's rows

    @property
    def tokens_used(self) -> int:
        return len(self.prompt_ids) + len(self.generated)

    def on_logits(self, logits: np.ndarray) -> list[dict]:
        """Sample the next token; return the deltas it produced."""
        if self.limit.max_new <= 0:  # the prompt already reached max_length: a reply of 0 tokens (limits.py)
            self.t_first = time.perf_counter()
            return self._end("length", self.limit.stop_reason)
        if self.forced:
            token = self.forced.pop(0)
        else:
            allowed = self._allowed(logits.shape[0])
            token = sample_token(logits, self._recent(), self.params, self.rng, allowed)
        if self.constraint is not None and token not in self.eos_ids:
            self.constraint.advance(token)
        if self.t_first is None:
            self.t_first = time.perf_counter()
        if self.logprobs is not None:
            self.pending_logprobs.append(self._logprob_entry(logits, token))
        self.generated.append(token)
        if token in self._ends or (self.constraint is not None and token in self.eos_ids):
            return self._end("stop", "stop_token")
        # An end-of-turn token that did not end the reply (ignore_eos) has no text.
        piece = "" if token in self.eos_ids else self.detok.feed(token)
        text, stopped = self.stops.feed(piece, match=len(self.generated) >= self.min_tokens)
        reasoning = self.parser is not None and self.parser.reasoning
        deltas = self._parse(text)
        if reasoning or (self.parser is not None and self.parser.reasoning):
            self.reasoning_tokens += 1
            self._close_at_budget()
        if stopped:
            return deltas + self._end("stop", "stop_sequence", flush=False)
        if len(self.generated) >= self.limit.max_new:
            return deltas + self._end("length", self.limit.stop_reason)
        self.next_input = token
        return deltas

    @property
    def _ends(self) -> frozenset[int]:
        return self.eos_ids if self.end_ids is None else self.end_ids

    def _allowed(self, vocab: int) -> np.ndarray | None:
        """The grammar's mask, less the end ids while the reply is shorter
        than min_tokens (unless that would leave nothing: the grammar wins)."""
        allowed = self.constraint.allowed() if self.constraint is not None else None
        if len(self.generated) >= self.min_tokens or not self._ends:
            return allowed
        ends = np.fromiter((i for i in self._ends if i < vocab), np.int64)
        held = np.ones(vocab, bool) if allowed is None else allowed.copy()
        held[ends] = False
        return held if held.any() else allowed

    def _recent(self) -> list[int]:
        """The last tokens the penalties look at, without copying the whole prompt per token."""
        gen = self.generated[-PENALTY_WINDOW:]
        missing = PENALTY_WINDOW - len(gen)
        return (self.prompt_ids[-missing:] if missing else []) + gen

    def _close_at_budget(self) -> None:
        """At the reasoning budget, queue the think block's closing marker
        once (the parser then reads the answer that follows)."""
        if (self.reasoning_budget is not None and not self.reasoning_closed and self.close_reasoning
                and self.reasoning_tokens >= self.reasoning_budget):
            self.forced = list(self.close_reasoning)
            self.reasoning_closed = True

    def cancel(self) -> list[dict]:
        return self._end(None, "cancelled")

    def _parse(self, text: str) -> list[dict]:
        if not text:
            return []
        if self.parser is None:
            return [{"content": text}]
        return self.parser.feed(text)

    def _end(self, finish_reason: str | None, stop_reason: str, flush: bool = True) -> list[dict]:
        deltas: list[dict] = []
        if flush:
            tail, _ = self.stops.feed(self.detok.flush())
            deltas += self._parse(tail + self.stops.flush())
        if self.parser is not None:
            deltas += self.parser.finish()
            if finish_reason == "stop" and self.parser.has_tool_calls:
                finish_reason = "tool_calls"
        self.finish = (finish_reason, stop_reason)
        self.t_end = time.perf_counter()
        return deltas

    def _logprob_entry(self, logits: np.ndarray, token: int) -> dict:
        lp, top = token_logprobs(logits, token, self.logprobs.top)
        return {"token": token, "logprob": lp, "top": top}

    def score_prompt_rows(self, logits: np.ndarray, start: int) -> None:
        """Echo + logprobs: the logprob of each prompt token given the ones
        before it, from the logits of prompt positions start, start + 1, ..."""
        ids = self.prompt_ids
        k = self.logprobs.top if self.logprobs else 0
        for row in range(logits.shape[0]):
            pos = start + row  # logits at pos predict token pos + 1
            if pos == 0:
                self.pending_logprobs.append({"token": ids[0], "logprob": None, "top": [], "prompt": True})
            if pos + 1 < len(ids):
                lp, top = token_logprobs(logits[row], ids[pos + 1], k)
                self.pending_logprobs.append({"token": ids[pos + 1], "logprob": lp, "top": top})

    def take_logprobs(self) -> list[dict]:
        out, self.pending_logprobs = self.pending_logprobs, []
        return out

    def scoring_done(self) -> list[dict]:
        """Scoring mode: the prompt was scored, nothing is generated."""
        self.finish = ("length", "max_tokens")
        self.t_first = self.t_end = time.perf_counter()
        return []
