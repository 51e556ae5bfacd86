"""Run iree-compile and read its diagnostics back onto graph nodes.

Every node carries a file-style location (``graph.node17``), so a dispatch
that a backend cannot translate is reported as
``graph.node17:17:0: error: failed to run translation of source executable``
(all failing dispatches in one compile; see shared notes, IREE 3.13 section 6).
"""

from __future__ import annotations

import argparse
import importlib.metadata
import platform
import re
import shlex
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import iree.compiler.version
from iree.compiler.tools.binaries import find_tool

COMPILER_VERSION = iree.compiler.version.VERSION
# Seconds between "still compiling" lines: iree-compile prints nothing while it
# works, and the default model takes minutes on a small machine.
HEARTBEAT_SECS = 10.0
_FAILED_NODE = re.compile(r"^graph\.node(\d+):\d+:\d+: error: failed to run translation of source executable", re.M)


@dataclass
class IreeCompileError(RuntimeError):
    command: list[str]
    diagnostics: str

    @property
    def failing_nodes(self) -> frozenset[int]:
        return frozenset(int(m) for m in _FAILED_NODE.findall(self.diagnostics))

    def __str__(self) -> str:
        tail = "\n".join(self.diagnostics.strip().splitlines()[-30:])
        return f"iree-compile failed ({shlex.join(self.command)}):\n{tail}"


def command_line(mlir_path: Path, vmfb_path: Path, flags: list[str]) -> list[str]:
    return [find_tool("iree-compile"), str(mlir_path), "-o", str(vmfb_path), *flags]


def run_iree_compile(mlir_path: Path, vmfb_path: Path, flags: list[str],
                     heartbeat: Callable[[str], None] | None = None,
                     every: float = HEARTBEAT_SECS) -> list[str]:
    """Compile; return the exact command line, or raise IreeCompileError.

    While iree-compile runs, ``heartbeat`` (default: a plain line on stderr,
    as the pipeline's progress lines are) is told the elapsed time every
    ``every`` seconds, so a long compile is never silent.
    """
    cmd = command_line(mlir_path, vmfb_path, flags)
    say = heartbeat or _stderr_line
    start = time.monotonic()
    # Diagnostics go to a file, not a pipe: a pipe that fills while we only
    # wait would block iree-compile.
    with tempfile.TemporaryFile("w+") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, text=True)
        while True:
            try:
                proc.wait(timeout=every)
                break
            except subprocess.TimeoutExpired:
                say(f"iree-compile {vmfb_path.name}: still compiling, {time.monotonic() - start:.0f} s elapsed")
        out.seek(0)
        diagnostics = out.read()
    if proc.returncode != 0:
        raise IreeCompileError(cmd, diagnostics)
    return cmd


def _stderr_line(message: str) -> None:
    print(f"lse-compile: {message}", file=sys.stderr, flush=True)


def version_text(prog: str) -> str:
    """``--version`` of every LSE command: LSE, the IREE compiler and runtime, Python."""
    def installed(dist: str) -> str:
        try:
            return importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            return "not installed"

    return (f"{prog} (LSE) {installed('lse')}\n"
            f"IREE compiler {installed('iree-base-compiler')} ({COMPILER_VERSION})\n"
            f"IREE runtime {installed('iree-base-runtime')}\n"
            f"Python {platform.python_version()} ({sys.executable})")


class VersionAction(argparse.Action):
    """``--version``: prints ``version_text`` as is (argparse's own version
    action re-wraps it onto one line) and exits 0."""

    def __init__(self, option_strings: list[str], dest: str = argparse.SUPPRESS, **kwargs: object) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS,
                         help="print LSE's, IREE's and Python's versions and exit")

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: object,
                 option_string: str | None = None) -> None:
        print(version_text(parser.prog))
        parser.exit()
