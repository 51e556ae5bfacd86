"""compiled_artifact without a compile: cache.compile_model replaced by a
function that writes an empty manifest (and whatever ``also`` does), the key
fixed, the manifest neither read nor rebound, so a test sees what the cache
itself does around a compile (its temporary directory, its log, its prune)."""

from __future__ import annotations

from pathlib import Path


def fake_compiles(monkeypatch, key: str = "k123", also=None) -> None:
    from lse.compiler import cache
    from lse.compiler.manifest import MANIFEST_NAME

    def fake_compile(model_dir, out_dir, options, cache_key="", report=print):
        (Path(out_dir) / MANIFEST_NAME).write_text("{}")
        if also is not None:
            also(Path(out_dir), report)

    monkeypatch.setattr(cache, "cache_key", lambda model_dir, options: key)
    monkeypatch.setattr(cache, "compile_model", fake_compile)
    monkeypatch.setattr(cache, "read_manifest", lambda path: path)
    monkeypatch.setattr(cache, "_rebind", lambda manifest, model_dir: manifest)
