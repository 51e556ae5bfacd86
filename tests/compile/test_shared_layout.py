"""The kernels' interleaved weights are one copy per model on disk (#37):
two artifacts of one GGUF model with other slots and context share the
layout file (one inode), and lse-compile -o links rather than copies it."""

from __future__ import annotations

import os

from lse.compiler.cache import compiled_artifact
from lse.compiler.cli import main as lse_compile
from lse.compiler.kernel_layout import LAYOUT_FILE
from lse.compiler.pipeline import CompileOptions
from lse.compiler.gguf.importer import ensure_imported
from lse.fixtures.make_gguf_fixtures import gguf_fixture_path


def test_artifacts_of_one_model_share_one_layout_file(tmp_path):
    model = ensure_imported(gguf_fixture_path())
    said: list[str] = []
    one, _ = compiled_artifact(model, CompileOptions(slots=1, kv_len=64, kv_dtype="f16"), report=said.append)
    two, _ = compiled_artifact(model, CompileOptions(slots=2, kv_len=96, kv_dtype="f16"), report=said.append)
    assert one != two
    a, b = os.stat(one / LAYOUT_FILE), os.stat(two / LAYOUT_FILE)
    assert (a.st_ino, a.st_dev) == (b.st_ino, b.st_dev)
    assert a.st_nlink >= 3  # the store's entry and both artifacts
    # the second compile (when this test compiled both) wrote nothing new
    layout_lines = [m for m in said if m.startswith("kernel layout:")]
    assert all(" reused, shared in " in m for m in layout_lines[1:]), layout_lines

    out = tmp_path / "out"
    assert lse_compile([str(model), "-o", str(out), "--slots", "2", "--kv-len", "96", "--kv-dtype", "f16"]) == 0
    c = os.stat(out / LAYOUT_FILE)
    assert (c.st_ino, c.st_dev) == (b.st_ino, b.st_dev)
    assert (out / "manifest.json").stat().st_ino != (two / "manifest.json").stat().st_ino
