"""MLIR for the custom dispatches to the hand-written llvm-cpu kernels
(cpu_kernels.py builds them and emits the executable that declares them):
block-format matmuls and attention over an f16 cache. Each function emits
the flow.dispatch and returns its result's SSA name; emit_ops decides where
they serve."""

from __future__ import annotations

import struct

from lse.compiler import cpu_kernels
from lse.compiler.emit_mlir import FunctionEmitter
from lse.compiler.weights import FOUR_BIT


def contract(em: FunctionEmitter, x: str, n: str, k: str, name: str, fmt: str) -> tuple[str, tuple[str, str]]:
    """x . W^T over block-format weights as one custom dispatch to a C kernel
    (compiler/cpu_kernels.py): the matvec for a static row count (decode's
    rows, prefill's last-row lm_head), the GEMM for a prompt's %n rows."""
    dynamic = n == "?"
    export = cpu_kernels.GEMMS[fmt][0] if dynamic else cpu_kernels.KERNELS[fmt][0]
    bw = em.blocks(name)
    q, qd, scales = bw.q, bw.dims, bw.scales
    m_rows, s, b = qd
    q_bytes = int(s) * int(b) // (2 if fmt in FOUR_BIT else 1)  # bytes per weight row
    qb = q
    if fmt in FOUR_BIT:  # the kernel reads bytes: the same buffer as (M, K/2) i8
        qb = em.fresh("qb")
        em.op(f"{qb} = flow.tensor.bitcast {q} : {em.ty(qd, 'i4')} -> {em.ty((m_rows, str(q_bytes)), 'i8')}")
    tile, groups = cpu_kernels.gemm_tile(int(m_rows)) if dynamic else cpu_kernels.tile_rows(int(m_rows))
    consts = {}
    for label, value in (("nwg", groups), ("r", n), ("n", m_rows), ("k", k), ("tile", tile), ("qk", q_bytes)):
        if label == "r" and dynamic:
            consts[label] = "%n"
            continue
        consts[label] = em.fresh(label)
        em.op(f"{consts[label]} = arith.constant {value} : index")
    dims = (n, m_rows)
    rows = "{%n}" if dynamic else ""
    operands = [(x, em.ty((n, k)) + rows)]
    operands.append((qb, em.ty((m_rows, str(q_bytes)), "i8") if fmt in FOUR_BIT else em.ty(qd, "i8")))
    operands += [(sv, em.ty((m_rows, s), et)) for sv, et in scales]
    y = em.fresh("qmv")
    args = ", ".join([v for v, _ in operands] + [consts[c] for c in ("r", "n", "k", "tile", "qk")])
    types = ", ".join([t for _, t in operands] + ["index"] * 5)
    em.op(f"{y} = flow.dispatch @lse_kernels::@{export}[{consts['nwg']}]({args}) : ({types}) -> {em.ty(dims)}{rows}")
    return y, dims


def attend(em: FunctionEmitter, layer: int, q: str, qc: str, pos: str, pos_ty: str, slot0: str, step: int,
           n: str) -> str:
    """Attention for a static number of rows through the C kernels
    (cpu_kernels/lse_attn.c): attend_f16 reads the cache in place, each row
    its own slot up to its own position, one workgroup per (row, KV head,
    split of the positions); attend_merge joins the splits."""
    cfg = em.cfg
    kv, d, groups = cfg.num_key_value_heads, cfg.head_dim, cfg.num_groups
    splits = cpu_kernels.attention_splits(int(n), kv)
    parts = int(n) * kv * splits
    t, cn, c3 = em.fresh("t"), em.fresh("cn"), em.fresh("c3")
    em.op(f"{c3} = arith.constant 3 : index")
    em.op(f"{t} = tensor.dim {em.cache}, {c3} : {em.cache_ty}")
    c = {}
    for label, value in (("nwg", parts), ("nwg2", int(n) * kv), ("rows", n), ("qc", qc), ("on", parts * groups * (d + 2)),
                         ("yn", int(n) * int(qc)), ("per_t", cfg.num_hidden_layers * 2 * em.slots * kv * d),
                         ("layer", layer), ("step", step), ("p", em.slots), ("kv", kv), ("g", groups),
                         ("d", d), ("s", splits)):
        c[label] = em.fresh(label)
        em.op(f"{c[label]} = arith.constant {value} : index")
    em.op(f"{cn} = arith.muli {t}, {c['per_t']} : index")
    part_ty = em.ty((str(parts * groups * (d + 2)),))
    args = [c["rows"], c["qc"], cn, c["on"], c["layer"], slot0, c["step"], c["p"], t, c["kv"], c["g"], c["d"], c["s"]]
    part, y = em.fresh("part"), em.fresh("attn")
    em.op(f"{part} = flow.dispatch @lse_kernels::@attend_f16[{c['nwg']}]({q}, {em.cache}, {pos}, {', '.join(args)}) : "
          f"({em.ty((n, qc))}, {em.cache_ty}{{{t}}}, {pos_ty}, {', '.join(['index'] * len(args))}) -> {part_ty}")
    margs = [c["on"], c["yn"], c["kv"], c["g"], c["d"], c["s"]]
    em.op(f"{y} = flow.dispatch @lse_kernels::@attend_merge[{c['nwg2']}]({part}, {', '.join(margs)}) : "
          f"({part_ty}, {', '.join(['index'] * len(margs))}) -> {em.ty((n, qc))}")
    return y


def attend_rows(em: FunctionEmitter, layer: int, q: str, qc: str, pos: str, pos_ty: str) -> str:
    """A prompt's rows (prefill, a dynamic count %n, one slot) through
    lse_attend_rows_f16: one workgroup per (block of rows, KV head), each row
    up to its own position, written straight to y."""
    cfg = em.cfg
    kv, d, groups = cfg.num_key_value_heads, cfg.head_dim, cfg.num_groups
    br = cpu_kernels.attention_block_rows(groups, d)
    t, c3 = em.fresh("t"), em.fresh("c3")
    em.op(f"{c3} = arith.constant 3 : index")
    em.op(f"{t} = tensor.dim {em.cache}, {c3} : {em.cache_ty}")
    c = {}
    for label, value in (("qc", qc), ("per_t", cfg.num_hidden_layers * 2 * em.slots * kv * d),
                         ("layer", layer), ("p", em.slots), ("kv", kv), ("g", groups), ("d", d),
                         ("br", br), ("br1", br - 1)):
        c[label] = em.fresh(label)
        em.op(f"{c[label]} = arith.constant {value} : index")
    cn, nb, nb1, nwg = em.fresh("cn"), em.fresh("nb"), em.fresh("nb1"), em.fresh("nwg")
    em.op(f"{cn} = arith.muli {t}, {c['per_t']} : index")
    em.op(f"{nb1} = arith.addi %n, {c['br1']} : index")
    em.op(f"{nb} = arith.divui {nb1}, {c['br']} : index")
    em.op(f"{nwg} = arith.muli {nb}, {c['kv']} : index")
    args = ["%n", c["qc"], cn, c["layer"], "%slot_ix", c["p"], t, c["kv"], c["g"], c["d"], c["br"]]
    y = em.fresh("attn")
    em.op(f"{y} = flow.dispatch @lse_kernels::@attend_rows_f16[{nwg}]({q}, {em.cache}, {pos}, {', '.join(args)}) : "
          f"({em.ty(('?', qc))}{{%n}}, {em.cache_ty}{{{t}}}, {pos_ty}{{%n}}, {', '.join(['index'] * len(args))}) -> "
          f"{em.ty(('?', qc))}{{%n}}")
    return y


def rms_norm(em: FunctionEmitter, x: str, n: str, c: str, w: str, eps: float, residual: str | None = None):
    """RMSNorm of x (N, C) with an f32 weight (C,) through lse_rms_norm,
    NORM_ROWS rows a workgroup: y. With a residual, lse_add_rms_norm: (x +
    residual, its norm), one dispatch for a block's residual add and the next norm."""
    per = cpu_kernels.NORM_ROWS
    k = {}
    for label, value in (("c", c), ("eps", struct.unpack("<I", struct.pack("<f", eps))[0]), ("per", per),
                         ("per1", per - 1)):
        k[label] = em.fresh(label)
        em.op(f"{k[label]} = arith.constant {value} : index")
    rows = "%n" if n == "?" else em.fresh("rows")
    if n != "?":
        em.op(f"{rows} = arith.constant {n} : index")
    nb1, nwg = em.fresh("nb1"), em.fresh("nwg")
    em.op(f"{nb1} = arith.addi {rows}, {k['per1']} : index")
    em.op(f"{nwg} = arith.divui {nb1}, {k['per']} : index")
    t = em.ty((n, c)) + ("{%n}" if n == "?" else "")
    sizes = f"{rows}, {k['c']}, {k['eps']}, {k['per']}"
    if residual is None:
        y = em.fresh("norm")
        em.op(f"{y} = flow.dispatch @lse_kernels::@rms_norm[{nwg}]({x}, {w}, {sizes}) : "
              f"({t}, {em.ty((c,))}, index, index, index, index) -> {t}")
        return y
    s, y = em.fresh("sum"), em.fresh("norm")
    em.op(f"{s}, {y} = flow.dispatch @lse_kernels::@add_rms_norm[{nwg}]({x}, {residual}, {w}, {sizes}) : "
          f"({t}, {t}, {em.ty((c,))}, index, index, index, index) -> ({t}, {t})")
    return s, y
