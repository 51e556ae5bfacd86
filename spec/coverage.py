"""Rows × checks: which named checks are bound to each row, which rows are
orphans, and the coverage table of a run (rows × has-check × passed)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

from lse.spec import (
    checks_behaviour, checks_body, checks_embeddings, checks_http, checks_info, checks_limits, checks_messages,
    checks_responses, checks_stream, checks_structured, startup,
)
from lse.spec.checks import CHECKS
from lse.spec.context import Recorder
from lse.spec.rows import Row, ThinkingModel
from lse.spec.table import all_rows

# The modules whose @named checks fill CHECKS: it is whole only once all are imported.
CHECK_MODULES = (checks_behaviour, checks_body, checks_http, checks_info, checks_limits, checks_stream,
                 checks_structured, startup, checks_responses, checks_messages, checks_embeddings)
PASSED, FAILED, MANUAL, SKIPPED, UNEXERCISED = "passed", "failed", "manual", "skipped", "not exercised"


def bindings() -> dict[str, list[str]]:
    """row id -> the named checks bound to it."""
    out: dict[str, list[str]] = {}
    for check in CHECKS.values():
        for row in check.rows:
            out.setdefault(row, []).append(check.name)
    return out


def orphans(rows: tuple[Row, ...] | None = None) -> list[str]:
    """Rows with no check bound and no reason why not."""
    bound = bindings()
    return [r.id for r in (all_rows() if rows is None else rows) if r.id not in bound and not r.manual]


def unknown_bindings() -> list[tuple[str, str]]:
    """(check, row id) pairs naming a row that does not exist."""
    ids = {r.id for r in all_rows()}
    return [(c.name, row) for c in CHECKS.values() for row in c.rows if row not in ids]


def manual_and_bound() -> list[str]:
    """Rows marked manual that a check is bound to anyway: one of the two is wrong."""
    bound = bindings()
    return [r.id for r in all_rows() if r.manual and r.id in bound]


@dataclass(frozen=True)
class Line:
    row: Row
    checks: tuple[str, ...]
    status: str
    passes: int
    detail: str

    def as_json(self) -> dict[str, Any]:
        return {"id": self.row.id, "kind": type(self.row).__name__, "cite": str(self.row.cite),
                "text": self.row.text, "needs": list(self.row.needs), "manual": self.row.manual,
                "checks": list(self.checks), "status": self.status, "passes": self.passes, "detail": self.detail}


def _skip_reason(row: Row, caps: frozenset[str]) -> str:
    missing = sorted(set(row.needs) - caps)
    fixture = f" (fixture {row.fixture})" if isinstance(row, ThinkingModel) else ""
    return f"needs {', '.join(missing)}{fixture}"


def table(recorder: Recorder, caps: frozenset[str]) -> list[Line]:
    bound = bindings()
    lines = []
    for row in all_rows():
        result = recorder.rows.get(row.id)
        checks = tuple(bound.get(row.id, ()))
        if row.manual:
            lines.append(Line(row, checks, MANUAL, 0, row.manual))
        elif result and result.failures:
            lines.append(Line(row, checks, FAILED, result.passed, " | ".join(result.failures)))
        elif result and result.passed:
            lines.append(Line(row, checks, PASSED, result.passed, ""))
        elif not set(row.needs) <= caps:
            lines.append(Line(row, checks, SKIPPED, 0, _skip_reason(row, caps)))
        else:
            lines.append(Line(row, checks, UNEXERCISED, 0, "no check saw a reply this row applies to"))
    return lines


def summary(lines: list[Line]) -> dict[str, Any]:
    counts = Counter(line.status for line in lines)
    skipped = Counter(line.detail for line in lines if line.status == SKIPPED)
    with_check = sum(1 for line in lines if line.checks)
    return {"rows": len(lines), "with_check": with_check, **{s: counts.get(s, 0) for s in
            (PASSED, FAILED, SKIPPED, MANUAL, UNEXERCISED)}, "skipped_by_reason": dict(skipped)}


def coverage_line(s: dict[str, Any]) -> str:
    return (f"lse-spec coverage: {s['rows']} rows, {s['with_check']} with a check "
            f"({100 * s['with_check'] // max(1, s['rows'])}%); {s[PASSED]} passed, {s[FAILED]} failed, "
            f"{s[SKIPPED]} skipped, {s[UNEXERCISED]} not exercised, {s[MANUAL]} manual")


def format_table(lines: list[Line]) -> str:
    """One line per row: id, has-check, status, and why when not passed."""
    width = max(len(line.row.id) for line in lines)
    out = [f"{'row':<{width}}  check  {'status':<13}  detail"]
    for line in lines:
        has = "yes" if line.checks else "no"
        out.append(f"{line.row.id:<{width}}  {has:<5}  {line.status:<13}  {line.detail[:160]}")
    return "\n".join(out)
