"""The import's log names the cache entry, not the temporary directory it is
written in and renamed from (#44: the startup log named paths that no longer
existed)."""

from __future__ import annotations

from pathlib import Path

import lse.compiler.gguf.importer as import_gguf


def test_the_import_log_names_the_cache_entry_not_its_temporary_directory(monkeypatch, tmp_path, capsys):
    src = tmp_path / "tiny.Q4_0.gguf"
    src.write_bytes(b"GGUF")

    def fake_import(gguf_path, out_dir, log=import_gguf._log, dequantize=False, in_place=False):
        (Path(out_dir) / "model.safetensors").write_bytes(b"")
        log(f"done: 0 tensors in 0.0 s → {out_dir}")  # the real import's last line

    monkeypatch.setattr(import_gguf, "check_supported", lambda path: None)
    monkeypatch.setattr(import_gguf, "import_gguf", fake_import)
    final = import_gguf.ensure_imported(src, cache_dir=tmp_path / "cache")
    err = capsys.readouterr().err
    assert err == f"lse-import: done: 0 tensors in 0.0 s → {final}\n"
    assert final.is_dir() and [p.name for p in final.parent.iterdir()] == [final.name]
