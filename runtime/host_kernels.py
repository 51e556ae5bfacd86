"""numpy kernels, one per graph op: the host interpreter.

They run a host group when a target has no kernel for one of its ops, and
the whole model on the ``cpu:0`` device. Semantics match emit_ops.py exactly,
including the two modes (see graph.py for the shape legend).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from lse.compiler.config import ModelConfig
from lse.compiler.graph import Node

Weights = Callable[[str], np.ndarray]


@dataclass
class StepState:
    """What a step needs beyond its values: the mode, the host KV cache
    (L, 2, P, T, kv, d) for attention, the prefill slot."""

    mode: str  # "prefill" | "decode" | "decode1" | "lm_head_all" (see emit_mlir.SINGLE_SLOT)
    cfg: ModelConfig
    cache: np.ndarray | None = None
    slot: int = 0


def embedding(node: Node, x: list[np.ndarray], w: Weights, st: StepState) -> np.ndarray:
    return w(node.weights[0])[x[0]].astype(np.float32)


def rms_norm(node: Node, x: list[np.ndarray], w: Weights, st: StepState) -> np.ndarray:
    g = node.attrs["group"]
    v = x[0].reshape(x[0].shape[0], -1, g)
    r = v / np.sqrt(np.mean(v * v, axis=-1, keepdims=True) + np.float32(node.attrs["eps"]))
    return (r * (w(node.weights[0]) + np.float32(node.attrs.get("offset", 0.0)))).reshape(x[0].shape).astype(np.float32)


def matmul(node: Node, x: list[np.ndarray], w: Weights, st: StepState) -> np.ndarray:
    y = x[0] @ w(node.weights[0]).T
    if len(node.weights) > 1:
        y = y + w(node.weights[1])
    return y.astype(np.float32)


def rope(node: Node, x: list[np.ndarray], w: Weights, st: StepState) -> np.ndarray:
    d = node.attrs["head_dim"]
    v = x[0].reshape(x[0].shape[0], -1, d)  # (N, heads, d)
    inv_freq = np.float32(node.attrs["theta"]) ** (np.arange(d // 2, dtype=np.float32) * np.float32(-2.0 / d))
    if node.attrs.get("freq_factors") is not None:  # RoPE scaling: each frequency over its divisor
        inv_freq = inv_freq / np.asarray(node.attrs["freq_factors"], np.float32)
    ang = x[1].astype(np.float32)[:, None] * inv_freq[None, :]  # (N, d/2)
    cos = np.concatenate([np.cos(ang), np.cos(ang)], -1)[:, None, :]
    sin = np.concatenate([np.sin(ang), np.sin(ang)], -1)[:, None, :]
    rot = np.concatenate([-v[..., d // 2:], v[..., : d // 2]], -1)
    return (v * cos + rot * sin).reshape(x[0].shape).astype(np.float32)


def attention(node: Node, x: list[np.ndarray], w: Weights, st: StepState) -> np.ndarray:
    cfg, cache, layer = st.cfg, st.cache, node.attrs["layer"]
    kv, d, g = cfg.num_key_value_heads, cfg.head_dim, cfg.num_groups
    q, k, v, pos = x
    n = q.shape[0]
    k, v = k.reshape(n, kv, d), v.reshape(n, kv, d)
    rows = [st.slot] * n if st.mode in ("prefill", "decode1") else list(range(n))
    for i in range(n):
        cache[layer, 0, rows[i], pos[i]] = k[i]
        cache[layer, 1, rows[i], pos[i]] = v[i]
    out = np.empty((n, kv, g, d), np.float32)
    window = cfg.layer_window(layer)  # a sliding layer reads positions pos - W < t <= pos
    for i in range(n):
        first = 0 if window is None else max(0, int(pos[i]) + 1 - window)
        keys = cache[layer, 0, rows[i], first: pos[i] + 1]  # (t, kv, d)
        vals = cache[layer, 1, rows[i], first: pos[i] + 1]
        qi = q[i].reshape(kv, g, d)
        s = np.einsum("kgd,tkd->kgt", qi, keys) / np.float32(np.sqrt(d))
        p = np.exp(s - s.max(-1, keepdims=True))
        p /= p.sum(-1, keepdims=True)
        out[i] = np.einsum("kgt,tkd->kgd", p, vals)
    return out.reshape(n, kv * g * d)


def silu(node: Node, x: list[np.ndarray], w: Weights, st: StepState) -> np.ndarray:
    return (x[0] / (1.0 + np.exp(-x[0]))).astype(np.float32)


def mul(node: Node, x: list[np.ndarray], w: Weights, st: StepState) -> np.ndarray:
    return x[0] * x[1]


def add(node: Node, x: list[np.ndarray], w: Weights, st: StepState) -> np.ndarray:
    return x[0] + x[1]


def gelu_tanh(node: Node, x: list[np.ndarray], w: Weights, st: StepState) -> np.ndarray:
    v = x[0]
    return (0.5 * v * (1 + np.tanh(np.float32(0.7978845608028654) * (v + np.float32(0.044715) * v * v * v)))).astype(
        np.float32)


def scale(node: Node, x: list[np.ndarray], w: Weights, st: StepState) -> np.ndarray:
    return x[0] * np.float32(node.attrs["factor"])


def slice_(node: Node, x: list[np.ndarray], w: Weights, st: StepState) -> np.ndarray:
    return np.ascontiguousarray(x[0][:, node.attrs["start"]:node.attrs["start"] + node.attrs["size"]])


def lm_head(node: Node, x: list[np.ndarray], w: Weights, st: StepState) -> np.ndarray:
    h = x[0][-1:] if st.mode == "prefill" else x[0]
    return (h @ w(node.weights[0]).T).astype(np.float32)


KERNELS = {
    "embedding": embedding, "rms_norm": rms_norm, "matmul": matmul, "rope": rope, "attention": attention,
    "silu": silu, "mul": mul, "add": add, "slice": slice_, "gelu_tanh": gelu_tanh, "scale": scale,
    "lm_head": lm_head,
}


def run_nodes(nodes: list[Node], values: dict[str, np.ndarray], weights: Weights, st: StepState) -> None:
    """Run nodes in order on the host, adding each output to ``values``."""
    for node in nodes:
        values[node.output] = KERNELS[node.op](node, [values[v] for v in node.inputs], weights, st)
