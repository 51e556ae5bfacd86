"""Weights: the model's safetensors files, read by header, checked against
the graph's weight map.

The weight map is data: the graph names every tensor it reads (HF names,
kept as is so the safetensors file itself is IREE's parameter source).
Loading fails once, listing every missing and every extra tensor.
"""

from __future__ import annotations

import functools
import json
import struct
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable, Iterator

import numpy as np

from lse.compiler.config import ModelConfig
from lse.compiler.graph import Graph

SUPPORTED_DTYPES = ("F32", "F16", "BF16")
# Block formats, kept as the GGUF file has them (lse-import writes them):
# w[n, b*B + l] = d[n, b] * q[n, b, l] + m[n, b], with parts <name>.q (int8,
# (N, K/B, B)), <name>.d and, for formats with an offset, <name>.m ((N, K/B)),
# and the format's name in the header's "lse.formats".
BLOCK_FORMATS = ("q4_0", "q4_1", "q8_0", "q5_0", "q5_1", "q4_k", "q5_k", "q6_k")
# Q5_0 and Q5_1 keep their 5-bit values one per byte (8 bits a value against the
# file's 5.5): the layout of Q8_0 (Q5_1 with an offset), so the int8 kernels read them.
# 4-bit formats store q two values per byte (value 2j in the low nibble, IREE's
# i4 layout); Q4_0's values are signed (-8..7), the others' unsigned (0..15).
FOUR_BIT = {"q4_0": "I4", "q4_1": "U4", "q4_k": "U4"}
PAD_PREFIX = "__pad"  # alignment filler tensors (lse-import writes them)
# A cached import of a GGUF file reads its block matrices in place: the
# header's "lse.gguf" names the file (path, size, mtime) and, per HF name,
# the GGUF tensor and the heads its rows are permuted over (Llama's q/k; 0:
# none). Their parts (q, d, m) are then views of the GGUF's blocks, made
# where something reads them (block_arrays).
GGUF_KEY = "lse.gguf"

# Tensors a checkpoint may carry that the graph never reads (HF writes the
# rotary table of older Llama exports as a buffer).
KNOWN_UNUSED_SUFFIXES = (".rotary_emb.inv_freq",)


class WeightError(ValueError):
    """The checkpoint does not match the graph's weight map."""


@dataclass(frozen=True)
class TensorInfo:
    name: str
    file: Path
    dtype: str
    shape: tuple[int, ...]
    offset: int  # absolute byte offset of the data in the file
    nbytes: int
    parts: dict[str, "TensorInfo"] | None = None  # block formats: "q", "d" and maybe "m"
    gguf: tuple[str, int] | None = None  # read in place: (GGUF tensor name, heads its rows are permuted over)

    @property
    def is_blocks(self) -> bool:
        return self.parts is not None


def read_header(path: Path) -> list[TensorInfo]:
    """The file's tensors; a block-format matrix is one TensorInfo (dtype its
    format, shape (N, K)) whose ``parts`` are the stored tensors."""
    with open(path, "rb") as f:
        (size,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(size))
    base = 8 + size
    formats = json.loads(header.get("__metadata__", {}).get("lse.formats", "{}"))
    stored = {}
    for name, meta in header.items():
        if name == "__metadata__" or name.startswith(PAD_PREFIX):
            continue
        start, end = meta["data_offsets"]
        stored[name] = TensorInfo(name, path, meta["dtype"], tuple(meta["shape"]), base + start, end - start)
    out = [t for n, t in stored.items() if n.rpartition(".")[0] not in formats]
    for name, fmt in formats.items():
        parts = {p: stored[f"{name}.{p}"] for p in "qdm" if f"{name}.{p}" in stored}
        if fmt in FOUR_BIT:  # the bytes hold (N, S, B/2) pairs of 4-bit values: the part is (N, S, B) i4
            q = parts["q"]
            parts["q"] = replace(q, dtype=FOUR_BIT[fmt], shape=(*q.shape[:-1], 2 * q.shape[-1]))
        q = parts["q"]
        shape = (*q.shape[:-2], q.shape[-2] * q.shape[-1])
        out.append(TensorInfo(name, path, fmt, shape, q.offset, sum(p.nbytes for p in parts.values()), parts))
    refs = header.get("__metadata__", {}).get(GGUF_KEY)
    return out + (gguf_tensors(json.loads(refs)) if refs else [])


def gguf_tensors(refs: dict[str, Any]) -> list[TensorInfo]:
    """The block matrices an import reads in place from its GGUF file: each
    one's parts with the shapes and types lse-import would write, no bytes of
    their own (file: the GGUF, offset -1). Raises WeightError where the file
    is gone or changed since the import."""
    from lse.compiler.gguf.reader import BLOCK_TYPES

    path = Path(refs["file"])
    try:
        st = path.stat()
    except OSError as e:
        raise WeightError(f"the GGUF file this model was imported from is gone ({path}): {e.strerror}") from e
    if (st.st_size, st.st_mtime_ns) != (refs["size"], refs["mtime_ns"]):
        raise WeightError(f"{path} changed since it was imported (size or modification time): import it again")
    gguf = _gguf(path, st.st_size, st.st_mtime_ns)
    out = []
    for name, (tensor, heads) in refs["tensors"].items():
        t = gguf.tensors[tensor]
        block, scale, has_m = BLOCK_TYPES[t.qtype]
        fmt = t.qtype.name.lower()
        n, k = int(np.prod(t.ne[1:])), int(t.ne[0])
        q_dtype, q_bytes = (FOUR_BIT[fmt], block // 2) if fmt in FOUR_BIT else ("I8", block)
        scale_dtype = "F16" if scale == np.float16 else "F32"
        parts = {"q": TensorInfo(f"{name}.q", path, q_dtype, (n, k // block, block), -1, n * k // block * q_bytes),
                 "d": TensorInfo(f"{name}.d", path, scale_dtype, (n, k // block), -1,
                                 n * k // block * np.dtype(scale).itemsize)}
        if has_m:
            parts["m"] = replace(parts["d"], name=f"{name}.m")
        out.append(TensorInfo(name, path, fmt, (n, k), t.offset, t.nbytes, parts, (tensor, int(heads))))
    return out


def block_arrays(t: TensorInfo) -> dict[str, np.ndarray]:
    """A block matrix's parts as lse-import writes them: "q" ((N, S, B) int8,
    or 4-bit values two a byte), "d" and maybe "m" ((N, S)); from the GGUF's
    blocks where the import reads them in place (a K-quant's also with
    "factors", reader.Blocks.factors), else from its stored parts."""
    if t.gguf is None:
        return {p: _stored(info) for p, info in t.parts.items()}
    blocks = _gguf_blocks(t)
    out = {"q": blocks.stored_q(), "d": blocks.d}
    if blocks.factors is not None:  # a K-quant's scales as the file factors them (kernel_layout reads them)
        out["factors"] = blocks.factors
    return out if blocks.m is None else {**out, "m": blocks.m}


def _gguf_blocks(t: TensorInfo) -> Any:
    """A matrix read in place: its GGUF blocks (reader.Blocks), rows in HF order."""
    from lse.compiler.gguf.reader import read_blocks, unpermute_rope

    tensor, heads = t.gguf
    st = t.file.stat()
    blocks = read_blocks(_gguf(t.file, st.st_size, st.st_mtime_ns), tensor)
    return blocks.take_rows(unpermute_rope(np.arange(t.shape[0])[:, None], heads)[:, 0]) if heads else blocks


def gguf_row_runs(t: TensorInfo, rows: int,
                  make: Callable[[np.ndarray], Any] | None = None) -> Iterator[Callable[[], Any]]:
    """A block matrix read in place, ``rows`` rows at a time in HF order:
    for each run, a call that reads the file's rows it spans (reader.read_rows)
    and returns its parts as the kernels' layout reads them (reader.layout_parts),
    or ``make`` of the rows' bytes (rows, blocks a row, type size) where
    given; the calls are independent, so they may run on several threads."""
    from lse.compiler.gguf.reader import block_rows, layout_parts, read_rows, unpermute_rope

    tensor, heads = t.gguf
    st = t.file.stat()
    gguf = _gguf(t.file, st.st_size, st.st_mtime_ns)
    n, qtype = len(block_rows(gguf, tensor)), gguf.tensors[tensor].qtype
    order = unpermute_rope(np.arange(n)[:, None], heads)[:, 0] if heads else np.arange(n)

    def run(src: np.ndarray) -> dict[str, Any]:  # src: the file's rows of HF's, within a head or two
        lo = int(src.min())
        raw = read_rows(gguf, tensor, lo, int(src.max()) + 1)
        raw = raw if heads == 0 else raw[src - lo]
        return make(raw) if make else layout_parts(raw.reshape(-1, raw.shape[2]), qtype, len(raw))
    for at in range(0, n, rows):
        yield functools.partial(run, order[at:at + rows])


@functools.lru_cache(maxsize=4)
def _gguf(path: Path, size: int, mtime_ns: int) -> Any:
    """A GGUF file's parsed header (its data mapped, not read), once per version of the file."""
    from lse.compiler.gguf.reader import read_gguf

    return read_gguf(path)


_STORED = {"F32": np.float32, "F16": np.float16, "I8": np.int8, "U8": np.uint8, "I4": np.uint8, "U4": np.uint8}


def stored_spec(info: TensorInfo) -> tuple[tuple[int, ...], Any]:
    """A part's (shape, numpy dtype) as stored: 4-bit values two a byte."""
    if info.dtype in FOUR_BIT.values():
        return (*info.shape[:-1], info.shape[-1] // 2), np.uint8
    return info.shape, _STORED[info.dtype]


def _stored(info: TensorInfo) -> np.ndarray:
    """A stored part's bytes as written."""
    shape, dtype = stored_spec(info)
    return np.fromfile(info.file, dtype, int(np.prod(shape)), offset=info.offset).reshape(shape)


def parameter_files(tensors: dict[str, TensorInfo]) -> list[str]:
    """The files IREE reads the model's own parameters from: its safetensors
    files, not a GGUF whose blocks are read in place."""
    return sorted({str(t.file) for t in tensors.values() if t.gguf is None})


def safetensors_files(model_dir: Path) -> list[Path]:
    index = model_dir / "model.safetensors.index.json"
    if index.is_file():
        names = sorted(set(json.loads(index.read_text())["weight_map"].values()))
        return [model_dir / n for n in names]
    files = sorted(model_dir.glob("*.safetensors"))
    if not files:
        raise WeightError(f"{model_dir} has no *.safetensors file")
    return files


def read_tensors(model_dir: str | Path) -> dict[str, TensorInfo]:
    tensors: dict[str, TensorInfo] = {}
    for path in safetensors_files(Path(model_dir)):
        for t in read_header(path):
            tensors[t.name] = t
    return tensors


def default_kv_dtype(model_dir: str | Path) -> str:
    """The KV cache's element type when none is asked for ("auto"): f16 for
    block-format weights (llama.cpp's default for its files; the attention
    kernels read it), f32 for float checkpoints. lse-compile and the engine
    both resolve "auto" here, so an artifact compiled by hand serves as the
    server would have compiled it."""
    return "f16" if any(t.is_blocks for t in read_tensors(model_dir).values()) else "f32"


def expected_shapes(cfg: ModelConfig, graph: Graph) -> dict[str, tuple[int, ...]]:
    """The weight map: every tensor the graph reads, with its HF shape."""
    h, d = cfg.hidden_size, cfg.head_dim
    shapes: dict[str, tuple[int, ...]] = {}
    for node in graph.nodes:
        for w in node.weights:
            if node.op in ("embedding", "lm_head"):
                shapes[w] = (cfg.vocab_size, h)
            elif node.op == "rms_norm":
                shapes[w] = (node.attrs["group"],)
            elif w.endswith(".bias"):
                shapes[w] = (node.attrs["out_features"],)
            else:
                in_features = {"o_proj": cfg.num_attention_heads * d, "down_proj": cfg.intermediate_size}
                key = w.split(".")[-2]
                shapes[w] = (node.attrs["out_features"], in_features.get(key, h))
    return shapes


def check_weights(cfg: ModelConfig, graph: Graph, tensors: dict[str, TensorInfo]) -> list[str]:
    """Raise one WeightError listing every problem; return the unused names."""
    expected = expected_shapes(cfg, graph)
    missing = sorted(set(expected) - set(tensors))
    unused = sorted(n for n in set(tensors) - set(expected) if n.endswith(KNOWN_UNUSED_SUFFIXES))
    extra = sorted(set(tensors) - set(expected) - set(unused))
    problems = []
    if missing:
        problems.append(f"missing tensors: {', '.join(missing)}")
    if extra:
        problems.append(f"unexpected tensors: {', '.join(extra)}")
    for name in sorted(set(expected) & set(tensors)):
        t = tensors[name]
        if t.shape != expected[name]:
            problems.append(f"{name}: shape {list(t.shape)}, expected {list(expected[name])}")
        if t.dtype not in SUPPORTED_DTYPES + BLOCK_FORMATS:
            problems.append(f"{name}: dtype {t.dtype} is not one of {', '.join(SUPPORTED_DTYPES + BLOCK_FORMATS)}")
    if problems:
        raise WeightError("the checkpoint does not match the model graph: " + "; ".join(problems))
    return unused


def load_array(t: TensorInfo) -> np.ndarray:
    """One tensor as float32 numpy (bf16 widened by a 16-bit shift; a block
    format dequantized as d * q + m, exactly as the compiled modules do)."""
    if t.gguf is not None:
        return _gguf_blocks(t).dequantize().reshape(t.shape)
    if t.parts is not None:
        q = load_array(t.parts["q"])
        w = load_array(t.parts["d"])[..., None] * q
        if "m" in t.parts:
            w += load_array(t.parts["m"])[..., None]
        return w.reshape(t.shape)
    raw = np.memmap(t.file, dtype=np.uint8, mode="r", offset=t.offset, shape=(t.nbytes,))
    if t.dtype in ("I4", "U4"):
        nib = np.stack([raw & 0x0F, raw >> 4], axis=-1).reshape(t.shape)
        return (nib.astype(np.int8) - 16 * (nib >= 8) if t.dtype == "I4" else nib).astype(np.float32)
    if t.dtype == "F32":
        return np.frombuffer(raw, dtype=np.float32).reshape(t.shape)
    if t.dtype in ("F16", "I8"):
        return np.frombuffer(raw, dtype=np.float16 if t.dtype == "F16" else np.int8).astype(np.float32).reshape(t.shape)
    u16 = np.frombuffer(raw, dtype=np.uint16).astype(np.uint32) << 16
    return u16.view(np.float32).reshape(t.shape)
