"""Tiny seeded GGUF files, one per architecture lse-import serves, written with
``gguf.GGUFWriter`` in each architecture's own tensor names and metadata (as
llama.cpp's converter writes them: Llama's Q/K rows permuted for GGML's
"normal" RoPE, Phi-3's fused qkv and gate_up, Qwen2's biases, Qwen3's q/k
norms and explicit head_dim, Llama 3's ``rope_freqs``).

Odd sizes where the block formats allow (K a multiple of 32, and of 256 for
the K-quants: only ffn_down's K is 256): 3 query heads, vocab 301 (the test
tokenizer of make_fixtures), hidden 96. The matrices rotate through the block
formats so that the fixtures together use every one LSE runs.

    arch_gguf_path(name)  -> <cache>/fixtures/arch_<name>-<hash>.gguf
    hf_layout_dir(name)   -> the same weights as a Hugging Face directory
    python -m lse.tools.make_arch_fixtures OUT_DIR [NAME ...]
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import shutil
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import gguf
import ml_dtypes
import numpy as np
from gguf.constants import GGMLQuantizationType as Q

from lse.compiler.cache import cache_dir

HIDDEN, FFN, LAYERS, VOCAB_CTX = 96, 256, 2, 2048
_ROTATION = (Q.Q4_0, Q.Q4_1, Q.Q8_0, Q.Q5_0, Q.Q5_1, Q.F16, Q.BF16, Q.F32)
_K_QUANTS = (Q.Q4_K, Q.Q5_K, Q.Q6_K)
# HF's Llama 3 rope_scaling for the llama3_rope fixture: a short original
# context, so the scaled frequencies change the angles within a 64-token reply.
LLAMA3_ROPE = {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
               "original_max_position_embeddings": 64}


@dataclass(frozen=True)
class ArchFixture:
    arch: str  # general.architecture
    seed: int
    heads: int = 3
    kv_heads: int = 1
    head_dim: int = 32
    tied: bool = False
    layers: int = LAYERS
    embed_std: float = 0.2  # gemma3's rows are scaled by sqrt(hidden): smaller, so a reply is not its prompt's last token
    out_norm: float = 1.0  # the final norm's mean weight
    rope_theta: float = 10000.0
    extra_meta: dict[str, Any] = field(default_factory=dict)  # "<arch>.<key>" → value
    hf_rope_scaling: dict[str, Any] | None = None  # the HF rope_scaling the GGUF encodes


ARCH_FIXTURES: dict[str, ArchFixture] = {
    "llama": ArchFixture("llama", 101),
    "llama3_rope": ArchFixture("llama", 102, hf_rope_scaling=LLAMA3_ROPE, rope_theta=500000.0),
    "qwen2": ArchFixture("qwen2", 103, tied=True, rope_theta=1000000.0),
    "qwen3": ArchFixture("qwen3", 104, heads=3, kv_heads=1, head_dim=40),
    "phi3": ArchFixture("phi3", 105, extra_meta={"attention.sliding_window": 1024}),
    # six layers: the sixth is gemma3's first global one (RoPE base 1e6; the sliding ones 10000)
    "gemma3": ArchFixture("gemma3", 106, head_dim=48, tied=True, layers=6, rope_theta=1000000.0, embed_std=0.03,
                          out_norm=6.0,
                          extra_meta={"attention.sliding_window": 128}),
}


def _fmt(i: int, k: int) -> Q:
    """The i-th matrix's format: K-quants where K is 256, else the rotation (K a multiple of 32 or not)."""
    if k % 256 == 0:
        return _K_QUANTS[i % len(_K_QUANTS)]
    fmt = _ROTATION[i % len(_ROTATION)]
    return fmt if k % 32 == 0 or fmt in (Q.F16, Q.BF16, Q.F32) else Q.F16


def _random_k_blocks(rng: np.random.Generator, qtype: Q, rows: int, k: int) -> np.ndarray:
    from lse.tools.make_gguf_fixtures import _random_k_blocks as blocks
    return blocks(rng, qtype, rows, k)


def _add(writer: gguf.GGUFWriter, rng: np.random.Generator, name: str, w: np.ndarray, qtype: Q) -> None:
    """One tensor in ``qtype`` (K-quants: random valid blocks of the same scale)."""
    if qtype in _K_QUANTS:
        writer.add_tensor(name, _random_k_blocks(rng, qtype, *w.shape), raw_dtype=qtype)
    elif qtype == Q.F32:
        writer.add_tensor(name, w.astype(np.float32))
    elif qtype == Q.F16:
        writer.add_tensor(name, w.astype(np.float16))
    elif qtype == Q.BF16:
        writer.add_tensor(name, w.astype(ml_dtypes.bfloat16).view(np.uint8), raw_dtype=qtype)
    else:
        writer.add_tensor(name, gguf.quants.quantize(w.astype(np.float32), qtype), raw_dtype=qtype)


def permute(w: np.ndarray, n_head: int) -> np.ndarray:
    """llama.cpp convert_hf_to_gguf.py LlamaModel.permute: HF rotate_half rows → interleaved pairs."""
    return w.reshape(n_head, 2, w.shape[0] // n_head // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def llama3_freq_factors(scaling: dict[str, Any], theta: float, d: int) -> np.ndarray:
    """The converter's rope_freqs for HF's llama3 rope_scaling (LlamaModel.generate_extra_tensors)."""
    factor, lo, hi = scaling["factor"], scaling["low_freq_factor"], scaling["high_freq_factor"]
    old = scaling["original_max_position_embeddings"]
    out = []
    for freq in 1.0 / theta ** (np.arange(0, d, 2, dtype=np.float32) / d):
        wavelen = 2 * math.pi / freq
        if wavelen < old / hi:
            out.append(1.0)
        elif wavelen > old / lo:
            out.append(factor)
        else:
            smooth = (old / wavelen - lo) / (hi - lo)
            out.append(1 / ((1 - smooth) / factor + smooth))
    return np.asarray(out, np.float32)


def _tokenizer_meta(writer: gguf.GGUFWriter) -> int:
    """make_fixtures' byte-level BPE (301 tokens) as GGUF gpt2 tokenizer metadata; the vocab size."""
    from lse.tools.make_fixtures import FIXTURES_DIR, make_tokenizer

    tok = make_tokenizer()
    model = json.loads(tok.to_str())["model"]
    vocab = sorted(tok.get_vocab().items(), key=lambda kv: kv[1])
    specials = {a["content"] for a in json.loads(tok.to_str())["added_tokens"] if a["special"]}
    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre("gpt-2")
    writer.add_token_list([t for t, _ in vocab])
    writer.add_token_types([3 if t in specials else 1 for t, _ in vocab])
    writer.add_token_merges([m if isinstance(m, str) else " ".join(m) for m in model["merges"]])
    writer.add_bos_token_id(tok.token_to_id("<|endoftext|>"))
    writer.add_eos_token_id(tok.token_to_id("<|im_end|>"))
    writer.add_chat_template((FIXTURES_DIR / "chatml" / "template.jinja").read_text())
    return len(vocab)


def _metadata(writer: gguf.GGUFWriter, fx: ArchFixture) -> None:
    a = fx.arch
    writer.add_block_count(fx.layers)
    writer.add_context_length(VOCAB_CTX)
    writer.add_embedding_length(HIDDEN)
    writer.add_feed_forward_length(FFN)
    writer.add_head_count(fx.heads)
    writer.add_head_count_kv(fx.kv_heads)
    writer.add_layer_norm_rms_eps(1e-5)
    writer.add_rope_freq_base(fx.rope_theta)
    if fx.head_dim * fx.heads != HIDDEN:
        writer.add_key_length(fx.head_dim)
        writer.add_value_length(fx.head_dim)
    writer.add_rope_dimension_count(fx.head_dim)
    for key, value in fx.extra_meta.items():
        writer.add_uint32(f"{a}.{key}", value)


def _layer(writer: gguf.GGUFWriter, rng: np.random.Generator, fx: ArchFixture, i: int) -> None:
    q, kv = fx.heads * fx.head_dim, fx.kv_heads * fx.head_dim
    mats = {"attn_q": (q, HIDDEN), "attn_k": (kv, HIDDEN), "attn_v": (kv, HIDDEN), "attn_output": (HIDDEN, q),
            "ffn_gate": (FFN, HIDDEN), "ffn_up": (FFN, HIDDEN), "ffn_down": (HIDDEN, FFN)}
    w = {k: (rng.standard_normal(s) * 0.1).astype(np.float32) for k, s in mats.items()}
    if fx.arch == "llama":
        w["attn_q"], w["attn_k"] = permute(w["attn_q"], fx.heads), permute(w["attn_k"], fx.kv_heads)
    if fx.arch == "phi3":
        w["attn_qkv"] = np.concatenate([w.pop("attn_q"), w.pop("attn_k"), w.pop("attn_v")])
        w["ffn_up"] = np.concatenate([w.pop("ffn_gate"), w["ffn_up"]])  # HF gate_up_proj: gate rows first
    norms = ["attn_norm", "ffn_norm"] + (["attn_q_norm", "attn_k_norm"] if fx.arch in ("qwen3", "gemma3") else [])
    norms += ["post_attention_norm", "post_ffw_norm"] if fx.arch == "gemma3" else []  # stored as 1 + w
    for n in norms:
        size = fx.head_dim if n in ("attn_q_norm", "attn_k_norm") else HIDDEN
        _add(writer, rng, f"blk.{i}.{n}.weight", (1 + 0.1 * rng.standard_normal(size)).astype(np.float32), Q.F32)
    for j, (name, m) in enumerate(w.items()):
        _add(writer, rng, f"blk.{i}.{name}.weight", m, _fmt(j + 7 * i + fx.seed, m.shape[1]))
    if fx.arch == "qwen2":
        for name, rows in (("attn_q", q), ("attn_k", kv), ("attn_v", kv)):
            _add(writer, rng, f"blk.{i}.{name}.bias", (0.1 * rng.standard_normal(rows)).astype(np.float32), Q.F32)


def write_arch_gguf(path: Path, name: str) -> None:
    fx = ARCH_FIXTURES[name]
    rng = np.random.default_rng(fx.seed)
    writer = gguf.GGUFWriter(path, arch=fx.arch)
    vocab = _tokenizer_meta(writer)
    _metadata(writer, fx)
    _add(writer, rng, "token_embd.weight", (rng.standard_normal((vocab, HIDDEN)) * fx.embed_std).astype(np.float32),
         Q.Q8_0)
    if fx.hf_rope_scaling is not None:
        _add(writer, rng, "rope_freqs.weight", llama3_freq_factors(fx.hf_rope_scaling, fx.rope_theta, fx.head_dim),
             Q.F32)
    for i in range(fx.layers):
        _layer(writer, rng, fx, i)
    _add(writer, rng, "output_norm.weight", (fx.out_norm + 0.1 * rng.standard_normal(HIDDEN)).astype(np.float32),
         Q.F32)
    if not fx.tied:
        _add(writer, rng, "output.weight", (rng.standard_normal((vocab, HIDDEN)) * 0.2).astype(np.float32), Q.Q4_1)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def _digest() -> str:
    from lse.tools import make_fixtures, make_gguf_fixtures

    h = hashlib.sha256(Path(__file__).read_bytes())
    for mod in (make_fixtures, make_gguf_fixtures):
        h.update(Path(mod.__file__).read_bytes())
    h.update(f"gguf {gguf.__version__ if hasattr(gguf, '__version__') else ''} numpy {np.__version__}".encode())
    return h.hexdigest()[:12]


def arch_gguf_path(name: str) -> Path:
    """The fixture ``name`` in the cache, written (atomically) if missing."""
    if name not in ARCH_FIXTURES:
        raise KeyError(f"unknown arch fixture {name!r}; known: {', '.join(ARCH_FIXTURES)}")
    final = cache_dir() / "fixtures" / f"arch_{name}-{_digest()}.gguf"
    if final.is_file():
        return final
    final.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".arch_{name}-", suffix=".gguf", dir=final.parent)
    os.close(fd)
    try:
        write_arch_gguf(Path(tmp), name)
        os.replace(tmp, final)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return final


def hf_layout_dir(name: str) -> Path:
    """The fixture as a Hugging Face directory: the float32 import of its GGUF
    with config.json in HF's own terms (Llama 3's rope_scaling rather than the
    GGUF's rope_freqs), so the compiler's config.json path is the one tested."""
    from lse.compiler.gguf.importer import ensure_imported

    src = ensure_imported(arch_gguf_path(name), f"arch_{name}", dequantize=True)
    fx = ARCH_FIXTURES[name]
    final = src.parent / f"{src.name}-hf"
    if (final / "model.safetensors").is_file():
        return final
    tmp = Path(tempfile.mkdtemp(prefix=f".{final.name}.", dir=src.parent))
    for f in src.iterdir():
        if f.name != "config.json":
            os.link(f, tmp / f.name)
    config = json.loads((src / "config.json").read_text())
    if fx.hf_rope_scaling is not None:
        config["rope_scaling"] = dict(fx.hf_rope_scaling)
    if fx.head_dim * fx.heads == HIDDEN:
        config.pop("head_dim")  # HF derives it
    (tmp / "config.json").write_text(json.dumps(config, indent=2) + "\n")
    try:
        os.rename(tmp, final)
    except OSError:
        if not (final / "model.safetensors").is_file():
            raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return final


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if not args or args[0] in ("-h", "--help"):
        print(f"usage: python -m lse.tools.make_arch_fixtures OUT_DIR [NAME ...]\nnames: {', '.join(ARCH_FIXTURES)}",
              file=sys.stderr)
        return 2
    out = Path(args[0])
    out.mkdir(parents=True, exist_ok=True)
    for name in args[1:] or list(ARCH_FIXTURES):
        write_arch_gguf(out / f"{name}.gguf", name)
        print(out / f"{name}.gguf")
    return 0


if __name__ == "__main__":
    sys.exit(main())
