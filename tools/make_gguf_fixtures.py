"""A tiny seeded Llama written as a GGUF file with every block format LSE runs natively.

One model, two layers, each matrix in another format, so one compile covers
them all: Q4_0, Q4_1, Q8_0, Q5_0, Q5_1 (quantized by gguf-py), Q4_K, Q5_K and Q6_K (random
valid blocks: gguf-py cannot quantize K-quants, and any bytes with sane
scales are a valid block), F16, BF16 and F32. The tokenizer and chat template
are the default model's (copied from its GGUF), so the vocabulary is real.
Sizes: hidden 256 (K-quant rows are multiples of 256), FFN 320 (10 blocks of
32), 4 query heads and 2 KV heads of 64.

    gguf_fixture_path()  -> <cache>/fixtures/mixed_formats-<hash>.gguf
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path

import gguf
import ml_dtypes
import numpy as np
from gguf.constants import GGML_QUANT_SIZES
from gguf.constants import GGMLQuantizationType as Q

from lse.compiler.cache import cache_dir

HIDDEN, FFN, HEADS, KV_HEADS, LAYERS = 256, 320, 4, 2, 2
HEAD_DIM = HIDDEN // HEADS
# The format of every matrix, by GGUF name (the K-quants only where K = 256).
FORMATS = {
    "token_embd.weight": Q.Q6_K,  # tied: also the lm_head
    "blk.0.attn_q.weight": Q.Q4_0, "blk.0.attn_k.weight": Q.Q4_1, "blk.0.attn_v.weight": Q.Q8_0,
    "blk.0.attn_output.weight": Q.F16, "blk.0.ffn_gate.weight": Q.Q4_K, "blk.0.ffn_up.weight": Q.Q5_K,
    "blk.0.ffn_down.weight": Q.BF16,
    "blk.1.attn_q.weight": Q.Q6_K, "blk.1.attn_k.weight": Q.F32, "blk.1.attn_v.weight": Q.Q4_K,
    "blk.1.attn_output.weight": Q.Q5_K, "blk.1.ffn_gate.weight": Q.Q5_1, "blk.1.ffn_up.weight": Q.Q5_0,
    "blk.1.ffn_down.weight": Q.Q4_0,
}
_K_QUANTS = (Q.Q4_K, Q.Q5_K, Q.Q6_K)


def _shape(name: str, vocab: int) -> tuple[int, int]:
    """numpy shape (rows, K) of a matrix by its GGUF name."""
    kind = name.split(".")[-2]
    return {"token_embd": (vocab, HIDDEN), "attn_q": (HIDDEN, HIDDEN), "attn_k": (KV_HEADS * HEAD_DIM, HIDDEN),
            "attn_v": (KV_HEADS * HEAD_DIM, HIDDEN), "attn_output": (HIDDEN, HIDDEN),
            "ffn_gate": (FFN, HIDDEN), "ffn_up": (FFN, HIDDEN), "ffn_down": (HIDDEN, FFN)}[kind]


def _random_k_blocks(rng: np.random.Generator, qtype: Q, rows: int, k: int) -> np.ndarray:
    """Random valid K-quant blocks (rows, k // 256 * type_size) with scales giving |w| ~ 0.05."""
    _, size = GGML_QUANT_SIZES[qtype]
    raw = rng.integers(0, 256, (rows * k // 256, size), dtype=np.uint8)
    scale = lambda lo, hi: np.float16(rng.uniform(lo, hi, len(raw))).view(np.uint8).reshape(-1, 2)  # noqa: E731
    if qtype == Q.Q6_K:
        raw[:, 208:210] = scale(2e-5, 6e-5)  # w = d * int8 scale * (q - 32)
    else:
        raw[:, 0:2] = scale(1e-4, 3e-4)  # w = d * sc * q - dmin * m
        raw[:, 2:4] = scale(1e-4, 3e-4)
    return raw.reshape(rows, -1)


def _tensor(writer: gguf.GGUFWriter, rng: np.random.Generator, name: str, shape: tuple[int, ...]) -> None:
    qtype = FORMATS.get(name, Q.F32)
    if qtype in _K_QUANTS:
        writer.add_tensor(name, _random_k_blocks(rng, qtype, *shape), raw_dtype=qtype)
        return
    w = (rng.standard_normal(shape) * (0.05 if len(shape) == 2 else 0.1) + (1.0 if len(shape) == 1 else 0.0))
    w = w.astype(np.float32)
    if qtype == Q.F32:
        writer.add_tensor(name, w)
    elif qtype == Q.F16:
        writer.add_tensor(name, w.astype(np.float16))
    elif qtype == Q.BF16:
        writer.add_tensor(name, w.astype(ml_dtypes.bfloat16).view(np.uint8), raw_dtype=qtype)
    else:  # raw bytes, (rows, bytes per row): the writer derives the shape
        writer.add_tensor(name, gguf.quants.quantize(w, qtype), raw_dtype=qtype)


def copy_tokenizer(reader: gguf.GGUFReader, writer: gguf.GGUFWriter) -> None:
    """Every ``tokenizer.*`` key of ``reader``'s file (vocabulary, merges, template) into ``writer``."""
    for key, field in reader.fields.items():
        if key.startswith("tokenizer."):
            sub = field.types[-1] if field.types[0] == gguf.GGUFValueType.ARRAY else None
            writer.add_key_value(key, field.contents(), field.types[0], sub)


def write_gguf_fixture(path: Path, source: Path) -> None:
    """The mixed-format model at ``path``, with ``source``'s tokenizer and template."""
    reader = gguf.GGUFReader(source)
    rng = np.random.default_rng(20261201)
    writer = gguf.GGUFWriter(path, arch="llama")
    copy_tokenizer(reader, writer)
    vocab = len(reader.fields["tokenizer.ggml.tokens"].contents())
    writer.add_block_count(LAYERS)
    writer.add_context_length(512)
    writer.add_embedding_length(HIDDEN)
    writer.add_feed_forward_length(FFN)
    writer.add_head_count(HEADS)
    writer.add_head_count_kv(KV_HEADS)
    writer.add_layer_norm_rms_eps(1e-5)
    writer.add_rope_freq_base(10000.0)
    _tensor(writer, rng, "token_embd.weight", _shape("token_embd.weight", vocab))
    for i in range(LAYERS):
        for kind in ("attn_norm", "ffn_norm"):
            _tensor(writer, rng, f"blk.{i}.{kind}.weight", (HIDDEN,))
        for kind in ("attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up", "ffn_down"):
            name = f"blk.{i}.{kind}.weight"
            _tensor(writer, rng, name, _shape(name, vocab))
    _tensor(writer, rng, "output_norm.weight", (HIDDEN,))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def gguf_fixture_path() -> Path:
    """The fixture in the cache, written (atomically) if missing."""
    from lse.compiler.gguf.importer import default_gguf_path

    digest = hashlib.sha256(Path(__file__).read_bytes()).hexdigest()[:12]
    final = cache_dir() / "fixtures" / f"mixed_formats-{digest}.gguf"
    if final.is_file():
        return final
    final.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".mixed_formats-", suffix=".gguf", dir=final.parent)
    os.close(fd)
    try:
        write_gguf_fixture(Path(tmp), default_gguf_path())
        os.replace(tmp, final)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return final
