"""GGUF reading and the GGUF → Hugging Face weight mapping.

``read_gguf`` parses the GGUF header itself: ``gguf.GGUFReader`` builds a
numpy view per string and takes ~9 s on SmolLM2's 98k tokenizer strings;
this parser takes ~0.1 s. Block-quantised tensors are read in block form
(``read_blocks``: int8 values with per-block scale and offset, exact) or
dequantized with ``gguf.quants.dequantize``. The format: github.com/ggml-org/ggml docs/gguf.md.

The weights are written by ``lse.compiler.safetensors_writer.write_aligned_safetensors``
(every tensor 64-byte aligned, so IREE can mmap them with no copy).
"""

from __future__ import annotations

import mmap
import os
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np
from gguf.constants import GGML_QUANT_SIZES, GGMLQuantizationType
from gguf.quants import dequantize

# GGUF metadata value types (docs/gguf.md, gguf_metadata_value_type).
_SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}
_STRING, _ARRAY, _F32 = 8, 9, 6


class GGUFError(ValueError):
    """The file is not a GGUF this importer can read."""


@dataclass(frozen=True)
class GGUFTensor:
    name: str
    ne: tuple[int, ...]  # GGUF dims, innermost first (numpy shape reversed)
    qtype: GGMLQuantizationType
    offset: int  # absolute byte offset in the file

    @property
    def nbytes(self) -> int:
        return _nbytes(self)


@dataclass
class GGUFFile:
    path: Path
    metadata: dict[str, Any]
    tensors: dict[str, GGUFTensor]
    _buf: mmap.mmap

    def tensor(self, name: str) -> np.ndarray:
        """Dequantized float32 array with numpy shape ``reversed(ne)``."""
        t = self.tensors[name]
        rows = tuple(reversed(t.ne[1:]))
        raw = np.frombuffer(self._buf, np.uint8, _nbytes(t), t.offset)
        return np.asarray(dequantize(raw.reshape(*rows, -1), t.qtype), dtype=np.float32)

    def raw(self, name: str) -> np.ndarray:
        """An F32, F16 or BF16 tensor as stored, numpy shape ``reversed(ne)``."""
        t = self.tensors[name]
        dtype = {GGMLQuantizationType.F32: np.float32, GGMLQuantizationType.F16: np.float16,
                 GGMLQuantizationType.BF16: ml_dtypes.bfloat16}[t.qtype]
        return np.frombuffer(self._buf, dtype, int(np.prod(t.ne)), t.offset).reshape(tuple(reversed(t.ne)))


class _Cursor:
    def __init__(self, buf: mmap.mmap) -> None:
        self.buf, self.pos = buf, 0

    def unpack(self, fmt: str) -> Any:
        (value,) = struct.unpack_from(fmt, self.buf, self.pos)
        self.pos += struct.calcsize(fmt)
        return value

    def string(self) -> str:
        n = self.unpack("<Q")
        self.pos += n
        return self.buf[self.pos - n:self.pos].decode("utf-8", errors="surrogateescape")

    def value(self, vtype: int) -> Any:
        if vtype == _STRING:
            return self.string()
        if vtype == _ARRAY:
            item_type, n = self.unpack("<I"), self.unpack("<Q")
            if item_type in _SCALARS and item_type != 7:  # numeric array: one numpy read
                dtype = np.dtype(_SCALARS[item_type])
                arr = np.frombuffer(self.buf, dtype, n, self.pos)
                self.pos += n * dtype.itemsize
                return arr.tolist()
            return [self.value(item_type) for _ in range(n)]
        if vtype == _F32:  # shortest decimal that rounds to this f32 (1e-05, not 9.99999974e-06)
            return float(str(np.float32(self.unpack("<f"))))
        if vtype not in _SCALARS:
            raise GGUFError(f"unknown GGUF metadata value type {vtype}")
        return self.unpack(_SCALARS[vtype])


def read_gguf(path: str | Path) -> GGUFFile:
    """Parse the header (metadata and tensor infos); tensor data stays in the mmap."""
    path = Path(path)
    with open(path, "rb") as f:
        if f.read(4) != b"GGUF":
            raise GGUFError(f"{path} is not a GGUF file (no GGUF magic)")
        buf = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    try:
        gguf = _parse(path, buf)
    except GGUFError:
        raise
    except (struct.error, ValueError) as e:
        raise GGUFError(f"{path}: truncated or corrupt GGUF header ({e})") from e
    past_end = [t.name for t in gguf.tensors.values() if t.offset + _nbytes(t) > len(buf)]
    if past_end:
        raise GGUFError(f"{path}: truncated: {len(past_end)} tensor(s) end past the end of the file")
    return gguf


def _nbytes(t: GGUFTensor) -> int:
    block, type_size = GGML_QUANT_SIZES[t.qtype]
    return int(np.prod(t.ne, dtype=np.int64)) // block * type_size


def _parse(path: Path, buf: mmap.mmap) -> GGUFFile:
    cur = _Cursor(buf)
    cur.pos = 4
    version = cur.unpack("<I")
    if version not in (2, 3):
        raise GGUFError(f"{path}: GGUF version {version} is not supported (2 and 3 are)")
    n_tensors, n_kv = cur.unpack("<Q"), cur.unpack("<Q")
    metadata: dict[str, Any] = {}
    for _ in range(n_kv):
        key = cur.string()
        metadata[key] = cur.value(cur.unpack("<I"))
    infos = []
    for _ in range(n_tensors):
        name = cur.string()
        ne = tuple(cur.unpack("<Q") for _ in range(cur.unpack("<I")))
        qtype, offset = GGMLQuantizationType(cur.unpack("<I")), cur.unpack("<Q")
        infos.append((name, ne, qtype, offset))
    align = int(metadata.get("general.alignment", 32))
    data_start = -(-cur.pos // align) * align
    tensors = {n: GGUFTensor(n, ne, q, data_start + off) for n, ne, q, off in infos}
    return GGUFFile(path, metadata, tensors, buf)


def unpermute_rope(w: np.ndarray, n_head: int) -> np.ndarray:
    """Undo llama.cpp convert_hf_to_gguf.py ``LlamaModel.permute``.

    The converter reorders each head's rows from HF's rotate_half halves
    ``[x0..x(d/2-1), y0..y(d/2-1)]`` to interleaved pairs ``[x0, y0, x1, y1, ...]``
    for GGML's "normal" RoPE: ``reshape(n_head, 2, d/2, in).swapaxes(1, 2)``.
    This is the inverse: ``reshape(n_head, d/2, 2, in).swapaxes(1, 2)``.
    """
    out_dim = w.shape[0]
    return w.reshape(n_head, out_dim // n_head // 2, 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


# ---- block formats kept as they are ------------------------------------------
# Every GGUF block format LSE runs natively is brought to one exact form,
# w[n, b*B + l] = d[n, b] * q[n, b, l] + m[n, b], with integer q (4-bit
# formats packed two per byte in IREE's i4 order, the rest int8) and d and m
# per block of B values.
# The numbers are the file's own: d*q + m reproduces gguf.quants.dequantize
# bit for bit (the K-quants' d*sc and -dmin*min are the products it forms too).
# (GGUF type, block B, d/m dtype, has m)
BLOCK_TYPES = {
    GGMLQuantizationType.Q4_0: (32, np.float16, False),
    GGMLQuantizationType.Q4_1: (32, np.float16, True),
    GGMLQuantizationType.Q8_0: (32, np.float16, False),
    GGMLQuantizationType.Q5_0: (32, np.float16, False),
    GGMLQuantizationType.Q5_1: (32, np.float16, True),
    GGMLQuantizationType.Q4_K: (32, np.float32, True),
    GGMLQuantizationType.Q5_K: (32, np.float32, True),
    GGMLQuantizationType.Q6_K: (16, np.float32, False),
}


FOUR_BIT = ("q4_0", "q4_1", "q4_k")  # q fits 4 bits: stored packed


@dataclass(frozen=True)
class Blocks:
    """One matrix (N, K) in block form: q (N, K/B, B) int8, d and m (N, K/B)."""

    fmt: str  # the GGUF type's name in lower case: q4_1, q8_0, q4_k, ...
    q: np.ndarray
    d: np.ndarray
    m: np.ndarray | None
    # K-quants: d (and m) as the file factors them, [(f16 super-block scales
    # (N, K/256), int8 sub-block scales (N, K/B))]: d = d16 * sc and m =
    # (-dmin) * mn, exactly (the kernels' layout keeps these; kernel_layout.K_SUPER)
    factors: list[tuple[np.ndarray, np.ndarray]] | None = None

    def dequantize(self) -> np.ndarray:
        w = self.d.astype(np.float32)[..., None] * self.q.astype(np.float32)
        if self.m is not None:
            w = w + self.m.astype(np.float32)[..., None]
        return w.reshape(self.q.shape[0], -1)

    def stored_q(self) -> np.ndarray:
        """q as lse-import writes it: 4-bit formats two values per byte, value
        2j in the low nibble and 2j+1 in the high one (IREE's i4 layout)."""
        if self.fmt not in FOUR_BIT:
            return self.q
        nib = self.q.view(np.uint8) & 0x0F  # Q4_0's -8..7 as two's-complement nibbles
        return nib[..., 0::2] | (nib[..., 1::2] << 4)

    def take_rows(self, order: np.ndarray) -> "Blocks":
        factors = None if self.factors is None else [(sup[order], sub[order]) for sup, sub in self.factors]
        return Blocks(self.fmt, self.q[order], self.d[order], None if self.m is None else self.m[order], factors)


def _nibbles(qs: np.ndarray, half: int) -> np.ndarray:
    """(n, half) packed bytes → (n, 2*half): low nibbles first, then high (ggml's order)."""
    return np.concatenate([qs & 0x0F, qs >> 4], axis=-1)


def _k_scales(scales: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    from gguf.quants import Q4_K
    sc, mn = Q4_K.get_scale_min(scales)
    return sc.astype(np.float32), mn.astype(np.float32)


def _blocks_of(raw: np.ndarray, qtype: GGMLQuantizationType) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """raw (nb, type_size) uint8 → q (nb, S, B) int8, d (nb, S), m (nb, S) or None."""
    nb = raw.shape[0]
    f16 = lambda b: b.copy().view(np.float16).reshape(nb)  # noqa: E731
    if qtype == GGMLQuantizationType.Q8_0:
        return raw[:, 2:].view(np.int8).reshape(nb, 1, 32), f16(raw[:, :2])[:, None], None
    if qtype == GGMLQuantizationType.Q4_0:
        q = _nibbles(raw[:, 2:], 16).astype(np.int8) - 8
        return q.reshape(nb, 1, 32), f16(raw[:, :2])[:, None], None
    if qtype == GGMLQuantizationType.Q4_1:
        q = _nibbles(raw[:, 4:], 16).astype(np.int8)
        return q.reshape(nb, 1, 32), f16(raw[:, :2])[:, None], f16(raw[:, 2:4])[:, None]
    if qtype in (GGMLQuantizationType.Q5_0, GGMLQuantizationType.Q5_1):
        # d (and m) f16, then 32 high bits, then the low nibbles: value j's bit 4 is bit j of qh
        at = 2 if qtype == GGMLQuantizationType.Q5_0 else 4
        qh = raw[:, at:at + 4].copy().view(np.uint32).reshape(nb, 1)
        hi = ((qh >> np.arange(32, dtype=np.uint32)[None, :]) & 1).astype(np.uint8)
        q = (_nibbles(raw[:, at + 4:], 16) | (hi << 4)).astype(np.int8)
        if qtype == GGMLQuantizationType.Q5_0:
            return (q - 16).reshape(nb, 1, 32), f16(raw[:, :2])[:, None], None
        return q.reshape(nb, 1, 32), f16(raw[:, :2])[:, None], f16(raw[:, 2:4])[:, None]
    d, dmin = f16(raw[:, :2]).astype(np.float32)[:, None], f16(raw[:, 2:4]).astype(np.float32)[:, None]
    if qtype in (GGMLQuantizationType.Q4_K, GGMLQuantizationType.Q5_K):
        sc, mn = _k_scales(raw[:, 4:16])
        if qtype == GGMLQuantizationType.Q4_K:
            qs = raw[:, 16:].reshape(nb, 4, 32)
            q = np.stack([qs & 0x0F, qs >> 4], axis=2).reshape(nb, 8, 32)
        else:
            qh, qs = raw[:, 16:48], raw[:, 48:].reshape(nb, 4, 32)
            ql = np.stack([qs & 0x0F, qs >> 4], axis=2).reshape(nb, 8, 32)
            hi = (qh[:, None, :] >> np.arange(8, dtype=np.uint8)[None, :, None]) & 1
            q = ql | (hi << 4)
        return q.astype(np.int8), d * sc, -(dmin * mn)
    if qtype == GGMLQuantizationType.Q6_K:
        ql, qh = raw[:, :128].reshape(nb, 2, 1, 64), raw[:, 128:192].reshape(nb, 2, 1, 32)
        scales, d16 = raw[:, 192:208].view(np.int8).astype(np.float32), f16(raw[:, 208:210]).astype(np.float32)
        lo = ((ql >> np.array([0, 4], np.uint8).reshape(1, 1, 2, 1)) & 0x0F).reshape(nb, 2, 4, 32)
        hi = ((qh >> np.array([0, 2, 4, 6], np.uint8).reshape(1, 1, 4, 1)) & 0x03).reshape(nb, 2, 4, 32)
        q = (lo | (hi << 4)).astype(np.int8) - 32
        return q.reshape(nb, 16, 16), d16[:, None] * scales, None
    raise GGUFError(f"{qtype.name} has no block form")


def block_rows(gguf: GGUFFile, name: str) -> np.ndarray:
    """A block-quantised matrix's bytes in place: (rows, blocks a row, type
    size) uint8, a view of the file's map (read as it is touched)."""
    t = gguf.tensors[name]
    rows, type_size = int(np.prod(t.ne[1:])), GGML_QUANT_SIZES[t.qtype][1]
    return np.frombuffer(gguf._buf, np.uint8, _nbytes(t), t.offset).reshape(rows, -1, type_size)


def read_rows(gguf: GGUFFile, name: str, lo: int, hi: int) -> np.ndarray:
    """Rows lo..hi of a block-quantised matrix (block_rows' shape), read from
    the file into memory of their own: a reader of every matrix in turn maps
    none of the file into its process."""
    t = gguf.tensors[name]
    shape = block_rows(gguf, name).shape
    out = np.empty((hi - lo, *shape[1:]), np.uint8)
    with open(gguf.path, "rb", buffering=0) as f:
        if os.preadv(f.fileno(), [out], t.offset + lo * out[0].nbytes) != out.nbytes:
            raise GGUFError(f"{gguf.path}: {name} is cut short")
    return out


def _f16(b: np.ndarray, rows: int) -> np.ndarray:
    """Bytes of f16 values (rows, 2 per value) as (rows, values) float16."""
    return b.copy().view(np.float16).reshape(rows, -1)


def layout_parts(raw: np.ndarray, qtype: GGMLQuantizationType, rows: int) -> dict[str, Any]:
    """``rows`` rows' blocks, raw (rows * blocks a row, type size) uint8, as
    the kernels' layout reads them: "q" as lse-import stores it (Blocks.stored_q,
    (rows, S, bytes)) and "d", "m" (rows, S) at the file's f16, or a K-quant's
    "factors" (_k_factors) in place of its f32 products. Q8_0, Q4_0, Q4_1 and
    Q4_K take their stored q straight from the bytes (_nibble_pairs), Q6_K
    its values as "lanes" (_q6_lanes) in place of q; the others go through
    _blocks_of."""
    fmt = qtype.name.lower()
    if qtype == GGMLQuantizationType.Q8_0:
        q = raw[:, 2:].view(np.int8)
    elif qtype in (GGMLQuantizationType.Q4_0, GGMLQuantizationType.Q4_1):
        q = _nibble_pairs(raw[:, 2 if fmt == "q4_0" else 4:])
        if fmt == "q4_0":  # the file's nibble u holds u - 8: as a two's-complement nibble, u ^ 8
            q ^= np.uint8(0x88)
    elif qtype == GGMLQuantizationType.Q4_K:  # 4 runs of 32 bytes: sub-block 2i the low nibbles, 2i + 1 the high
        q = _nibble_pairs(raw[:, 16:].reshape(-1, 4, 32))
    elif qtype == GGMLQuantizationType.Q6_K:
        return {"lanes": _q6_lanes(raw), "factors": _k_factors(raw, qtype, rows)}
    else:
        q, d, m = _blocks_of(raw, qtype)
        q = Blocks(fmt, q, d, m).stored_q()
    out = {"q": q.reshape(rows, -1, 16 if fmt in FOUR_BIT else q.shape[-1])}
    factors = _k_factors(raw, qtype, rows)
    if factors is not None:
        return {**out, "factors": factors}
    out["d"] = _f16(raw[:, :2], rows)
    return out if fmt not in ("q4_1", "q5_1") else {**out, "m": _f16(raw[:, 2:4], rows)}


def _q6_lanes(raw: np.ndarray) -> np.ndarray:
    """Q6_K's super-blocks raw (nb, 210) → (4, nb * 16) uint32: row r holds,
    per block of 16 values (_blocks_of's blocks), u = q + 32 of its values
    4r .. 4r + 3 in byte lanes 0-3 (kernel_layout.q6_words). Four values a
    word: ql's low or high nibbles and qh's bit pair of 4 bytes at once."""
    nb = len(raw)
    words = np.ascontiguousarray(raw[:, :192]).view("<u4")
    ql = words[:, :32].reshape(nb, 2, 1, 2, 2, 4)  # (nb, h, -, s & 1, j, r): value 16j + 4r + i of run s of half h
    qh = words[:, 32:].reshape(nb, 2, 1, 2, 4)  # (nb, h, -, j, r)
    lo = (ql >> np.array([0, 4], np.uint32)[:, None, None, None]) & 0x0F0F0F0F  # (nb, h, s >> 1, s & 1, j, r)
    hi = (qh >> np.array([0, 2, 4, 6], np.uint32)[:, None, None]) & 0x03030303  # (nb, h, s, j, r)
    return np.ascontiguousarray((lo.reshape(nb, 2, 4, 2, 4) | (hi << 4)).reshape(-1, 4).T)


def _nibble_pairs(qs: np.ndarray) -> np.ndarray:
    """Runs of R packed bytes (..., R), byte j holding value j in its low
    nibble and value j + R in its high one (ggml's order) → (..., 2, R / 2)
    bytes, byte k holding values 2k and 2k + 1 of the run's 2R, low nibble
    first (IREE's i4 order)."""
    a, b = qs[..., 0::2], qs[..., 1::2]
    return np.stack([(a & 0x0F) | (b << 4), (a >> 4) | (b & 0xF0)], axis=-2)


def read_blocks(gguf: GGUFFile, name: str) -> Blocks:
    """A block-quantised GGUF matrix in block form, rows in the file's order."""
    t = gguf.tensors[name]
    block, dtype, _ = BLOCK_TYPES[t.qtype]
    _, type_size = GGML_QUANT_SIZES[t.qtype]
    rows, k = int(np.prod(t.ne[1:])), t.ne[0]
    raw = np.frombuffer(gguf._buf, np.uint8, _nbytes(t), t.offset).reshape(-1, type_size)
    q, d, m = _blocks_of(raw, t.qtype)
    per_row = k // block
    return Blocks(t.qtype.name.lower(), q.reshape(rows, per_row, block),
                  d.reshape(rows, per_row).astype(dtype), None if m is None else m.reshape(rows, per_row).astype(dtype),
                  _k_factors(raw, t.qtype, rows))


def _k_factors(raw: np.ndarray, qtype: GGMLQuantizationType, rows: int) -> list[tuple[np.ndarray, np.ndarray]] | None:
    """A K-quant's scales as the file stores them (Blocks.factors): Q4_K and
    Q5_K's f16 d with its 6-bit sc and -dmin with its 6-bit mn, Q6_K's f16 d
    with its int8 scales; None for the other formats."""
    if qtype in (GGMLQuantizationType.Q4_K, GGMLQuantizationType.Q5_K):
        sc, mn = _k_scales(raw[:, 4:16])
        return [(_f16(raw[:, :2], rows), sc.astype(np.int8).reshape(rows, -1)),
                (-_f16(raw[:, 2:4], rows), mn.astype(np.int8).reshape(rows, -1))]  # f16 negation is exact
    if qtype == GGMLQuantizationType.Q6_K:
        return [(_f16(raw[:, 208:210], rows), raw[:, 192:208].view(np.int8).reshape(rows, -1))]
    return None
