"""A fake backend whose logits are a deterministic function of the tokens in
a slot's cache up to the row's position, so plain and speculative decoding
can be compared token for token: a verification step's row t sees exactly
the cache a plain step would, and a wrongly rolled-back cache shows up as a
different reply. The "model" copies: after a token seen before, the token
that followed it then gets a bonus over seeded noise, so replies repeat
spans of their prompts and drafts are often (not always) accepted."""

from __future__ import annotations

import threading

import numpy as np

from lse.runtime.detokenize import IncrementalDetokenizer
from lse.runtime.limits import TokenLimit
from lse.runtime.sampler import SamplingParams, make_rng
from lse.runtime.scheduler import Scheduler
from lse.runtime.sequence import Logprobs, Sequence
from lse.runtime.speculative import Speculator
from lse.runtime.stops import StopMatcher

VOCAB = 40
COPY_BONUS = 3.0
GREEDY = SamplingParams(temperature=0.0, top_k=0, top_p=1.0, min_p=0.0, presence_penalty=0.0,
                        repetition_penalty=1.0)


def model_logits(ctx: np.ndarray) -> np.ndarray:
    out = np.random.default_rng([7, *(int(t) for t in ctx[-2:])]).standard_normal(VOCAB).astype(np.float32)
    last = ctx[-1]
    earlier = np.flatnonzero(ctx[:-1] == last)
    if earlier.shape[0]:
        out[ctx[earlier[-1] + 1]] += COPY_BONUS
    return out


class ContextBackend:
    """backend.py's calls over a cache of token ids; ``calls`` records each step."""

    buckets: list[int] = []

    def __init__(self, slots: int, kv_len: int) -> None:
        self.cache = np.full((slots, kv_len), -1, np.int64)
        self.calls: list[tuple[str, int]] = []

    def _logits(self, slot: int, pos: int) -> np.ndarray:
        return model_logits(self.cache[slot, :pos + 1])

    def prefill(self, tokens, start, slot, on_fallback):
        n = len(tokens)
        self.cache[slot, start:start + n] = tokens
        self.calls.append(("prefill", n))
        rows = np.stack([self._logits(slot, start + i) for i in range(n)])
        return rows[-1], rows

    def all_logits(self, hidden, on_fallback):
        return hidden

    def decode(self, tokens, positions, on_fallback):
        self.calls.append(("decode", len(tokens)))
        for b in range(len(tokens)):
            self.cache[b, positions[b]] = tokens[b]
        return np.stack([self._logits(b, int(positions[b])) for b in range(len(tokens))])

    def decode_one(self, token, position, slot, on_fallback):
        self.calls.append(("decode1", 1))
        self.cache[slot, position] = token
        return self._logits(slot, position)

    def copy_prefix(self, src, dst, count):
        self.cache[dst, :count] = self.cache[src, :count]
        return True


class Recorder:
    """RequestEvents that write down every chunk's deltas and logprobs."""

    def __init__(self, seqs: int) -> None:
        self.cancelled = False
        self.events: list[tuple] = []
        self._open = seqs
        self.done = threading.Event()

    def deltas(self, seq, deltas):
        self.events.append(("deltas", seq.index, deltas, seq.take_logprobs()))

    def finish(self, seq, deltas):
        self.events.append(("finish", seq.index, deltas, seq.finish))
        self._open -= 1
        if self._open == 0:
            self.done.set()

    def fail(self, error):
        self.events.append(("fail", str(error)))
        self.done.set()

    def fallback(self, cause, count_engine):
        pass


def text_of(ids: list[int]) -> str:
    return "".join(chr(ord("A") + i) for i in ids)


def sequence(prompt: list[int], max_new: int, params: SamplingParams = GREEDY, seed: int = 0, **kw) -> Sequence:
    stops = kw.pop("stops", [])
    logprobs = kw.pop("logprobs", None)
    return Sequence(index=0, prompt_ids=list(prompt), limit=TokenLimit(max_new, "max_tokens"), params=params,
                    rng=make_rng(seed, 0), eos_ids=kw.pop("eos_ids", frozenset()),
                    detok=IncrementalDetokenizer(text_of), stops=StopMatcher(stops), parser=None, token_text=str,
                    logprobs=Logprobs(logprobs) if logprobs is not None else None, **kw)


def run(seqs: list[Sequence], speculate: bool, slots: int = 1, kv_len: int = 256, max_streams: int = 1,
        scheduler_out: list | None = None, backend_cls: type = ContextBackend):
    """Run ``seqs`` (one request each, submitted together) to the end;
    (their recorders, the backend, the speculator or None)."""
    backend = backend_cls(slots, kv_len)
    sched = Scheduler(backend, slots, kv_len)
    speculator = Speculator("ngram", max_streams) if speculate else None
    sched.speculator = speculator
    try:
        recorders = [Recorder(1) for _ in seqs]
        for r, s in zip(recorders, seqs):
            sched.submit(r, [s])
        for r in recorders:
            assert r.done.wait(20)
        if scheduler_out is not None:
            scheduler_out.append(sched)
    finally:
        sched.stop()
    return recorders, backend, speculator
