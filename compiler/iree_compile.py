"""Run iree-compile and read its diagnostics back onto graph nodes.

Every node carries a file-style location (``graph.node17``), so a dispatch
that a backend cannot translate is reported as
``graph.node17:17:0: error: failed to run translation of source executable``
(all failing dispatches in one compile; see shared notes, IREE 3.13 section 6).
"""

from __future__ import annotations

import re
import shlex
import subprocess
from dataclasses import dataclass
from pathlib import Path

import iree.compiler.version
from iree.compiler.tools.binaries import find_tool

COMPILER_VERSION = iree.compiler.version.VERSION
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


def run_iree_compile(mlir_path: Path, vmfb_path: Path, flags: list[str]) -> list[str]:
    """Compile; return the exact command line, or raise IreeCompileError."""
    cmd = command_line(mlir_path, vmfb_path, flags)
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise IreeCompileError(cmd, proc.stderr + proc.stdout)
    return cmd
