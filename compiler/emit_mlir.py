"""Emit MLIR (linalg / tensor / arith / math) for segments of the graph.

A segment is a run of device nodes; each becomes one ``func.func`` per mode
(emit_module.py writes them, emit_ops.py each node):
``prefill`` (one slot, N = dynamic prompt length) and ``decode`` (N = P rows,
one per slot). Weights are ``util.global`` parameters read by name from the
model's safetensors (``#stream.parameter.named<"model"::"<hf name>">``), in
their stored dtype and widened inside each contraction. The KV cache is a
caller-owned tensor (S, 2, P, T, kv, d) (S slabs: compiler/kv_layout.py) passed with ``iree.abi.output = 0``
and updated in place: every read comes from the updated SSA value, so IREE
never copies the cache (see shared notes, IREE 3.13 section 2).
"""

from __future__ import annotations

from dataclasses import dataclass

from lse.compiler.emit_verify import ROW_MODES, VERIFY
from lse.compiler.graph import Graph, Node
from lse.compiler.kv_layout import KvLayout, full_layout
from lse.compiler.manifest import EntryPoint
from lse.compiler.weights import BLOCK_FORMATS

ELEMENT_TYPE = {"F32": "f32", "F16": "f16", "BF16": "bf16", "I8": "i8", "I4": "i4", "U4": "i4"}


def stored_parts(name: str, weights: dict[str, tuple[tuple[int, ...], str]]) -> list[str]:
    """The parameters a weight is stored as: itself, or a block format's parts
    (``<name>.q``, ``<name>.d``, ``<name>.m``; see lse.compiler.weights)."""
    return [name] if weights[name][1] not in BLOCK_FORMATS else [f"{name}.{p}" for p in "qdm" if f"{name}.{p}" in weights]


def global_name(param: str) -> str:
    return "p_" + "".join(c if c.isalnum() else "_" for c in param)


def f32(x: float) -> str:
    """An f32 literal MLIR parses (9 significant digits round-trip an f32)."""
    return f"{float(x):.9e}"


def affine(n: int, results: str) -> str:
    dims = ", ".join(f"d{i}" for i in range(n))
    return f"affine_map<({dims}) -> ({results})>"


@dataclass(frozen=True)
class BlockWeight:
    """A block-format weight's SSA values: w[m, s*B + l] = d[m, s] * q[m, s, l] (+ m[m, s])."""

    q: str
    dims: tuple[str, ...]  # (M, S, B)
    et: str  # q's element type: i8 or i4
    unsigned: bool  # 4-bit values 0..15 (Q4_1, Q4_K) rather than signed
    scales: list[tuple[str, str]]  # [(d, et)] or [(d, et), (m, et)]

    def dequant_body(self, q_arg: str, scale_args: list[str], out: str) -> str:
        """Generic-body lines computing ``out`` = d * q + m (f32) from block arguments."""
        body = f"  {out}0 = arith.{'uitofp' if self.unsigned else 'sitofp'} {q_arg} : {self.et} to f32\n"
        for i, ((_, et), arg) in enumerate(zip(self.scales, scale_args)):
            ext, val = FunctionEmitter.widen(arg, et)
            body += f"{ext}  {out}{i + 1} = arith.{'mulf' if i == 0 else 'addf'} {out}{i}, {val} : f32\n"
        return body + f"  linalg.yield {out}{len(self.scales)} : f32\n"


class FunctionEmitter:
    """Emits one function body. ``n`` is the row count: "?" (prefill) or P."""

    def __init__(self, graph: Graph, weights: dict[str, tuple[tuple[int, ...], str]], mode: str, slots: int,
                 kernels: bool = False, kv_dtype: str = "f32", target: str = "llvm-cpu", kv_len: int | None = None,
                 layout: KvLayout | None = None):
        self.cfg = graph.config
        self.target = target  # the compile target: some forms suit one code generator, not another
        self.kernels = kernels  # the module has the hand-written CPU kernels (cpu_kernel_build.py)
        self.kv_dtype = kv_dtype  # the KV cache's element type: f32 or f16
        self.weights = weights
        self.mode = mode
        self.slots = slots
        self.lines: list[str] = []
        self.ssa: dict[str, str] = {}
        self.shapes: dict[str, tuple[str, ...]] = {}
        self.counter = 0
        self.loc = ""
        self.window = ""  # SSA name of the current attention window length (index)
        self.cache = "%cache"  # SSA name of the newest KV cache value
        self.rope_tables: dict[tuple, tuple[str, str]] = {}  # (positions, theta, d, factors) -> cos and signed sin tables
        self.deferred_rope: dict[str, tuple[str, str]] = {}  # decode's q and k, not yet rotated -> their tables
        self.next: Node | None = None  # the node after the one being emitted, for pairs emitted as one
        self.later: list[Node] = []  # the function's nodes after it (sibling matvecs emitted as one)
        self.amx_splits: dict[str, tuple[str, str]] = {}  # x -> its AMX split (emit_kernels.amx_split), made once
        kv, d = graph.config.num_key_value_heads, graph.config.head_dim
        # the cache's positions: fixed at compile time where the options name them (kv_len), so no dispatch
        # takes a dynamic size and IREE records decode's command buffer once (memoized), not at every call
        self.kv_len = kv_len
        self.layout = layout or full_layout(graph.config.num_hidden_layers, kv_len)  # each layer's slab and rows
        self.cache_ty = f"tensor<{self.layout.slabs}x2x{slots}x{kv_len or '?'}x{kv}x{d}x{kv_dtype}>"

    # ---- small helpers -------------------------------------------------
    def fresh(self, hint: str = "v") -> str:
        """A new SSA name: the hint, then a counter (after "_" where the hint
        ends in a digit: "per1" at 143 and "per" at 1143 must not meet)."""
        self.counter += 1
        return f"%{hint}{'_' if hint[-1].isdigit() else ''}{self.counter}"

    def emit(self, text: str) -> None:
        for line in text.strip("\n").splitlines():
            self.lines.append("    " + line)

    def op(self, text: str) -> None:
        """An op line carrying the current node's location."""
        self.emit(f"{text} {self.loc}")

    @staticmethod
    def ty(dims: tuple[str, ...], et: str = "f32") -> str:
        """Tensor type; "?" is the row count N and "T?" the attention window, both dynamic."""
        return "tensor<" + "x".join(["?" if d == "T?" else d for d in dims] + [et]) + ">"

    def cache_dims(self, t: str) -> str:
        """The cache type's dynamic-dimension operands in a flow.dispatch: {t}, or none when static."""
        return "" if self.kv_len else f"{{{t}}}"

    def dyn(self, dims: tuple[str, ...]) -> str:
        """Operands for tensor.empty: %n for each dynamic row dim, the window for "T?"."""
        return ", ".join("%n" if d == "?" else self.window for d in dims if d in ("?", "T?"))

    def empty(self, dims: tuple[str, ...], et: str = "f32", fill: bool = False) -> str:
        real = dims
        e = self.fresh("e")
        self.op(f"{e} = tensor.empty({self.dyn(dims)}) : {self.ty(real, et)}")
        if not fill:
            return e
        f = self.fresh("f")
        self.op(f"{f} = linalg.fill ins(%zero : f32) outs({e} : {self.ty(real, et)}) -> {self.ty(real, et)}")
        return f

    def weight(self, name: str) -> tuple[str, str, tuple[int, ...]]:
        shape, dtype = self.weights[name]
        et = ELEMENT_TYPE[dtype]
        dims = tuple(str(s) for s in shape)
        v = self.fresh("w")
        self.op(f"{v} = util.global.load @{global_name(name)} : {self.ty(dims, et)}")
        return v, et, shape

    def is_blocks(self, name: str) -> bool:
        return self.weights[name][1] in BLOCK_FORMATS

    def blocks(self, name: str) -> "BlockWeight":
        """A block-format weight loaded: its values q (M, S, B) and per-block scale d and offset m (M, S)."""
        q, et, qshape = self.weight(f"{name}.q")
        scales = [self.weight(f"{name}.{p}")[:2] for p in "dm" if f"{name}.{p}" in self.weights]
        return BlockWeight(q, tuple(map(str, qshape)), et, self.weights[f"{name}.q"][1] == "U4", scales)

    @staticmethod
    def widen(arg: str, et: str) -> tuple[str, str]:
        """Body lines that widen a weight element to f32, and the f32 name."""
        if et == "f32":
            return "", arg
        return f"  {arg}_f = arith.extf {arg} : {et} to f32\n", f"{arg}_f"

    def generic(self, n_loops: int, maps: list[str], iters: str, ins: list[tuple[str, str]],
                out: tuple[str, str], block_args: str, body: str) -> str:
        r = self.fresh("g")
        maps_s = ", ".join(affine(n_loops, m) for m in maps)
        iters_s = ", ".join(f'"{"parallel" if c == "p" else "reduction"}"' for c in iters)
        ins_s = ", ".join(v for v, _ in ins)
        ins_t = ", ".join(t for _, t in ins)
        self.op(
            f"{r} = linalg.generic {{indexing_maps = [{maps_s}], iterator_types = [{iters_s}]}} "
            f"ins({ins_s} : {ins_t}) outs({out[0]} : {out[1]}) {{\n"
            f"^bb0({block_args}):\n{body}}} -> {out[1]}"
        )
        return r

    def rope_table(self, pos: str, n: str, theta: float, d: int,
                   factors: tuple[float, ...] | None = None) -> tuple[str, str]:
        """(N, d) tables for the rows' positions: cos(p theta^(-2k/d) / f_k) and the
        sine with rotate_half's sign (-sin in the first half), k = j mod d/2,
        f_k the config's RoPE frequency divisors (1 without scaling; a (d,)
        constant, each pair's divisor twice, read by j).
        Every layer's q and k share them: the cos/sin/pow of each angle is
        computed once per call, not once per head and layer."""
        key = (pos, theta, d, factors)
        if key in self.rope_tables:
            return self.rope_tables[key]
        td = (n, str(d))
        ins, maps, args, scale = [(pos, self.ty((n,), "i64"))], ["d0", "d0, d1"], "%p: i64, %o: f32", ""
        if factors is not None:
            ff = self.fresh("ff")
            vals = ", ".join(f32(f) for f in (*factors, *factors))
            self.op(f"{ff} = arith.constant dense<[{vals}]> : tensor<{d}xf32>")
            ins.append((ff, f"tensor<{d}xf32>"))
            maps, args = ["d0", "d1", "d0, d1"], "%p: i64, %ffk: f32, %o: f32"
            scale = "  %fr = arith.divf %frp, %ffk : f32\n"
        angle = (f"  %j = linalg.index 1 : index\n  %half = arith.constant {d // 2} : index\n"
                 "  %k = arith.remui %j, %half : index\n  %ki = arith.index_cast %k : index to i64\n"
                 f"  %kf = arith.sitofp %ki : i64 to f32\n  %base = arith.constant {f32(theta)} : f32\n"
                 f"  %sc = arith.constant {f32(-2.0 / d)} : f32\n  %ex = arith.mulf %kf, %sc : f32\n"
                 f"  %fr{'p' if scale else ''} = math.powf %base, %ex : f32\n{scale}  %pf = arith.sitofp %p : i64 to f32\n"
                 "  %ang = arith.mulf %pf, %fr : f32\n")
        cos = self.generic(2, maps, "pp", ins, (self.empty(td), self.ty(td)),
                           args, angle + "  %cs = math.cos %ang : f32\n  linalg.yield %cs : f32\n")
        sin = self.generic(2, maps, "pp", ins, (self.empty(td), self.ty(td)),
                           args, angle + "  %sn = math.sin %ang : f32\n  %lo = arith.cmpi ult, %j, %half : index\n"
                           "  %ng = arith.negf %sn : f32\n  %r = arith.select %lo, %ng, %sn : f32\n  linalg.yield %r : f32\n")
        self.rope_tables[key] = (cos, sin)
        return cos, sin

    def columns(self, x: str, dims: tuple[str, ...], start: int, size: int) -> tuple[str, tuple[str, ...]]:
        """Columns [start, start + size) of x (N, C), and the result's dims."""
        (n, c), r, out = dims, self.fresh("sl"), (dims[0], str(size))
        self.op(f"{r} = tensor.extract_slice {x}[0, {start}] [{'%n' if n == '?' else n}, {size}] [1, 1] : "
                f"{self.ty((n, c))} to {self.ty(out)}")
        return r, out

    def reshape(self, kind: str, src: str, reassoc: str, src_dims: tuple[str, ...], dst_dims: tuple[str, ...]) -> str:
        r = self.fresh("r")
        if kind == "expand":
            shape = ", ".join("%n" if d == "?" else d for d in dst_dims)
            self.op(f"{r} = tensor.expand_shape {src} {reassoc} output_shape [{shape}] : "
                    f"{self.ty(src_dims)} into {self.ty(dst_dims)}")
        else:
            self.op(f"{r} = tensor.collapse_shape {src} {reassoc} : {self.ty(src_dims)} into {self.ty(dst_dims)}")
        return r


# Modes that step one slot (rows are that slot's positions; verify*: emit_verify.py);
# "decode" steps every slot, one row each. "decode1" is one token of one slot,
# compiled with a static row so a lone stream doesn't pay for idle slots.
# "decode_r<R>" (a bucket) steps R rows, each in the slot its slot_ids input
# names, so that a few streams among many slots pay for R rows, not every slot's.
SINGLE_SLOT = ("prefill", "decode1", VERIFY, *ROW_MODES)
BUCKET = "decode_r"


def bucket_modes(slots: int) -> tuple[str, ...]:
    """The buckets compiled for `slots` slots: 2, 4, 8, ... rows below it."""
    return tuple(f"{BUCKET}{r}" for r in (2, 4, 8, 16, 32, 64) if r < slots)


def rows_of(mode: str, slots: int) -> str:
    """The row count N of a mode: dynamic, one, a bucket's, or one per slot."""
    if mode.startswith(BUCKET) or mode in ROW_MODES:
        return mode.removeprefix(BUCKET).removeprefix(VERIFY)
    return {"prefill": "?", "lm_head_all": "?", VERIFY: "?", "decode1": "1"}.get(mode, str(slots))


def value_dims(graph: Graph, mode: str, slots: int) -> dict[str, tuple[str, ...]]:
    """Symbolic shape of every value for a mode (see graph.py's legend)."""
    cfg = graph.config
    n = rows_of(mode, slots)
    dims: dict[str, tuple[str, ...]] = {"tokens": (n,), "positions": (n,), "slot_ids": (n,)}
    for node in graph.nodes:
        if node.op == "embedding":
            dims[node.output] = (n, str(cfg.hidden_size))
        elif node.op == "matmul":
            dims[node.output] = (n, str(node.attrs["out_features"]))
        elif node.op == "attention":
            dims[node.output] = (n, str(cfg.num_attention_heads * cfg.head_dim))
        elif node.op == "slice":
            dims[node.output] = (n, str(node.attrs["size"]))
        elif node.op == "lm_head":
            dims[node.output] = ("1" if mode in ("prefill", "decode1") else n, str(cfg.vocab_size))
        else:
            dims[node.output] = dims[node.inputs[0]]
    return dims


COPY_KV = EntryPoint("copy_kv", "copy_kv", (), ("src", "dst", "count"), True, ())


def _copy_kv(em: FunctionEmitter) -> None:
    """Slot dst's first `count` rows of every slab become slot src's (a ring model copies all
    T rows): a prefix another slot computed is copied, not recomputed (cross-slot prefix reuse)."""
    cfg = em.cfg
    em.emit("%src_ix = arith.index_cast %src : i64 to index\n%dst_ix = arith.index_cast %dst : i64 to index\n"
            "%count_ix = arith.index_cast %count : i64 to index")
    sizes = f"[{em.layout.slabs}, 2, 1, %count_ix, {cfg.num_key_value_heads}, {cfg.head_dim}] [1, 1, 1, 1, 1, 1]"
    rows_ty = (f"tensor<{em.layout.slabs}x2x1x?x{cfg.num_key_value_heads}x{cfg.head_dim}x{em.kv_dtype}>")
    em.op(f"%rows = tensor.extract_slice %cache[0, 0, %src_ix, 0, 0, 0] {sizes} : {em.cache_ty} to {rows_ty}")
    em.op(f"%copied = tensor.insert_slice %rows into %cache[0, 0, %dst_ix, 0, 0, 0] {sizes} : {rows_ty} into "
          f"{em.cache_ty}")
    em.cache = "%copied"


def _copy_kv_window(em: FunctionEmitter) -> None:
    """copy_kv for the GPU targets: slot dst's whole window rewritten, each
    position below `count` taken from slot src, the rest kept. IREE 3.13's
    cuda code generator fails on the plain slice copy (a dispatch of a
    dynamic-length load and store: "LLVM Translation failed for operation:
    builtin.unrealized_conversion_cast"); this form is a computed dispatch of
    static size, at the cost of reading both windows whole."""
    cfg = em.cfg
    em.emit("%src_ix = arith.index_cast %src : i64 to index\n%dst_ix = arith.index_cast %dst : i64 to index\n"
            "%count_ix = arith.index_cast %count : i64 to index")
    kv = em.kv_len or "?"
    if em.kv_len is None:
        em.emit("%c3_kv = arith.constant 3 : index\n%kv_ix = tensor.dim %cache, %c3_kv : " + em.cache_ty)
    shape = f"{em.layout.slabs}x2x1x{kv}x{cfg.num_key_value_heads}x{cfg.head_dim}"
    win_ty = f"tensor<{shape}x{em.kv_dtype}>"
    sizes = (f"[{em.layout.slabs}, 2, 1, {em.kv_len or '%kv_ix'}, {cfg.num_key_value_heads}, "
             f"{cfg.head_dim}] [1, 1, 1, 1, 1, 1]")
    em.op(f"%from = tensor.extract_slice %cache[0, 0, %src_ix, 0, 0, 0] {sizes} : {em.cache_ty} to {win_ty}")
    em.op(f"%into = tensor.extract_slice %cache[0, 0, %dst_ix, 0, 0, 0] {sizes} : {em.cache_ty} to {win_ty}")
    em.op(f"%window = tensor.empty({'' if em.kv_len else '%kv_ix'}) : {win_ty}")
    ident = "affine_map<(a, b, c, d, e, f) -> (a, b, c, d, e, f)>"
    parallel = ", ".join(['"parallel"'] * 6)
    t = em.kv_dtype
    em.op(f"%rows = linalg.generic {{indexing_maps = [{ident}, {ident}, {ident}], iterator_types = [{parallel}]}} "
          f"ins(%from, %into : {win_ty}, {win_ty}) outs(%window : {win_ty}) {{\n"
          f"^bb0(%s: {t}, %d: {t}, %o: {t}):\n  %pos = linalg.index 3 : index\n"
          f"  %take = arith.cmpi ult, %pos, %count_ix : index\n  %kept = arith.select %take, %s, %d : {t}\n"
          f"  linalg.yield %kept : {t}\n}} -> {win_ty}")
    em.op(f"%copied = tensor.insert_slice %rows into %cache[0, 0, %dst_ix, 0, 0, 0] {sizes} : {win_ty} into "
          f"{em.cache_ty}")
    em.cache = "%copied"


def emit_copy_kv(em: FunctionEmitter) -> None:
    """copy_kv's body in the form the target's code generator takes."""
    (_copy_kv if em.target == "llvm-cpu" else _copy_kv_window)(em)
