"""MLIR emitters of the ops some architectures add to Llama's: ``slice``
(a part of phi3's fused projections), ``gelu_tanh`` (gemma3's MLP) and
``scale`` (gemma3's embedding times sqrt(hidden)). emit_ops.EMITTERS holds
them beside the rest; the same FunctionEmitter contract."""

from __future__ import annotations

from lse.compiler.emit_mlir import FunctionEmitter, f32
from lse.compiler.graph import Node


def _unary(em: FunctionEmitter, node: Node, body: str) -> None:
    x, dims = em.ssa[node.inputs[0]], em.shapes[node.inputs[0]]
    r = em.generic(2, ["d0, d1", "d0, d1"], "pp", [(x, em.ty(dims))], (em.empty(dims), em.ty(dims)),
                   "%a0: f32, %o: f32", body)
    em.ssa[node.output], em.shapes[node.output] = r, dims


def slice_(em: FunctionEmitter, node: Node) -> None:
    """Columns [start, start + size) of (N, C)."""
    x, dims = em.ssa[node.inputs[0]], em.shapes[node.inputs[0]]
    em.ssa[node.output], em.shapes[node.output] = em.columns(x, dims, node.attrs["start"], node.attrs["size"])


def gelu_tanh(em: FunctionEmitter, node: Node) -> None:
    """0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))): PyTorch's gelu(approximate="tanh").
    Body names start with %ge_: a region sees the function's own (%c0, %c1, ...)."""
    _unary(em, node, "  %ge_k0 = arith.constant 0.7978845608028654 : f32\n  %ge_k1 = arith.constant 0.044715 : f32\n"
           "  %ge_h = arith.constant 0.5 : f32\n  %ge_1 = arith.constant 1.0 : f32\n"
           "  %ge_x2 = arith.mulf %a0, %a0 : f32\n  %ge_x3 = arith.mulf %ge_x2, %a0 : f32\n"
           "  %ge_t0 = arith.mulf %ge_k1, %ge_x3 : f32\n  %ge_t1 = arith.addf %a0, %ge_t0 : f32\n"
           "  %ge_t2 = arith.mulf %ge_k0, %ge_t1 : f32\n  %ge_th = math.tanh %ge_t2 : f32\n"
           "  %ge_t3 = arith.addf %ge_1, %ge_th : f32\n  %ge_t4 = arith.mulf %ge_h, %a0 : f32\n"
           "  %ge_y = arith.mulf %ge_t4, %ge_t3 : f32\n  linalg.yield %ge_y : f32\n")


def scale(em: FunctionEmitter, node: Node) -> None:
    """x times a constant (an f32 literal: the factor as the activations hold it)."""
    _unary(em, node, f"  %sc_k = arith.constant {f32(node.attrs['factor'])} : f32\n  %sc_y = arith.mulf %a0, %sc_k : f32\n"
           "  linalg.yield %sc_y : f32\n")


def norm_weight(gval: str, offset: float) -> tuple[str, str]:
    """Body lines adding an RMSNorm's weight offset (gemma3's 1 + w), and the weight's name after them."""
    if not offset:
        return "", gval
    return f"  %goff = arith.constant {f32(offset)} : f32\n  %gw1 = arith.addf {gval}, %goff : f32\n", "%gw1"


EXTRA_EMITTERS = {"slice": slice_, "gelu_tanh": gelu_tanh, "scale": scale}
