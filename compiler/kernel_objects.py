"""The kernels' C objects (cpu_kernels/*.c), compiled once per sources,
flags and C compiler into a store (``<cache>/kernels``) and hard-linked into
each artifact, so a second model or configuration on a machine compiles no C."""

from __future__ import annotations

import functools
import hashlib
import shutil
import subprocess
import tempfile
from pathlib import Path

from lse.compiler import cpu_kernel_build as cpu_kernels
from lse.compiler.layout_store import link_or_copy


def build_object(out_dir: Path, store: Path | None = None) -> list[Path]:
    """The kernels' objects in ``out_dir`` (iree-compile links them): compiled
    there, or, with a ``store``, compiled once into it per sources, flags and C
    compiler and linked from there (a second model or configuration on this
    machine compiles no C)."""
    if store is None:
        return cpu_kernels.compile_objects(out_dir)
    shared = store / _objects_key()
    if not all((shared / obj).is_file() for obj in cpu_kernels.OBJECTS):
        store.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=".build-", dir=store))
        try:
            cpu_kernels.compile_objects(tmp)
            try:
                tmp.rename(shared)
            except OSError:  # another process stored the same objects first
                if not all((shared / obj).is_file() for obj in cpu_kernels.OBJECTS):
                    raise
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    for obj in cpu_kernels.OBJECTS:
        link_or_copy(shared / obj, out_dir / obj)
    return [out_dir / obj for obj in cpu_kernels.OBJECTS]


def _objects_key() -> str:
    """What the objects depend on: their sources and every header of
    cpu_kernels/, each object's flags, the C compiler's version (not
    lse_layout.c: a host library of its own, compiler/layout_native.py)."""
    h = hashlib.sha256()
    for path in sorted(cpu_kernels.SOURCE.parent.iterdir()):
        if path.suffix == ".h" or path in cpu_kernels.OBJECTS.values():
            h.update(path.name.encode() + b"\0" + path.read_bytes())
    for obj, flags in sorted(cpu_kernels.object_flags().items()):
        h.update("\0".join((obj, *flags)).encode() + b"\n")
    h.update(_cc_version().encode())
    return h.hexdigest()[:24]


@functools.cache
def _cc_version() -> str:
    return subprocess.run(["cc", "--version"], check=True, capture_output=True, text=True).stdout
