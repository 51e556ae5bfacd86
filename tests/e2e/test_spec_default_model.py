"""lse-spec against ``lse-server`` with no argument: the default model
(SmolLM2-135M-Instruct, 4096 context, 8 slots), no option set. Issue #44's
proof: 0 failed rows there, where the fixtures of test_spec_conformance.py
had all passed while the real model failed the seed rows (a seeded reply
that depended on the prefix cache). About 5-6 minutes on 2 cores."""

from __future__ import annotations

import pytest

from lse.spec.coverage import FAILED, coverage_line
from lse.spec.runner import run
from lse.compiler.gguf.importer import ensure_default_model


@pytest.mark.timeout(1200)
def test_the_default_server_fails_no_row(lse_server, lse_server_log_path):
    with lse_server(None) as (base_url, process):
        report = run(base_url, server_log=str(lse_server_log_path(process)), model_dir=str(ensure_default_model()))
    print(coverage_line(report.summary) if report.lines else report.error)
    assert report.error == ""
    failed = [f"{line.row.id} ({line.row.cite}): {line.detail}" for line in report.lines if line.status == FAILED]
    broken = [f"{s.name}: {s.status} {s.detail}" for s in report.scenarios if s.status in ("failed", "error")]
    assert failed == [] and broken == [], "\n".join(failed + broken)
