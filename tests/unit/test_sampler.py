"""The sampler's steps against hand-computed distributions on tiny logits."""

from __future__ import annotations

import math

import numpy as np
import pytest

from lse.runtime.sampler import (
    PENALTY_WINDOW,
    SamplingParams,
    apply_min_p,
    apply_penalties,
    apply_temperature,
    apply_top_k,
    apply_top_p,
    filtered_logits,
    log_softmax,
    make_rng,
    sample_token,
    top_logprobs,
)

NEG = -np.inf
PLAIN = SamplingParams(temperature=1.0, top_k=0, top_p=1.0, min_p=0.0,
                       presence_penalty=0.0, repetition_penalty=1.0)


def params(**changes: float) -> SamplingParams:
    fields = {**PLAIN.__dict__, **changes}
    return SamplingParams(**fields)


def logits_of(probs: list[float]) -> np.ndarray:
    return np.log(np.asarray(probs, dtype=np.float64))


def kept(x: np.ndarray) -> list[int]:
    return [int(i) for i in np.flatnonzero(x > NEG)]


def probs_of(x: np.ndarray) -> np.ndarray:
    e = np.exp(np.asarray(x, dtype=np.float64) - np.max(x))
    return e / e.sum()


class FixedRace:
    """A stand-in Generator whose exponential draws are chosen by the test."""

    def __init__(self, e: list[float]) -> None:
        self.e = np.asarray(e, np.float32)

    def standard_exponential(self, size: int) -> np.ndarray:  # float64, as the race asks
        assert size == self.e.shape[0]
        return self.e.astype(np.float64)


# --- penalties ------------------------------------------------------------------

def test_penalties_hand_computed() -> None:
    logits = np.array([2.0, -1.0, 0.5, 3.0])
    # 0 and 1 were seen (0 twice: the presence penalty is still taken once).
    out = apply_penalties(logits, [0, 1, 0], presence_penalty=0.5, repetition_penalty=2.0)
    np.testing.assert_allclose(out, [2.0 / 2 - 0.5, -1.0 * 2 - 0.5, 0.5, 3.0])
    np.testing.assert_array_equal(logits, [2.0, -1.0, 0.5, 3.0])  # input untouched


@pytest.mark.parametrize("history, penalized", [
    ([7] + [1] * (PENALTY_WINDOW - 1), True),   # 7 is the 64th token from the end
    ([7] + [1] * PENALTY_WINDOW, False),        # 7 is the 65th: outside the window
    ([], False),
])
def test_penalty_window_is_64_for_both_penalties(history: list[int], penalized: bool) -> None:
    assert PENALTY_WINDOW == 64
    logits = np.full(10, 1.0)
    presence = apply_penalties(logits, history, presence_penalty=1.0, repetition_penalty=1.0)
    repetition = apply_penalties(logits, history, presence_penalty=0.0, repetition_penalty=4.0)
    assert presence[7] == (0.0 if penalized else 1.0)
    assert repetition[7] == (0.25 if penalized else 1.0)


def test_penalties_off_is_identity() -> None:
    logits = np.array([1.0, 2.0])
    assert apply_penalties(logits, [0, 1], 0.0, 1.0) is logits


# --- temperature, top-k, top-p, min-p --------------------------------------------

def test_temperature_divides() -> None:
    np.testing.assert_allclose(apply_temperature(np.array([1.0, 2.0, -3.0]), 0.5), [2.0, 4.0, -6.0])


@pytest.mark.parametrize("t", [0.0, -1.0])
def test_temperature_greedy_values_are_not_scaled(t: float) -> None:
    with pytest.raises(ValueError):
        apply_temperature(np.array([1.0]), t)


@pytest.mark.parametrize("logits, k, expected", [
    ([1.0, 3.0, 2.0, 3.0, 0.0], 2, [1, 3]),
    ([1.0, 3.0, 2.0, 3.0, 0.0], 3, [1, 2, 3]),
    ([3.0, 2.0, 2.0, 1.0], 2, [0, 1, 2]),      # ties with the k-th are all kept
    ([1.0, 3.0, 2.0], 1, [1]),
    ([1.0, 3.0, 2.0], 0, [0, 1, 2]),           # off
    ([1.0, 3.0, 2.0], -1, [0, 1, 2]),          # off
    ([1.0, 3.0, 2.0], 5, [0, 1, 2]),           # k past the vocab
])
def test_top_k(logits: list[float], k: int, expected: list[int]) -> None:
    out = apply_top_k(np.array(logits), k)
    assert kept(out) == expected
    np.testing.assert_array_equal(out[expected], np.array(logits)[expected])


# probabilities 0.5, 0.3, 0.15, 0.05: a token is kept while the mass before it is below top_p
@pytest.mark.parametrize("top_p, expected", [
    (1.0, [0, 1, 2, 3]),
    (0.96, [0, 1, 2, 3]),
    (0.9, [0, 1, 2]),
    (0.75, [0, 1]),
    (0.5, [0]),        # the mass before token 1 is exactly 0.5: not below
    (0.3, [0]),
    (0.0, [0]),        # the top token always stays
])
def test_top_p(top_p: float, expected: list[int]) -> None:
    out = apply_top_p(logits_of([0.5, 0.3, 0.15, 0.05]), top_p)
    assert kept(out) == expected


def test_top_p_ties_at_the_cut_keep_lowest_ids() -> None:
    assert kept(apply_top_p(np.array([1.0, 1.0, 1.0, 1.0]), 0.5)) == [0, 1]


def test_top_p_widens_past_its_first_window() -> None:
    # 1000 tokens whose 0.9 mass needs hundreds of them; compare with a full sort.
    logits = np.random.default_rng(3).standard_normal(1000)
    probs = probs_of(logits.astype(np.float32))
    order = np.argsort(-probs, kind="stable")
    before = np.cumsum(probs[order]) - probs[order]
    expected = sorted(int(i) for i in order[before < 0.9])
    assert len(expected) > 64
    assert kept(apply_top_p(logits, 0.9)) == expected


@pytest.mark.parametrize("min_p, expected", [
    (0.0, [0, 1, 2, 3]),
    (0.1, [0, 1, 2, 3]),   # floor 0.05 = 0.1 * 0.5: token 3 sits on it and stays
    (0.2, [0, 1, 2]),      # floor 0.1
    (0.5, [0, 1]),         # floor 0.25
    (1.0, [0]),
])
def test_min_p(min_p: float, expected: list[int]) -> None:
    assert kept(apply_min_p(logits_of([0.5, 0.3, 0.15, 0.05]), min_p)) == expected


# --- the order of the steps -------------------------------------------------------

def test_penalties_come_before_temperature() -> None:
    # (2 - 1) / 0.5 = 2, where the other order would give 2 / 0.5 - 1 = 3.
    out = filtered_logits(np.array([2.0, 0.0]), [0], params(presence_penalty=1.0, temperature=0.5))
    np.testing.assert_allclose(out, [2.0, 0.0])


def test_top_k_comes_before_top_p() -> None:
    # After top-k 2 the survivors are 4/7 and 3/7: top-p 0.5 keeps only the
    # first. top-p first would keep two (the mass before token 1 is 0.4).
    out = filtered_logits(logits_of([0.4, 0.3, 0.2, 0.1]), [], params(top_k=2, top_p=0.5))
    assert kept(out) == [0]


def test_top_p_comes_before_min_p() -> None:
    # top-p 0.75 keeps 0.4, 0.3, 0.2; min-p 0.3 then keeps all three (0.2 / 0.4 = 0.5).
    # min-p first would drop 0.1, renormalize, and top-p would then keep two.
    out = filtered_logits(logits_of([0.4, 0.3, 0.2, 0.1]), [], params(top_p=0.75, min_p=0.3))
    assert kept(out) == [0, 1, 2]


def test_full_pipeline_distribution() -> None:
    # logits 2, 1, 0, 0, -1 with token 0 seen. Penalties: 2 / 2 - 0.5 = 0.5.
    # Temperature 0.5: [1, 2, 0, 0, -2]. top-k 3 keeps tokens 0 to 3 (3 and 2
    # tie for third). Their probabilities, e^[1, 2, 0, 0] normalized:
    # 0.2245, 0.6103, 0.0826, 0.0826. top-p 0.9, most likely first: token 1,
    # 0, 2 (mass before it 0.8348), 3 (0.9174: dropped; of the tie the lower
    # id stays). min-p 0.1: e^0 / e^2 = 0.135 >= 0.1, all three stay.
    out = filtered_logits(np.array([2.0, 1.0, 0.0, 0.0, -1.0]), [0],
                          params(temperature=0.5, top_k=3, top_p=0.9, min_p=0.1,
                                 presence_penalty=0.5, repetition_penalty=2.0))
    assert kept(out) == [0, 1, 2]
    e = np.exp([1.0, 2.0, 0.0])
    np.testing.assert_allclose(probs_of(out[[0, 1, 2]]), e / e.sum(), rtol=1e-6)


# --- drawing ---------------------------------------------------------------------

def test_the_race_picks_the_highest_logit_minus_log_of_its_draw() -> None:
    # logits log[0.25, 0.5, 0.25]: token i wins when log p_i - log E_i is largest.
    logits = np.log(np.array([0.25, 0.5, 0.25]))
    cases = [([1.0, 1.0, 1.0], 1), ([0.1, 1.0, 1.0], 0), ([1.0, 1.0, 0.2], 2),
             ([1.0, 0.0, 1.0], 1)]  # a draw of 0 is the smallest float32, not -log 0
    assert [sample_token(logits, [], PLAIN, FixedRace(e)) for e, _ in cases] == [t for _, t in cases]


def test_the_race_never_hands_a_sure_token_to_a_draw_of_zero() -> None:
    """A token 40 nats above every other of a 49152-token vocab wins every
    race (another wins with probability ~e^-29 a draw). numpy's float32
    exponentials are exactly 0 with probability 2^-23 each, which made the
    token drawn 0 win once in ~170 races here: 11 of these 3000 seeded races."""
    logits = np.zeros(49152, np.float32)
    logits[123] = 40.0
    rng = np.random.default_rng(5)
    assert [t for t in (sample_token(logits, [], PLAIN, rng) for _ in range(3000)) if t != 123] == []


def test_a_dropped_token_never_wins_the_race() -> None:
    # top-k 1 keeps token 1 alone; token 0's tiny draw cannot bring a -inf back.
    logits = np.log(np.array([0.45, 0.55]))
    assert sample_token(logits, [], params(top_k=1), FixedRace([1e-30, 1.0])) == 1


def test_each_sampled_token_draws_one_exponential_per_vocab_entry() -> None:
    # The stream advances the same whatever the filters keep, so one token's
    # candidates never shift the draws of the tokens after it.
    a, b = make_rng(3), make_rng(3)
    sample_token(np.zeros(300), [], PLAIN, a)
    sample_token(np.zeros(300), [], params(top_k=2), b)
    assert a.bit_generator.state == b.bit_generator.state


def test_a_seeded_draw_is_stable_under_the_rounding_of_another_kernel_path() -> None:
    # The prompt's GEMM and the decode matvecs round differently (~1e-4 on a
    # logit); over a SmolLM2-sized vocab at temperature 1 the inverse-CDF draw
    # LSE used before picked another token for 25 of these 400 pairs.
    rs = np.random.default_rng(11)
    moved = 0
    for seed in range(400):
        x = (rs.standard_normal(49152) * 2.5).astype(np.float32)
        y = x + (rs.standard_normal(49152) * 1e-4).astype(np.float32)
        moved += sample_token(x, [], PLAIN, make_rng(seed)) != sample_token(y, [], PLAIN, make_rng(seed))
    assert moved == 0


def test_sampling_frequencies_match_the_distribution() -> None:
    probs = [0.5, 0.3, 0.15, 0.05]
    rng = make_rng(1234)
    draws = [sample_token(logits_of(probs), [], PLAIN, rng) for _ in range(20000)]
    freq = np.bincount(draws, minlength=4) / len(draws)
    # 4 standard errors of a proportion at n = 20000 is under 0.015.
    np.testing.assert_allclose(freq, probs, atol=0.015)


def test_dropped_tokens_are_never_drawn() -> None:
    rng = make_rng(5)
    draws = {sample_token(logits_of([0.4, 0.3, 0.2, 0.1]), [], params(top_k=2), rng) for _ in range(500)}
    assert draws == {0, 1}


def test_same_seed_same_tokens() -> None:
    logits = np.random.default_rng(0).standard_normal(300)
    p = params(temperature=0.9, top_k=50, top_p=0.95)

    def run(seed: int, choice: int = 0) -> list[int]:
        rng = make_rng(seed, choice)
        return [sample_token(logits, [], p, rng) for _ in range(50)]

    assert run(42) == run(42)
    assert run(42) != run(43)
    assert run(42, 0) != run(42, 1)


# --- greedy ------------------------------------------------------------------------

@pytest.mark.parametrize("t", [0.0, -0.5])
def test_greedy_ties_go_to_lowest_id_and_draw_nothing(t: float) -> None:
    rng = make_rng(9)
    state = rng.bit_generator.state
    assert sample_token(np.array([1.0, 3.0, 3.0, 2.0]), [], params(temperature=t), rng) == 1
    assert rng.bit_generator.state == state


def test_greedy_sees_the_penalties() -> None:
    p = params(temperature=0.0, repetition_penalty=2.0)
    assert sample_token(np.array([3.0, 2.0]), [0], p, make_rng(0)) == 1  # 3 / 2 < 2


def test_temperature_that_overflows_is_greedy() -> None:
    # 1 / 1e-40 is past float32's largest value.
    assert sample_token(np.array([0.5, 1.0, 0.9]), [], params(temperature=1e-40), make_rng(0)) == 1


# --- logprobs ------------------------------------------------------------------------

def test_log_softmax() -> None:
    out = log_softmax(logits_of([0.5, 0.25, 0.25]) + 7.0)
    np.testing.assert_allclose(out, [math.log(0.5), math.log(0.25), math.log(0.25)], atol=1e-6)


@pytest.mark.parametrize("k, expected_ids", [
    (0, []),
    (1, [0]),
    (2, [0, 1]),      # 1 and 2 tie: the lowest id first
    (3, [0, 1, 2]),
    (9, [0, 1, 2, 3]),
])
def test_top_logprobs(k: int, expected_ids: list[int]) -> None:
    probs = [0.5, 0.2, 0.2, 0.1]
    got = top_logprobs(logits_of(probs), k)
    assert [i for i, _ in got] == expected_ids
    np.testing.assert_allclose([lp for _, lp in got], [math.log(probs[i]) for i in expected_ids], atol=1e-6)
