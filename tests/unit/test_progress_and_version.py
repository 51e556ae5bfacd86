"""iree-compile's heartbeat while it runs, and every command's --version."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from lse.compiler import iree_compile


def _fake_compiler(monkeypatch: pytest.MonkeyPatch, script: str) -> None:
    monkeypatch.setattr(iree_compile, "command_line",
                        lambda mlir, vmfb, flags: [sys.executable, "-c", script])


def test_heartbeat_reports_elapsed_time_while_iree_compile_runs(monkeypatch, tmp_path: Path) -> None:
    _fake_compiler(monkeypatch, "import time; time.sleep(0.5)")
    lines: list[str] = []
    iree_compile.run_iree_compile(tmp_path / "m.mlir", tmp_path / "m.vmfb", [], heartbeat=lines.append, every=0.1)
    assert lines, "no heartbeat while the compiler ran"
    assert all(line.startswith("iree-compile m.vmfb: still compiling, ") and line.endswith(" s elapsed")
               for line in lines), lines


def test_failed_compile_keeps_its_diagnostics(monkeypatch, tmp_path: Path) -> None:
    _fake_compiler(monkeypatch, "import sys; sys.stderr.write('graph.node17:17:0: error: failed to run "
                                "translation of source executable\\n'); sys.exit(1)")
    with pytest.raises(iree_compile.IreeCompileError) as info:
        iree_compile.run_iree_compile(tmp_path / "m.mlir", tmp_path / "m.vmfb", [], heartbeat=lambda _: None)
    assert info.value.failing_nodes == frozenset({17})


def test_version_text_names_lse_iree_and_python() -> None:
    text = iree_compile.version_text("lse-server").splitlines()
    assert text[0].startswith("lse-server (LSE) ")
    assert text[1].startswith("IREE compiler ") and text[2].startswith("IREE runtime ")
    assert text[3].startswith("Python 3.")


@pytest.mark.parametrize("main", ["lse.api.cli", "lse.runtime.cli", "lse.compiler.gguf.importer", "lse.spec.runner",
                                  "lse.capi.config", "lse.compiler.cli"])
def test_every_command_answers_version(main: str, capsys: pytest.CaptureFixture[str]) -> None:
    module = __import__(main, fromlist=["main"])
    try:
        status = module.main(["--version"])
    except SystemExit as exit_:
        status = exit_.code
    assert status in (0, None)
    out = capsys.readouterr().out
    assert "(LSE) " in out and "IREE compiler" in out and "Python" in out
