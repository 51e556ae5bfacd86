"""Process-level rows: what ``lse-server`` and ``lse`` do at startup, which an
HTTP client never sees (the process exits before it serves). ``lse-spec
--startup --model DIR`` runs each case as a process on this machine and
reports the rows in the same table as the HTTP run.

Each case runs the command with its options and environment and expects
either an exit with status 1 and a message (docs/spec/lse-api.md, "--no-cpu-fallback":
"lse exits with status 1"; lse-server does the same) or a server that
comes up (/health 200), with a log line when the row names one. A model
that needs no device (--pool cpu:0, or no backend at all) is served by the
host interpreter, so every case runs on any machine.
"""

from __future__ import annotations

import os
import shlex
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from lse.spec.checks import expect, named
from lse.spec.context import Recorder

PROCESS_TIMEOUT_SECS = 300.0
CLEAN_ENV = ("LSE_API_KEY", "LSE_REQUIRE_DEVICE_KERNELS", "LSE_BACKENDS")
NO_BACKEND = {"LSE_BACKENDS": "none"}  # no backend's name: every one declines, on any machine


@dataclass(frozen=True)
class Case:
    rows: tuple[str, ...]
    args: tuple[str, ...]
    env: dict[str, str] = field(default_factory=dict)
    exit_message: str | None = None  # None: the server comes up
    log_line: str | None = None  # a line the server's log must hold once it is up
    lse: bool = False  # run the lse command line instead of lse-server
    broken_model: bool = False  # run on the model whose chat template does not parse


CASES = (
    Case(("fallback.no_backend",), ("--no-cpu-fallback",), NO_BACKEND,
         exit_message="no device backend came up and CPU fallback is disabled (--no-cpu-fallback): "
                      "cuda:0: not in LSE_BACKENDS"),
    Case(("fallback.no_backend",), (), NO_BACKEND,
         log_line="no device backend came up; the CPU interpreter runs the model (cuda:0: not in LSE_BACKENDS"),
    Case(("fallback.cpu_pool",), ("--pool", "cpu:0", "--no-cpu-fallback"),
         exit_message="device cpu:0 is refused: it has no device code generator"),
    Case(("fallback.cpu_pool",), ("--pool", "cpu:0")),
    Case(("fallback.pool_down",), ("--pool", "hrx:0"), exit_message="device hrx:0 did not come up"),
    Case(("fallback.pool_down",), ("--pool", "hrx:0", "--no-cpu-fallback"), exit_message="device hrx:0 did not come up"),
    Case(("fallback.env",), ("--pool", "cpu:0"), {"LSE_REQUIRE_DEVICE_KERNELS": "1"},
         exit_message="device cpu:0 is refused: it has no device code generator"),
    Case(("fallback.exit",), ("--pool", "cpu:0", "--no-cpu-fallback", "-p", "Hi"), lse=True,
         exit_message="device cpu:0 is refused"),
    Case(("thinking.unreadable_template",), (), broken_model=True,
         exit_message="chat_template.jinja: line 5: Encountered unknown tag 'endfo'"),
    Case(("auth.loopback",), (), log_line="listening on http://127.0.0.1:"),
)


@dataclass
class Outcome:
    status: int | None  # None: still running when it came up
    output: str
    healthy: bool


@named("fallback.no_backend", "fallback.cpu_pool", "fallback.pool_down", "fallback.env", "fallback.exit",
       "thinking.unreadable_template", dynamic=True)
def exits_with_message(outcome: Outcome, message: str) -> None:
    """The process exits with status 1 and says why."""
    expect(outcome.status == 1 and message in outcome.output,
           f"<exit {outcome.status}, healthy {outcome.healthy}: {outcome.output[-300:]!r}>",
           f"exit status 1 and {message!r}")


@named("fallback.no_backend", "fallback.cpu_pool", "auth.loopback", dynamic=True)
def comes_up(outcome: Outcome, log_line: str | None) -> None:
    """The server comes up (/health 200), its log holding ``log_line``."""
    expect(outcome.healthy and (log_line is None or log_line in outcome.output),
           f"<exit {outcome.status}, healthy {outcome.healthy}: {outcome.output[-300:]!r}>",
           f"/health 200{' and the log line ' + repr(log_line) if log_line else ''}")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _env(extra: dict[str, str]) -> dict[str, str]:
    return {**{k: v for k, v in os.environ.items() if k not in CLEAN_ENV}, **extra}


def run_process(cmd: list[str], env: dict[str, str], port: int | None) -> Outcome:
    """Run ``cmd`` until it exits, or (with ``port``) until /health answers 200, then stop it.
    A process that is not up within PROCESS_TIMEOUT_SECS (a first compile takes minutes) is stopped."""
    with tempfile.TemporaryFile() as log:
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env)
        healthy = False
        deadline = time.monotonic() + PROCESS_TIMEOUT_SECS
        while proc.poll() is None and time.monotonic() < deadline and not healthy:
            if port is not None:
                try:
                    healthy = httpx.get(f"http://127.0.0.1:{port}/health", timeout=2).status_code == 200
                except httpx.TransportError:
                    pass
            time.sleep(0.2)
        status = proc.poll()
        if status is None:
            proc.terminate()
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        log.seek(0)
        return Outcome(status, log.read().decode(errors="replace"), healthy)


def default_command(name: str) -> str:
    """The console script beside this interpreter, else on PATH."""
    beside = Path(sys.executable).with_name(name)
    return str(beside) if beside.exists() else name


def run_startup(model: str, broken_model: str | None, server_command: str, lse_command: str,
                echo=print) -> Recorder:
    """Every case; the outcome of each recorded against its rows."""
    recorder = Recorder()
    for case in CASES:
        if case.broken_model and broken_model is None:
            continue
        port = None if case.lse else _free_port()
        base = shlex.split(lse_command if case.lse else server_command)
        target = broken_model if case.broken_model else model
        cmd = base + [target] + ([] if case.lse else ["--port", str(port)]) + list(case.args)
        # A server that comes up where it should have exited is stopped at once: it failed the case.
        outcome = run_process(cmd, _env(case.env), port)
        check, args = ((exits_with_message, (outcome, case.exit_message)) if case.exit_message
                       else (comes_up, (outcome, case.log_line)))
        try:
            check(*args)
            recorder.passed(case.rows)
            status = "passed"
        except AssertionError as failure:
            recorder.failed(case.rows, f"[startup {' '.join(case.args)}] {failure}")
            status = "failed"
        echo(f"  {status:<12} startup {'lse' if case.lse else 'lse-server'} {' '.join(case.args)} "
             f"{' '.join(f'{k}={v}' for k, v in case.env.items())}")
    return recorder
