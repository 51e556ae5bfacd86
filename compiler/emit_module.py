"""Emit the MLIR module: parameter globals, the kernels' executable, and one
``func.func`` per entry point, each node emitted by its op's emitter
(emit_ops.EMITTERS; FunctionEmitter, the shapes and modes are emit_mlir's)."""

from __future__ import annotations

from lse.compiler import kernel_layout
from lse.compiler.kernel_executable import executable
from lse.compiler.emit_mlir import (ELEMENT_TYPE, SINGLE_SLOT, FunctionEmitter, emit_copy_kv, global_name,
                                    stored_parts, value_dims)
from lse.compiler.emit_ops import EMITTERS
from lse.compiler.graph import Graph, Node
from lse.compiler.kv_layout import KvLayout
from lse.compiler.manifest import EntryPoint


def _elem(value: str) -> str:
    return "i64" if value in ("tokens", "positions", "slot_ids") else "f32"


def emit_function(graph: Graph, weights: dict[str, tuple[tuple[int, ...], str]], nodes: list[Node],
                  sig: EntryPoint, slots: int, kernels: bool = False, kv_dtype: str = "f32",
                  target: str = "llvm-cpu", kv_len: int | None = None, layout: KvLayout | None = None) -> str:
    em = FunctionEmitter(graph, weights, sig.mode, slots, kernels, kv_dtype, target, kv_len, layout)
    dims = value_dims(graph, sig.mode, slots)
    args = []
    for i, value in enumerate(sig.inputs):
        em.ssa[value], em.shapes[value] = f"%arg{i}", dims[value]
        args.append(f"%arg{i}: {em.ty(dims[value], _elem(value))}")
    args += [f"%{s}: i64" for s in sig.scalars]
    results = [em.ty(dims[v]) for v in sig.outputs]
    if sig.uses_cache:
        args.append(f"%cache: {em.cache_ty} {{iree.abi.output = 0 : index}}")
        results.insert(0, em.cache_ty)
    em.emit("%c0 = arith.constant 0 : index\n%c1 = arith.constant 1 : index\n%zero = arith.constant 0.0 : f32")
    if sig.inputs:
        em.emit(f"%n = tensor.dim %arg0, %c0 : {em.ty(dims[sig.inputs[0]], _elem(sig.inputs[0]))}")
    if "slot" in sig.scalars:
        em.emit("%slot_ix = arith.index_cast %slot : i64 to index")
    elif sig.mode in SINGLE_SLOT and "slot_ids" in em.ssa:  # decode1's slot as a tensor (signatures' slot_tensor)
        ids = em.ssa["slot_ids"]
        em.emit(f"%slot_el = tensor.extract {ids}[%c0] : {em.ty(em.shapes['slot_ids'], 'i64')}\n"
                "%slot_ix = arith.index_cast %slot_el : i64 to index")
    if "window" in sig.scalars:
        em.emit("%window_ix = arith.index_cast %window : i64 to index")
        em.emit("\n".join(f"%c{b}_ix = arith.constant {b} : index" for b in range(slots)))
    if sig.mode == "copy_kv":
        emit_copy_kv(em)
    for i, node in enumerate(nodes):
        if node.output in em.ssa:  # emitted with the node before it (emit_ops.add: a residual add and its norm)
            continue
        em.loc = node.location
        em.next = nodes[i + 1] if i + 1 < len(nodes) else None
        em.later = nodes[i + 1:]
        EMITTERS[node.op](em, node)
    rets = ([em.cache] if sig.uses_cache else []) + [em.ssa[v] for v in sig.outputs]
    em.emit(f"return {', '.join(rets)} : {', '.join(results)}")
    header = f"  func.func @{sig.name}({', '.join(args)}) -> ({', '.join(results)}) {{"
    return "\n".join([header, *em.lines, "  }"])



def emit_module(graph: Graph, weights: dict[str, tuple[tuple[int, ...], str]],
                functions: list[tuple[EntryPoint, list[Node]]], slots: int, kernels: bool = False,
                kv_dtype: str = "f32", target: str = "llvm-cpu", module_name: str = "lse_model",
                kv_len: int | None = None, layout: KvLayout | None = None) -> str:
    """The whole module: parameter globals, the hand-written kernels' executable
    when ``kernels`` (llvm-cpu with a C compiler), then every function. Modules
    loaded side by side need distinct names."""
    bodies = [emit_function(graph, weights, nodes, sig, slots, kernels, kv_dtype, target, kv_len, layout)
              for sig, nodes in functions]
    # the parameters the functions load: a block matrix's interleaved copy
    # (kernel_layout.py) where the kernels take it, its own parts where not
    stored = {p for _, nodes in functions for n in nodes for w in n.weights
              for p in [*stored_parts(w, weights), *kernel_layout.stored_names(w, weights)]}
    loads = "\n".join(bodies)
    lines = [f"module @{module_name} {{"]
    for name in sorted(p for p in stored if f"@{global_name(p)} " in loads):
        shape, dtype = weights[name]
        ty = "tensor<" + "x".join([*map(str, shape), ELEMENT_TYPE[dtype]]) + ">"
        lines.append(f'  util.global private @{global_name(name)} = #stream.parameter.named<"model"::"{name}"> : {ty}')
    if kernels:
        lines.append(executable())
    lines += bodies
    lines.append("}")
    return "\n".join(lines) + "\n"
