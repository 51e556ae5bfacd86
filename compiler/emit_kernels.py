"""MLIR for the custom dispatches to the hand-written llvm-cpu kernels
(cpu_kernel_build.py builds them and emits the executable that declares them):
block-format matmuls and attention over an f16 cache. Each function emits
the flow.dispatch and returns its result's SSA name; emit_ops decides where
they serve, and sibling_matvecs which of decode's matmuls share a dispatch."""

from __future__ import annotations

import struct

from lse.compiler import cpu_kernel_build as cpu_kernels, kernel_layout
from lse.compiler.emit_mlir import FunctionEmitter
from lse.compiler.graph import Node


def _consts(em: FunctionEmitter, values: list[tuple[str, object]]) -> dict[str, str]:
    """An index constant per (label, value), by label."""
    names = {}
    for label, value in values:
        names[label] = em.fresh(label)
        em.op(f"{names[label]} = arith.constant {value} : index")
    return names


def _ceil_div(em: FunctionEmitter, rows: str, per: int) -> str:
    """ceil(rows / per), rows an index value: the workgroups for `per` rows each."""
    c = _consts(em, [("per", per), ("per1", per - 1)])
    up, q = em.fresh("up"), em.fresh("blocks")
    em.op(f"{up} = arith.addi {rows}, {c['per1']} : index")
    em.op(f"{q} = arith.divui {up}, {c['per']} : index")
    return q


def _cache_extent(em: FunctionEmitter) -> tuple[str, str]:
    """(T, the element count) of the KV cache: constants where the context is
    fixed (kv_len), else read from its dynamic position axis."""
    cfg = em.cfg
    per = em.layout.slabs * 2 * em.slots * cfg.num_key_value_heads * cfg.head_dim
    if em.kv_len:
        c = _consts(em, [("t", em.kv_len), ("cn", em.kv_len * per)])
        return c["t"], c["cn"]
    c3, t, cn = em.fresh("c3"), em.fresh("t"), em.fresh("cn")
    per_t = _consts(em, [("per_t", per)])
    em.op(f"{c3} = arith.constant 3 : index")
    em.op(f"{t} = tensor.dim {em.cache}, {c3} : {em.cache_ty}")
    em.op(f"{cn} = arith.muli {t}, {per_t['per_t']} : index")
    return t, cn


def serves(em: FunctionEmitter, name: str) -> bool:
    """The kernels take a block matrix in their interleaved layout only
    (lse-compile writes it for every matmul's and the lm_head's)."""
    return f"{name}.qi" in em.weights


def contract(em: FunctionEmitter, x: str, n: str, k: str, name: str, fmt: str) -> tuple[str, tuple[str, str]]:
    """x . W^T over block-format weights as one custom dispatch to a C kernel
    (compiler/cpu_kernel_build.py): the matvec for a static row count (decode's
    rows, prefill's last-row lm_head), the GEMM for a prompt's %n rows."""
    [out] = _contract_parts(em, x, n, k, [name], fmt)
    return out


def sibling_matvecs(em: FunctionEmitter, node: Node, n: str, k: str) -> list[Node]:
    """This matmul and the later ones of its function over the same input in
    the same block format, without bias, up to 3 (a layer's q, k and v; gate
    and up), where decode's kernel matvec serves them: one dispatch for all
    (contract_siblings). Empty when there is no second."""
    def fits(m: Node) -> bool:
        return (m.op == "matmul" and m.inputs == node.inputs and len(m.weights) == 1 and em.is_blocks(m.weights[0])
                and em.weights[m.weights[0]][1] == em.weights[node.weights[0]][1] and m.output not in em.ssa
                and serves(em, m.weights[0]))

    if not (em.kernels and n.isdigit() and fits(node)
            and cpu_kernels.supports(em.weights[node.weights[0]][1], int(k))):
        return []
    group = [node] + [m for m in em.later if fits(m)][:max(cpu_kernels.SIBLINGS) - 1]
    return group if len(group) >= min(cpu_kernels.SIBLINGS) else []


def contract_siblings(em: FunctionEmitter, x: str, n: str, k: str, names: list[str],
                      fmt: str) -> list[tuple[str, tuple[str, str]]]:
    """x . W^T for two or three block-format weights of one format over the
    same x, decode's static rows, as one dispatch to lse_<stem>_matvec2/3:
    their rows in sequence split among the workgroups. Each result as
    contract's."""
    return _contract_parts(em, x, n, k, names, fmt)


def _contract_parts(em: FunctionEmitter, x: str, n: str, k: str, names: list[str],
                    fmt: str) -> list[tuple[str, tuple[str, str]]]:
    """The dispatch of contract (one name) and contract_siblings (several,
    static rows only): x, each weight's interleaved q (as bytes), d and [m],
    then rows, each weight's rows, k, tile, and the bytes of a weight row."""
    dynamic = n == "?"
    rows = "{%n}" if dynamic else ""
    operands = [(x, em.ty((n, k)) + rows)]
    if dynamic and cpu_kernels.amx():  # the AMX build's GEMMs take x split too
        operands += amx_split(em, x, k)
    outs = []
    for name in names:  # the kernels' interleaved layout (kernel_layout.py)
        m_rows = str(em.weights[name][0][0])
        nb = kernel_layout.blocks(em.weights, name)[0]
        q_bytes = nb * kernel_layout.layout_block_bytes(em.weights, name)  # bytes per weight row
        for part in kernel_layout.stored_names(name, em.weights):  # qi, di, [mi]
            v, et, shape = em.weight(part)
            operands.append((v, em.ty(tuple(map(str, shape)), et)))
        outs.append(m_rows)
    total = sum(int(r) for r in outs)
    tile, groups = cpu_kernels.gemm_tile(total) if dynamic else cpu_kernels.tile_rows(total)
    labels = [f"n{i}" for i in range(1, len(outs) + 1)]
    consts = _consts(em, [("nwg", groups), *([] if dynamic else [("r", n)]), *zip(labels, outs), ("k", k),
                          ("tile", tile), ("qk", q_bytes)])
    if dynamic:
        consts["r"] = "%n"
    ys = [em.fresh("qmv") for _ in names]
    args = ", ".join([v for v, _ in operands] + [consts[c] for c in ("r", *labels, "k", "tile", "qk")])
    types = ", ".join([t for _, t in operands] + ["index"] * (len(labels) + 4))
    results = ", ".join(em.ty((n, r)) + rows for r in outs)
    export = (cpu_kernels.GEMMS if dynamic else cpu_kernels.KERNELS)[fmt][0] + (str(len(names)) if len(names) > 1 else "")
    em.op(f"{', '.join(ys)} = flow.dispatch @lse_kernels::@{export}[{consts['nwg']}]({args}) : ({types}) -> "
          f"({results})")
    return [(y, (n, r)) for y, r in zip(ys, outs)]


def amx_split(em: FunctionEmitter, x: str, k: str) -> list[tuple[str, str]]:
    """x's %n rows split for the AMX GEMM (lse_split_x: three bf16 parts as
    tiles of 16 rows and each 32 values' sums), one dispatch for every GEMM
    over x in the function: the operands (value, type) it adds."""
    if x not in em.amx_splits:
        tiles = _ceil_div(em, "%n", 16)
        per = cpu_kernels.SPLIT_TILES
        c = _consts(em, [("k", k), ("per", per)])
        nwg = _ceil_div(em, tiles, per)
        xt, xs = em.fresh("xt"), em.fresh("xs")
        xt_ty = em.ty(("?", str(int(k) // 32 * 1536)), "i16") + f"{{{tiles}}}"
        xs_ty = em.ty(("?", str(int(k) // 32 * 16))) + f"{{{tiles}}}"
        em.op(f"{xt}, {xs} = flow.dispatch @lse_kernels::@split_x[{nwg}]({x}, %n, {c['k']}, {c['per']}) : "
              f"({em.ty(('?', k))}{{%n}}, index, index, index) -> ({xt_ty}, {xs_ty})")
        em.amx_splits[x] = ((xt, xt_ty), (xs, xs_ty))
    return list(em.amx_splits[x])


def embed(em: FunctionEmitter, tok: str, n: str, name: str) -> str:
    """The rows of block-format table ``name`` for the token ids ``tok`` (n,)
    as one dispatch to lse_<stem>_embed, from the kernels' interleaved layout
    (kernel_layout.py): EMBED_ROWS tokens a workgroup."""
    dynamic = n == "?"
    rows = "{%n}" if dynamic else ""
    fmt, (vocab, k) = em.weights[name][1], em.weights[name][0]
    operands = [(tok, em.ty((n,), "i64") + rows)]
    for part in kernel_layout.stored_names(name, em.weights):  # qi, di, [mi]
        v, et, shape = em.weight(part)
        operands.append((v, em.ty(tuple(map(str, shape)), et)))
    q_bytes = kernel_layout.blocks(em.weights, name)[0] * kernel_layout.layout_block_bytes(em.weights, name)
    per = cpu_kernels.EMBED_ROWS
    consts = _consts(em, [("n", vocab), ("k", k), ("per", per), ("qk", q_bytes)])
    if dynamic:
        consts["r"], nwg = "%n", _ceil_div(em, "%n", per)
    else:
        consts.update(_consts(em, [("r", n)]))
        nwg = _consts(em, [("nwg", -(-int(n) // per))])["nwg"]
    y = em.fresh("emb")
    args = ", ".join([v for v, _ in operands] + [consts[c] for c in ("r", "n", "k", "per", "qk")])
    types = ", ".join([t for _, t in operands] + ["index"] * 5)
    em.op(f"{y} = flow.dispatch @lse_kernels::@{cpu_kernels.EMBEDS[fmt][0]}[{nwg}]({args}) : ({types}) -> "
          f"({em.ty((n, str(k)))}{rows})")
    return y


def attend(em: FunctionEmitter, layer: int, q: str, qc: str, pos: str, pos_ty: str, n: str,
           new_kv: tuple[str, str], slot_ids: str, rope: tuple[str, str] | None) -> str:
    """Attention for a static number of rows, each in its own slot, through
    the C kernels (cpu_kernels/lse_attn.c): attend_write_f16 writes this
    step's K and V rows (``new_kv``, (n, kv * d) f32) into the cache at the
    rows' positions in the slots ``slot_ids`` names ((n,) i64), then reads
    each row's slot up to its own position, one workgroup per (row, group of
    KV heads, split of the positions); its results are partial records and
    the updated cache (tied, in place). attend_merge joins the splits.
    ``rope``: the rows' (n, d) cos and signed sin tables where q and K come
    unrotated (emit_ops.rope left RoPE to the kernel), else None."""
    cfg = em.cfg
    kv, d, groups = cfg.num_key_value_heads, cfg.head_dim, cfg.num_groups
    hg = cpu_kernels.attention_heads(kv, groups, d)
    # verify<R> (emit_verify.py) splits each row's positions as a lone decode
    # row's are split: the same sums in the same order, so its logits are
    # decode's bit for bit and greedy ties break alike.
    splits = cpu_kernels.attention_splits(1 if em.mode.startswith("verify") else int(n), kv // hg)
    parts = int(n) * kv * splits  # partial records, one per (row, KV head, split)
    t, cn = _cache_extent(em)
    c = _consts(em, [("nwg", parts // hg), ("nwg2", int(n) * kv), ("rows", n), ("qc", qc), ("kc", kv * d),
                     ("on", parts * groups * (d + 2)), ("yn", int(n) * int(qc)), *_place(em, layer),
                     ("p", em.slots), ("kv", kv), ("g", groups), ("d", d), ("s", splits), ("hg", hg),
                     ("rope", int(rope is not None))])
    part_ty = em.ty((str(parts * groups * (d + 2)),))
    kv_ty, table_ty = em.ty((n, str(kv * d))), em.ty((n, str(d)))
    cos, sin = rope if rope is not None else (em.empty((n, str(d)), fill=True),) * 2  # unread
    args = [c["rows"], c["qc"], c["kc"], cn, c["on"], c["layer"], c["p"], t, c["kv"], c["g"], c["d"], c["s"],
            c["hg"], c["rope"], c["w"], c["rb"], c["rr"]]
    part, y, new = em.fresh("part"), em.fresh("attn"), em.fresh("cache")
    em.op(f"{part}, {new} = flow.dispatch @lse_kernels::@attend_write_f16[{c['nwg']}]({q}, {new_kv[0]}, "
          f"{new_kv[1]}, {em.cache}, {pos}, {slot_ids}, {cos}, {sin}, {', '.join(args)}) : "
          f"({em.ty((n, qc))}, {kv_ty}, {kv_ty}, {em.cache_ty}{em.cache_dims(t)}, {pos_ty}, {pos_ty}, {table_ty}, "
          f"{table_ty}, {', '.join(['index'] * len(args))}) -> ({part_ty}, {em.cache}{em.cache_dims(t)})")
    em.cache = new
    margs = [c["on"], c["yn"], c["kv"], c["g"], c["d"], c["s"]]
    em.op(f"{y} = flow.dispatch @lse_kernels::@attend_merge[{c['nwg2']}]({part}, {', '.join(margs)}) : "
          f"({part_ty}, {', '.join(['index'] * len(margs))}) -> {em.ty((n, qc))}")
    return y


def kv_write(em: FunctionEmitter, layer: int, kvs: tuple[str, str], kc: str, pos: str, pos_ty: str) -> None:
    """A prompt's K and V rows ((%n, kc) f32 each, one slot, at the rows'
    positions) into the cache through lse_kv_write_f16, in place. Its slab is
    an operand, so every layer's write shares one export, where an MLIR
    insert per layer is an executable per layer to compile."""
    cfg = em.cfg
    t, cn = _cache_extent(em)
    per = cpu_kernels.KV_WRITE_ROWS
    c = _consts(em, [("kc", kc), *_place(em, layer), ("p", em.slots), ("kv", cfg.num_key_value_heads),
                     ("d", cfg.head_dim), ("per", per)])
    args = ["%n", c["kc"], cn, c["layer"], "%slot_ix", c["p"], t, c["kv"], c["d"], c["rb"], c["rr"], c["per"]]
    kv_ty, new = em.ty(("?", kc)), em.fresh("cache")
    em.op(f"{new} = flow.dispatch @lse_kernels::@kv_write_f16[{_ceil_div(em, '%n', per)}]({kvs[0]}, {kvs[1]}, "
          f"{em.cache}, {pos}, {', '.join(args)}) : ({kv_ty}{{%n}}, {kv_ty}{{%n}}, {em.cache_ty}{em.cache_dims(t)}, "
          f"{pos_ty}{{%n}}, {', '.join(['index'] * len(args))}) -> {em.cache}{em.cache_dims(t)}")
    em.cache = new


def attend_rows(em: FunctionEmitter, layer: int, q: str, qc: str, pos: str, pos_ty: str) -> str:
    """A prompt's rows (prefill, a dynamic count %n, one slot) through
    lse_attend_rows_f16: one workgroup per (block of rows, KV head), each row
    up to its own position, written straight to y."""
    cfg = em.cfg
    kv, d, groups = cfg.num_key_value_heads, cfg.head_dim, cfg.num_groups
    br = cpu_kernels.attention_block_rows(groups, d)
    t, cn = _cache_extent(em)
    c = _consts(em, [("qc", qc), *_place(em, layer), ("p", em.slots), ("kv", kv), ("g", groups), ("d", d),
                     ("br", br)])
    nwg = em.fresh("nwg")
    em.op(f"{nwg} = arith.muli {_ceil_div(em, '%n', br)}, {c['kv']} : index")
    args = ["%n", c["qc"], cn, c["layer"], "%slot_ix", c["p"], t, c["kv"], c["g"], c["d"], c["br"], c["w"], c["rb"],
            c["rr"]]
    y = em.fresh("attn")
    em.op(f"{y} = flow.dispatch @lse_kernels::@attend_rows_f16[{nwg}]({q}, {em.cache}, {pos}, {', '.join(args)}) : "
          f"({em.ty(('?', qc))}{{%n}}, {em.cache_ty}{em.cache_dims(t)}, {pos_ty}{{%n}}, {', '.join(['index'] * len(args))}) -> "
          f"{em.ty(('?', qc))}{{%n}}")
    return y


def _place(em: FunctionEmitter, layer: int) -> list[tuple[str, int]]:
    """The attention kernels' layer operands: its slab ("layer"), its window
    (0: full), its ring's first row and rows (0: not a ring; kv_layout.py)."""
    at = em.layout.layers[layer]
    return [("layer", at.slab), ("w", em.cfg.layer_window(layer) or 0), ("rb", at.base if at.ring else 0),
            ("rr", at.rows if at.ring else 0)]


def rms_norm(em: FunctionEmitter, x: str, n: str, c: str, w: str, eps: float) -> str:
    """RMSNorm of x (N, C) with an f32 weight (C,) through lse_rms_norm."""
    [y] = _norm(em, "rms_norm", [x], n, c, w, eps, 1)
    return y


def add_rms_norm(em: FunctionEmitter, a: str, b: str, n: str, c: str, w: str, eps: float) -> tuple[str, str]:
    """(a + b, its RMSNorm) through lse_add_rms_norm: a block's residual add
    and the next norm in one dispatch."""
    s, y = _norm(em, "add_rms_norm", [a, b], n, c, w, eps, 2)
    return s, y


def _norm(em: FunctionEmitter, export: str, xs: list[str], n: str, c: str, w: str, eps: float,
          results: int) -> list[str]:
    """The norm exports' dispatch: the rows of xs, the weight; rows, width,
    eps as its f32 bits, NORM_ROWS rows a workgroup."""
    k = _consts(em, [("c", c), ("eps", struct.unpack("<I", struct.pack("<f", eps))[0]),
                     ("per", cpu_kernels.NORM_ROWS)])
    rows = "%n" if n == "?" else _consts(em, [("rows", n)])["rows"]
    nwg = _ceil_div(em, rows, cpu_kernels.NORM_ROWS)
    t = em.ty((n, c)) + ("{%n}" if n == "?" else "")
    outs = [em.fresh("norm") for _ in range(results)]
    operands = ", ".join([*xs, w, rows, k["c"], k["eps"], k["per"]])
    types = ", ".join([t] * len(xs) + [em.ty((c,))] + ["index"] * 4)
    em.op(f"{', '.join(outs)} = flow.dispatch @lse_kernels::@{export}[{nwg}]({operands}) : "
          f"({types}) -> ({', '.join([t] * results)})")
    return outs
