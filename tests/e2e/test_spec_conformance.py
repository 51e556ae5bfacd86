"""lse-spec against live lse-server processes, one per fixture the rows need.

Each server runs the whole spec (profile dev unless LSE_SPEC_PROFILE says
otherwise) through ``lse.spec.runner.run`` in-process and must show zero
failures. The last test checks the union: every row with a check passed on at
least one of the servers, except those no fixture here can show.
"""

from __future__ import annotations

import pytest

from lse.spec.coverage import FAILED, PASSED, coverage_line
from lse.spec.rows import fixtures_named
from lse.spec.runner import Report, run

API_KEY = "lse-spec-key"
# (fixture, lse-server options): every fixture the thinking table names, one
# server per generation-defaults case, the scripted replies, and the operator
# options (--api-key, --max-tokens, --temperature) the rows need.
SERVERS = [
    ("smollm_like", ("--kv-len", "512", "--api-key", API_KEY, "--max-tokens", "64")),
    ("qwen38_like", ("--kv-len", "1024")),
    ("qwen36_like", ("--kv-len", "1024", "--parallel", "2")),
    ("effort_levels", ("--kv-len", "1024")),
    ("no_template", ("--kv-len", "512")),
    ("gen_max_new", ("--kv-len", "512")),
    ("gen_max_length", ("--kv-len", "512")),
    ("gen_greedy", ("--kv-len", "512")),
    ("gen_embedded", ("--kv-len", "512", "--temperature", "0.5")),
    # 1024: the forced-call scenario's tools, at a byte per token, need more than 512
    ("scripted_tool_call", ("--kv-len", "1024")),
    ("scripted_bad_tool_call", ("--kv-len", "512")),
    ("scripted_reasoning", ("--kv-len", "512")),
    # silu declared kernel-less: its groups run on the CPU interpreter, so the
    # fallback rows (lse_warnings, lse_status counts, the log lines) apply.
    ("llama", ("--kv-len", "512", "--no-kernel", "llvm-cpu:silu")),
]
# Rows no server above can show, and why.
UNREACHABLE: dict[str, str] = {}
REPORTS: dict[str, Report] = {}


def test_servers_cover_the_fixture_rows():
    assert set(fixtures_named()) <= {name for name, _ in SERVERS}


@pytest.mark.parametrize("fixture,options", SERVERS, ids=[name + ("-fallback" if "--no-kernel" in opts else "") for name, opts in SERVERS])
def test_server_conforms(lse_server, lse_server_log_path, fixture_model, fixture, options):
    key = API_KEY if "--api-key" in options else None
    with lse_server(fixture_model(fixture), *options) as (base_url, process):
        report = run(base_url, api_key=key, server_log=str(lse_server_log_path(process)))
    REPORTS[" ".join((fixture, *options))] = report
    print(f"{fixture}: {coverage_line(report.summary) if report.lines else report.error}")
    assert report.error == ""
    failed = [f"{line.row.id} ({line.row.cite}): {line.detail}" for line in report.lines if line.status == FAILED]
    broken = [f"{s.name}: {s.status} {s.detail}" for s in report.scenarios if s.status in ("failed", "error")]
    assert failed == [] and broken == [], "\n".join(failed + broken)


def test_every_checked_row_passed_somewhere():
    if len(REPORTS) != len(SERVERS):
        pytest.skip("runs after every server's test")
    passed = {line.row.id for report in REPORTS.values() for line in report.lines if line.status == PASSED}
    lines = next(iter(REPORTS.values())).lines
    missing = [line.row.id for line in lines
               if line.checks and not line.row.manual and line.row.id not in passed | set(UNREACHABLE)]
    print(f"union of {len(REPORTS)} servers: {len(passed)} of {len(lines)} rows passed")
    assert missing == []
