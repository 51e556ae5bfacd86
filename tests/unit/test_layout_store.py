"""The shared weight store: stale entries (their key can no longer be made)
go with every cached artifact that links to them; current ones and what
links to them stay."""

import json
import os
import time
from pathlib import Path

import pytest

from cache_fake import fake_compiles

from lse.compiler import layout_store
from lse.compiler.layout_store import ORIGIN, link_or_copy, prune, shared_file

MIB = 2**20


def _write(size):
    return lambda out: Path(out).write_bytes(os.urandom(size))


def _artifact(artifacts: Path, name: str, *linked: Path) -> Path:
    directory = artifacts / name
    directory.mkdir(parents=True)
    (directory / "manifest.json").write_text("{}")
    for src in linked:
        link_or_copy(src, directory / src.name)
    return directory


def _entry(store: Path, name: str, origin: dict | None, size: int, age_s: float = 0) -> Path:
    entry = store / name
    entry.mkdir(parents=True)
    if origin is not None:
        (entry / ORIGIN).write_text(json.dumps(origin))
    (entry / "w.bin").write_bytes(os.urandom(size))
    if age_s:
        t = entry.stat().st_mtime - age_s
        os.utime(entry, (t, t))
    return entry / "w.bin"


@pytest.fixture
def cache(tmp_path):
    gguf, other = tmp_path / "model.gguf", tmp_path / "other.gguf"
    gguf.write_bytes(b"GGUF" * 100)
    other.write_bytes(b"GGUF" * 200)
    return tmp_path, tmp_path / "layouts", tmp_path / "artifacts", str(gguf), str(other)


def test_stale_entries_go_with_the_artifacts_that_link_them(cache, monkeypatch):
    monkeypatch.delenv("LSE_NO_PRUNE", raising=False)
    root, store, artifacts, gguf, other = cache
    current_dir = artifacts / "current"
    current_dir.mkdir(parents=True)
    size, how = shared_file([gguf], ["blk.0.w"], "", "w.bin", current_dir / "w.bin", store, _write(3 * MIB))
    assert (size, how) == (3 * MIB, "written")
    again = artifacts / "again"
    again.mkdir()
    assert shared_file([gguf], ["blk.0.w"], "", "w.bin", again / "w.bin", store, _write(1))[1] == "reused"
    other_model = artifacts / "other"
    other_model.mkdir()
    shared_file([other], ["blk.0.w"], "", "w.bin", other_model / "w.bin", store, _write(MIB))

    same_inputs = {"files": [gguf], "names": ["blk.0.w"], "suffix": ""}
    by_old_code = _entry(store, "0" * 24, same_inputs, 2 * MIB)  # the same inputs, other layout code
    legacy = _entry(store, "1" * 24, None, 2 * MIB, age_s=3600)  # written before entries had an origin
    made = _entry(store, "2" * 24, None, MIB)  # no origin yet, just made: perhaps being recorded
    writing = _entry(store, "4" * 24, None, MIB, age_s=3600)  # an older LSE writing its temporary file now
    (writing.parent / ".w.bin.tmp").write_bytes(b"...")
    os.utime(writing.parent, (time.time() - 3600,) * 2)  # the entry is an hour old, its temporary file new
    assert not layout_store.is_stale(made.parent) and not layout_store.is_stale(writing.parent)
    gone = _entry(store, "3" * 24, {"files": [str(root / "deleted.gguf")], "names": ["x"], "suffix": ""}, MIB)
    old_artifacts = [_artifact(artifacts, "old", by_old_code), _artifact(artifacts, "legacy", legacy, gone)]
    plain = _artifact(artifacts, "plain")  # no weights of the store: f32 fixtures

    pruned = prune(store, artifacts)

    assert (pruned.entries, pruned.artifacts, pruned.bytes) == (3, 2, 5 * MIB)
    assert "3 stale weight file(s)" in str(pruned) and "5.0 MiB" in str(pruned)
    assert not any(p.exists() for p in [by_old_code.parent, legacy.parent, gone.parent, *old_artifacts])
    assert all(p.exists() for p in [made, writing, current_dir / "w.bin", again / "w.bin", other_model / "w.bin", plain])
    assert (current_dir / "w.bin").stat().st_nlink == 3  # the store's file and two artifacts
    assert prune(store, artifacts).entries == 0


def test_a_rewritten_parameter_file_makes_its_entry_stale(cache, monkeypatch):
    monkeypatch.delenv("LSE_NO_PRUNE", raising=False)
    _, store, artifacts, gguf, _ = cache
    art = artifacts / "a"
    art.mkdir(parents=True)
    shared_file([gguf], ["m"], "-parts-x", "p.bin", art / "p.bin", store, _write(MIB))
    (entry,) = store.iterdir()
    assert entry.name.endswith("-parts-x") and not layout_store.is_stale(entry)
    t = os.stat(gguf).st_mtime_ns + 10**9
    os.utime(gguf, ns=(t, t))  # the file at that path is another file now
    assert layout_store.is_stale(entry)
    assert (prune(store, artifacts).entries, entry.exists(), art.exists()) == (1, False, False)


def test_lse_no_prune_keeps_everything(cache, monkeypatch):
    _, store, artifacts, gguf, _ = cache
    stale = _entry(store, "0" * 24, {"files": [gguf], "names": ["m"], "suffix": ""}, MIB)
    art = _artifact(artifacts, "old", stale)
    monkeypatch.setenv("LSE_NO_PRUNE", "1")
    assert prune(store, artifacts).entries == 0 and stale.exists() and art.exists()
    monkeypatch.delenv("LSE_NO_PRUNE")
    assert prune(store, artifacts).artifacts == 1 and not art.exists()


def test_an_open_file_stays_readable_after_its_entry_is_pruned(cache, monkeypatch):
    monkeypatch.delenv("LSE_NO_PRUNE", raising=False)
    _, store, artifacts, gguf, _ = cache
    stale = _entry(store, "0" * 24, {"files": [gguf], "names": ["m"], "suffix": ""}, MIB)
    data = stale.read_bytes()
    with open(_artifact(artifacts, "serving", stale) / "w.bin", "rb") as held:  # a server that has it mapped
        assert prune(store, artifacts).artifacts == 1
        assert held.read() == data


def test_a_compile_into_the_cache_prunes_and_says_so(monkeypatch, tmp_path):
    from lse.compiler import cache
    from lse.compiler.manifest import MANIFEST_NAME
    from lse.compiler.pipeline import CompileOptions

    monkeypatch.delenv("LSE_NO_PRUNE", raising=False)
    monkeypatch.setenv("LSE_CACHE_DIR", str(tmp_path))
    gguf = tmp_path / "model.gguf"
    gguf.write_bytes(b"GGUF")
    stale = _entry(tmp_path / "layouts", "0" * 24, {"files": [str(gguf)], "names": ["m"], "suffix": ""}, MIB)
    old = _artifact(tmp_path / "artifacts", "old", stale)
    fake_compiles(monkeypatch)
    said: list[str] = []
    final, _ = cache.compiled_artifact(tmp_path / "model", CompileOptions(), report=said.append)
    assert said == ["cache: removed 1 stale weight file(s) and 1 artifact(s) linking to them, 1.0 MiB freed "
                    "(LSE_NO_PRUNE=1 keeps them)"]
    assert not old.exists() and not stale.exists() and (final / MANIFEST_NAME).is_file()
    said.clear()
    cache.compiled_artifact(tmp_path / "model", CompileOptions(), report=said.append)  # a hit prunes nothing
    assert said == [f"cache hit: {final}"]
