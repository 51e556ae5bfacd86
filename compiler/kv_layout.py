"""Where each layer's K/V live in the one KV-cache tensor.

The cache is one tensor (S, 2, P, T, kv, d): S *slabs* of T rows a slot. A
full-attention layer owns a whole slab (position p in row p). A sliding
layer (window W, ``ModelConfig.layer_window``) keeps a ring of R = W + slack
rows: position p in row base + p mod R; ``T // R`` rings share a slab at row
offsets 0, R, 2R, ... The ring layout is chosen only where it saves memory
(at least two rings a slab); otherwise every layer owns a slab, slab = layer
(the layout before rings). Why R = W + slack, and what the slack bounds (the
rows any one step writes to a slot: a prefill chunk, a speculative
verification), is runtime/kv_ring.py's docstring.

The compiler emits the layout and records it in the manifest
(``TargetArtifact.kv_layout``); the runtime allocates and reads it from
there (and imports this module for the arithmetic only)."""

from __future__ import annotations

from dataclasses import dataclass

# The rows one step may write beyond a sliding layer's window: the runtime
# caps a ring model's prefill chunks at slack + 1 rows (runtime/pacing.py,
# Pacer.max_rows), and 512 + 1 is the default chunk's size (scheduler.PREFILL_CHUNK).
DEFAULT_SLACK = 512
MIN_SLACK = 3  # speculative verification writes 4 rows a step (emit_verify.ROWS)


@dataclass(frozen=True)
class LayerPlace:
    slab: int  # the cache's first index
    base: int  # the first row of this layer's rows within the slab
    rows: int  # R for a ring, T for a full layer
    ring: bool  # position p in row base + p mod rows (else row p)


@dataclass(frozen=True)
class KvLayout:
    slabs: int  # the cache's first dimension
    slack: int  # rows a step may write beyond the window (0 where no layer is a ring)
    layers: tuple[LayerPlace, ...]

    @property
    def rings(self) -> bool:
        return any(p.ring for p in self.layers)

    def to_json(self) -> dict:
        return {"slabs": self.slabs, "slack": self.slack,
                "layers": [[p.slab, p.base, p.rows, int(p.ring)] for p in self.layers]}

    @staticmethod
    def from_json(raw: dict) -> "KvLayout":
        return KvLayout(raw["slabs"], raw["slack"], tuple(LayerPlace(s, b, r, bool(g)) for s, b, r, g in raw["layers"]))


def full_layout(layers: int, kv_len: int | None) -> KvLayout:
    """Every layer a slab of its own: today's (L, 2, P, T, kv, d)."""
    return KvLayout(layers, 0, tuple(LayerPlace(i, 0, kv_len or 0, False) for i in range(layers)))


def plan_layout(cfg, kv_len: int | None, slack: int = DEFAULT_SLACK) -> KvLayout:
    """The layout of ``cfg``'s layers for a cache of ``kv_len`` positions:
    rings for the sliding layers where at least two fit a slab, else full."""
    if slack < MIN_SLACK:
        raise ValueError(f"kv_slack {slack}: a ring needs at least {MIN_SLACK} rows of slack (a verification's rows)")
    n = cfg.num_hidden_layers
    windows = [cfg.layer_window(i) for i in range(n)]
    if kv_len is None or not any(windows):
        return full_layout(n, kv_len)
    rows = {w: w + slack for w in windows if w is not None}
    if any(kv_len // r < 2 for r in rows.values()):
        return full_layout(n, kv_len)
    places: list[LayerPlace | None] = [None] * n
    slab, at = -1, kv_len  # the slab being filled with rings, and its next free row
    for i, w in enumerate(windows):
        if w is None:
            continue
        r = rows[w]
        if at + r > kv_len:
            slab, at = slab + 1, 0
        places[i] = LayerPlace(slab, at, r, True)
        at += r
    slab += 1
    for i, w in enumerate(windows):
        if w is None:
            places[i] = LayerPlace(slab, 0, kv_len, False)
            slab += 1
    return KvLayout(slab, slack, tuple(places))


def layout_for_target(cfg, kv_len: int | None, slack: int, target: str | None,
                      host_attention: bool = False) -> KvLayout:
    """The layout a compile for ``target`` uses: rings (plan_layout) on llvm-cpu
    where every attention runs on the device; the GPU targets and a host
    attention (runtime/host_kernels.py indexes a slab a layer) keep a slab a layer."""
    if target != "llvm-cpu" or host_attention:
        return full_layout(cfg.num_hidden_layers, kv_len)
    return plan_layout(cfg, kv_len, slack)


def layout_bytes(layout: KvLayout, slots: int, kv_len: int, row_bytes: int) -> tuple[int, int, int]:
    """(allocated, the rings' rows, the full layers' rows) in bytes for
    ``slots`` slots, a row (one position's K or V) being ``row_bytes``."""
    per_row = 2 * slots * row_bytes
    rings = sum(p.rows for p in layout.layers if p.ring) * per_row
    full = sum(p.rows for p in layout.layers if not p.ring) * per_row
    return layout.slabs * kv_len * per_row, rings, full
