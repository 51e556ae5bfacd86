"""Token sampling: small pure functions over one step's logits.

The order is docs/spec/lse-api.md's ("Sampling defaults"): penalties, then
temperature, then top-k, top-p and min-p. Two steps come before it:
logit_bias (OpenAI's, added to the raw logits), and after the penalties the
grammar's mask of allowed tokens (runtime/structured.py), so temperature and
the filters only ever see tokens the grammar allows. Each filter returns a full-vocab
logits array with dropped tokens set to -inf, so the steps compose and can be
tested one at a time. Every filter keeps the top token, so the set of
candidates is never empty.

Randomness comes only from the ``numpy.random.Generator`` passed in, one per
choice (``make_rng``), and a sampled token draws from it exactly once: one
exponential per vocab entry (``_race``), so a seeded choice's stream never
depends on how its logits were computed. The draw is an exponential race
(vLLM's sampler draws the same way) rather than an inverse CDF, because the
race is stable under rounding: the logits of one prompt differ by ~1e-4
between the prompt's GEMM path and the decode matvecs (a prefix-cache hit
feeds the last prompt token as a decode row), and an inverse CDF over a
49152-token vocab moves its pick whenever the rounding shifts the running
sum past a tail token's sliver of mass, while the race's winner changes only
when two perturbed scores are within the rounding of each other.

Shapes: ``logits`` is (V,), V = vocab size; ``history`` is the prompt's and
the reply's token ids so far, oldest first.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

# Both penalties look at the last 64 tokens of prompt + reply: docs/spec/lse-api.md
# gives 64 for presence_penalty, and llama.cpp's `repeat_last_n` (default 64)
# is one window for its repeat and presence penalties alike, so LSE uses the
# same window for repetition_penalty rather than a second, undocumented one.
PENALTY_WINDOW = 64

# top-p looks at the most likely tokens first and widens only when they
# don't reach the mass: a model's distribution is usually concentrated, so
# this avoids sorting the whole vocab (V = 49152 for SmolLM2) on most steps.
_TOP_P_FIRST_WINDOW = 64

# The smallest exponential draw the race uses: a draw of exactly 0 would
# make -log(E) infinite (float64 draws are 0 with probability about 2^-45).
_TINY = np.finfo(np.float32).tiny


@dataclass(frozen=True)
class SamplingParams:
    """The effective sampling settings of one request (request, else the
    model's defaults); ``lse.runtime.openai.request.effective_sampling`` builds it."""

    temperature: float
    top_k: int
    top_p: float
    min_p: float
    presence_penalty: float
    repetition_penalty: float
    logit_bias: tuple[tuple[int, float], ...] = ()  # (token id, bias), sorted by id


def make_rng(seed: int | None, choice_index: int = 0) -> np.random.Generator:
    """The generator for one choice of one request. With a seed, choice i
    of n draws from its own stream, so choice 0 is the same whatever n is."""
    if seed is None:
        return np.random.default_rng()
    return np.random.default_rng([seed, choice_index])


def apply_penalties(logits: np.ndarray, history: Sequence[int], presence_penalty: float,
                    repetition_penalty: float) -> np.ndarray:
    """Penalize each distinct token among the last PENALTY_WINDOW of
    ``history``: repetition_penalty divides a positive logit and multiplies a
    negative one, then presence_penalty is subtracted once (llama.cpp's
    `llama_sampler_penalties_apply` does the two in this order)."""
    if (presence_penalty == 0.0 and repetition_penalty == 1.0) or len(history) == 0:
        return logits
    seen = np.unique(np.asarray(history[-PENALTY_WINDOW:], dtype=np.int64))
    out = np.array(logits, copy=True)
    vals = out[seen]
    if repetition_penalty != 1.0:
        vals = np.where(vals > 0, vals / repetition_penalty, vals * repetition_penalty)
    out[seen] = vals - presence_penalty
    return out


def apply_logit_bias(logits: np.ndarray, bias: Sequence[tuple[int, float]]) -> np.ndarray:
    """Add each bias to its token's logit. The ends are exact, as OpenAI
    describes them: -100 bans the token (-inf) and 100 selects exclusively:
    when any token has 100, only those tokens stay."""
    if not bias:
        return logits
    ids = np.fromiter((t for t, _ in bias), dtype=np.int64, count=len(bias))
    vals = np.fromiter((b for _, b in bias), dtype=np.float32, count=len(bias))
    forced = ids[vals >= 100.0]
    if forced.shape[0]:
        out = np.full_like(logits, -np.inf)
        out[forced] = logits[forced] + 100.0
        return out
    out = np.array(logits, copy=True)
    out[ids] += vals
    out[ids[vals <= -100.0]] = -np.inf
    return out


def apply_mask(logits: np.ndarray, allowed: np.ndarray | None) -> np.ndarray:
    """Keep only the tokens ``allowed`` (a (V,) bool array; None: all)."""
    if allowed is None:
        return logits
    return np.where(allowed, logits, -np.inf)


def apply_temperature(logits: np.ndarray, temperature: float) -> np.ndarray:
    """Scale for sampling; temperature <= 0 means greedy, which sample_token
    handles before scaling, so it is refused here."""
    if temperature <= 0:
        raise ValueError(f"temperature {temperature} is greedy; take the argmax instead")
    if temperature == 1.0:
        return logits
    return logits / temperature


def apply_top_k(logits: np.ndarray, k: int) -> np.ndarray:
    """Keep the k most likely tokens (0 or -1: off). Tokens tied with the
    k-th are all kept, so the result does not depend on token id order."""
    if k <= 0 or k >= logits.shape[0]:
        return logits
    kth = np.partition(logits, logits.shape[0] - k)[logits.shape[0] - k]
    return np.where(logits >= kth, logits, -np.inf)


def apply_top_p(logits: np.ndarray, top_p: float) -> np.ndarray:
    """Keep the most likely tokens, in order, until their probability mass
    reaches top_p: a token is kept when the mass before it is below top_p
    (1: off). Among equal logits at the cut, the lowest ids are kept."""
    if top_p >= 1.0:
        return logits
    # Work on the survivors of earlier filters only (k of them after top-k).
    alive = np.flatnonzero(logits > -np.inf)
    probs = _softmax(logits[alive])
    top, mass = _top_mass(probs, top_p)
    keep = min(top.shape[0], 1 + int(np.searchsorted(mass, top_p, side="left")))
    # Only values are sorted (fast); the ids come back from the cut value.
    cut = top[keep - 1]
    above = np.flatnonzero(probs > cut)
    tied = np.flatnonzero(probs == cut)[:keep - above.shape[0]]
    kept = alive[np.concatenate([above, tied])]
    out = np.full_like(logits, -np.inf)
    out[kept] = logits[kept]
    return out


def _top_mass(probs: np.ndarray, top_p: float) -> tuple[np.ndarray, np.ndarray]:
    """The largest probabilities, descending, and their running mass: enough
    of them to reach top_p, widening from _TOP_P_FIRST_WINDOW by 4x."""
    n = probs.shape[0]
    width = min(_TOP_P_FIRST_WINDOW, n)
    while True:
        top = np.sort(np.partition(probs, n - width)[n - width:])[::-1]
        mass = np.cumsum(top, dtype=np.float64)
        if mass[-1] >= top_p or width == n:
            return top, mass
        width = min(width * 4, n)


def apply_min_p(logits: np.ndarray, min_p: float) -> np.ndarray:
    """Drop tokens whose probability is below min_p times the top token's
    (0: off). In logit space that is logit < max + log(min_p)."""
    if min_p <= 0.0:
        return logits
    floor = logits.max() + np.log(min_p)
    return np.where(logits >= floor, logits, -np.inf)


def filtered_logits(logits: np.ndarray, history: Sequence[int], params: SamplingParams,
                    allowed: np.ndarray | None = None) -> np.ndarray:
    """The distribution sample_token draws from when temperature > 0:
    logit_bias, penalties, the mask, temperature, top-k, top-p, min-p."""
    x = _biased_penalized(logits, history, params, allowed)
    return _truncate(apply_temperature(x, params.temperature), params)


def _biased_penalized(logits: np.ndarray, history: Sequence[int], params: SamplingParams,
                      allowed: np.ndarray | None) -> np.ndarray:
    raw = _as_float32(logits)
    x = apply_mask(apply_penalties(apply_logit_bias(raw, params.logit_bias), history,
                                   params.presence_penalty, params.repetition_penalty), allowed)
    if allowed is not None and not np.isfinite(x.max()):
        # logit_bias banned every token the grammar allows: the grammar wins.
        x = apply_mask(apply_penalties(raw, history, params.presence_penalty, params.repetition_penalty), allowed)
    return x


def sample_token(logits: np.ndarray, history: Sequence[int], params: SamplingParams,
                 rng: np.random.Generator, allowed: np.ndarray | None = None) -> int:
    """One token id, among ``allowed`` when given (the grammar's mask).
    temperature <= 0 is greedy: the argmax of the biased, penalized, masked
    logits, ties going to the lowest id; it draws nothing from ``rng``."""
    x = _biased_penalized(logits, history, params, allowed)
    if params.temperature <= 0:
        return int(np.argmax(x))  # argmax returns the first maximum: the lowest id
    with np.errstate(over="ignore"):
        scaled = apply_temperature(x, params.temperature)
    if not np.isfinite(scaled.max()):
        return int(np.argmax(x))  # so small a temperature that it overflows is greedy
    return _race(_truncate(scaled, params), rng)


def log_softmax(logits: np.ndarray) -> np.ndarray:
    """log p for every token (float64)."""
    x = _as_float32(logits)
    return x.astype(np.float64) - _logsumexp(x)


def top_logprobs(logits: np.ndarray, k: int) -> list[tuple[int, float]]:
    """The k most likely tokens as (token_id, logprob), most likely first,
    equal logprobs by lowest id. Pass the model's raw logits: the reported
    logprobs are the model's distribution, before penalties and filters."""
    return token_logprobs(logits, None, k)[1]


def token_logprobs(logits: np.ndarray, token: int | None, k: int) -> tuple[float | None, list[tuple[int, float]]]:
    """(the logprob of ``token``, ``top_logprobs(logits, k)``) from one
    log-sum-exp: every logprob LSE reports, sampled or echoed, comes from here."""
    x = _as_float32(logits)
    lse = _logsumexp(x)
    top = [(int(i), float(x[i]) - lse) for i in _top_ids(x, min(k, x.shape[0]))] if k > 0 else []
    return (None if token is None else float(x[token]) - lse), top


def _truncate(scaled: np.ndarray, params: SamplingParams) -> np.ndarray:
    return apply_min_p(apply_top_p(apply_top_k(scaled, params.top_k), params.top_p), params.min_p)


def _as_float32(logits: np.ndarray) -> np.ndarray:
    # The model's logits are float32, and numpy's float32 exp is several
    # times faster than float64's on a 49152-token vocab; sums that need the
    # digits (CDFs, the log-sum-exp) accumulate in float64.
    return np.asarray(logits, dtype=np.float32)


def _logsumexp(x: np.ndarray) -> float:
    m = float(x.max())
    return m + float(np.log(np.sum(np.exp(x - np.float32(m)), dtype=np.float64)))


def _race(scaled: np.ndarray, rng: np.random.Generator) -> int:
    """A token with probability softmax(scaled): the winner of an exponential
    race, argmax(scaled - log E) with E ~ Exp(1) drawn for every vocab entry
    (the Gumbel-max trick: -log E is Gumbel-distributed). Every call draws
    exactly V values, so the stream advances the same whatever the
    candidates; a dropped token (-inf) never wins, since the filters keep at
    least the top token. The draws are float64: numpy's float32 exponential
    is exactly 0 with probability 2^-23 (its ziggurat keeps 23 bits), once
    every ~170 draws over a 49152-token vocab, and a 0 made its token win
    whatever its probability. Their logs are taken in float32 and in place
    (fresh temporaries made the race twice as slow), which keeps every
    draw above 1e-16 as it is."""
    e = rng.standard_exponential(scaled.shape[0]).astype(np.float32)
    np.maximum(e, _TINY, out=e)
    np.log(e, out=e)
    np.subtract(scaled, e, out=e)
    return int(np.argmax(e))


def _softmax(logits: np.ndarray) -> np.ndarray:
    e = np.exp(logits - logits.max())
    return e / e.sum()


def _top_ids(values: np.ndarray, k: int) -> np.ndarray:
    """Indices of the k largest values, largest first, ties by lowest index.
    A partition finds the k-th value in O(V), so only the candidates at or
    above it are sorted, never the whole vocab."""
    n = values.shape[0]
    if k < n:
        kth = np.partition(values, n - k)[n - k]
        cand = np.flatnonzero(values >= kth)
    else:
        cand = np.arange(n)
    order = np.lexsort((cand, -values[cand]))
    return cand[order][:k]
