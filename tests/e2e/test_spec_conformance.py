"""lse-spec against live lse-server processes, one per fixture the rows need.

Each server runs the whole spec (profile dev unless LSE_SPEC_PROFILE says
otherwise) through ``lse.spec.runner.run`` in-process and must show zero
failures. The last test checks the union: every row with a check passed on at
least one of the servers, except those no fixture here can show.
"""

from __future__ import annotations

import pytest

from lse.spec import matrix
from lse.spec.coverage import FAILED, PASSED, coverage_line
from lse.spec.table import fixtures_named
from lse.spec.runner import Report, run, run_process_rows

# The matrix is data in lse.spec.matrix: the mutation tool runs the same servers.
SERVERS = matrix.SERVERS
# Rows no server above can show, and why.
UNREACHABLE: dict[str, str] = {}
REPORTS: dict[str, Report] = {}


def test_servers_cover_the_fixture_rows():
    assert set(fixtures_named()) <= {server.fixture for server in SERVERS}


@pytest.mark.parametrize("server", SERVERS, ids=[server.name for server in SERVERS])
def test_server_conforms(lse_server, lse_server_log_path, fixture_model, tmp_path, server):
    model = matrix.model_dir(server, fixture_model, tmp_path)
    if server.startup:
        report = run_process_rows(str(model), broken_template=str(fixture_model(matrix.BROKEN_TEMPLATE)))
    else:
        with lse_server(model, *server.options) as (base_url, process):
            report = run(base_url, api_key=server.api_key, server_log=str(lse_server_log_path(process)),
                         model_dir=str(model), expect=[c for c, name in matrix.SHOWN_BY.items() if name == server.name])
    REPORTS[server.name] = report
    shown = set(report.facts.get("capabilities") or [])
    assert {c for c, name in matrix.SHOWN_BY.items() if name == server.name} <= shown, sorted(shown)
    print(f"{server.name}: {coverage_line(report.summary) if report.lines else report.error}")
    assert report.error == ""
    failed = [f"{line.row.id} ({line.row.cite}): {line.detail}" for line in report.lines if line.status == FAILED]
    broken = [f"{s.name}: {s.status} {s.detail}" for s in report.scenarios if s.status in ("failed", "error")]
    assert failed == [] and broken == [], "\n".join(failed + broken)


def test_every_checked_row_passed_somewhere():
    if len(REPORTS) != len(SERVERS):
        pytest.skip("runs after every server's test")
    passed = {line.row.id for report in REPORTS.values() for line in report.lines if line.status == PASSED}
    lines = max((report.lines for report in REPORTS.values()), key=len)
    missing = [line.row.id for line in lines
               if line.checks and not line.row.manual and line.row.id not in passed | set(UNREACHABLE)]
    print(f"union of {len(REPORTS)} servers: {len(passed)} of {len(lines)} rows passed")
    assert missing == []
