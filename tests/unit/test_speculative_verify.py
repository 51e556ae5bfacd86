"""A backend with a verify entry (compiler/emit_verify.py's, backend.verify):
each speculative step is one verify call, never a prefill and lm_head_all,
and the reply is plain decoding's."""

from __future__ import annotations

import numpy as np
import pytest
from speculative_fake import GREEDY, ContextBackend, run, sequence

from lse.runtime.sampler import SamplingParams

PROMPT = [1, 2, 3, 4, 5, 6, 7, 8, 9, 1, 2, 3]


class VerifyBackend(ContextBackend):
    """The fake cache with a verify entry: every row's logits in one call."""

    def verify(self, tokens, start, slot, on_fallback):
        n = len(tokens)
        self.cache[slot, start:start + n] = tokens
        self.calls.append(("verify", n))
        return np.stack([self._logits(slot, start + i) for i in range(n)])


class NoVerifyBackend(VerifyBackend):
    """An artifact without the entry: verify answers None."""

    def verify(self, tokens, start, slot, on_fallback):
        return None


SAMPLED = SamplingParams(temperature=0.9, top_k=20, top_p=0.95, min_p=0.02, presence_penalty=0.0,
                         repetition_penalty=1.0)


@pytest.mark.parametrize("params,seed", [(GREEDY, 0), (SAMPLED, 5)], ids=["greedy", "seeded"])
def test_each_step_is_one_verify_call_and_the_reply_is_plain_decodings(params, seed):
    plain, spec = [sequence(PROMPT, 40, params, seed=seed)], [sequence(PROMPT, 40, params, seed=seed)]
    run(plain, speculate=False)
    _, backend, speculator = run(spec, speculate=True, backend_cls=VerifyBackend)
    assert spec[0].generated == plain[0].generated
    kinds = [kind for kind, _ in backend.calls]
    assert kinds[0] == "prefill" and "prefill" not in kinds[1:]  # the prompt alone is a prefill
    assert kinds.count("verify") == speculator.steps > 0
    assert sum(n - 1 for kind, n in backend.calls if kind == "verify") == speculator.proposed


def test_without_the_entry_a_step_is_a_prefill_call():
    plain, spec = [sequence(PROMPT, 40)], [sequence(PROMPT, 40)]
    run(plain, speculate=False)
    _, backend, speculator = run(spec, speculate=True, backend_cls=NoVerifyBackend)
    assert spec[0].generated == plain[0].generated
    kinds = [kind for kind, _ in backend.calls]
    assert "verify" not in kinds and kinds.count("prefill") == 1 + speculator.steps


class PaddedBackend(VerifyBackend):
    """A static 4-row verify entry (backend.verify_rows): fewer proposals cost as much as 3."""

    def verify_rows(self, n, start):
        return 4 if n <= 4 else 0


def test_a_padded_entry_gets_as_many_proposals_as_its_rows_hold():
    plain, spec, short = ([sequence(PROMPT, 40)] for _ in range(3))
    run(plain, speculate=False)
    _, padded, _ = run(spec, speculate=True, backend_cls=PaddedBackend)
    _, dynamic, _ = run(short, speculate=True, backend_cls=VerifyBackend)
    assert spec[0].generated == short[0].generated == plain[0].generated
    rows = [n for kind, n in padded.calls if kind == "verify"]
    assert rows and set(rows[:-1]) == {4} and rows[-1] <= 4  # the last may meet max_tokens
    assert min(n for kind, n in dynamic.calls if kind == "verify") < 4  # where rows cost, K adapts below them
