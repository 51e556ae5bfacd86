"""The KV cache's writes and reads in the MLIR path (emit_ops.attention),
through the layout (compiler/kv_layout.py): a layer's rows live in its slab
at its base row; a sliding layer's ring holds position p in row base + p mod
R. A step's rows wrap into two segments; a read takes the whole ring, and
the mask finds each row's position from the newest one written, pmax:
t(r) = pmax - ((pmax - r) mod R), hidden where t < 0 (runtime/kv_ring.py's
arithmetic, checked there against transformers' ids). ``em`` is emit_mlir's
FunctionEmitter, not imported: emit_mlir imports the emitters as it emits."""

from __future__ import annotations


def _narrow(em, src: str, src_ty: str) -> tuple[str, str]:
    """An f16 cache stores rounded K/V; attention still computes in f32."""
    if em.kv_dtype == "f32":
        return src, src_ty
    narrow, narrow_ty = em.fresh("kvh"), src_ty.replace("xf32>", f"x{em.kv_dtype}>")
    em.op(f"{narrow} = arith.truncf {src} : {src_ty} to {narrow_ty}")
    return narrow, narrow_ty


def _insert(em, src: str, src_ty: str, slab: int, which: int, slot: str, row: str, rows: str,
            kv: int, d: int) -> None:
    new = em.fresh("cache")
    em.op(f"{new} = tensor.insert_slice {src} into {em.cache}[{slab}, {which}, {slot}, {row}, 0, 0] "
          f"[1, 1, 1, {rows}, {kv}, {d}] [1, 1, 1, 1, 1, 1] : {src_ty} into {em.cache_ty}")
    em.cache = new


def _ring_row(em, base: int, rows: int, pos: str) -> tuple[str, str]:
    """(base + pos mod R, pos mod R) as index values."""
    r, b, off, row = em.fresh("ringr"), em.fresh("ringb"), em.fresh("ringoff"), em.fresh("ringrow")
    em.op(f"{r} = arith.constant {rows} : index")
    em.op(f"{b} = arith.constant {base} : index")
    em.op(f"{off} = arith.remui {pos}, {r} : index")
    em.op(f"{row} = arith.addi {b}, {off} : index")
    return row, off


def write_kv(em, src: str, src_ty: str, layer: int, which: int, slot: str, pos: str,
             rows: str, kv: int, d: int) -> None:
    """Insert rows of K (which=0) or V (which=1) at positions pos.. into the
    layer's rows, in place: one row into a ring (decode's), or any rows into
    a full layer's slab."""
    src, src_ty = _narrow(em, src, src_ty)
    at = em.layout.layers[layer]
    if at.ring:
        if rows != "1":
            raise ValueError("write_kv: a ring takes several rows through write_step")
        pos, _ = _ring_row(em, at.base, at.rows, pos)
    _insert(em, src, src_ty, at.slab, which, slot, pos, rows, kv, d)


def write_step(em, kvs: tuple[str, str], d3: tuple[str, ...], layer: int, p0: str, rows: str,
               count: str) -> None:
    """One slot's step of ``rows`` K and V rows ((N, kv, d) each) at positions
    p0..: straight into a full layer; into a ring as two segments, the rows
    up to its end at base + p0 mod R and the rest at base."""
    cfg, at = em.cfg, em.layout.layers[layer]
    kv, d = cfg.num_key_value_heads, cfg.head_dim
    if not at.ring or rows == "1":
        for which, src in enumerate(kvs):
            write_kv(em, src, em.ty(d3), layer, which, "%slot_ix", p0, rows, kv, d)
        return
    start, off = _ring_row(em, at.base, at.rows, p0)
    ring = _const(em, at.rows)
    room, first, second, b = em.fresh("room"), em.fresh("seg"), em.fresh("seg"), em.fresh("ringb")
    em.op(f"{room} = arith.subi {ring}, {off} : index")
    em.op(f"{first} = arith.minui {count}, {room} : index")
    em.op(f"{second} = arith.subi {count}, {first} : index")
    em.op(f"{b} = arith.constant {at.base} : index")
    seg_ty = em.ty(("?", str(kv), str(d)))
    for which, src in enumerate(kvs):
        for at_row, lo, size in ((start, "0", first), (b, first, second)):
            part = em.fresh("seg")
            em.op(f"{part} = tensor.extract_slice {src}[{lo}, 0, 0] [{size}, {kv}, {d}] [1, 1, 1] : "
                  f"{em.ty(d3)} to {seg_ty}")
            narrow, narrow_ty = _narrow(em, part, seg_ty)
            _insert(em, narrow, narrow_ty, at.slab, which, "%slot_ix", at_row, size, kv, d)


def _const(em, value: int) -> str:
    c = em.fresh("cr")
    em.op(f"{c} = arith.constant {value} : index")
    return c


def step_window(em, layer: int, p0: str, count: str) -> str:
    """The rows a one-slot step reads: p0 + count positions of a full layer,
    the whole ring of a sliding one (its newest position, p0 + count - 1,
    kept as em.ring_pmax for the mask)."""
    at = em.layout.layers[layer]
    if not at.ring:
        w = em.fresh("win")
        em.op(f"{w} = arith.addi {p0}, {count} : index")
        return w
    last, pmax = em.fresh("last"), em.fresh("pmax")
    em.op(f"{last} = arith.addi {p0}, {count} : index")
    em.op(f"{pmax} = arith.index_cast {last} : index to i64")
    one = em.fresh("one")
    em.op(f"{one} = arith.constant 1 : i64")
    em.ring_pmax = em.fresh("pmax")
    em.op(f"{em.ring_pmax} = arith.subi {pmax}, {one} : i64")
    return _const(em, at.rows)


def rows_window(em, layer: int) -> str:
    """The rows decode's rows read: the `window` scalar, or a ring's whole
    ring (each row's newest position is its own, %p)."""
    at = em.layout.layers[layer]
    em.ring_pmax = "%p"
    return _const(em, at.rows) if at.ring else "%window_ix"


def read_kv(em, layer: int, which: int, slot: str, slots: str, kv: int, d: int,
            dims: tuple[str, ...]) -> str:
    """The layer's rows of ``slots`` slots from ``slot``, em.window of them,
    in the cache's element type (the attention contractions widen it)."""
    at = em.layout.layers[layer]
    r = em.fresh("kvw")
    em.op(f"{r} = tensor.extract_slice {em.cache}[{at.slab}, {which}, {slot}, {at.base if at.ring else 0}, 0, 0] "
          f"[1, 1, {slots}, {em.window}, {kv}, {d}] [1, 1, 1, 1, 1, 1] : {em.cache_ty} to "
          f"{em.ty(dims, em.kv_dtype)}")
    return r


def mask_body(em, layer: int) -> str:
    """The mask's body lines: %ok where row %ti (as i64) is visible from the
    query at %p. A ring row's position is t = pmax - ((pmax + R - r) mod R)
    (pmax + R - r > 0: no negative remainder), hidden where t < 0."""
    window, at = em.cfg.layer_window(layer), em.layout.layers[layer]
    if not at.ring:
        return visible_keys(window)
    return (f"  %rg_r = arith.constant {at.rows} : i64\n  %rg_a = arith.addi {em.ring_pmax}, %rg_r : i64\n"
            "  %rg_b = arith.subi %rg_a, %ti : i64\n  %rg_m = arith.remsi %rg_b, %rg_r : i64\n"
            f"  %rg_t = arith.subi {em.ring_pmax}, %rg_m : i64\n  %rg_z = arith.constant 0 : i64\n"
            "  %rg_v = arith.cmpi sge, %rg_t, %rg_z : i64\n"
            + visible_keys(window, "%rg_t", "%rg_ok") + "  %ok = arith.andi %rg_ok, %rg_v : i1\n")


def visible_keys(window: int | None, key: str = "%ti", ok: str = "%ok") -> str:
    """Attention's mask body: ``ok`` where key position ``key`` (i64) is visible
    from the query at %p: t <= p, and in a sliding layer (window W) t > p - W."""
    causal = f"arith.cmpi sle, {key}, %p : i64\n"
    if window is None:
        return f"  {ok} = " + causal
    return (f"  %cz = {causal}  %wl = arith.constant {window} : i64\n  %lo = arith.subi %p, %wl : i64\n"
            f"  %in = arith.cmpi sgt, {key}, %lo : i64\n  {ok} = arith.andi %cz, %in : i1\n")
