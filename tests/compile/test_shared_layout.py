"""The kernels' interleaved weights are one copy per model on disk (#37):
two artifacts of one GGUF model with other slots and context share the
layout file (one inode), lse-compile -o links rather than copies it, and the
import reads the GGUF's blocks in place."""

from __future__ import annotations

import os

import pytest

from lse.compiler.cache import compiled_artifact
from lse.compiler.cli import main as lse_compile
from lse.compiler.kernel_layout import LAYOUT_FILE, PARTS_FILE
from lse.compiler.pipeline import CompileOptions
from lse.compiler.gguf.importer import ensure_imported
from lse.compiler.weights import read_tensors
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


def test_a_gguf_model_is_one_copy_on_disk(tmp_path):
    """What LSE writes for a GGUF model on llvm-cpu: the import holds no block
    matrix (they are read in place), the kernels' layout is the one copy of
    them (the embedding table too: lse_<stem>_embed reads it there), and no
    artifact adds the import's parts. Without the kernels, the modules read
    parts, written once per model into the same store."""
    src = gguf_fixture_path()
    model = ensure_imported(src)
    blocks = sum(t.nbytes for t in read_tensors(model).values() if t.gguf)
    assert blocks > 0.8 * src.stat().st_size  # the file is block matrices and a tokenizer
    assert (model / "model.safetensors").stat().st_size < 0.05 * blocks
    art, _ = compiled_artifact(model, CompileOptions(slots=1, kv_len=64, kv_dtype="f16"))
    assert not (art / PARTS_FILE).exists()
    assert (art / LAYOUT_FILE).stat().st_size < 1.06 * blocks
    os.environ["LSE_CPU_KERNELS"] = "0"
    try:
        said: list[str] = []
        generic, manifest = compiled_artifact(model, CompileOptions(slots=1, kv_len=64, kv_dtype="f16"),
                                              report=said.append)
    finally:
        del os.environ["LSE_CPU_KERNELS"]
    assert not (generic / LAYOUT_FILE).exists()
    assert PARTS_FILE in manifest.targets["llvm-cpu"].parameter_files
    assert manifest.parameter_files == [str(model / "model.safetensors")]


def test_a_failed_layout_write_fails_the_compile(tmp_path, monkeypatch):
    """The layout is written on a thread beside iree-compile: its error is the
    compile's, never an artifact without its weights."""
    from lse.compiler import kernel_layout
    from lse.compiler.pipeline import compile_model

    def full_disk(*args):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(kernel_layout, "shared_layout", full_disk)
    model = ensure_imported(gguf_fixture_path())
    with pytest.raises(OSError, match="No space left"):
        compile_model(model, tmp_path / "out", CompileOptions(slots=1, kv_len=64, kv_dtype="f16"))
    assert not (tmp_path / "out" / "manifest.json").exists()
