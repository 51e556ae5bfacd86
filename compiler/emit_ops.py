"""MLIR emitters, one per graph op. Each takes the FunctionEmitter and a node,
reads its inputs' SSA names and shapes, and records its output's.

Shapes as in graph.py: N rows ("?" in prefill, P in decode), H, I, nh, kv,
d, V; T = attention window (tokens in the slot's cache after this step).
"""

from __future__ import annotations

import math

from lse.compiler import cpu_kernel_build as cpu_kernels, emit_kernels
from lse.compiler.emit_extra import EXTRA_EMITTERS, norm_weight
from lse.compiler.emit_ring import mask_body, read_kv, rows_window, step_window, write_kv, write_step
from lse.compiler.emit_mlir import SINGLE_SLOT, FunctionEmitter, f32
from lse.compiler.graph import Node

P3, R3 = "ppp", "ppr"


def _in(em: FunctionEmitter, node: Node, i: int) -> tuple[str, tuple[str, ...]]:
    v = node.inputs[i]
    return em.ssa[v], em.shapes[v]


def _set(em: FunctionEmitter, node: Node, ssa: str, dims: tuple[str, ...]) -> None:
    em.ssa[node.output], em.shapes[node.output] = ssa, dims


def embedding(em: FunctionEmitter, node: Node) -> None:
    """out (N, H) = rows of the table; a block-format table is dequantized per element."""
    tok, (n,) = _in(em, node, 0)
    name = node.weights[0]
    hid = em.weights[name][0][1]
    dims = (n, str(hid))
    if em.kernels and emit_kernels.serves(em, name):  # the kernels' layout: no parts of its own
        _set(em, node, emit_kernels.embed(em, tok, n, name), dims)
        return
    if em.is_blocks(name):
        bw = em.blocks(name)
        body = ("  %ti = arith.index_cast %t : i64 to index\n  %j = linalg.index 1 : index\n"
                f"  %cb = arith.constant {bw.dims[2]} : index\n  %s = arith.divui %j, %cb : index\n"
                "  %l = arith.remui %j, %cb : index\n"
                f"  %q = tensor.extract {bw.q}[%ti, %s, %l] : {em.ty(bw.dims, bw.et)}\n")
        for i, (sv, et) in enumerate(bw.scales):
            body += f"  %sv{i} = tensor.extract {sv}[%ti, %s] : {em.ty(bw.dims[:2], et)}\n"
        body += bw.dequant_body("%q", [f"%sv{i}" for i in range(len(bw.scales))], "%x")
    else:
        w, et, shape = em.weight(name)
        ext, val = em.widen("%x", et)
        body = ("  %ti = arith.index_cast %t : i64 to index\n  %j = linalg.index 1 : index\n"
                f"  %x = tensor.extract {w}[%ti, %j] : {em.ty(tuple(map(str, shape)), et)}\n"
                f"{ext}  linalg.yield {val} : f32\n")
    out = em.empty(dims)
    r = em.generic(2, ["d0", "d0, d1"], "pp", [(tok, em.ty((n,), "i64"))], (out, em.ty(dims)),
                   "%t: i64, %o: f32", body)
    _set(em, node, r, dims)


def rms_norm(em: FunctionEmitter, node: Node) -> None:
    x, (n, c) = _in(em, node, 0)
    g = node.attrs["group"]
    if _norm_kernel(em, node, c):
        w, _, _ = em.weight(node.weights[0])
        _set(em, node, emit_kernels.rms_norm(em, x, n, c, w, node.attrs["eps"]), (n, c))
        return
    groups = str(int(c) // g)
    d3 = (n, groups, str(g))
    x3 = em.reshape("expand", x, "[[0], [1, 2]]", (n, c), d3)
    acc = em.empty((n, groups), fill=True)
    ss = em.generic(3, ["d0, d1, d2", "d0, d1"], R3, [(x3, em.ty(d3))], (acc, em.ty((n, groups))),
                    "%a: f32, %s: f32",
                    "  %q = arith.mulf %a, %a : f32\n  %r = arith.addf %s, %q : f32\n  linalg.yield %r : f32\n")
    w, et, _ = em.weight(node.weights[0])
    ext, gval = em.widen("%gw", et)
    off, gval = norm_weight(gval, node.attrs.get("offset", 0.0))
    out = em.empty(d3)
    body = (f"  %cg = arith.constant {f32(g)} : f32\n  %ce = arith.constant {f32(node.attrs['eps'])} : f32\n"
            "  %m = arith.divf %s, %cg : f32\n  %e = arith.addf %m, %ce : f32\n  %rs = math.rsqrt %e : f32\n"
            f"  %t = arith.mulf %a, %rs : f32\n{ext}{off}  %u = arith.mulf %t, {gval} : f32\n  linalg.yield %u : f32\n")
    y3 = em.generic(3, ["d0, d1, d2", "d0, d1", "d2", "d0, d1, d2"], P3,
                    [(x3, em.ty(d3)), (ss, em.ty((n, groups))), (w, em.ty((str(g),), et))], (out, em.ty(d3)),
                    f"%a: f32, %s: f32, %gw: {et}, %o: f32", body)
    _set(em, node, em.reshape("collapse", y3, "[[0], [1, 2]]", d3, (n, c)), (n, c))


def _norm_kernel(em: FunctionEmitter, node: Node, c: str) -> bool:  # the C kernel has no weight offset
    return em.kernels and not node.attrs.get("offset") and cpu_kernels.norm_supports(
        em.weights[node.weights[0]][1].lower(), node.attrs["group"], int(c))


def matmul(em: FunctionEmitter, node: Node) -> None:
    """y (N, M) = x (N, K) . W (M, K)^T (+ b): HF Linear layout, no transpose copy."""
    x, (n, k) = _in(em, node, 0)
    siblings = emit_kernels.sibling_matvecs(em, node, n, k)
    if siblings:
        fmt = em.weights[node.weights[0]][1]
        outs = emit_kernels.contract_siblings(em, x, n, k, [s.weights[0] for s in siblings], fmt)
        for s, (y, dims) in zip(siblings, outs):
            _set(em, s, y, dims)
        return
    y, dims = _contract(em, x, n, k, node.weights[0])
    if len(node.weights) > 1:
        bias, bet, _ = em.weight(node.weights[1])
        ext, bv = em.widen("%bb", bet)
        out = em.empty(dims)
        y = em.generic(2, ["d0, d1", "d1", "d0, d1"], "pp", [(y, em.ty(dims)), (bias, em.ty((dims[1],), bet))],
                       (out, em.ty(dims)), f"%a: f32, %bb: {bet}, %o: f32",
                       f"{ext}  %s = arith.addf %a, {bv} : f32\n  linalg.yield %s : f32\n")
    _set(em, node, y, dims)


def _contract(em: FunctionEmitter, x: str, n: str, k: str, name: str) -> tuple[str, tuple[str, str]]:
    """x (N, K) . W (M, K)^T → (N, M), W stored plain (widened in the body) or in blocks."""
    if em.is_blocks(name):
        fmt = em.weights[name][1]
        # The hand-written kernels where they serve: a matvec for static rows (decode,
        # prefill's one-row lm_head), a GEMM for a prompt's rows.
        if em.kernels and emit_kernels.serves(em, name):
            if n.isdigit() and cpu_kernels.supports(fmt, int(k)):
                return emit_kernels.contract(em, x, n, k, name, fmt)
            if n == "?" and cpu_kernels.gemm_supports(fmt, int(k)):
                return emit_kernels.contract(em, x, n, k, name, fmt)
        return _contract_blocks(em, x, n, k, name)
    w, et, (m, _) = em.weight(name)
    dims = (n, str(m))
    acc = em.empty(dims, fill=True)
    ext, bval = em.widen("%b", et)
    body = f"{ext}  %p = arith.mulf %a, {bval} : f32\n  %s = arith.addf %c, %p : f32\n  linalg.yield %s : f32\n"
    y = em.generic(3, ["d0, d2", "d1, d2", "d0, d1"], "ppr",
                   [(x, em.ty((n, k))), (w, em.ty((str(m), k), et))], (acc, em.ty(dims)),
                   f"%a: f32, %b: {et}, %c: f32", body)
    return y, dims


def _contract_blocks(em: FunctionEmitter, x: str, n: str, k: str, name: str) -> tuple[str, tuple[str, str]]:
    """A block-format W: dequantize (M, S, B) = d * q + m, then contract over
    (S, B) with x viewed as (N, S, B). With --iree-opt-level=O3 IREE fuses the
    dequantization into a one-row matvec, so decode reads the int8 blocks and
    never writes f32 weights (shared/notes/iree-lowbit.md); prefill dequantizes
    a tile-friendly f32 copy per call, which its matmul amortises."""
    bw = em.blocks(name)
    q, qd, qet, scales = bw.q, bw.dims, bw.et, bw.scales
    m, s, b = qd
    # d0 = M, d1 = S, d2 = B
    args = ", ".join(f"%s{i}: {et}" for i, (_, et) in enumerate(scales))
    body = bw.dequant_body("%q", [f"%s{i}" for i in range(len(scales))], "%dq")
    deq = em.generic(3, ["d0, d1, d2"] + ["d0, d1"] * len(scales) + ["d0, d1, d2"], "ppp",
                     [(q, em.ty(qd, qet))] + [(sv, em.ty((m, s), et)) for sv, et in scales],
                     (em.empty(qd), em.ty(qd)), f"%q: {qet}, {args}, %o: f32", body)
    dims = (n, m)
    if not (em.target == "llvm-cpu" and n.isdigit()):
        # The plain (N, M, K) contraction over the dequantized rows: GPU code
        # generation tiles it within its shared memory (the 4-D form asked 64 KiB
        # of 16 on Vulkan), and CPU prefill data-tiles it like an f32 matmul.
        w = em.reshape("collapse", deq, "[[0], [1, 2]]", qd, (m, k))
        acc = em.empty(dims, fill=True)
        y = em.generic(3, ["d0, d2", "d1, d2", "d0, d1"], "ppr", [(x, em.ty((n, k))), (w, em.ty((m, k)))],
                       (acc, em.ty(dims)), "%a: f32, %w: f32, %c: f32",
                       "  %p = arith.mulf %a, %w : f32\n  %r = arith.addf %c, %p : f32\n  linalg.yield %r : f32\n")
        return y, dims
    # Static rows on llvm-cpu: x viewed as (N, S, B); O3 fuses the dequantization into a one-row matvec,
    # so prefill's last-row lm_head never writes the f32 table (113 MiB for SmolLM2).
    x3 = em.reshape("expand", x, "[[0], [1, 2]]", (n, k), (n, s, b))
    acc = em.empty(dims, fill=True)
    # d0 = N, d1 = M, d2 = S, d3 = B
    y = em.generic(4, ["d0, d2, d3", "d1, d2, d3", "d0, d1"], "pprr",
                   [(x3, em.ty((n, s, b))), (deq, em.ty(qd))], (acc, em.ty(dims)), "%a: f32, %w: f32, %c: f32",
                   "  %p = arith.mulf %a, %w : f32\n  %r = arith.addf %c, %p : f32\n  linalg.yield %r : f32\n")
    return y, dims


def rope(em: FunctionEmitter, node: Node) -> None:
    """HF rotate_half RoPE: out = x cos + rotate_half(x) sin, inv_freq_k = theta^(-2k/d),
    the angles' cos and sin from tables computed once per function (FunctionEmitter.rope_table).
    Where decode's attention kernel takes the result, it rotates q and K
    itself: the value passes on unrotated, with its tables (two dispatches a
    layer fewer)."""
    x, (n, c) = _in(em, node, 0)
    pos, _ = _in(em, node, 1)
    d = node.attrs["head_dim"]
    cos, sin = em.rope_table(pos, n, node.attrs["theta"], d, node.attrs.get("freq_factors"))
    users = [m for m in em.later if node.output in m.inputs]
    if (_decode_attention_kernel(em, n) and cpu_kernels.attention_ropes(d) and users
            and all(m.op == "attention" and m.inputs.index(node.output) < 2 for m in users)):
        _set(em, node, x, (n, c))
        em.deferred_rope[node.output] = (cos, sin)
        return
    # x as (N, heads, 2, d/2): each half's partner is the other half at the
    # same offset, taken from the two halves as slices, not gathered element
    # by element, which is slower (docs/kernels.md).
    half, heads = d // 2, str(int(c) // d)
    d4, h3 = (n, heads, "2", str(half)), (n, heads, str(half))
    x4 = em.reshape("expand", x, "[[0], [1, 2, 3]]", (n, c), d4)
    rows = "%n" if n == "?" else n
    lo, hi = em.fresh("lo"), em.fresh("hi")
    for name, at in ((lo, 0), (hi, 1)):
        em.op(f"{name} = tensor.extract_slice {x4}[0, 0, {at}, 0] [{rows}, {heads}, 1, {half}] [1, 1, 1, 1] : "
              f"{em.ty(d4)} to {em.ty(h3)}")
    t3 = (n, "2", str(half))
    cos3, sin3 = (em.reshape("expand", t, "[[0], [1, 2]]", (n, str(d)), t3) for t in (cos, sin))
    r4 = em.generic(4, ["d0, d1, d2, d3", "d0, d1, d3", "d0, d1, d3", "d0, d2, d3", "d0, d2, d3", "d0, d1, d2, d3"],
                    "pppp", [(x4, em.ty(d4)), (lo, em.ty(h3)), (hi, em.ty(h3)), (cos3, em.ty(t3)), (sin3, em.ty(t3))],
                    (em.empty(d4), em.ty(d4)), "%xv: f32, %xl: f32, %xh: f32, %cs: f32, %sn: f32, %o: f32",
                    "  %w = linalg.index 2 : index\n  %z = arith.constant 0 : index\n"
                    "  %first = arith.cmpi eq, %w, %z : index\n  %xp = arith.select %first, %xh, %xl : f32\n"
                    "  %a = arith.mulf %xv, %cs : f32\n  %b = arith.mulf %xp, %sn : f32\n  %s = arith.addf %a, %b : f32\n"
                    "  linalg.yield %s : f32\n")
    _set(em, node, em.reshape("collapse", r4, "[[0], [1, 2, 3]]", d4, (n, c)), (n, c))


def _elementwise(em: FunctionEmitter, node: Node, body: str, arity: int) -> None:
    ins = [_in(em, node, i) for i in range(arity)]
    dims = ins[0][1]
    out = em.empty(dims)
    args = ", ".join(f"%a{i}: f32" for i in range(arity)) + ", %o: f32"
    r = em.generic(2, ["d0, d1"] * (arity + 1), "pp", [(v, em.ty(s)) for v, s in ins], (out, em.ty(dims)), args, body)
    _set(em, node, r, dims)


def silu(em: FunctionEmitter, node: Node) -> None:
    _elementwise(em, node, "  %one = arith.constant 1.0 : f32\n  %ng = arith.negf %a0 : f32\n"
                 "  %ex = math.exp %ng : f32\n  %den = arith.addf %one, %ex : f32\n"
                 "  %s = arith.divf %a0, %den : f32\n  linalg.yield %s : f32\n", 1)


def mul(em: FunctionEmitter, node: Node) -> None:
    _elementwise(em, node, "  %s = arith.mulf %a0, %a1 : f32\n  linalg.yield %s : f32\n", 2)


def add(em: FunctionEmitter, node: Node) -> None:
    """a + b; where the next node normalizes the sum (a block's residual add,
    then the next RMSNorm), both in one kernel dispatch."""
    (a, (n, c)), (b, _) = _in(em, node, 0), _in(em, node, 1)
    norm = em.next
    if norm is not None and norm.op == "rms_norm" and norm.inputs[0] == node.output and _norm_kernel(em, norm, c):
        w, _, _ = em.weight(norm.weights[0])
        s, y = emit_kernels.add_rms_norm(em, a, b, n, c, w, norm.attrs["eps"])
        _set(em, node, s, (n, c))
        _set(em, norm, y, (n, c))
        return
    _elementwise(em, node, "  %s = arith.addf %a0, %a1 : f32\n  linalg.yield %s : f32\n", 2)


def lm_head(em: FunctionEmitter, node: Node) -> None:
    """Logits of the last row in prefill (1, V); of every row otherwise (N, V)."""
    x, (n, h) = _in(em, node, 0)
    if em.mode == "prefill":
        row = em.fresh("last")
        em.op("%last_ix = arith.subi %n, %c1 : index")
        em.op(f"{row} = tensor.extract_slice {x}[%last_ix, 0] [1, {h}] [1, 1] : {em.ty((n, h))} to {em.ty(('1', h))}")
        x, n = row, "1"
    y, dims = _contract(em, x, n, h, node.weights[0])
    _set(em, node, y, dims)


def _slot_ids(em: FunctionEmitter, n: str) -> str:
    """The (n,) i64 slot of each row: decode1's slot argument, a bucket's
    slot_ids input, or decode's rows 0 .. slots - 1."""
    if "slot_ids" in em.ssa:
        return em.ssa["slot_ids"]
    ids = em.fresh("slots")
    if em.mode in SINGLE_SLOT:
        em.op(f"{ids} = tensor.from_elements %slot : {em.ty((n,), 'i64')}")
    else:
        em.op(f"{ids} = arith.constant dense<[{', '.join(map(str, range(int(n))))}]> : {em.ty((n,), 'i64')}")
    return ids


def _index(em: FunctionEmitter, tensor: str, ty: str, at: str) -> str:
    """An i64 element of a 1-D tensor as an index value."""
    e, i = em.fresh("el"), em.fresh("ix")
    em.op(f"{e} = tensor.extract {tensor}[{at}] : {ty}")
    em.op(f"{i} = arith.index_cast {e} : i64 to index")
    return i


def attention(em: FunctionEmitter, node: Node) -> None:
    """Causal GQA over the KV cache: write this step's K/V, then attend to the
    updated cache window. Prefill: one slot, rows at positions p0..p0+N-1.
    Decode: row b is slot b at positions[b]; the window is the `window` arg.
    Where the attention kernel serves, decode's rows (any static count, each
    in the slot _slot_ids names) go to it, K/V writes included."""
    cfg = em.cfg
    kv, d, groups, layer = cfg.num_key_value_heads, cfg.head_dim, cfg.num_groups, node.attrs["layer"]
    (q, (n, qc)), (k, (_, kc)), (v, _), (pos, _) = (_in(em, node, i) for i in range(4))
    pos_ty = em.ty((n,), "i64")
    kernel = _attention_kernel(em)
    if kernel and n.isdigit():  # decode's rows, each in its own slot: the kernel writes their K and V itself
        tables = {em.deferred_rope.get(name) for name in node.inputs[:2]}
        if len(tables) != 1:
            raise ValueError(f"{node.output}: RoPE deferred for one of q and k only")
        y = emit_kernels.attend(em, layer, q, qc, pos, pos_ty, n, (k, v), _slot_ids(em, n), tables.pop())
        _set(em, node, y, (n, qc))
        return
    if kernel and em.mode in SINGLE_SLOT:  # a prompt's rows: K and V written by their own kernel
        emit_kernels.kv_write(em, layer, (k, v), kc, pos, pos_ty)
        _set(em, node, emit_kernels.attend_rows(em, layer, q, qc, pos, pos_ty), (n, qc))
        return
    d3 = (n, str(kv), str(d))
    k3 = em.reshape("expand", k, "[[0], [1, 2]]", (n, kc), d3)
    v3 = em.reshape("expand", v, "[[0], [1, 2]]", (n, kc), d3)
    if em.mode in SINGLE_SLOT:
        rows, count = ("%n", "%n") if n == "?" else (n, f"%c{n}")
        p0 = _index(em, pos, pos_ty, "%c0")
        write_step(em, (k3, v3), d3, layer, p0, rows, count)
        em.window = step_window(em, layer, p0, count)
        kvd = ("T?", str(kv), str(d))
        keys = read_kv(em, layer, 0, "%slot_ix", "1", kv, d, kvd)
        vals = read_kv(em, layer, 1, "%slot_ix", "1", kv, d, kvd)
        kmap = "d3, d1, d4"
    else:
        for b in range(int(n)):
            pb = _index(em, pos, pos_ty, f"%c{b}_ix")
            for which, src in ((0, k3), (1, v3)):
                row = em.fresh("row")
                em.op(f"{row} = tensor.extract_slice {src}[{b}, 0, 0] [1, {kv}, {d}] [1, 1, 1] : "
                      f"{em.ty(d3)} to {em.ty((str(kv), str(d)))}")
                write_kv(em, row, em.ty((str(kv), str(d))), layer, which, str(b), pb, "1", kv, d)
        em.window = rows_window(em, layer)
        kvd = (n, "T?", str(kv), str(d))
        keys = read_kv(em, layer, 0, "0", n, kv, d, kvd)
        vals = read_kv(em, layer, 1, "0", n, kv, d, kvd)
        kmap = "d0, d3, d1, d4"
    _attend(em, node, q, qc, pos, pos_ty, keys, vals, kvd, kmap, groups, kv, d, n)


def _attention_kernel(em: FunctionEmitter) -> bool:
    """The attention kernels (lse_attn.c) serve this function's model."""
    cfg = em.cfg
    return em.kernels and cpu_kernels.attention_supports(em.kv_dtype, cfg.head_dim, cfg.num_groups)


def _decode_attention_kernel(em: FunctionEmitter, n: str) -> bool:
    """Decode's static rows go to the attention kernel (lse_attend_write_f16),
    verify<R>'s causal rows of one slot too (emit_verify.py)."""
    return _attention_kernel(em) and n.isdigit()


def _attend(em: FunctionEmitter, node: Node, q: str, qc: str, pos: str, pos_ty: str, keys: str, vals: str,
            kvd: tuple[str, ...], kmap: str, groups: int, kv: int, d: int, n: str) -> None:
    """scores (N, kv, G, T) = q . K / sqrt(d), masked (visible_keys), softmax, then . V."""
    q4d = (n, str(kv), str(groups), str(d))
    q4 = em.reshape("expand", q, "[[0], [1, 2, 3]]", (n, qc), q4d)
    sd = (n, str(kv), str(groups), "T?")
    acc = em.empty(sd, fill=True)
    # K and V come in the cache's element type and are widened inside the
    # contractions: a separate f16 → f32 copy of the window cost more than the attention.
    et = em.kv_dtype
    ext, kval = em.widen("%b", et)
    scores = em.generic(5, ["d0, d1, d2, d4", kmap, "d0, d1, d2, d3"], "ppppr",
                        [(q4, em.ty(q4d)), (keys, em.ty(kvd, et))], (acc, em.ty(sd)), f"%a: f32, %b: {et}, %c: f32",
                        f"{ext}  %p = arith.mulf %a, {kval} : f32\n  %s = arith.addf %c, %p : f32\n"
                        "  linalg.yield %s : f32\n")
    masked_out = em.empty(sd)
    masked = em.generic(4, ["d0, d1, d2, d3", "d0", "d0, d1, d2, d3"], "pppp",
                        [(scores, em.ty(sd)), (pos, pos_ty)], (masked_out, em.ty(sd)), "%a: f32, %p: i64, %o: f32",
                        "  %t = linalg.index 3 : index\n  %ti = arith.index_cast %t : index to i64\n"
                        f"{mask_body(em, node.attrs['layer'])}"
                        f"  %sc = arith.constant {f32(1.0 / math.sqrt(d))} : f32\n  %sa = arith.mulf %a, %sc : f32\n"
                        "  %ninf = arith.constant 0xFF800000 : f32\n  %r = arith.select %ok, %sa, %ninf : f32\n"
                        "  linalg.yield %r : f32\n")
    probs_out = em.empty(sd)
    probs = em.fresh("probs")
    em.op(f"{probs} = linalg.softmax dimension(3) ins({masked} : {em.ty(sd)}) outs({probs_out} : {em.ty(sd)}) "
          f"-> {em.ty(sd)}")
    vmap = kmap.replace("d3", "d9").replace("d4", "d3").replace("d9", "d4")  # (t, kv, e) roles swap
    acc2 = em.empty(q4d, fill=True)
    mixed = em.generic(5, ["d0, d1, d2, d4", vmap, "d0, d1, d2, d3"], "ppppr",
                       [(probs, em.ty(sd)), (vals, em.ty(kvd, et))], (acc2, em.ty(q4d)), f"%a: f32, %b: {et}, %c: f32",
                       f"{ext}  %p = arith.mulf %a, {kval} : f32\n  %s = arith.addf %c, %p : f32\n"
                       "  linalg.yield %s : f32\n")
    _set(em, node, em.reshape("collapse", mixed, "[[0], [1, 2, 3]]", q4d, (n, qc)), (n, qc))


EMITTERS = {
    "embedding": embedding, "rms_norm": rms_norm, "matmul": matmul, "rope": rope, "attention": attention,
    "silu": silu, "mul": mul, "add": add, "lm_head": lm_head, **EXTRA_EMITTERS,
}
