"""lse.tools.device_check's report: the JSON as measured, and a markdown
page of it (the machine, the flags, each test's outcome with IREE's message
for a failure, the throughput tables)."""

from __future__ import annotations

import json
from pathlib import Path

JSON_NAME = "device-check.json"
MD_NAME = "device-check.md"


def _num(x: float | None, digits: int = 0) -> str:
    return "—" if x is None else f"{x:,.{digits}f}"


def _pct(x: float | None) -> str:
    return "—" if x is None else f"{100 * x:.1f}%"


def _first_line(text: str) -> str:
    return " ".join((text or "").split())[:300]


def tests_section(tests: dict) -> list[str]:
    counts: dict[str, int] = {}
    for case in tests["cases"]:
        counts[case["outcome"]] = counts.get(case["outcome"], 0) + 1
    summary = ", ".join(f"{n} {k}" for k, n in sorted(counts.items())) or "no test ran"
    lines = ["## Device tests", "", f"`{tests['command']}`: exit {tests['returncode']}, {summary}, "
             f"{tests['seconds']} s", "", "| test | outcome | s | message |", "|---|---|---|---|"]
    for case in tests["cases"]:
        lines.append(f"| `{case['name']}` | {case['outcome']} | {case['seconds']} | "
                     f"{_first_line(case.get('message', '')).replace('|', '/')} |")
    failed = [c for c in tests["cases"] if c["outcome"] in ("failed", "error")]
    for case in failed:
        lines += ["", f"### {case['name']}", "", "```", case.get("text", "").rstrip(), "```"]
    if not tests["cases"]:
        lines += ["", "```", tests.get("output_tail", "").rstrip(), "```"]
    return lines


def bench_section(row: dict) -> list[str]:
    lines = [f"## Throughput: {row['case']} ({row['model']}, {row['slots']} slots, context {row['kv_len']})", ""]
    if row.get("weight_bytes_per_token"):
        lines += [f"Weights read per decode step: {row['weight_bytes_per_token'] / 2**20:.1f} MiB. "
                  f"Device {row.get('device', '?')}, opened in {row.get('open_s', '?')} s.", ""]
    if row["prefill"]:
        lines += ["| prefill | s | tok/s |", "|---|---|---|"]
        lines += [f"| {p['tokens']} tokens | {p['seconds']} | {_num(p['tok_s'])} |" for p in row["prefill"]]
        lines.append("")
    if row["decode"]:
        lines += ["| decode | tokens | s | tok/s | HBM share |", "|---|---|---|---|---|"]
        lines += [f"| {d['streams']} stream(s) | {d['tokens']} | {d['seconds']} | {_num(d['tok_s'])} | "
                  f"{_pct(d.get('hbm_share'))} |" for d in row["decode"]]
        lines.append("")
    if row.get("error"):
        lines += ["It stopped:", "", "```", row["error"].rstrip(), "```", ""]
    return lines


def to_markdown(report: dict) -> str:
    m, target = report["machine"], report["target"]
    lines = ["# LSE device check", "", f"Started {report['started']}.", "",
             "| | |", "|---|---|", *(f"| {k} | {v} |" for k, v in m.items()), "",
             f"Target `{target['name']}`: `{' '.join(target['flags'])}`", ""]
    if report.get("seeded"):
        lines += ["| case | artifact |", "|---|---|", *(f"| {k} | {v} |" for k, v in report["seeded"].items()), ""]
    if "tests" in report:
        lines += [*tests_section(report["tests"]), ""]
    for row in report.get("bench", []):
        lines += bench_section(row)
    return "\n".join(lines).rstrip() + "\n"


def write_report(report: dict, out: Path) -> tuple[Path, Path]:
    out.mkdir(parents=True, exist_ok=True)
    (out / JSON_NAME).write_text(json.dumps(report, indent=2) + "\n")
    (out / MD_NAME).write_text(to_markdown(report))
    return out / JSON_NAME, out / MD_NAME
