"""Proposals from a request's own tokens (prompt-lookup / n-gram decoding).

``NgramIndex`` holds one sequence's tokens (prompt + reply so far) and, for
every n-gram of 1 to MAX_N tokens, where its most recent occurrence that has
a continuation ends. A proposal is the continuation of the longest n-gram
(MAX_N down to MIN_N) that ends the tokens and occurred before: text that repeats
a span of the prompt (an edited paragraph, quoted code, a JSON field's value)
is proposed token by token ahead of the model. A continuation that runs into
the end of the tokens goes on with the proposal itself, so a period repeated
in the reply ("a b a b a") is proposed past its last copy.

The index grows lazily (``sync``) by the tokens it has not seen, so a
sequence that never speculates costs nothing, and one that does pays O(new
tokens) per step.
"""

from __future__ import annotations

MAX_N = 3
# A one-token match proposes on nearly every step of free text and is mostly
# wrong there, and a rejected draft costs more than a plain step (a
# verification step is ~1.5-2.5 decode steps on the CPU), so two tokens must match.
MIN_N = 2


class NgramIndex:
    def __init__(self, max_n: int = MAX_N):
        self.max_n = max_n
        self.tokens: list[int] = []
        self._after: dict[tuple[int, ...], int] = {}  # n-gram -> where its latest continuation starts

    def extend(self, tokens: list[int]) -> None:
        seq, after = self.tokens, self._after
        for t in tokens:
            i = len(seq)
            for n in range(1, min(self.max_n, i) + 1):
                after[tuple(seq[i - n:i])] = i
            seq.append(t)

    def sync(self, prompt: list[int], generated: list[int]) -> None:
        """Catch up with ``prompt + generated`` (which only ever grows)."""
        have = len(self.tokens)
        if have < len(prompt):
            self.extend(prompt[have:])
            have = len(prompt)
        self.extend(generated[have - len(prompt):])

    def propose(self, k: int, min_n: int = MIN_N) -> list[int]:
        """Up to ``k`` tokens that would continue the tokens; [] without a
        match of at least ``min_n`` tokens."""
        seq = self.tokens
        if k <= 0:
            return []
        for n in range(min(self.max_n, len(seq)), min_n - 1, -1):
            start = self._after.get(tuple(seq[-n:]))
            if start is None:
                continue
            out: list[int] = []
            j, end = start, len(seq)
            while len(out) < k:
                out.append(seq[j] if j < end else out[j - end])
                j += 1
            return out
        return []
