"""A seeded reply depends on nothing but the request (#44): the scheduler
gives the same tokens whether the prompt is prefilled whole or in chunks,
from the prefix cache or not, alone or beside another stream, in slot 0 or
slot 1. The fake backend's logits are the same on every path, so any
difference is the random stream's: drawn once per sampled token, nowhere else."""

from __future__ import annotations

import numpy as np
from test_scheduler import VOCAB, FakeBackend, Recorder

from lse.runtime.detokenize import IncrementalDetokenizer
from lse.runtime.limits import TokenLimit
from lse.runtime.pacing import MIN_CHUNK, Pacer
from lse.runtime.sampler import SamplingParams, make_rng
from lse.runtime.scheduler import Scheduler
from lse.runtime.sequence import Sequence
from lse.runtime.stops import StopMatcher

HOT = SamplingParams(temperature=1.0, top_k=0, top_p=1.0, min_p=0.0, presence_penalty=0.0,
                     repetition_penalty=1.0)
PROMPT = [1 + i % 5 for i in range(40)]


def _spread(token: int) -> np.ndarray:
    """Logits close together, shifted by the token: sampling at 1.0 varies."""
    return np.roll(np.linspace(0.0, 0.6, VOCAB, dtype=np.float32), int(token))


class SpreadBackend(FakeBackend):
    def __init__(self) -> None:
        super().__init__()
        self.prefills: list[int] = []  # each prefill chunk's length

    def prefill(self, tokens, start, slot, on_fallback):
        self.prefills.append(len(tokens))
        return _spread(tokens[-1]), np.zeros((len(tokens), 3), np.float32)

    def decode(self, tokens, positions, on_fallback):
        return np.stack([_spread(t) for t in tokens])

    def decode_one(self, token, position, slot, on_fallback):
        return _spread(token)


def _seeded(seed: int, max_new: int = 24) -> Sequence:
    return Sequence(index=0, prompt_ids=list(PROMPT), limit=TokenLimit(max_new, "max_tokens"), params=HOT,
                    rng=make_rng(seed, 0), eos_ids=frozenset(),
                    detok=IncrementalDetokenizer(lambda ids: "".join(chr(ord("a") + i) for i in ids)),
                    stops=StopMatcher([]), parser=None, token_text=str)


def _run(scheduler: Scheduler, seq: Sequence) -> list[int]:
    done = Recorder(1)
    scheduler.submit(done, [seq])
    assert done.done.wait(10), done.events
    assert done.events[-1] == ("finish", 0, ("length", "max_tokens")), done.events
    return list(seq.generated)


def test_a_seeded_reply_is_the_same_on_every_scheduling_path() -> None:
    whole = Scheduler(SpreadBackend(), 2, kv_len=256, pacer=Pacer(512, 512))
    try:
        want = _run(whole, _seeded(1234))
        assert whole.backend.prefills == [len(PROMPT)]
        again = _seeded(1234)
        assert _run(whole, again) == want  # from the prefix cache
        assert again.cached_tokens == len(PROMPT) - 1
    finally:
        whole.stop()
    assert len(set(want)) > 2  # the draws vary: the test would see a moved stream

    backend = SpreadBackend()
    chunked = Scheduler(backend, 2, kv_len=256, pacer=Pacer(MIN_CHUNK, MIN_CHUNK))
    try:
        other = Recorder(1)
        chunked.submit(other, [_seeded(7, max_new=60)])  # slot 0, a stream the whole time
        assert _run(chunked, _seeded(1234)) == want  # slot 1, prefilled in chunks beside it
        assert other.done.wait(10)
    finally:
        chunked.stop()
    assert max(backend.prefills) < 2 * MIN_CHUNK and len(backend.prefills) > 3
