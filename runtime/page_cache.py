"""The kernels' weights in the page cache as 2 MiB folios.

A decode step streams every weight once, so on a CPU device its matvecs
take a TLB miss per page of the weights they read: per 4 KiB where the
page cache holds the file in small folios, per 2 MiB where it holds 2 MiB
ones, which a read-only mapping (IREE's of a parameter file) maps whole
(``FilePmdMapped`` in /proc/PID/smaps). LSE writes its layout in
2 MiB-aligned chunks (compiler/safetensors_writer.py, ChunkedWriter), which puts it
there in 2 MiB folios; a file read back in after the cache dropped it comes
in by readahead's small folios unless the mapping that faults it is
madvised for huge pages. ``cache_in_huge_folios`` is that mapping: run
before IREE maps the file, it faults each 2 MiB of what is not cached yet
as one folio, and costs a page fault per 2 MiB where the file is cached.
docs/kernels.md ("Huge pages for the layout") measures the difference.
"""

from __future__ import annotations

import mmap
from pathlib import Path

HUGE = 2 << 20  # x86-64's PMD page


def cache_in_huge_folios(path: Path) -> None:
    """Fault every 2 MiB of ``path`` through a mapping madvised for huge
    pages. Where the platform lacks madvise or huge pages the file is left
    to IREE's own faults: speed, never correctness, rides on it."""
    advice = getattr(mmap, "MADV_HUGEPAGE", None)
    if advice is None:
        return
    try:
        with open(path, "rb") as f:
            if f.seek(0, 2) < HUGE:
                return
            with mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ) as m:
                m.madvise(advice)
                for at in range(0, len(m), HUGE):
                    m[at]  # the fault reads this 2 MiB's folio, if it is not cached
    except (OSError, ValueError):
        return
