"""lse-spec: run the spec's checks against a live LSE server over HTTP.

    lse-spec --url http://127.0.0.1:8080 [--api-key K] [--model ID] [--profile ci]
             [--max-tokens-cap N] [--server-log FILE] [--model-dir DIR] [--report [report.json]]
             [--only NAME]

It reads what the server serves (/v1/models, /v1/lse/model_info), decides
which rows apply (a row for another fixture's thinking table, or for an
operator option the server was not started with, is skipped and counted),
runs every scenario, prints the coverage table and writes a JSON report.
Exit status: 0 when nothing failed, 1 on any failure, 2 when the server
could not be read at all. Only HTTP: nothing of lse.runtime or lse.api.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import traceback
from dataclasses import dataclass, field
from typing import Any

import httpx

from lse.compiler.iree_compile import VersionAction
from lse.spec import (
    scenarios_embeddings, scenarios_generation, scenarios_limits, scenarios_messages, scenarios_requests,
    scenarios_responses, scenarios_sampling, scenarios_structured, scenarios_surface, scenarios_thinking,
    scenarios_tools,
)
from lse.spec.client import Client
from lse.spec.context import SCENARIOS, Abort, Context, Recorder, Scenario, Unobservable
from lse.spec.coverage import FAILED, Line, coverage_line, format_table, summary, table
from lse.spec.facts import DiscoveryError, Facts, discover
from lse.spec.profiles import chosen
from lse.spec.schemathesis_run import run_schemathesis
from lse.spec.startup import default_command, run_startup

# The modules whose @scenario functions fill SCENARIOS, in the order they run.
SCENARIO_MODULES = (scenarios_surface, scenarios_requests, scenarios_generation, scenarios_limits, scenarios_sampling,
                    scenarios_thinking, scenarios_tools, scenarios_structured, scenarios_responses, scenarios_messages,
                    scenarios_embeddings)


def ordered_scenarios() -> list[Scenario]:
    """Every registered scenario, module by module in SCENARIO_MODULES' order."""
    rank = {module.__name__: i for i, module in enumerate(SCENARIO_MODULES)}
    return sorted(SCENARIOS, key=lambda s: rank.get(s.run.__module__, len(rank)))


@dataclass
class ScenarioResult:
    name: str
    status: str  # passed, failed, error, skipped, unobservable
    seconds: float
    detail: str = ""


@dataclass
class Report:
    url: str
    profile: str
    facts: dict[str, Any]
    lines: list[Line] = field(default_factory=list)
    scenarios: list[ScenarioResult] = field(default_factory=list)
    error: str = ""

    @property
    def summary(self) -> dict[str, Any]:
        return summary(self.lines)

    @property
    def failures(self) -> int:
        bad = sum(1 for s in self.scenarios if s.status in ("failed", "error"))
        return self.summary[FAILED] + bad + (1 if self.error else 0)

    def as_json(self) -> dict[str, Any]:
        return {"url": self.url, "profile": self.profile, "facts": self.facts, "error": self.error,
                "summary": self.summary if self.lines else {}, "scenarios": [s.__dict__ for s in self.scenarios],
                "rows": [line.as_json() for line in self.lines]}


def _facts_json(facts: Facts) -> dict[str, Any]:
    return {"model": facts.model_id, "context_length": facts.context_length, "levels": list(facts.level_ids),
            "cap": facts.cap, "capabilities": sorted(facts.caps)}


def _run_one(ctx: Context, item: Scenario) -> ScenarioResult:
    if not ctx.facts.has(item.needs):
        missing = sorted(set(item.needs) - ctx.facts.caps)
        return ScenarioResult(item.name, "skipped", 0.0, f"needs {', '.join(missing)}")
    ctx.scenario = item.name
    start = time.monotonic()
    failures_before = _failure_count(ctx.recorder)
    try:
        item.run(ctx)
        # A soft check (ctx.soft, attempt) records its failure and carries on:
        # the scenario still failed.
        recorded = _failure_count(ctx.recorder) - failures_before
        status, detail = ("failed", f"{recorded} checks failed") if recorded else ("passed", "")
    except Abort as stop:
        status, detail = "failed", str(stop)
    except Unobservable as why:
        status, detail = "unobservable", str(why)
    except Exception as exc:  # a reply so far off the spec that a scenario could not read it
        status, detail = "error", "".join(traceback.format_exception_only(type(exc), exc)).strip()
        ctx.recorder.errors.append(f"[{item.name}] {traceback.format_exc(limit=4)}")
    return ScenarioResult(item.name, status, round(time.monotonic() - start, 2), detail)


def _failure_count(recorder: Recorder) -> int:
    return recorder.failed_checks


def run(url: str, *, api_key: str | None = None, model: str | None = None, profile: str | None = None,
        max_tokens_cap: int | None = None, server_log: str | None = None, only: list[str] | None = None,
        schemathesis: bool = False, model_dir: str | None = None, fail_fast: bool = False,
        expect: list[str] | None = None, echo=print) -> Report:
    """Run every scenario (or those named in ``only``) against the server at ``url``;
    with ``schemathesis``, Schemathesis over its /openapi.json too (one more scenario)."""
    chosen_profile = chosen(profile)
    with Client(url, api_key=api_key) as client:
        try:
            facts = discover(client, max_tokens_cap=max_tokens_cap, server_log=server_log, model_dir=model_dir)
        except (DiscoveryError, httpx.HTTPError, OSError) as exc:
            return Report(url, chosen_profile.name, {}, error=f"discovery failed: {exc}")
        ctx = Context(client, facts, chosen_profile, Recorder(), model=model)
        report = Report(url, chosen_profile.name, _facts_json(facts))
        missing = sorted(set(expect or ()) - facts.caps)
        if missing:
            # The rows that need them would be skipped, not failed: a server that
            # stopped showing what it was started to show hides every one of them.
            report.error = f"the server does not show the capabilities it was expected to: {', '.join(missing)}"
        for item in ordered_scenarios():
            if only and item.name not in only:
                continue
            result = _run_one(ctx, item)
            echo(f"  {result.status:<12} {result.name} ({result.seconds}s) {result.detail[:200]}")
            report.scenarios.append(result)
            if fail_fast and result.status in ("failed", "error"):
                break
        report.lines = table(ctx.recorder, facts.caps)
        if schemathesis:
            status, seconds, detail = run_schemathesis(url, api_key)
            echo(f"  {status:<12} schemathesis ({seconds}s) {detail.splitlines()[-1][:200] if detail else ''}")
            report.scenarios.append(ScenarioResult("schemathesis", status, seconds, detail))
        return report


def run_process_rows(model_dir: str, *, broken_template: str | None = None, server_command: str | None = None,
                     lse_command: str | None = None, echo=print) -> Report:
    """The startup rows (lse-spec --startup-model): lse-server and lse run as processes here."""
    recorder = run_startup(model_dir, broken_template, server_command or default_command("lse-server"),
                           lse_command or default_command("lse"), echo=echo)
    report = Report("(processes)", "startup", {"model": model_dir, "capabilities": ["process"]})
    report.lines = [line for line in table(recorder, frozenset({"process"})) if "process" in line.row.needs]
    return report


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="lse-spec", description="Check a live LSE server against its specification.")
    p.add_argument("--version", action=VersionAction)
    p.add_argument("--url", help="the server's base URL, e.g. http://127.0.0.1:8080")
    p.add_argument("--startup-model", help="run the startup rows instead: lse-server and lse on this model, "
                   "as processes on this machine")
    p.add_argument("--broken-template", help="with --startup-model: a model whose chat template does not parse")
    p.add_argument("--server-command", help="with --startup-model: how to run lse-server (default: lse-server)")
    p.add_argument("--lse-command", help="with --startup-model: how to run lse (default: lse)")
    p.add_argument("--api-key", help="the server's key, if it was started with one")
    p.add_argument("--model", help="the model name to send in requests (default: none, the served model)")
    p.add_argument("--profile", choices=("dev", "ci"),
                   help="dev (few examples) or ci; default $LSE_SPEC_PROFILE or dev")
    p.add_argument("--max-tokens-cap", type=int, help="the server's --max-tokens cap, if model_info does not say it")
    p.add_argument("--server-log", help="the server's log file, to check the log lines the spec documents")
    p.add_argument("--report", nargs="?", const="-", help="write the JSON report here (no path: to stdout)")
    p.add_argument("--model-dir", help="the served model's directory, to check generation_defaults against its files")
    p.add_argument("--only", action="append", help="run only this scenario (repeatable)")
    p.add_argument("--schemathesis", action="store_true",
                   help="also run Schemathesis over the server's /openapi.json (a scenario in the report)")
    p.add_argument("--expect", action="append", metavar="CAPABILITY",
                   help="fail unless the server shows this capability (facts.py; repeatable), so the rows "
                        "that need it are run rather than skipped")
    p.add_argument("--fail-fast", action="store_true", help="stop at the first scenario that fails")
    p.add_argument("--quiet", action="store_true", help="print failures and the coverage line, not the whole table")
    return p


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if not args.url and not args.startup_model:
        parser.error("--url (a running server) or --startup-model (the startup rows) is required")
    print(f"lse-spec: {args.url or 'startup rows on ' + args.startup_model}")
    if args.startup_model:
        report = run_process_rows(args.startup_model, broken_template=args.broken_template,
                                  server_command=args.server_command, lse_command=args.lse_command)
        return _finish(args, report)
    report = run(args.url, api_key=args.api_key, model=args.model, profile=args.profile,
                 max_tokens_cap=args.max_tokens_cap, server_log=args.server_log, only=args.only,
                 schemathesis=args.schemathesis, model_dir=args.model_dir, fail_fast=args.fail_fast, expect=args.expect)
    return _finish(args, report)


def _finish(args: argparse.Namespace, report: Report) -> int:
    if args.report == "-":
        print(json.dumps(report.as_json(), indent=2))
    elif args.report:
        with open(args.report, "w") as fh:
            json.dump(report.as_json(), fh, indent=2)
    if report.error:
        print(f"lse-spec: {report.error}", file=sys.stderr)
        return 2
    if not args.quiet:
        print(format_table(report.lines))
    for line in report.lines:
        if line.status == FAILED:
            print(f"FAILED {line.row.id} ({line.row.cite}): {line.detail}")
    for result in report.scenarios:
        if result.status in ("error", "failed") and result.name == "schemathesis":
            print(f"FAILED schemathesis:\n{result.detail}")
        elif result.status == "error":
            print(f"ERROR in scenario {result.name}: {result.detail}")
    print(coverage_line(report.summary))
    return 1 if report.failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
