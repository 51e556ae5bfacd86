"""Speculative decoding (runtime/speculative.py) over a backend whose logits
are a function of the cached context (speculative_fake.py): with and
without speculation, every chunk the request is told (deltas, logprobs,
finish), every token and the generator's state after the reply are equal,
while verification steps did accept drafts."""

from __future__ import annotations

import numpy as np
import pytest
from speculative_fake import GREEDY, VOCAB, run, sequence

from lse.runtime.errors import LseError
from lse.runtime.ngram import NgramIndex
from lse.runtime.sampler import SamplingParams
from lse.runtime.speculative import (COST_RANGE, K_MAX, K_PROBE, K_START, PROBE_START, VERIFY_COST, Draft, _cost,
                                     make_speculator, request_allows)

# Prompts that repeat themselves (a copy-heavy reply follows) and one that does not.
PROMPTS = [
    [1, 2, 3, 4, 5, 6, 7, 8, 9, 1, 2, 3],
    [5, 9, 12, 3, 3, 17, 22, 5, 9, 12, 3, 3, 17, 30, 31, 5, 9],
    list(range(10, 30)) + [10, 11],
    [4, 8, 15, 16, 23, 42 % VOCAB],
]
SAMPLED = SamplingParams(temperature=0.9, top_k=20, top_p=0.95, min_p=0.02, presence_penalty=0.3,
                         repetition_penalty=1.1, logit_bias=((3, 1.5), (7, -100.0)))


def _outcome(recorders, seqs):
    return [(r.events, s.generated, s.finish, s.rng.bit_generator.state) for r, s in zip(recorders, seqs)]


def _compare(make, slots: int = 1, max_streams: int = 1, n: int = 1):
    """Run the sequences ``make()`` builds with and without speculation; return the speculator."""
    plain_seqs, spec_seqs = make(), make()
    plain, _, _ = run(plain_seqs, speculate=False, slots=slots)
    spec, backend, speculator = run(spec_seqs, speculate=True, slots=slots, max_streams=max_streams)
    assert _outcome(spec, spec_seqs) == _outcome(plain, plain_seqs)
    return speculator, backend


@pytest.mark.parametrize("prompt", PROMPTS)
def test_greedy_output_is_plain_decodings(prompt) -> None:
    speculator, backend = _compare(lambda: [sequence(prompt, 40)])
    if prompt is not PROMPTS[3]:
        assert speculator.accepted > 0  # drafts were verified and taken
        assert len([c for c in backend.calls if c[0] != "decode1"]) < 40


def test_seeded_sampling_is_plain_decodings_over_many_seeds() -> None:
    accepted = 0
    for seed in range(40):
        prompt = PROMPTS[seed % 3]
        speculator, _ = _compare(lambda: [sequence(prompt, 24, SAMPLED, seed=seed, logprobs=2)])  # noqa: B023
        accepted += speculator.accepted
    assert accepted > 20  # drafts were taken across the seeds


def test_a_stop_string_inside_an_accepted_run_ends_it_there() -> None:
    plain_seqs = [sequence(PROMPTS[0], 40)]
    run(plain_seqs, speculate=False)
    reply = "".join(chr(ord("A") + t) for t in plain_seqs[0].generated)
    stop = reply[5:7]  # a stop string in the middle of the copied run
    speculator, _ = _compare(lambda: [sequence(PROMPTS[0], 40, stops=[stop])])
    assert speculator.accepted > 0


@pytest.mark.parametrize("max_new", [1, 2, 3, 6, 11])
def test_max_tokens_is_never_exceeded(max_new) -> None:
    seqs = [sequence(PROMPTS[0], max_new)]
    _compare(lambda: [sequence(PROMPTS[0], max_new)])
    recorders, backend, _ = run(seqs, speculate=True)
    assert len(seqs[0].generated) == max_new
    # no verification step writes past the tokens the reply may still produce
    assert all(n <= max_new for kind, n in backend.calls[1:] if kind == "prefill")


def test_end_controls_and_stop_token_ids_end_where_they_would() -> None:
    def make():
        return [sequence(PROMPTS[1], 40, eos_ids=frozenset({3}), end_ids=frozenset({12}), min_tokens=5)]
    _compare(make)


def test_rollback_keeps_only_accepted_positions_and_prefix_reuse_is_exact() -> None:
    """Two requests in turn on one slot: the second shares the first's prompt
    and reply as its prefix, so it reuses the slot's cached positions; a
    rejected draft's positions listed as cached would change its reply."""
    def make():
        first = sequence(PROMPTS[1], 30)
        return [first]
    plain_a, spec_a = make(), make()
    scheds: list = []
    run(plain_a, speculate=False)
    run(spec_a, speculate=True, scheduler_out=scheds)
    slot = scheds[0].slots[0]
    full = spec_a[0].prompt_ids + spec_a[0].generated
    assert slot.kv_tokens == full[:len(slot.kv_tokens)] and len(slot.kv_tokens) >= len(full) - 1
    assert scheds[0].speculator.proposed > scheds[0].speculator.accepted  # some drafts were rejected

    def follow_up():
        return [sequence(PROMPTS[1], 30), sequence(full + [2, 3], 20)]
    _compare(follow_up)


@pytest.mark.parametrize("max_streams", [1, 8])
def test_batched_streams_keep_their_replies(max_streams) -> None:
    """Four streams on four slots: with max_streams 8 speculating slots and
    plain ones share iterations; with 1 speculation starts once streams end:
    the greedy stream on the repeating prompt runs longest, alone at the end."""
    def make():
        return [sequence(p, (20, 25, 60, 30)[i], SAMPLED if i % 2 else GREEDY, seed=i) for i, p in enumerate(PROMPTS)]
    speculator, _ = _compare(make, slots=4, max_streams=max_streams)
    assert speculator.accepted > 0


class CountingGrammar:
    """A grammar stand-in: token t is allowed after s advances when (t + s) % 3 != 0."""

    def __init__(self) -> None:
        self.advanced: list[int] = []

    def allowed(self) -> np.ndarray:
        return (np.arange(VOCAB) + len(self.advanced)) % 3 != 0

    def advance(self, token: int) -> None:
        assert self.allowed()[token]
        self.advanced.append(token)


def test_the_grammar_is_advanced_by_accepted_tokens_only() -> None:
    plain, spec = [sequence(PROMPTS[2], 30, constraint=CountingGrammar())], \
        [sequence(PROMPTS[2], 30, constraint=CountingGrammar())]
    a, _, _ = run(plain, speculate=False)
    b, _, speculator = run(spec, speculate=True)
    assert _outcome(b, spec) == _outcome(a, plain)
    assert spec[0].constraint.advanced == plain[0].constraint.advanced == spec[0].generated
    assert speculator.accepted > 0


def test_lse_speculative_false_decodes_plainly() -> None:
    seqs = [sequence(PROMPTS[0], 20, speculative=False)]
    _, backend, speculator = run(seqs, speculate=True)
    assert [c for c in backend.calls if c[0] == "prefill"] == [("prefill", len(PROMPTS[0]))]
    assert seqs[0].draft is None and speculator.steps == 0


def test_timings_name_drafted_and_accepted_tokens() -> None:
    seqs = [sequence(PROMPTS[0], 30)]
    _, _, speculator = run(seqs, speculate=True)
    draft = seqs[0].draft
    assert draft.timings() == {"draft_n": speculator.proposed, "draft_n_accepted": speculator.accepted}
    assert speculator.status() == {"mode": "ngram", "steps": speculator.steps, "proposed": speculator.proposed,
                                   "accepted": speculator.accepted, "verify_cost": VERIFY_COST}  # the fake times nothing
    assert 0 < draft.accepted <= draft.proposed


# ---- the proposer and its controller ----------------------------------------------

def test_ngram_index_proposes_the_longest_matchs_continuation() -> None:
    index = NgramIndex()
    index.extend([1, 2, 3, 9, 2, 3, 5, 6, 7, 2, 3])
    assert index.propose(3) == [5, 6, 7]  # (2, 3) last continued with 5 6 7
    index.extend([9])
    assert index.propose(2) == [2, 3]  # (3, 9) -> 2 3, longer than (9)
    index.extend([4, 7])
    assert index.propose(2) == [] and index.propose(2, min_n=1) == [2, 3]  # (7) alone: one token matches
    assert NgramIndex().propose(4) == []


def test_ngram_index_continues_a_period_past_its_last_copy() -> None:
    index = NgramIndex()
    index.extend([8, 1, 2, 1, 2, 1])
    assert index.propose(5) == [2, 1, 2, 1, 2]


def test_ngram_index_syncs_lazily_with_a_growing_reply() -> None:
    index, prompt, reply = NgramIndex(), [4, 5, 6, 4, 5], []
    index.sync(prompt, reply)
    assert index.propose(2) == [6, 4]
    reply += [5, 7]
    index.sync(prompt, reply)
    assert index.tokens == prompt + reply and index.propose(1) == []


def test_a_fresh_draft_backs_off_after_two_missed_steps_that_cost_two_decode_steps() -> None:
    d = Draft()
    d.record(K_START, 0, cost=2.0)
    assert d.cool == 0 and d.k == 1
    d.record(d.k, 0, cost=2.0)
    assert d.cool == PROBE_START


def misses_to_back_off(cost: float) -> int:
    d, misses = Draft(), 0
    while d.cool == 0:
        d.record(d.k, 0, cost=cost)
        misses += 1
    return misses


def test_a_cheaper_verification_tries_longer_before_backing_off() -> None:
    assert misses_to_back_off(COST_RANGE[1]) == 1 < misses_to_back_off(1.5) == 2 < misses_to_back_off(1.15) == 3
    assert misses_to_back_off(COST_RANGE[0]) == 3  # the cheapest cost held in range still backs off


def test_the_cost_is_the_backends_measured_ratio_held_in_range() -> None:
    class Measured:
        def __init__(self, ratio):
            self.ratio = ratio

        def verify_cost(self):
            return self.ratio

    assert _cost(object()) == VERIFY_COST and _cost(Measured(None)) == VERIFY_COST
    assert _cost(Measured(1.37)) == 1.37
    assert _cost(Measured(0.9)) == COST_RANGE[0] and _cost(Measured(40.0)) == COST_RANGE[1]


def test_draft_grows_k_on_full_acceptance_and_backs_off_when_it_does_not_pay() -> None:
    d = Draft()
    assert d.min_n == 3  # untrusted: only a 3-token match drafts
    d.record(K_START, K_START)
    assert d.k == min(2 * K_START, K_MAX) and d.min_n == 2
    for _ in range(4):
        d.record(d.k, d.k)
    assert d.k == K_MAX
    d.record(K_MAX, 2)
    assert d.k == 3
    misses = 0
    while d.cool == 0:
        d.record(d.k, 0)
        misses += 1
    assert misses <= 3 and d.cool == PROBE_START and d.k == K_PROBE  # plain decoding, then a short probe
    assert d.min_n == 3
    d.cool, misses = 0, 0  # the plain steps went by; the probe misses too
    while d.cool == 0:
        d.record(d.k, 0)
        misses += 1
    assert misses <= 2 and d.cool == 2 * PROBE_START  # each failed probe waits twice as long


def test_mode_and_field_are_checked() -> None:
    assert make_speculator("off") is None and make_speculator("ngram").mode == "ngram"
    with pytest.raises(ValueError):
        make_speculator("draft")
    assert request_allows({}) and request_allows({"lse_speculative": True})
    assert not request_allows({"lse_speculative": False})
    with pytest.raises(LseError) as e:
        request_allows({"lse_speculative": "no"})
    assert e.value.status == 400 and e.value.param == "lse_speculative"


def test_a_back_off_ends_when_a_free_check_of_its_proposal_would_have_been_accepted_whole() -> None:
    prompt = [1, 2, 3, 4, 5, 6, 7, 8, 9]
    d = Draft()
    d.record(K_PROBE, 0)
    d.record(K_PROBE, 0)
    assert d.cool == PROBE_START
    generated = [11, 12]
    assert not d.watch(prompt, generated) and d.shadow is None  # nothing in the index to propose
    generated += [1, 2, 3]  # the reply enters the prompt's text: 4 5 6 proposed, unverified
    assert not d.watch(prompt, generated) and d.shadow == (5, [4, 5, 6])
    generated += [4, 5]
    assert not d.watch(prompt, generated)  # so far so good, not yet whole
    generated += [6]
    cool_before = d.cool
    assert d.watch(prompt, generated) and d.cool == 0 and d.k == K_MAX and d.shadow is None
    assert cool_before > 0  # it ended early
    d.cool = 5  # another back-off: a proposal the reply leaves is dropped, and the count goes on
    generated += [3, 4, 5]
    assert not d.watch(prompt, generated) and d.shadow == (11, [6, 3, 4])  # the latest copy of 3 4 5 goes on 6 3 4
    generated += [6, 99]
    assert not d.watch(prompt, generated) and d.cool == 3 and d.shadow is None
