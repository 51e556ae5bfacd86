"""GGUF reading and the GGUF → Hugging Face weight mapping.

``read_gguf`` parses the GGUF header itself: ``gguf.GGUFReader`` builds a
numpy view per string and takes ~9 s on SmolLM2's 98k tokenizer strings;
this parser takes ~0.1 s. Tensor data is dequantized with
``gguf.quants.dequantize``. The format: github.com/ggml-org/ggml docs/gguf.md.

``write_aligned_safetensors`` writes a safetensors file whose every tensor
starts at a multiple of 64 bytes from the file start, so IREE can mmap the
weights with no copy (shared/notes/iree-3.13.md §1).
"""

from __future__ import annotations

import json
import mmap
import struct
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

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


# GGUF name → HF name. Per-layer names use {i}. Weight mapping is data.
LAYER_MAP = {
    "blk.{i}.attn_norm.weight": "model.layers.{i}.input_layernorm.weight",
    "blk.{i}.attn_q.weight": "model.layers.{i}.self_attn.q_proj.weight",
    "blk.{i}.attn_k.weight": "model.layers.{i}.self_attn.k_proj.weight",
    "blk.{i}.attn_v.weight": "model.layers.{i}.self_attn.v_proj.weight",
    "blk.{i}.attn_output.weight": "model.layers.{i}.self_attn.o_proj.weight",
    "blk.{i}.ffn_norm.weight": "model.layers.{i}.post_attention_layernorm.weight",
    "blk.{i}.ffn_gate.weight": "model.layers.{i}.mlp.gate_proj.weight",
    "blk.{i}.ffn_up.weight": "model.layers.{i}.mlp.up_proj.weight",
    "blk.{i}.ffn_down.weight": "model.layers.{i}.mlp.down_proj.weight",
}
GLOBAL_MAP = {
    "token_embd.weight": "model.embed_tokens.weight",
    "output_norm.weight": "model.norm.weight",
}
OPTIONAL_MAP = {"output.weight": "lm_head.weight"}  # absent when embeddings are tied
UNUSED: frozenset[str] = frozenset()  # GGUF tensors deliberately dropped (none for Llama)


def llama_name_map(gguf: GGUFFile, n_layers: int) -> dict[str, str]:
    """GGUF name → HF name for every tensor to import, in file-writing order.

    Fails once, listing every missing and every unexpected tensor.
    """
    want = dict(GLOBAL_MAP)
    for i in range(n_layers):
        want.update({g.format(i=i): h.format(i=i) for g, h in LAYER_MAP.items()})
    want.update({g: h for g, h in OPTIONAL_MAP.items() if g in gguf.tensors})
    missing = sorted(set(want) - set(gguf.tensors))
    extra = sorted(set(gguf.tensors) - set(want) - UNUSED)
    if missing or extra:
        raise GGUFError(f"{gguf.path.name}: tensors do not match a {n_layers}-layer Llama; "
                        f"missing: {missing or 'none'}; unexpected: {extra or 'none'}")
    return want


def write_aligned_safetensors(path: Path, shapes: dict[str, tuple[int, ...]],
                              load: Callable[[str], np.ndarray], align: int = 64) -> None:
    """Write float32 tensors so each one's data starts at a multiple of ``align``.

    The header is padded with spaces (allowed by the safetensors spec) so the
    data section starts aligned. The spec forbids holes between tensors, so
    alignment holds only while every tensor but the last is a multiple of
    ``align`` bytes: a tensor of another size goes last, and more than one is
    refused. ``load(name)`` is called once per tensor as it is written, so
    only one tensor is in memory at a time.
    """
    nbytes = {n: int(np.prod(s, dtype=np.int64)) * 4 for n, s in shapes.items()}
    odd = [n for n in shapes if nbytes[n] % align]
    if len(odd) > 1:
        raise ValueError(f"cannot align {len(odd)} tensors whose byte sizes are not multiples of {align}: {odd}")
    order = [n for n in shapes if n not in odd] + odd
    header, pos = {}, 0
    for n in order:
        header[n] = {"dtype": "F32", "shape": list(shapes[n]), "data_offsets": [pos, pos + nbytes[n]]}
        pos += nbytes[n]
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-(8 + len(text)) % align)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text)
        for n in order:
            arr = load(n)
            if tuple(arr.shape) != tuple(shapes[n]):
                raise ValueError(f"{n}: shape {arr.shape} != declared {shapes[n]}")
            f.write(np.ascontiguousarray(arr, dtype="<f4").tobytes())
        if f.tell() != 8 + len(text) + pos:
            raise AssertionError(f"{path}: wrote {f.tell()} bytes, header declares {8 + len(text) + pos}")
    check_alignment(path, align)


def check_alignment(path: Path, align: int = 64) -> None:
    """Raise unless every tensor in the safetensors file starts at a multiple of ``align``."""
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n))
    bad = [k for k, v in header.items() if k != "__metadata__" and (8 + n + v["data_offsets"][0]) % align]
    if bad:
        raise ValueError(f"{path}: {len(bad)} tensor(s) not {align}-byte aligned: {bad[:5]}")
