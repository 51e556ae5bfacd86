"""CI's fast sample of the mutation run: a handful of mutants spread over the
list, each applied to a copy of the package and killed by the kit
(the full run is ``python dev/mutants.py``; its score is in docs/spec-kit.md)."""

from __future__ import annotations

import pytest

from mutants import KILLED, run_mutant
from mutants_data import MUTANTS

SAMPLE = ("limits.tokens_used_is_context", "sequence.max_length_samples_one", "thinking.conflict_ignored",
          "fallback.warning_count_one", "auth.any_scheme")


@pytest.mark.parametrize("mutant_id", SAMPLE)
def test_the_kit_kills_the_mutant(mutant_id):
    mutant = next(m for m in MUTANTS if m.id == mutant_id)
    outcome = run_mutant(mutant)
    assert outcome.status == KILLED, outcome
