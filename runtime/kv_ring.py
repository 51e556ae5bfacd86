"""The ring KV cache of a sliding-window layer (Gemma 3's local layers), as
index arithmetic and a numpy reference that uses it.

A sliding layer attends to the last W positions, so its cache holds R = W +
slack rows: position p lives in row p mod R. A step of n rows at positions
p0..p0+n-1 writes its K/V first, then attends; row r then holds the newest
position pmax - ((pmax - r) mod R) <= pmax = p0 + n - 1 (or none yet). A
query at p sees a row whose position t has p - W < t <= p. The first query
of the step still finds its whole window if R >= W + n - 1, so the slack
bounds a step's rows (a prefill chunk, a speculative verification): slack >=
n - 1.

Prefix reuse: a slot that held M positions can continue from L < M only if
M - L <= slack. Its rows still hold positions M' in [L, M), which the
formula reads as M' - R once the new writes pass them by; M' - R <= L - W - 1
is then outside every later query's window. A longer rollback would show a
query stale keys.
"""

from __future__ import annotations

import numpy as np

from lse.runtime.reference import ReferenceModel

SLACK = 16  # rows a step may write beyond the window: prefill chunks of at most 17 rows


def ring_rows(window: int, slack: int = SLACK) -> int:
    return window + slack


def row_positions(pmax: int, rows: int) -> np.ndarray:
    """The position each ring row holds after positions 0..pmax are written; -1 for none."""
    r = np.arange(rows)
    t = pmax - np.mod(pmax - r, rows)
    return np.where(t >= 0, t, -1)


def ring_mask(q_pos: np.ndarray, pmax: int, rows: int, window: int) -> np.ndarray:
    """[S, R] True where the row is hidden from the query at q_pos[s]."""
    t = row_positions(pmax, rows)[None, :]
    q = np.asarray(q_pos)[:, None]
    return (t < 0) | (t > q) | (t <= q - window)


def write_segments(p0: int, n: int, rows: int) -> list[tuple[int, int, int]]:
    """(ring row, first source row, count) of writing n rows from position p0:
    one segment, or two where the rows wrap past the ring's end."""
    start = p0 % rows
    first = min(n, rows - start)
    return [(start, 0, first)] + ([(0, first, n - first)] if n > first else [])


def reusable(cached: int, common: int, slack: int = SLACK) -> int:
    """The prefix a slot holding ``cached`` positions may continue from: ``common``
    if the rollback fits the slack, else 0."""
    return common if cached - common <= slack else 0


# Positions a slot's rows may hold past its kv_tokens (runtime/scheduler.py):
# a speculative verification's rejected rows (4 rows written, at least one
# kept: 3), or an idle decode row's write just past the prefix (1).
PAST_KV_TOKENS = 3


def slot_reuse(layout, kv_tokens: int, common: int) -> int:
    """The prefix a slot whose cache holds ``kv_tokens`` tokens may continue
    from, through the backend's layout (compiler/kv_layout.KvLayout, or None):
    ``common``, or 0 where a ring's slack is smaller than the rollback."""
    if layout is None or not layout.rings:
        return common
    return reusable(kv_tokens + PAST_KV_TOKENS, common, layout.slack)


def chunk_rows(layout) -> int | None:
    """The most rows a prefill chunk may write to a ring model's slot: slack + 1."""
    return layout.slack + 1 if layout is not None and layout.rings else None


class RingReference(ReferenceModel):
    """The reference with a ring of ring_rows(W) rows for every sliding layer."""

    def __init__(self, *args, slack: int = SLACK, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.slack = slack

    def new_cache(self) -> list[dict]:
        c, caches = self.config, super().new_cache()
        for i, cache in enumerate(caches):
            window = c.layer_window(i)
            if window is not None:
                rows = ring_rows(window, self.slack)
                zeros = np.zeros((c.num_key_value_heads, rows, c.head_dim), np.float32)
                cache.update(k=zeros, v=zeros.copy(), n=0, rows=rows)
        return caches

    def _past(self, cache: list[dict]) -> int:
        return cache[0]["n"] if "rows" in cache[0] else cache[0]["k"].shape[1]

    def _store(self, cache: dict, k: np.ndarray, v: np.ndarray, window: int | None):
        if "rows" not in cache:
            return super()._store(cache, k, v, window)
        rows, p0, n = cache["rows"], cache["n"], k.shape[1]
        if n - 1 > rows - window:
            raise ValueError(f"a step of {n} rows overwrites its own window (ring {rows}, window {window})")
        for at, src, count in write_segments(p0, n, rows):
            cache["k"][:, at:at + count] = k[:, src:src + count]
            cache["v"][:, at:at + count] = v[:, src:src + count]
        cache["n"] = p0 + n
        return cache["k"], cache["v"], ring_mask(np.arange(p0, p0 + n), p0 + n - 1, rows, window)

    def run_chunks(self, ids: list[int], cache: list[dict], chunk: int) -> np.ndarray:
        """Logits of the last row after running ``ids`` in steps of at most ``chunk`` rows."""
        logits = None
        for i in range(0, len(ids), chunk):
            logits = self._run(ids[i:i + chunk], cache)
        return logits

    @staticmethod
    def roll_back(cache: list[dict], length: int) -> None:
        """Keep the first ``length`` positions (prefix reuse): full layers are cut,
        ring layers only move their count back."""
        for layer in cache:
            if "rows" in layer:
                layer["n"] = length
            else:
                layer["k"], layer["v"] = layer["k"][:, :length], layer["v"][:, :length]


def kv_layer_bytes(cfg, layout, slots: int, kv_len: int, itemsize: int) -> tuple[int, int] | None:
    """(sliding layers' bytes, full layers' bytes) of the KV cache as it is
    allocated in ``layout`` (compiler/kv_layout.KvLayout): the slabs that
    hold the sliding layers (their rings, or kv_len rows each where the layout
    has none) and the full layers' slabs; None for a model without sliding layers."""
    sliding = [cfg.layer_window(i) is not None for i in range(cfg.num_hidden_layers)]
    if not any(sliding):
        return None
    per_slab = 2 * slots * kv_len * cfg.num_key_value_heads * cfg.head_dim * itemsize
    slabs = [{p.slab for p, s in zip(layout.layers, sliding) if s == kind} for kind in (True, False)]
    return len(slabs[0]) * per_slab, len(slabs[1]) * per_slab


def ring_note(cfg, layout) -> str:
    """How the sliding layers keep their K/V, for the startup line."""
    rings = [p for p in layout.layers if p.ring]
    if not rings:
        return "every position: no ring (another target, a host attention, or a context under two rings a slab)"
    return (f"rings of {rings[0].rows} rows = window + slack {layout.slack}, {len(rings)} in "
            f"{len({p.slab for p in rings})} slab(s)")
