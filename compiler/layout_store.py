"""The shared stores of per-model weight files, and what goes stale in them.

A model's kernel layout (kernel_layout.write_layout) and the block parts of
a GGUF read in place are each written once into a store
(``<cache>/layouts/<key>/``) and hard-linked into every artifact of the
model. The key covers what the bytes depend on: the parameter files they
are read from (path, size, modification time), the matrices, and the source
of the modules that make the bytes. Each entry records those inputs in
ORIGIN, so an entry whose key can never be made again (LSE's layout code
changed since, or the file at that path was rewritten or removed) is known
to be stale: ``prune`` removes it with every cached artifact that links to
it, so an upgrade or a re-downloaded file leaves one copy of the weights on
disk, not one per version. ``LSE_NO_PRUNE=1`` keeps them (two LSE versions
sharing one cache then do not remove each other's)."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ORIGIN = "origin.json"
_MADE_S = 5  # an entry without ORIGIN younger than this may be between its mkdir and its ORIGIN
_WRITING_S = 600  # a temporary file written to within this is a writer at work
# what a stored file's bytes are made by (the layout's C form too: it gives numpy's bytes, but a fault in it would stay stored)
_SOURCES = ("kernel_layout.py", "weights.py", "safetensors_writer.py", "gguf/reader.py", "layout_native.py", "cpu_kernels/lse_layout.c")


def _sources_digest() -> str:
    here = Path(__file__).parent
    h = hashlib.sha256()
    for name in _SOURCES:
        h.update(name.encode() + b"\0" + (here / name).read_bytes())
    return h.hexdigest()


def entry_key(files: list[str], names: list[str], suffix: str = "") -> str:
    """The store key of a file made from ``files`` (paths of parameter files)
    for the matrices ``names``; ``suffix`` tells kinds apart. Raises
    FileNotFoundError where a file is gone."""
    payload = {"files": [(f, os.stat(f).st_size, os.stat(f).st_mtime_ns) for f in sorted(files)],
               "names": sorted(names), "source": _sources_digest()}
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:24] + suffix


def shared_file(files: list[str], names: list[str], suffix: str, file: str, path: Path, store: Path | None,
                write) -> tuple[int, str]:
    """``file`` made by ``write(out)`` once into ``store / key`` and linked at
    ``path`` (``store`` None: written at ``path`` alone). Returns (its bytes,
    "written", "reused" or "written here")."""
    if store is None:
        write(path)
        return path.stat().st_size, "written here"
    entry = store / entry_key(files, names, suffix)
    shared = entry / file
    how = "reused"
    if not shared.is_file():
        entry.mkdir(parents=True, exist_ok=True)
        (entry / ORIGIN).write_text(json.dumps({"files": sorted(files), "names": sorted(names), "suffix": suffix}))
        fd, tmp = tempfile.mkstemp(prefix=f".{file}.", dir=entry)
        os.close(fd)
        try:
            write(Path(tmp))
            os.replace(tmp, shared)  # atomic: a reader never sees half a file
        finally:
            Path(tmp).unlink(missing_ok=True)
        how = "written"
    link_or_copy(shared, path)
    return path.stat().st_size, how


def link_or_copy(src: Path | str, dst: Path | str) -> None:
    """``dst`` hard-linked to ``src`` (replacing it), copied where no link can be
    made (across file systems): the shared stores' files in each artifact."""
    Path(dst).unlink(missing_ok=True)
    try:
        os.link(src, dst)
    except OSError:
        shutil.copy2(src, dst)


def is_stale(entry: Path) -> bool:
    """Whether a store entry's key can no longer be made: no ORIGIN (written
    before entries recorded one, by other layout code), a parameter file gone
    or changed, or other layout code since."""
    try:
        origin = json.loads((entry / ORIGIN).read_text())
    except (OSError, ValueError):
        return not (entry / ORIGIN).exists() and not _being_written(entry)
    try:
        return entry_key(origin["files"], origin["names"], origin["suffix"]) != entry.name
    except (OSError, KeyError, TypeError):
        return True


def _being_written(entry: Path) -> bool:
    """An entry without ORIGIN that a process may still be making: just made
    (ORIGIN comes right after the directory), or holding a temporary file
    (shared_file's ``.<file>.*``; older LSE wrote no ORIGIN) written to lately."""
    now = time.time()
    try:
        return now - entry.stat().st_mtime < _MADE_S or any(
            f.name.startswith(".") and now - f.stat().st_mtime < _WRITING_S for f in entry.iterdir())
    except OSError:
        return False


@dataclass
class Pruned:
    entries: int = 0
    artifacts: int = 0
    bytes: int = 0

    def __str__(self) -> str:
        return (f"cache: removed {self.entries} stale weight file(s) and {self.artifacts} artifact(s) linking "
                f"to them, {self.bytes / 2**20:.1f} MiB freed (LSE_NO_PRUNE=1 keeps them)")


def prune(store: Path, artifacts: Path) -> Pruned:
    """Remove ``store``'s stale entries (is_stale) and every directory in
    ``artifacts`` holding a link to one of their files; what a removed file
    freed is counted once however many links it had. Nothing when
    LSE_NO_PRUNE=1. A process that has the files open keeps reading them
    (POSIX keeps an unlinked file until its last close)."""
    if os.environ.get("LSE_NO_PRUNE") == "1" or not store.is_dir():
        return Pruned()
    stale = [e for e in store.iterdir() if e.is_dir() and not e.name.startswith(".") and is_stale(e)]
    inodes = {(s.st_dev, s.st_ino): s.st_size for e in stale for f in e.iterdir() if f.is_file()
              for s in [f.stat()] if f.name != ORIGIN}
    linked = [a for a in (artifacts.iterdir() if artifacts.is_dir() else []) if a.is_dir() and _links_to(a, inodes)]
    for directory in [*stale, *linked]:
        shutil.rmtree(directory, ignore_errors=True)
    return Pruned(len(stale), len(linked), sum(inodes.values()))


def _links_to(directory: Path, inodes: dict) -> bool:
    for root, _, files in os.walk(directory):
        for name in files:
            try:
                s = os.stat(os.path.join(root, name))
            except OSError:
                continue
            if (s.st_dev, s.st_ino) in inodes:
                return True
    return False
