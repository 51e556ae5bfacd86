"""The kernels' layout of a GGUF's block matrices made in C
(cpu_kernels/lse_layout.c), where a C compiler is at hand: a host library
built once per source, flags and compiler into the kernels' store
(``<cache>/kernels``) and called through ctypes on the layout's threads
(ctypes lets go of the GIL). It gives kernel_layout's numpy form's bytes
(tests/unit/test_layout_streamed.py runs both) in one pass a run; the
numpy form stays for the formats it does not take and where nothing can
build it (or LSE_LAYOUT_NATIVE=0)."""

from __future__ import annotations

import ctypes
import functools
import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Callable

import numpy as np

SOURCE = Path(__file__).parent / "cpu_kernels" / "lse_layout.c"
CFLAGS = ("-O2", "-fPIC", "-shared", "-fvisibility=default")
ROWS = 16
# format -> (lse_layout.c's code, q bytes a layout block, layout blocks a file block, ks (K-quant scales), has m)
FORMATS = {"q8_0": (0, 32, 1, 0, False), "q4_0": (1, 16, 1, 0, False), "q4_1": (2, 16, 1, 0, True),
           "q4_k": (3, 16, 8, 2, True), "q6_k": (4, 12, 16, 1, True)}

Runner = Callable[[np.ndarray], dict[str, np.ndarray]]


def runner(fmt: str, store: Path | None = None) -> Runner | None:
    """The C form of ``fmt``'s layout: raw rows (rows, file blocks a row,
    type size) uint8 → its run's {"qi", "di"[, "mi"]}, as
    kernel_layout._interleaved(reader.layout_parts(...)) gives them; None
    where the format is not one it takes or the library cannot be had here.
    The library is built once into ``store`` (the kernels' objects' store),
    or, without one, once a process into a folder removed after loading."""
    if fmt not in FORMATS or os.environ.get("LSE_LAYOUT_NATIVE") == "0":
        return None
    lib = _library(store)
    return None if lib is None else functools.partial(_run, lib, fmt)


def _run(lib: ctypes.CDLL, fmt: str, raw: np.ndarray) -> dict[str, np.ndarray]:
    code, qb, per, ks, has_m = FORMATS[fmt]
    rows, sb, _ = raw.shape
    raw = np.ascontiguousarray(raw)
    groups, nb = -(-rows // ROWS), sb * per
    out = {"qi": np.empty((groups, nb * ROWS * qb), np.int8)}
    if ks:  # int8 sub-block scales a block; f16 super-block scales a file block
        out["di"] = np.empty((groups, nb * ROWS * ks), np.int8)
        out["mi"] = np.empty((groups, sb * ROWS * ks), np.float16)
    else:
        out["di"] = np.empty((groups, nb * ROWS), np.float16)
        if has_m:
            out["mi"] = np.empty((groups, nb * ROWS), np.float16)
    mi = out["mi"].ctypes.data if "mi" in out else None
    if lib.lse_layout_run(code, raw.ctypes.data, rows, sb, out["qi"].ctypes.data, out["di"].ctypes.data, mi):
        raise ValueError(f"lse_layout_run does not take {fmt}")
    return out


@functools.cache
def _library(store: Path | None) -> ctypes.CDLL | None:
    """lse_layout.c built (``store``/layout-<key>.so) and loaded; None without cc."""
    cc = shutil.which("cc")
    if cc is None:
        return None
    version = subprocess.run([cc, "--version"], capture_output=True, text=True).stdout
    key = hashlib.sha256(SOURCE.read_bytes() + "\0".join(CFLAGS).encode() + version.encode()).hexdigest()[:24]
    folder = store or Path(tempfile.mkdtemp(prefix="lse-layout-"))
    lib = folder / f"layout-{key}.so"
    try:
        if not lib.is_file() and not _build(cc, folder, lib):
            return None
        dll = ctypes.CDLL(str(lib))
    finally:
        if store is None:  # the loaded library stays mapped
            shutil.rmtree(folder, ignore_errors=True)
    dll.lse_layout_run.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_size_t, ctypes.c_void_p,
                                   ctypes.c_void_p, ctypes.c_void_p]
    dll.lse_layout_run.restype = ctypes.c_int
    return dll


def _build(cc: str, folder: Path, lib: Path) -> bool:
    """Compile the library to ``lib`` through a temporary name: another
    process storing the same library at once leaves either copy whole."""
    folder.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".layout-", suffix=".so", dir=folder)
    os.close(fd)
    try:
        if subprocess.run([cc, *CFLAGS, str(SOURCE), "-o", tmp], capture_output=True).returncode:
            return False
        os.replace(tmp, lib)
        return True
    finally:
        Path(tmp).unlink(missing_ok=True)
