"""The mutation tool's data and its guarantees: every snippet matches
exactly once, every section of both documents has mutants, a mutant is
applied to a copy and never to the tree the tool runs from."""

from __future__ import annotations

from collections import Counter

import pytest

from lse.spec.matrix import BY_NAME
from mutants import ROOT, SnippetError, apply, build_overlay, check_all, chosen_mutants, mutated_text
from mutants_data import MUTANTS, Mutant

from test_spec_rows import SECTIONS


def test_every_snippet_matches_exactly_once():
    assert check_all() == []


def test_ids_unique_servers_known_and_enough_mutants():
    assert len(MUTANTS) >= 60
    assert [i for i, n in Counter(m.id for m in MUTANTS).items() if n > 1] == []
    assert {s for m in MUTANTS for s in m.servers} <= set(BY_NAME)


@pytest.mark.parametrize("doc", ["lse-api.md", "openai-compatible-api.md"])
def test_every_top_section_has_a_mutant(doc):
    cited = {m.section.split(" § ", 1)[1] for m in MUTANTS if m.section.startswith(doc)}
    tops = {s.split(" > ")[0] for s in SECTIONS[doc]}
    covered = {s.split(" > ")[0] for s in cited}
    # The lse-api.md title section and the OpenAI overview are covered through their subsections.
    assert tops - covered <= {"Output limits, context, thinking levels, sampling defaults and CPU fallback",
                              "POST /v1/chat/completions"}


def test_a_snippet_found_twice_or_never_is_refused():
    twice = Mutant("x", "runtime/limits.py", "return", "pass", "s", ())
    never = Mutant("y", "runtime/limits.py", "no such code anywhere", "pass", "s", ())
    for mutant in (twice, never):
        with pytest.raises(SnippetError):
            mutated_text(mutant, (ROOT / mutant.file).read_text())


def test_mutants_touch_a_copy_not_the_tree(tmp_path):
    mutant = MUTANTS[0]
    before = (ROOT / mutant.file).read_text()
    overlay = build_overlay(tmp_path / "o")
    target = apply(mutant, overlay)
    assert mutant.replacement in target.read_text()
    assert (ROOT / mutant.file).read_text() == before
    assert (overlay / "lse" / "__init__.py").is_file()


def test_sample_spreads_over_the_list():
    picked = chosen_mutants(None, 5)
    assert len(picked) == 5 and len({m.file for m in picked}) >= 3


def test_the_matrix_shows_every_capability_the_kit_needs():
    from lse.spec.matrix import SHOWN_BY
    from lse.spec.runner import ordered_scenarios
    from lse.spec.rows import RequestField
    from lse.spec.table import all_rows

    needs = {n for r in all_rows() for n in r.needs}
    needs |= {n for r in all_rows() if isinstance(r, RequestField) for v in (*r.valid, *r.invalid) for n in v.needs}
    scenarios = ordered_scenarios()
    assert len(scenarios) > 20
    needs |= {n for s in scenarios for n in s.needs}
    assert needs - set(SHOWN_BY) == set()
    assert set(SHOWN_BY.values()) <= set(BY_NAME)


def test_each_equivalent_mutant_is_argued_beside_a_row():
    from lse.spec.rows import EQUIVALENT_MUTANTS
    from lse.spec.table import rows_by_id

    ids, rows = {m.id for m in MUTANTS}, rows_by_id()
    for mutant, (row, why) in EQUIVALENT_MUTANTS.items():
        assert mutant in ids and row in rows and len(why) > 80
