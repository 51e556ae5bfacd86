"""Speculative decoding from the request's own tokens (``--speculative ngram``).

Where few streams are generating (at most ``max_streams``, MAX_STREAMS by
default: a lone stream, whose decode step reads every weight for one row), a
slot's step becomes a verification: the n-gram index over its prompt and reply
(runtime/ngram.py) proposes up to K tokens, and one call of the artifact's
verify entry (compiler/emit_verify.py) runs the last sampled token and the K
proposals at their consecutive positions (causal, as any prompt chunk) and
gives every row's logits; where the artifact has none, a prefill call and
``all_logits`` do. The rows are then handed to the sequence one at a time, exactly as
plain decoding hands it each step's logits: ``Sequence.on_logits`` applies the
whole sampler (penalties over the history so far, logit_bias, the grammar's
mask, min_tokens, temperature, top-k/p, min-p), draws its one noise vector
from the choice's generator, advances the grammar, the stops and the limits.
Row t's logits are the ones plain decoding would compute after the tokens
accepted so far, so while the sampled token equals the proposal the next row
is used; at the first difference the sampled token is the step's last (the
next step's input) and the remaining rows are dropped. The reply, the
generator's draws, logprobs, stops, limits and the stream's chunks are the
ones plain decoding gives (up to the rounding between the prompt path's
kernels and decode's); a stop or a limit inside the run ends it there.

Rollback: the slot's ``kv_tokens`` gains only the inputs whose K/V are valid
(the last token and the accepted proposals); cache entries written past them
are never listed, so prefix reuse never reads them, and the next step writes
over them.

K adapts per sequence (``Draft``): it doubles while every proposal is
accepted (up to K_MAX), falls to one past the accepted count otherwise;
where the verify entry has static rows (verify4: fewer proposals cost the
same), a step proposes as many as they hold. A step's gain is its tokens over
its cost in decode steps, the backend's measured ratio of a verification's
time to a lone decode call's (TimedBackend.verify_cost); when the running
gain drops below plain decoding's (GAIN_FLOOR), the sequence decodes plainly
for a while (doubling each time) and then probes again with a short draft.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from lse.runtime.errors import invalid
from lse.runtime.ngram import MAX_N, MIN_N, NgramIndex
from lse.runtime.scheduler import _fallback_for

MODES = ("off", "ngram")
FIELD = "lse_speculative"
MAX_STREAMS = 1
# K_MAX: 4 rows, the verify4 entry (compiler/emit_verify.py's ROWS), whose
# logits are decode's bit for bit.
K_START, K_MIN, K_MAX = 3, 1, 3
# A verification step's cost in plain decode steps until the backend has
# timed both (TimedBackend.verify_cost): verify4 against a lone decode call on
# the default model, 2 threads, 1.3-1.45 (wall); the prefill-shaped fallback ~3.
VERIFY_COST = 1.5
# A measured cost is held inside COST_RANGE: one call slowed by the machine
# is not the model, and a miss always counts as a loss (a gain of at most
# 1 / 1.1), so a run of misses backs off wherever the ratio measures ~1.
COST_RANGE = (1.1, 4.0)
GAIN_WEIGHT = 0.5  # the newest step's weight in the running gain
GAIN_CAP = 1.5  # so a long accepted run does not hold off the back-off for many missed steps after it
# Below it (fewer tokens for the time than plain decoding) the sequence backs
# off: a probe (at 1) after one missed step; a fresh draft (at GAIN_CAP) after
# one where a verification costs over 2 decode steps, two from 1.2 to 2, three below.
GAIN_FLOOR = 1.0
PROBE_START, PROBE_MAX = 32, 512  # plain tokens before probing again, doubling
K_PROBE = 2  # a probe's draft: a miss costs less than K_START's; a hit doubles it


@dataclass
class Draft:
    """One sequence's proposer and its measured acceptance."""

    index: NgramIndex = field(default_factory=NgramIndex)
    k: int = K_START
    gain: float = GAIN_CAP  # running (accepted + 1) / cost
    cool: int = 0  # plain steps left before the next probe
    backoff: int = PROBE_START
    proposed: int = 0
    accepted: int = 0
    # Until a draft pays (and again after each back-off) only a match of
    # MAX_N tokens proposes: free text repeats 2 tokens far more often than
    # it goes on repeating them.
    trusted: bool = False
    # While it decodes plainly: a proposal made then (where the reply stood,
    # its tokens), checked against the tokens plain decoding goes on to give.
    shadow: tuple[int, list[int]] | None = None

    @property
    def min_n(self) -> int:
        return MIN_N if self.trusted else MAX_N

    def record(self, proposed: int, accepted: int, cost: float = VERIFY_COST) -> None:
        """One verification: ``accepted`` of ``proposed`` tokens taken, at
        ``cost`` decode steps."""
        self.proposed += proposed
        self.accepted += accepted
        step_gain = (accepted + 1) / cost
        self.gain = min(GAIN_CAP, (1 - GAIN_WEIGHT) * self.gain + GAIN_WEIGHT * step_gain)
        self.k = min(2 * self.k, K_MAX) if accepted == proposed else max(K_MIN, accepted + 1)
        if step_gain >= 1.0:
            self.backoff, self.trusted = PROBE_START, True
        if self.gain < GAIN_FLOOR:
            self.cool, self.backoff = self.backoff, min(2 * self.backoff, PROBE_MAX)
            self.gain, self.k, self.trusted, self.shadow = 1.0, K_PROBE, False, None

    def watch(self, prompt: list[int], generated: list[int]) -> bool:
        """One plain step of a back-off. Its proposals are checked for free
        against the tokens plain decoding gives: one that would have been
        accepted whole (the reply has entered text the index holds) ends the
        back-off at once, rather than after its count of plain steps (True:
        this step may verify)."""
        if self.shadow is not None:
            at, tokens = self.shadow
            seen = generated[at:at + len(tokens)]
            if seen != tokens[:len(seen)]:
                self.shadow = None
            elif len(seen) == len(tokens):
                self.shadow, self.cool, self.gain, self.k = None, 0, 1.0, K_MAX
                return True
        self.cool -= 1
        if self.shadow is None:
            self.index.sync(prompt, generated)
            tokens = self.index.propose(K_MAX, MAX_N)
            self.shadow = (len(generated), tokens) if tokens else None
        return False

    def timings(self) -> dict[str, int]:
        """llama-server's names in ``timings``."""
        return {"draft_n": self.proposed, "draft_n_accepted": self.accepted}


class Speculator:
    def __init__(self, mode: str = "ngram", max_streams: int = MAX_STREAMS):
        self.mode, self.max_streams = mode, max_streams
        self.proposed = self.accepted = self.steps = 0
        self.cost: float | None = None  # the last verification's cost in decode steps, as the back-off judged it

    def status(self) -> dict[str, Any]:
        cost = None if self.cost is None else round(self.cost, 3)
        return {"mode": self.mode, "steps": self.steps, "proposed": self.proposed, "accepted": self.accepted,
                "verify_cost": cost}

    def step(self, sched, rows: list) -> list:
        """Verify the drafts of the rows (scheduler Slots) that have one;
        return the rows left for the plain decode step."""
        for slot in rows:
            if slot.seq.speculative and slot.seq.draft is None:
                slot.seq.draft = Draft()
        if len(rows) > self.max_streams:
            for slot in rows:
                _tick(slot.seq.draft)
            return rows
        plain = []
        for slot in rows:
            proposal = self._proposal(slot, sched.backend, sched.kv_len)
            if proposal:
                self._verify(sched, slot, proposal)
            else:
                plain.append(slot)
        return plain

    def _proposal(self, slot, backend, kv_len: int) -> list[int]:
        seq, draft = slot.seq, slot.seq.draft
        if draft is None or seq.forced:
            return []
        if draft.cool > 0 and not draft.watch(seq.prompt_ids, seq.generated):
            return []
        # A verification padded to static rows costs the same for fewer
        # proposals, so it proposes as many as the rows hold. The step emits
        # at most k + 1 tokens and writes k + 1 positions: neither passes its limit.
        k = max(draft.k, _padded_rows(backend, draft.k + 1, len(slot.kv_tokens)) - 1)
        k = min(k, seq.limit.max_new - len(seq.generated) - 1, kv_len - len(slot.kv_tokens) - 1)
        if k <= 0:
            return []
        draft.index.sync(seq.prompt_ids, seq.generated)
        return draft.index.propose(k, draft.min_n)

    def _verify(self, sched, slot, proposal: list[int]) -> None:
        seq = slot.seq
        sched._in_step = [slot]
        inputs = [seq.next_input, *proposal]
        on_fallback = _fallback_for([slot])
        logits = _verify_logits(sched.backend, np.asarray(inputs, np.int64), len(slot.kv_tokens), slot.index,
                                on_fallback)
        accepted = _accept(sched, slot, inputs, logits)
        self.cost = _cost(sched.backend)
        seq.draft.record(len(proposal), accepted, self.cost)
        self.steps += 1
        self.proposed += len(proposal)
        self.accepted += accepted


def _verify_logits(backend, tokens: np.ndarray, start: int, slot: int, on_fallback) -> np.ndarray:
    """Every row's logits: the artifact's verify entry in one call where it
    has one, else a prefill call then the logits of its hidden rows. ``backend``
    is the scheduler's TimedBackend, whose ``verify`` is None where the
    backend underneath has none."""
    logits = backend.verify(tokens, start, slot, on_fallback)
    if logits is not None:
        return logits
    _, hidden = backend.prefill(tokens, start, slot, on_fallback)
    return backend.all_logits(hidden, on_fallback)


def _padded_rows(backend, n: int, start: int) -> int:
    return backend.verify_rows(n, start) if hasattr(backend, "verify_rows") else 0


def _cost(backend) -> float:
    """A verification's cost in decode steps: the backend's measured ratio where it has one."""
    measured = backend.verify_cost() if hasattr(backend, "verify_cost") else None
    low, high = COST_RANGE
    return VERIFY_COST if measured is None else min(high, max(low, measured))


def _accept(sched, slot, inputs: list[int], logits: np.ndarray) -> int:
    """Hand the rows to the sequence while its sampled tokens match the
    proposals; return how many proposals it took."""
    seq, request = slot.seq, slot.owner
    for t in range(len(inputs)):
        slot.kv_tokens.append(inputs[t])  # its K/V, written by this step, is in the context now
        seq.next_input = None
        try:
            deltas = seq.on_logits(logits[t])
        except Exception as e:  # its own grammar, sampler or detokenizer: this request alone fails
            sched._fail_alone(slot, e)
            return t
        request.deltas(seq, deltas)
        if seq.finish is not None:
            request.finish(seq, [])
            sched._release(slot)
            return t
        if t + 1 == len(inputs) or seq.next_input != inputs[t + 1]:
            return t
    return len(inputs) - 1


def _tick(draft: Draft | None) -> None:
    """A plain step counts toward the next probe."""
    if draft is not None and draft.cool > 0:
        draft.cool -= 1


def make_speculator(mode: str) -> Speculator | None:
    """The engine's speculator for ``--speculative MODE`` (None: off)."""
    if mode not in MODES:
        raise ValueError(f"speculative must be one of {', '.join(MODES)}; got {mode!r}")
    return None if mode == "off" else Speculator(mode)


def request_allows(body: Any) -> bool:
    """``lse_speculative`` (boolean, default true): false decodes this request
    without speculation even where the server speculates."""
    value = body.get(FIELD) if isinstance(body, dict) else None
    if value is not None and not isinstance(value, bool):
        raise invalid(FIELD, f"{FIELD} must be a boolean")
    return value is not False

