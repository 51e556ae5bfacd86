"""Mutation testing of the spec kit: plant one realistic bug at a time in the
modules that implement the documents, run the kit against servers running
the mutant, and count the mutants the kit kills.

    python dev/mutants.py [--only ID ...] [--sample N] [--kit-rev REV]
                                [--json FILE] [--no-baseline] [--list] [--check]

Each mutant (``dev/mutants_data.py``) is data: a file, an exact snippet
that must occur exactly once in it (a refactor that moves the code makes the
mutant refuse to run, rather than silently mutate nothing), its replacement,
the spec section the change violates, and the servers of the kit's matrix
(``lse.spec.matrix``) whose rows cover that section.

The mutant is never applied to the tree this runs from: the package is
copied into a temporary overlay (``<tmp>/lse/<subpackage>``, a regular
package that shadows the installed one on PYTHONPATH), the copy is mutated,
and ``lse-server`` runs from the overlay. The kit runs as its own process
(``python -m lse.spec.runner``) from the working tree, or with ``--kit-rev``
from the kit (``spec/``) as it was at a git revision, to measure an older kit
against the same mutants. A mutant is killed when the kit reports a failure
on any of its servers, or the server cannot start or answer; it survives
when every server's run passes. Each server is first run unmutated: one the
kit already fails there cannot kill anything, and is left out. A survivor
argued equivalent beside its row (``lse.spec.rows.EQUIVALENT_MUTANTS``) is
counted apart from the kill rate.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from lse.spec.matrix import BROKEN_TEMPLATE, BY_NAME, SHOWN_BY, Server, model_dir
from lse.spec.rows import EQUIVALENT_MUTANTS
from mutants_data import MUTANTS, Mutant

ROOT = Path(__file__).resolve().parent.parent  # the repository: this file is dev/mutants.py
PACKAGES = ("compiler", "runtime", "api", "spec", "tools", "fixtures", "capi")
START_TIMEOUT_SECS = 600.0  # a first start compiles the fixture (cached after)
KIT_TIMEOUT_SECS = 600.0
KILLED, SURVIVED, REFUSED, EQUIVALENT = "killed", "survived", "refused", "equivalent"
SERVER_MAIN = "import sys; from lse.api.cli import main; sys.exit(main())"
LSE_MAIN = "import sys; from lse.runtime.cli import main; sys.exit(main())"


class SnippetError(Exception):
    """The mutant's snippet does not occur exactly once in its file."""


def mutated_text(mutant: Mutant, source: str) -> str:
    """``source`` with the mutant applied; refuses a snippet found 0 or 2+ times."""
    found = source.count(mutant.original)
    if found != 1:
        raise SnippetError(f"{mutant.id}: the snippet occurs {found} times in {mutant.file} (must be exactly once): "
                           f"{mutant.original!r}")
    return source.replace(mutant.original, mutant.replacement)


def check_all(root: Path = ROOT) -> list[str]:
    """Every mutant whose snippet no longer matches exactly once, with why."""
    problems = []
    for mutant in MUTANTS:
        try:
            mutated_text(mutant, (root / mutant.file).read_text())
        except (SnippetError, OSError) as e:
            problems.append(str(e))
    return problems


def _ignore(_dir: str, names: list[str]) -> list[str]:
    return [n for n in names if n in ("__pycache__", "build") or n.endswith((".so", ".pyc"))]


def build_overlay(dest: Path, root: Path = ROOT, kit_rev: str | None = None) -> Path:
    """``dest/lse``: a copy of every subpackage (``spec`` from ``kit_rev`` when given)."""
    pkg = dest / "lse"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    for name in PACKAGES:
        shutil.copytree(root / name, pkg / name, ignore=_ignore)
    if kit_rev is not None:
        shutil.rmtree(pkg / "spec")
        archive = subprocess.run(["git", "-C", str(root), "archive", kit_rev, "spec"], check=True,
                                 capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", str(pkg)], input=archive, check=True)
    return dest


def apply(mutant: Mutant, overlay: Path) -> Path:
    """Mutate the overlay's copy of the mutant's file; returns that file."""
    target = overlay / "lse" / mutant.file
    target.write_text(mutated_text(mutant, target.read_text()))
    return target


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _env(pythonpath: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("LSE_API_KEY", "LSE_REQUIRE_DEVICE_KERNELS")}
    env["PYTHONPATH"] = str(pythonpath)
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def _fixture_dir(name: str) -> str:
    from lse.fixtures.make_fixtures import fixture_dir

    return str(fixture_dir(name))


def _kit_takes(kit_path: Path, option: str) -> bool:
    return option in (kit_path / "lse" / "spec" / "runner.py").read_text()


@dataclass
class Outcome:
    mutant: str
    status: str
    server: str = ""
    seconds: float = 0.0
    detail: str = ""


@dataclass
class KitRun:
    failed: bool
    detail: str
    seconds: float = 0.0
    lines: list[str] = field(default_factory=list)


def run_kit(server: Server, server_path: Path, kit_path: Path, log_dir: Path) -> KitRun:
    """Start ``server`` from ``server_path``'s package and run the kit from ``kit_path``'s against it."""
    port = _free_port()
    log = log_dir / f"{server.name}.log"
    model = model_dir(server, _fixture_dir, log_dir)
    if server.startup:
        return _run_startup_rows(model, server_path, kit_path)
    cmd = [sys.executable, "-c", SERVER_MAIN, str(model), "--host", "127.0.0.1", "--port", str(port), *server.options]
    start = time.monotonic()
    with open(log, "wb") as fh:
        proc = subprocess.Popen(cmd, stdout=fh, stderr=subprocess.STDOUT, env=_env(server_path),
                                start_new_session=True)
    try:
        why = _wait_healthy(f"http://127.0.0.1:{port}", proc, log)
        if why:
            return KitRun(True, why, time.monotonic() - start)
        kit = [sys.executable, "-m", "lse.spec.runner", "--url", f"http://127.0.0.1:{port}", "--quiet",
               "--server-log", str(log)] + (["--api-key", server.api_key] if server.api_key else [])
        expected = [arg for cap, name in SHOWN_BY.items() if name == server.name for arg in ("--expect", cap)]
        # Options the kit at --kit-rev may predate.
        for option, extra in (("--model-dir", ["--model-dir", str(model)]), ("--fail-fast", ["--fail-fast"]),
                              ("--expect", expected)):
            if _kit_takes(kit_path, option):
                kit += extra
        try:
            done = subprocess.run(kit, env=_env(kit_path), capture_output=True, text=True, timeout=KIT_TIMEOUT_SECS)
        except subprocess.TimeoutExpired:
            return KitRun(True, "the kit timed out against this server", time.monotonic() - start)
        out = done.stdout.splitlines() + done.stderr.splitlines()
        bad = [ln.strip() for ln in out if ln.startswith(("FAILED", "ERROR", "lse-spec: discovery"))
               or ln.strip().startswith(("failed ", "error "))]
        return KitRun(done.returncode != 0, "; ".join(bad)[:600] or f"exit {done.returncode}",
                      time.monotonic() - start, out)
    finally:
        _stop(proc)


def _run_startup_rows(model: Path, server_path: Path, kit_path: Path) -> KitRun:
    """The kit's startup rows, its lse-server and lse commands running the mutated package."""
    start = time.monotonic()
    env = f"env PYTHONPATH={shlex.quote(str(server_path))} {shlex.quote(sys.executable)} -c"
    kit = [sys.executable, "-m", "lse.spec.runner", "--quiet", "--startup-model", str(model),
           "--broken-template", _fixture_dir(BROKEN_TEMPLATE),
           "--server-command", f"{env} {shlex.quote(SERVER_MAIN)}", "--lse-command", f"{env} {shlex.quote(LSE_MAIN)}"]
    done = subprocess.run(kit, env=_env(kit_path), capture_output=True, text=True, timeout=KIT_TIMEOUT_SECS)
    out = done.stdout.splitlines() + done.stderr.splitlines()
    bad = [ln.strip() for ln in out if ln.startswith("FAILED") or ln.strip().startswith("failed ")]
    return KitRun(done.returncode != 0, "; ".join(bad)[:600] or f"exit {done.returncode}",
                  time.monotonic() - start, out)


def _wait_healthy(url: str, proc: subprocess.Popen, log: Path) -> str:
    deadline = time.monotonic() + START_TIMEOUT_SECS
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            tail = log.read_text(errors="replace")[-300:]
            return f"the server exited with status {proc.returncode} before /health answered 200: {tail}"
        try:
            status = httpx.get(f"{url}/health", timeout=5).status_code
        except httpx.TransportError:
            status = None
        if status == 200:
            return ""
        if status not in (None, 503):  # 503: still loading
            return f"/health answered HTTP {status}, not 200 or 503 (lse-server must answer it without a key)"
        time.sleep(0.2)
    return "the server did not become healthy"


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def baseline(names: set[str], kit_rev: str | None = None, echo=print) -> set[str]:
    """The servers on which the kit passes without a mutant: only a failure
    there that the unmutated server does not show can kill a mutant."""
    good = set()
    with tempfile.TemporaryDirectory(prefix="lse-mutant-base-") as tmp:
        tmp_path = Path(tmp)
        server_path, kit_path = build_overlay(tmp_path / "server"), build_overlay(tmp_path / "kit", kit_rev=kit_rev)
        for name in sorted(names):
            run = run_kit(BY_NAME[name], server_path, kit_path, tmp_path)
            echo(f"baseline  {name:<40} {run.seconds:>6.1f}s {'FAILS: ' + run.detail[:300] if run.failed else 'passes'}",
                 flush=True)
            if not run.failed:
                good.add(name)
    return good


def run_mutant(mutant: Mutant, kit_rev: str | None = None, usable: set[str] | None = None) -> Outcome:
    """Apply ``mutant`` to a fresh overlay and run the kit on its servers until one kills it."""
    start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="lse-mutant-") as tmp:
        tmp_path = Path(tmp)
        server_path = build_overlay(tmp_path / "server")
        kit_path = build_overlay(tmp_path / "kit", kit_rev=kit_rev)
        try:
            apply(mutant, server_path)
        except SnippetError as e:
            return Outcome(mutant.id, REFUSED, detail=str(e))
        for name in mutant.servers:
            if usable is not None and name not in usable:
                continue
            run = run_kit(BY_NAME[name], server_path, kit_path, tmp_path)
            if run.failed:
                return Outcome(mutant.id, KILLED, name, round(time.monotonic() - start, 1), run.detail)
    return Outcome(mutant.id, SURVIVED, ",".join(mutant.servers), round(time.monotonic() - start, 1))


def score(outcomes: list[Outcome]) -> dict[str, int | float]:
    """Counts and the kill rate; a survivor argued equivalent in spec/ (EQUIVALENT_MUTANTS) is
    counted apart and left out of the rate's denominator."""
    counts = Counter(EQUIVALENT if o.status == SURVIVED and o.mutant in EQUIVALENT_MUTANTS else o.status
                     for o in outcomes)
    ran = counts[KILLED] + counts[SURVIVED]
    return {"mutants": len(outcomes), KILLED: counts[KILLED], SURVIVED: counts[SURVIVED],
            EQUIVALENT: counts[EQUIVALENT], REFUSED: counts[REFUSED],
            "kill_rate": round(100.0 * counts[KILLED] / ran, 1) if ran else 0.0}


def chosen_mutants(only: list[str] | None, sample: int | None) -> list[Mutant]:
    if only:
        known = {m.id: m for m in MUTANTS}
        missing = [i for i in only if i not in known]
        if missing:
            raise SystemExit(f"unknown mutant ids: {', '.join(missing)}")
        return [known[i] for i in only]
    if sample:
        step = max(1, len(MUTANTS) // sample)
        return list(MUTANTS[::step][:sample])
    return list(MUTANTS)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python dev/mutants.py", description=__doc__.split("\n\n")[0])
    p.add_argument("--only", action="append", help="run this mutant id (repeatable)")
    p.add_argument("--sample", type=int, help="run N mutants spread over the list")
    p.add_argument("--kit-rev", help="run the kit (spec/) as it was at this git revision")
    p.add_argument("--json", help="write the outcomes here")
    p.add_argument("--list", action="store_true", help="list the mutants and exit")
    p.add_argument("--no-baseline", action="store_true",
                   help="skip the unmutated run of each server (when it was just seen to pass)")
    p.add_argument("--check", action="store_true", help="only check that every snippet matches exactly once")
    args = p.parse_args(argv)
    # SIGTERM unwinds like ^C, so the server of the mutant in flight is stopped too.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    if args.list:
        for m in MUTANTS:
            print(f"{m.id:<40} {m.file:<32} {m.section}")
        return 0
    problems = check_all()
    if args.check or problems:
        print("\n".join(problems) or f"all {len(MUTANTS)} snippets match exactly once")
        return 1 if problems else 0
    mutants = chosen_mutants(args.only, args.sample)
    names = {s for m in mutants for s in m.servers}
    usable = names if args.no_baseline else baseline(names, args.kit_rev)
    outcomes = []
    for mutant in mutants:
        outcome = run_mutant(mutant, args.kit_rev, usable)
        print(f"{outcome.status:<9} {mutant.id:<40} {outcome.seconds:>6}s {outcome.server} {outcome.detail[:160]}",
              flush=True)
        outcomes.append(outcome)
    result = score(outcomes)
    print(f"mutants: {result}")
    if args.json:
        Path(args.json).write_text(json.dumps({"score": result, "kit_rev": args.kit_rev, "usable": sorted(usable),
                                               "outcomes": [o.__dict__ for o in outcomes]}, indent=2))
    return 0 if result[SURVIVED] == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
