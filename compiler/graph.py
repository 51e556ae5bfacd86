"""The model as a graph of named nodes, built from a ModelConfig.

Legend for shapes (stated once): N = rows in this step (prompt tokens in
prefill, one per slot in decode), H = hidden_size, I = intermediate_size,
nh = attention heads, kv = key/value heads, d = head_dim, V = vocab_size.

Values are named SSA tensors. Graph inputs: ``tokens`` (N,) i64 and
``positions`` (N,) i64; the KV cache is state owned by ``attention`` nodes.
The graph is the same for prefill and decode; only ``attention`` and
``lm_head`` read the mode (see emit_mlir.py and runtime/host_kernels.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from lse.compiler.config import ModelConfig

GRAPH_INPUTS = ("tokens", "positions")
ELEMENTWISE_OPS = frozenset({"silu", "mul", "add", "slice", "gelu_tanh", "scale"})
OPS = frozenset({"embedding", "rms_norm", "matmul", "rope", "attention", "lm_head"}) | ELEMENTWISE_OPS


@dataclass(frozen=True)
class Node:
    id: int
    op: str
    inputs: tuple[str, ...]
    output: str
    weights: tuple[str, ...] = ()  # parameter names (HF tensor names)
    attrs: dict[str, Any] = field(default_factory=dict, hash=False, compare=False)

    @property
    def location(self) -> str:
        """File-style MLIR location, so iree-compile diagnostics name the node."""
        return f'loc("graph.node{self.id}":{self.id}:0)'


@dataclass(frozen=True)
class Graph:
    config: ModelConfig
    nodes: tuple[Node, ...]
    outputs: tuple[str, ...]  # ("hidden", "logits")


class _Builder:
    def __init__(self) -> None:
        self.nodes: list[Node] = []

    def add(self, op: str, inputs: tuple[str, ...], output: str, weights: tuple[str, ...] = (), **attrs: Any) -> str:
        self.nodes.append(Node(len(self.nodes), op, inputs, output, weights, attrs))
        return output


def _fused(b: _Builder, x: str, name: str, weight: str, parts: tuple[tuple[str, int], ...]) -> list[str]:
    """One matmul over a fused weight (phi3's qkv_proj, gate_up_proj), then each
    part's columns as a slice, in the weight's row order."""
    y = b.add("matmul", (x,), name, (weight,), out_features=sum(n for _, n in parts))
    out, start = [], 0
    for part, size in parts:
        out.append(b.add("slice", (y,), part, start=start, size=size))
        start += size
    return out


def _norm(b: _Builder, cfg: ModelConfig, x: str, out: str, weight: str, group: int) -> str:
    """RMSNorm over groups of ``group``; gemma3's weights are offsets from 1."""
    extra = {"offset": cfg.norm_offset} if cfg.norm_offset else {}
    return b.add("rms_norm", (x,), out, (weight,), eps=cfg.rms_norm_eps, group=group, **extra)


def _attention_block(b: _Builder, cfg: ModelConfig, i: int, x: str) -> str:
    p = f"model.layers.{i}.self_attn"
    h = _norm(b, cfg, x, f"l{i}.attn_in", f"model.layers.{i}.input_layernorm.weight", cfg.hidden_size)
    theta, factors = cfg.layer_rope(i)
    heads = {"q": cfg.num_attention_heads, "k": cfg.num_key_value_heads, "v": cfg.num_key_value_heads}
    fused = _fused(b, h, f"l{i}.qkv", f"{p}.qkv_proj.weight",  # phi3: one matmul, then q, k, v as slices
                   tuple((f"l{i}.{n}", heads[n] * cfg.head_dim) for n in "qkv")) if cfg.fused_projections else None
    qkv = []
    for j, name in enumerate("qkv"):
        if fused:
            t = fused[j]
        else:
            w = (f"{p}.{name}_proj.weight",) + ((f"{p}.{name}_proj.bias",) if cfg.attention_bias else ())
            t = b.add("matmul", (h,), f"l{i}.{name}", w, out_features=heads[name] * cfg.head_dim)
        if cfg.qk_norm and name in ("q", "k"):
            t = _norm(b, cfg, t, f"l{i}.{name}_normed", f"{p}.{name}_norm.weight", cfg.head_dim)
        if name in ("q", "k"):
            t = b.add("rope", (t, "positions"), f"l{i}.{name}_rot", theta=theta, head_dim=cfg.head_dim,
                      freq_factors=factors)
        qkv.append(t)
    attn = b.add("attention", tuple(qkv) + ("positions",), f"l{i}.attn", layer=i)
    o = b.add("matmul", (attn,), f"l{i}.o", (f"{p}.o_proj.weight",), out_features=cfg.hidden_size)
    if cfg.sandwich_norms:  # gemma3: the attention's output normalized before the residual add
        o = _norm(b, cfg, o, f"l{i}.o_normed", f"model.layers.{i}.post_attention_layernorm.weight", cfg.hidden_size)
    return b.add("add", (x, o), f"l{i}.resid1")


def _mlp_block(b: _Builder, cfg: ModelConfig, i: int, x: str) -> str:
    p = f"model.layers.{i}.mlp"
    pre = "pre_feedforward_layernorm" if cfg.sandwich_norms else "post_attention_layernorm"
    h = _norm(b, cfg, x, f"l{i}.mlp_in", f"model.layers.{i}.{pre}.weight", cfg.hidden_size)
    if cfg.fused_projections:  # HF Phi3MLP: gate_up_proj's first half is the gate
        gate, up = _fused(b, h, f"l{i}.gate_up", f"{p}.gate_up_proj.weight",
                          ((f"l{i}.gate", cfg.intermediate_size), (f"l{i}.up", cfg.intermediate_size)))
    else:
        gate = b.add("matmul", (h,), f"l{i}.gate", (f"{p}.gate_proj.weight",), out_features=cfg.intermediate_size)
        up = b.add("matmul", (h,), f"l{i}.up", (f"{p}.up_proj.weight",), out_features=cfg.intermediate_size)
    act = b.add("gelu_tanh" if cfg.hidden_activation == "gelu_pytorch_tanh" else "silu", (gate,), f"l{i}.act")
    prod = b.add("mul", (act, up), f"l{i}.prod")
    down = b.add("matmul", (prod,), f"l{i}.down", (f"{p}.down_proj.weight",), out_features=cfg.hidden_size)
    if cfg.sandwich_norms:
        down = _norm(b, cfg, down, f"l{i}.down_normed", f"model.layers.{i}.post_feedforward_layernorm.weight",
                     cfg.hidden_size)
    return b.add("add", (x, down), f"l{i}.resid2")


def build_graph(cfg: ModelConfig) -> Graph:
    b = _Builder()
    x = b.add("embedding", ("tokens",), "embed", ("model.embed_tokens.weight",))
    if cfg.embed_scale is not None:  # gemma3: rows times sqrt(hidden)
        x = b.add("scale", (x,), "embed_scaled", factor=cfg.embed_scale)
    for i in range(cfg.num_hidden_layers):
        x = _attention_block(b, cfg, i, x)
        x = _mlp_block(b, cfg, i, x)
    hidden = _norm(b, cfg, x, "hidden", "model.norm.weight", cfg.hidden_size)
    head = "model.embed_tokens.weight" if cfg.tie_word_embeddings else "lm_head.weight"
    b.add("lm_head", (hidden,), "logits", (head,))
    return Graph(cfg, tuple(b.nodes), ("hidden", "logits"))


def verify_graph(graph: Graph) -> None:
    """Every input is defined before use, every op is known, outputs exist."""
    defined = set(GRAPH_INPUTS)
    for n in graph.nodes:
        if n.op not in OPS:
            raise ValueError(f"node {n.id}: unknown op {n.op!r}")
        missing = [v for v in n.inputs if v not in defined]
        if missing:
            raise ValueError(f"node {n.id} ({n.op}) uses undefined value(s) {missing}")
        if n.output in defined:
            raise ValueError(f"node {n.id} ({n.op}) redefines {n.output!r}")
        defined.add(n.output)
    for out in graph.outputs:
        if out not in defined:
            raise ValueError(f"graph output {out!r} is never produced")
