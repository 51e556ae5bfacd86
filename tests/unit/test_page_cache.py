"""The kernels' layout in 2 MiB page-cache folios, mapped whole (runtime/page_cache.py,
safetensors_writer.ChunkedWriter): a file LSE writes in odd-sized pieces is mapped in
huge pages once written, and again after the page cache dropped it and
cache_in_huge_folios read it back. Where the file system or kernel keeps no
2 MiB folios even for a file written in aligned 4 MiB writes (tmpfs without
huge pages, THP off), the tests skip, saying so."""

from __future__ import annotations

import mmap
import os
from pathlib import Path

import numpy as np
import pytest

from lse.compiler.safetensors_writer import write_aligned_safetensors
from lse.runtime.page_cache import cache_in_huge_folios

SIZE = 16 << 20


def _mapped_huge_kib(path: Path) -> int:
    """FilePmdMapped of a fresh read-only mapping of ``path``, every page touched."""
    with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ) as m:
        for at in range(0, len(m), 4096):
            m[at]
        total, inside = 0, False
        for line in Path("/proc/self/smaps").read_text().splitlines():
            if "-" in line.split(" ", 1)[0] and len(line.split()) >= 5:
                inside = line.endswith(str(path))
            elif inside and line.startswith("FilePmdMapped:"):
                total += int(line.split()[1])
        return total


def _drop(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


@pytest.fixture
def huge_folios(tmp_path: Path) -> Path:
    """tmp_path, where a file written in aligned 4 MiB writes is mapped in huge pages."""
    if not hasattr(mmap, "MADV_HUGEPAGE") or not Path("/proc/self/smaps").exists():
        pytest.skip("no madvise(MADV_HUGEPAGE) or /proc/self/smaps here")
    probe = tmp_path / "probe.bin"
    with open(probe, "wb", buffering=0) as f:
        for _ in range(SIZE // (4 << 20)):
            f.write(os.urandom(4 << 20))
    if _mapped_huge_kib(probe) == 0:
        pytest.skip(f"the page cache keeps no 2 MiB folios of files under {tmp_path} (file system or THP setting)")
    return tmp_path


def _layout_like(path: Path) -> None:
    """A safetensors file of odd-sized tensors, one written in odd-sized runs, ~16 MiB."""
    rng = np.random.default_rng(3)
    arrays = {"a": rng.integers(0, 255, (7, 13), np.uint8), "b": rng.integers(0, 255, (4097, 4093), np.uint8)}

    def load(name: str):
        a = arrays[name]
        return iter([a[i:i + 333] for i in range(0, len(a), 333)]) if name == "b" else a

    write_aligned_safetensors(path, {n: (a.shape, a.dtype) for n, a in arrays.items()}, load)


def test_a_written_layout_is_mapped_in_huge_pages(huge_folios):
    path = huge_folios / "layout.safetensors"
    _layout_like(path)
    assert _mapped_huge_kib(path) >= 12 << 10  # all but the ragged ends of 16 MiB


def test_a_layout_read_back_is_mapped_in_huge_pages(huge_folios):
    path = huge_folios / "layout.safetensors"
    _layout_like(path)
    _drop(path)
    cache_in_huge_folios(path)
    assert _mapped_huge_kib(path) >= 12 << 10


def test_files_it_cannot_map_are_left_alone(tmp_path):
    """A file under 2 MiB, an empty one or one that is gone: nothing raised, nothing written."""
    small = tmp_path / "small.bin"
    small.write_bytes(b"x" * 1000)
    (tmp_path / "empty.bin").write_bytes(b"")
    for p in (small, tmp_path / "empty.bin", tmp_path / "gone.bin"):
        cache_in_huge_folios(p)
    assert small.read_bytes() == b"x" * 1000 and not (tmp_path / "gone.bin").exists()
