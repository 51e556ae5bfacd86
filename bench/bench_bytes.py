"""Bytes of weights one decode token reads, per model shape and GGUF mix:
the GGUF's own bytes against the CPU kernels' layout (kernel_layout.py),
computed from the tensor sizes alone, so the figures are exact and need no
file, no compile and no quiet machine.

A batch-1 decode step reads every matrix of every layer once and the output
projection (the embedding table, tied, in these shapes) whole; the embedding
lookup reads one row and the norms a few KiB, left out. The layout's bytes
come from ``kernel_layout.layout_weights`` itself, so they follow the layout
as it changes.

``python -m lse.bench.bench_bytes`` prints the table (docs/kernels.md
carries it).
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass

import numpy as np
from gguf.constants import GGML_QUANT_SIZES, GGMLQuantizationType

from lse.compiler.kernel_layout import layout_weights
from lse.compiler.weights import FOUR_BIT


@dataclass(frozen=True)
class Shape:
    hidden: int
    ffn: int
    layers: int
    heads: int
    kv_heads: int
    vocab: int = 49152  # the default model's tokenizer, as the scale bench's files have it
    arch: str = "llama"  # qwen2: q/k/v biases and RoPE base 1e6 (bench_scale.write_scale_gguf)

    @property
    def kv(self) -> int:
        return self.kv_heads * self.hidden // self.heads


# Llama-3.2-1B, Llama-3.2-3B and Qwen2.5-7B's shapes (issue 37's scale files);
# qwen2-1.5b: Qwen2.5-1.5B's, a qwen2 file (issue 38's qwen2 row)
SHAPES = {
    "1b": Shape(2048, 8192, 16, 32, 8),
    "3b": Shape(3072, 8192, 28, 24, 8),
    "7b": Shape(3584, 18944, 28, 28, 4),
    "qwen2-1.5b": Shape(1536, 8960, 28, 12, 2, arch="qwen2"),
}
ROLES = ("attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up", "ffn_down")
# The formats llama.cpp's quantizer gives each matrix (the tied output / embedding
# table: Q6_K unless the mix is Q8_0). Q4_K_M as issue 37's files have it: Q6_K
# for every attn_v and ffn_down.
MIXES = {
    "q4_k_m": {**dict.fromkeys(ROLES, "q4_k"), "attn_v": "q6_k", "ffn_down": "q6_k", "output": "q6_k"},
    "q4_0": {**dict.fromkeys(ROLES, "q4_0"), "output": "q6_k"},
    "q8_0": {**dict.fromkeys(ROLES, "q8_0"), "output": "q8_0"},
}
# lse-import's parts per format: (values a block, scale dtype, has an offset)
# (lse.compiler.gguf.reader.BLOCK_TYPES, by name)
IMPORTED = {"q4_0": (32, "F16", False), "q4_1": (32, "F16", True), "q8_0": (32, "F16", False),
            "q5_0": (32, "F16", False), "q5_1": (32, "F16", True), "q4_k": (32, "F32", True),
            "q5_k": (32, "F32", True), "q6_k": (16, "F32", False)}
_ITEM = {"I8": 1, "F16": 2, "F32": 4}


def matrices(shape: Shape) -> list[tuple[str, int, int]]:
    """(role, rows N, row length K) of one layer's matrices and the output projection."""
    h, kv, f = shape.hidden, shape.kv, shape.ffn
    layer = [("attn_q", h, h), ("attn_k", kv, h), ("attn_v", kv, h), ("attn_output", h, h),
             ("ffn_gate", f, h), ("ffn_up", f, h), ("ffn_down", h, f)]
    return layer * shape.layers + [("output", shape.vocab, h)]


def gguf_bytes(fmt: str, n: int, k: int) -> int:
    """The GGUF file's bytes of an (n, k) matrix in ``fmt``."""
    block, size = GGML_QUANT_SIZES[GGMLQuantizationType[fmt.upper()]]
    return n * (k // block) * size


def layout_bytes(fmt: str, n: int, k: int) -> int:
    """The kernel layout's bytes of an (n, k) matrix in ``fmt`` (every
    interleaved parameter, the zero rows of the last group included)."""
    block, dtype, has_m = IMPORTED[fmt]
    weights = {"w": ((n, k), fmt), "w.q": ((n, k // block, block), FOUR_BIT.get(fmt, "I8")),
               "w.d": ((n, k // block), dtype)}
    if has_m:
        weights["w.m"] = ((n, k // block), dtype)
    return sum(int(np.prod(s)) * _ITEM[dt] for s, dt in layout_weights(weights, ["w"]).values())


def bytes_per_token(shape: Shape, mix: dict[str, str]) -> dict[str, dict[str, int]]:
    """Per format of ``mix`` and in all ("total"): {"values", "gguf", "layout"} bytes one decode token reads."""
    out: dict[str, dict[str, int]] = {}
    for role, n, k in sorted(matrices(shape), key=lambda m: mix[m[0]]):
        fmt = mix[role]
        for key in (fmt, "total"):
            row = out.setdefault(key, {"values": 0, "gguf": 0, "layout": 0})
            row["values"] += n * k
            row["gguf"] += gguf_bytes(fmt, n, k)
            row["layout"] += layout_bytes(fmt, n, k)
    out["total"] = out.pop("total")
    return out


def layout_sizes(tensors: dict) -> dict[str, int]:
    """Bytes of each of an imported model's tensors (lse.compiler.weights.read_tensors)
    as decode reads them: a block matrix's kernel layout, any other tensor as stored."""
    return {name: layout_bytes(t.dtype, *t.shape) if t.is_blocks and len(t.shape) == 2 else t.nbytes
            for name, t in tensors.items()}


def table(scales: list[str], mixes: list[str]) -> str:
    """Markdown: per scale, mix and format, values, the GGUF's bytes and bits
    a value, the layout's, and layout / GGUF."""
    lines = ["| shape | mix | format | values | GGUF MB | bits/value | layout MB | bits/value | layout / GGUF |",
             "|---|---|---|---|---|---|---|---|---|"]
    for scale in scales:
        for mix in mixes:
            for fmt, row in bytes_per_token(SHAPES[scale], MIXES[mix]).items():
                v, g, lay = row["values"], row["gguf"], row["layout"]
                lines.append(f"| {scale} | {mix} | {fmt} | {v / 1e6:.0f} M | {g / 1e6:.1f} | {8 * g / v:.2f} | "
                             f"{lay / 1e6:.1f} | {8 * lay / v:.2f} | {lay / g:.3f} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m lse.bench.bench_bytes", description=__doc__.split("\n\n")[0])
    p.add_argument("--scale", default="1b,3b,7b", help="comma-separated shapes: " + ", ".join(SHAPES))
    p.add_argument("--mix", default=",".join(MIXES), help="comma-separated mixes: " + ", ".join(MIXES))
    a = p.parse_args(argv)
    print(table(a.scale.split(","), a.mix.split(",")))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
