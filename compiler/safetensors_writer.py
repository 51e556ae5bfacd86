"""Writing safetensors files the way every LSE-written weight file is laid
out: each tensor's data aligned (the kernels' layout and IREE's parameter
reads want 64 bytes), filler ``__pad<i>`` tensors for the gaps the spec
forbids leaving as holes, one tensor (or run of rows) in memory at a time,
and the file written in whole 4 MiB chunks so the page cache holds it in
2 MiB folios (docs/kernels.md, "Huge pages for the layout").
"""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import Any, Callable, Iterable

import numpy as np

from lse.compiler.weights import PAD_PREFIX

# numpy dtype name -> safetensors dtype (bfloat16: ml_dtypes', by name, unimported here)
_ST_DTYPES = {"float32": "F32", "float16": "F16", "bfloat16": "BF16", "int8": "I8", "uint8": "U8"}


def write_aligned_safetensors(path: Path, specs: dict[str, tuple[tuple[int, ...], Any]],
                              load: Callable[[str], np.ndarray | Iterable[np.ndarray]], align: int = 64,
                              metadata: dict[str, str] | None = None) -> None:
    """Write tensors so each one's data starts at a multiple of ``align``.

    ``specs`` maps each name to (shape, numpy dtype), in writing order. The
    header is padded with spaces (allowed by the safetensors spec) so the data
    section starts aligned; the spec forbids holes between tensors, so a
    tensor whose size is not a multiple of ``align`` is followed by a small
    ``__pad<i>`` U8 tensor that fills the gap. ``load(name)`` is called once per
    tensor as it is written, so only one tensor is in memory at a time; it
    returns the array, or an iterator of runs of its rows (along the first
    axis), each written as it comes.
    """
    header: dict[str, Any] = {"__metadata__": metadata} if metadata else {}
    order, pos = [], 0
    for n, (shape, dtype) in specs.items():
        size = int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize
        header[n] = {"dtype": _ST_DTYPES[np.dtype(dtype).name], "shape": list(shape), "data_offsets": [pos, pos + size]}
        order.append((n, np.dtype(dtype), tuple(shape)))
        pos += size
        if pos % align:
            gap = align - pos % align
            pad = f"{PAD_PREFIX}{len(order)}"
            header[pad] = {"dtype": "U8", "shape": [gap], "data_offsets": [pos, pos + gap]}
            order.append((pad, np.dtype("u1"), (gap,)))
            pos += gap
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-(8 + len(text)) % align)
    with open(path, "wb", buffering=0) as raw:
        f = ChunkedWriter(raw)
        f.write(struct.pack("<Q", len(text)) + text)
        for n, dtype, shape in order:
            arr = np.zeros(shape, dtype) if n.startswith(PAD_PREFIX) else load(n)
            if isinstance(arr, np.ndarray):
                if tuple(arr.shape) != shape:
                    raise ValueError(f"{n}: shape {arr.shape} != declared {shape}")
                _write_array(f, arr, dtype)
                continue
            rows = 0  # runs of rows, written as they come
            for run in arr:
                if tuple(run.shape[1:]) != shape[1:]:
                    raise ValueError(f"{n}: a run of shape {run.shape} in a tensor of shape {shape}")
                _write_array(f, run, dtype)
                rows += len(run)
            if rows != shape[0]:
                raise ValueError(f"{n}: {rows} rows written, {shape[0]} declared")
        f.flush()
        if f.tell() != 8 + len(text) + pos:
            raise AssertionError(f"{path}: wrote {f.tell()} bytes, header declares {8 + len(text) + pos}")
    check_alignment(path, align)


WRITE_CHUNK = 4 << 20  # a multiple of x86-64's 2 MiB huge page


class ChunkedWriter:
    """Writes what it is given to ``raw`` (an unbuffered file at offset 0)
    in writes of whole ``chunk``s at multiples of ``chunk``, the last one
    shorter: Linux's page cache (ext4, 6.x) then holds the file in 2 MiB
    folios, which a read-only mapping maps whole, so a decode step streaming
    the kernels' layout misses the TLB once per 2 MiB rather than per 4 KiB
    (docs/kernels.md, "Huge pages for the layout"). Runs of any size pass
    through; only a chunk's ragged ends are copied."""

    def __init__(self, raw: Any, chunk: int = WRITE_CHUNK):
        self.raw, self.chunk = raw, chunk
        self.buf, self.fill, self.written = bytearray(chunk), 0, 0

    def write(self, data: Any) -> None:
        view = memoryview(data).cast("B")
        if self.fill:  # complete the chunk begun
            take = min(len(view), self.chunk - self.fill)
            self.buf[self.fill:self.fill + take] = view[:take]
            self.fill, view = self.fill + take, view[take:]
            if self.fill < self.chunk:
                return
            self._out(self.buf)
            self.fill = 0
        whole = len(view) - len(view) % self.chunk
        if whole:
            self._out(view[:whole])
        rest = view[whole:]
        self.buf[:len(rest)] = rest
        self.fill = len(rest)

    def flush(self) -> None:
        self._out(memoryview(self.buf)[:self.fill])
        self.fill = 0

    def tell(self) -> int:
        return self.written + self.fill

    def _out(self, view: Any) -> None:
        view = memoryview(view)
        while len(view):  # a raw write may take less than it is given
            n = self.raw.write(view)
            self.written += n
            view = view[n:]


def _write_array(f: Any, arr: np.ndarray, dtype: np.dtype) -> None:
    f.write(np.ascontiguousarray(arr, dtype=dtype).reshape(-1).view(np.uint8))


def check_alignment(path: Path, align: int = 64) -> None:
    """Raise unless every tensor in the safetensors file starts at a multiple of ``align``."""
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n))
    bad = [k for k, v in header.items()
           if k != "__metadata__" and not k.startswith(PAD_PREFIX) and (8 + n + v["data_offsets"][0]) % align]
    if bad:
        raise ValueError(f"{path}: {len(bad)} tensor(s) not {align}-byte aligned: {bad[:5]}")
