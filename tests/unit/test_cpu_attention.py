"""The hand-written attention kernels (compiler/cpu_kernels/lse_attn.c)
against numpy: GQA over an f16 cache (L, 2, P, T, kv, d), each row reading
its own slot up to its own position, through ctypes from a shared build of
the same source. Odd sizes: 2 and 3 KV heads, 1 to 4 query heads per KV
head, head sizes 8 to 136, windows across the kernels' chunk boundaries;
for a prompt's rows (lse_attend_rows_f16), blocks of rows that end mid-block
and straddle chunk boundaries; a prompt's K and V writes (lse_kv_write_f16)
into full layers and rings."""

from __future__ import annotations

import ctypes
import subprocess

import numpy as np
import pytest

from lse.compiler import cpu_kernel_build as cpu_kernels

pytestmark = pytest.mark.skipif(cpu_kernels.kernels_available() is not None,
                                reason=f"kernels not built here: {cpu_kernels.kernels_available()}")


@pytest.fixture(scope="module")
def attend(tmp_path_factory):
    out = tmp_path_factory.mktemp("attn") / "lse_attn.so"
    subprocess.run(["cc", *cpu_kernels.cflags(), "-fvisibility=default", "-shared", str(cpu_kernels.ATTENTION_SOURCE),
                    "-o", str(out)], check=True)
    lib = ctypes.CDLL(str(out))
    lib.lse_attend_write_f16.argtypes = [ctypes.c_void_p, ctypes.c_size_t] * 9 + [ctypes.c_size_t] * 14
    lib.lse_attend_merge.argtypes = [ctypes.c_void_p, ctypes.c_size_t] * 2 + [ctypes.c_size_t] * 5
    lib.lse_attend_rows_f16.argtypes = [ctypes.c_void_p, ctypes.c_size_t] * 4 + [ctypes.c_size_t] * 13
    lib.lse_kv_write_f16.argtypes = [ctypes.c_void_p, ctypes.c_size_t] * 4 + [ctypes.c_size_t] * 11
    return lib


def _call(lib, q, cache, pos, layer, slot0, step, splits=1, heads=None, new_kv=None, rope=None, window=0, order=1,
          ring=(0, 0)):
    """Both dispatches as IREE runs them: every split's partial record (a
    workgroup per row, group of ``heads`` KV heads and split; by default as
    many heads as cpu_kernels.attention_heads gives), then the merge. Row r
    is in slot slot0 + r * step, and the K and V rows the kernel writes first
    are ``new_kv`` ((rows, kv * d) each), by default the cache's own at each
    row's position, so the cache is attended as given. ``rope``: the rows'
    cos and signed sin tables, (rows, d) each, for the kernel to rotate q and K.
    ``order`` -1 runs the workgroups last first (IREE promises no order).
    ``ring``: the layer's (base row, rows) in its slab ``layer``, (0, 0) for none."""
    L, _, P, T, kv, d = cache.shape
    rows, qc = q.shape
    g = qc // (kv * d)
    heads = heads or cpu_kernels.attention_heads(kv, g, d)
    slots = np.asarray([slot0 + r * step for r in range(rows)], np.int64)
    kn, vn = new_kv or (np.ascontiguousarray(cache[layer, w, slots, pos].reshape(rows, kv * d), np.float32)
                        for w in (0, 1))
    cos, sin = rope if rope is not None else (np.full((rows, d), np.nan, np.float32),) * 2
    part = np.full(rows * kv * splits * g * (d + 2), np.nan, np.float32)
    y = np.full_like(q, np.nan)
    args = [q.ctypes.data, 0, kn.ctypes.data, 0, vn.ctypes.data, 0, cache.ctypes.data, 0, pos.ctypes.data, 0,
            slots.ctypes.data, 0, cos.ctypes.data, 0, sin.ctypes.data, 0, part.ctypes.data, 0, rows, layer, P, T, kv,
            g, d, splits, heads, int(rope is not None), window, *ring]
    for wg in range(rows * kv // heads * splits)[::order]:
        lib.lse_attend_write_f16(*args, wg)
    for wg in range(rows * kv):
        lib.lse_attend_merge(part.ctypes.data, 0, y.ctypes.data, 0, kv, g, d, splits, wg)
    return y


def _numpy(q, cache, pos, layer, slot0, step, window=0):
    L, _, P, T, kv, d = cache.shape
    rows, qc = q.shape
    g = qc // (kv * d)
    out = np.zeros((rows, kv, g, d))
    for r in range(rows):
        slot, n = slot0 + r * step, int(pos[r]) + 1
        first = max(0, n - window) if window else 0  # a sliding layer: positions pos - W < t <= pos
        k = cache[layer, 0, slot, first:n].astype(np.float64)  # (n, kv, d)
        v = cache[layer, 1, slot, first:n].astype(np.float64)
        qr = q[r].reshape(kv, g, d).astype(np.float64)
        s = np.einsum("jgd,tjd->jgt", qr, k) / np.sqrt(d)
        p = np.exp(s - s.max(-1, keepdims=True))
        p /= p.sum(-1, keepdims=True)
        out[r] = np.einsum("jgt,tjd->jgd", p, v)
    return out.reshape(rows, qc)


@pytest.mark.parametrize("one_head", [False, True], ids=["heads-together", "one-head"])
@pytest.mark.parametrize("kv,g,d,T,positions,slots,step,splits", [
    (3, 3, 64, 300, [0], 1, 0, 4),              # SmolLM2's heads, the first position: 3 of 4 splits empty
    (3, 3, 64, 300, [257], 1, 0, 1),            # across chunk boundaries (40 positions at 3 heads of 64, 128 at one)
    (3, 3, 64, 300, [257], 1, 0, 3),            # the same, split in three
    (2, 4, 40, 97, [5, 96, 50], 3, 1, 2),       # batched decode: row b is slot b
    (2, 1, 136, 33, [3, 4, 5, 6], 2, 0, 4),     # consecutive rows of one slot
    (3, 2, 8, 1100, [1099, 17], 2, 1, 2),       # tiny heads: 1024-position chunks hit the 128 cap
    (1, 4, 72, 300, [250], 1, 0, 1),            # 113 positions a chunk at d = 72, rounded to 112: aligned rows
    (4, 8, 136, 120, [119], 1, 0, 2),           # 2 of 4 KV heads a workgroup (4 * 8 * 136 accumulators pass 4096)
    (2, 6, 96, 200, [150, 7], 2, 1, 2),         # the in-place f16 path, two triples of query heads a KV head
])
def test_attention_equals_numpy(attend, kv, g, d, T, positions, slots, step, splits, one_head):
    rng = np.random.default_rng(kv * 1000 + d + T)
    layers, layer = 3, 1
    cache = (rng.standard_normal((layers, 2, slots, T, kv, d)) * 2).astype(np.float16)
    q = (rng.standard_normal((len(positions), kv * g * d)) * 1.5).astype(np.float32)
    pos = np.asarray(positions, np.int64)
    slot0 = 1 if step == 0 and slots > 1 else 0
    y = _call(attend, q, cache, pos, layer, slot0, step, splits, heads=1 if one_head else None)
    np.testing.assert_allclose(y, _numpy(q, cache, pos, layer, slot0, step), rtol=2e-5, atol=2e-5)


def _rope_tables(pos, d, theta=10000.0):
    """FunctionEmitter.rope_table's cos and rotate_half-signed sin, (rows, d) f32."""
    k = np.arange(d) % (d // 2)
    ang = pos[:, None].astype(np.float32) * np.float32(theta) ** (k.astype(np.float32) * np.float32(-2.0 / d))
    sin = np.sin(ang).astype(np.float32)
    return np.cos(ang).astype(np.float32), np.where(np.arange(d) < d // 2, -sin, sin).astype(np.float32)


def _rotate(x, cos, sin, d):
    """The reference's x cos + rotate_half(x) sin, per head, in f32."""
    h = x.reshape(len(x), -1, d)
    half = np.concatenate([h[..., d // 2:], h[..., :d // 2]], axis=-1)
    return (h * cos[:, None] + half * sin[:, None]).astype(np.float32).reshape(x.shape)


@pytest.mark.parametrize("kv,g,d,positions,splits", [(3, 3, 64, [0, 37, 250], 2), (2, 4, 16, [5, 96], 1),
                                                     (1, 2, 128, [299], 3)])
def test_decode_rope_in_the_kernel(attend, kv, g, d, positions, splits):
    """Decode's q and K come unrotated with their rows' tables: the K row
    written into the cache is the f16 of the reference's rotation, bit for
    bit, and the result is attention over rotated q and the updated cache."""
    rng = np.random.default_rng(d + len(positions))
    T, layer = 300, 0
    pos = np.asarray(positions, np.int64)
    rows = len(pos)
    cache = (rng.standard_normal((1, 2, rows, T, kv, d)) * 2).astype(np.float16)
    q = (rng.standard_normal((rows, kv * g * d)) * 1.5).astype(np.float32)
    kn, vn = (rng.standard_normal((rows, kv * d)).astype(np.float32) for _ in range(2))
    cos, sin = _rope_tables(pos, d)
    y = _call(attend, q, cache, pos, layer, 0, 1, splits, new_kv=(kn, vn), rope=(cos, sin))
    written = cache[layer, 0, np.arange(rows), pos].reshape(rows, kv * d)
    assert np.array_equal(written, _rotate(kn, cos, sin, d).astype(np.float16))
    assert np.array_equal(cache[layer, 1, np.arange(rows), pos].reshape(rows, kv * d), vn.astype(np.float16))
    np.testing.assert_allclose(y, _numpy(_rotate(q, cos, sin, d), cache, pos, layer, 0, 1), rtol=2e-5, atol=2e-5)


def test_a_dominant_score_and_a_flat_row(attend):
    """One position far above the rest (exp underflows for the others), and
    equal scores (the mean of V)."""
    kv, g, d, T = 1, 2, 16, 200
    cache = np.zeros((1, 2, 1, T, kv, d), np.float16)
    cache[0, 1, 0, :, 0, :] = np.arange(T, dtype=np.float16)[:, None] / 8
    cache[0, 0, 0, 150, 0, 0] = 60.0  # head 0 scores 60 * 40 / 4 = 600 there, 0 elsewhere
    q = np.zeros((1, kv * g * d), np.float32)
    q[0, 0] = 40.0
    y = _call(attend, q, cache, np.asarray([199], np.int64), 0, 0, 0, splits=3)
    np.testing.assert_allclose(y[0, :d], 150 / 8, rtol=1e-6)
    np.testing.assert_allclose(y[0, d:], np.arange(200).mean() / 8, rtol=1e-6)


def _call_rows(lib, q, cache, pos, layer, slot, block_rows, window=0, ring=(0, 0)):
    """lse_attend_rows_f16's workgroups, in IREE's order: (blocks of rows) x (KV heads)."""
    L, _, P, T, kv, d = cache.shape
    rows, qc = q.shape
    y = np.full_like(q, np.nan)
    for wg in range(-(-rows // block_rows) * kv):
        lib.lse_attend_rows_f16(q.ctypes.data, 0, cache.ctypes.data, 0, pos.ctypes.data, 0, y.ctypes.data, 0,
                                rows, layer, slot, P, T, kv, qc // (kv * d), d, block_rows, window, *ring, wg)
    return y


@pytest.mark.parametrize("kv,g,d,T,start,rows", [
    (3, 3, 64, 300, 0, 37),      # SmolLM2's heads from position 0: the last block of 16 holds 5 rows
    (3, 3, 64, 600, 250, 300),   # a later chunk of a prompt: rows cross 64-position chunk boundaries
    (2, 4, 40, 97, 10, 20),      # 96 positions a chunk at d = 40
    (1, 2, 136, 200, 0, 150),    # wide heads
    (3, 2, 8, 1100, 900, 199),   # tiny heads
])
def test_prompt_attention_equals_numpy(attend, kv, g, d, T, start, rows):
    rng = np.random.default_rng(kv * 1000 + d + T + start)
    cache = (rng.standard_normal((2, 2, 2, T, kv, d)) * 2).astype(np.float16)
    q = (rng.standard_normal((rows, kv * g * d)) * 1.5).astype(np.float32)
    pos = np.arange(start, start + rows, dtype=np.int64)
    block_rows = cpu_kernels.attention_block_rows(g, d)
    y = _call_rows(attend, q, cache, pos, 1, 1, block_rows)
    np.testing.assert_allclose(y, _numpy(q, cache, pos, 1, 1, 0), rtol=2e-5, atol=2e-5)
    # another block size gives the same rows up to the chunking of the online softmax
    np.testing.assert_allclose(_call_rows(attend, q, cache, pos, 1, 1, 3), y, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("kv,g,d,T,positions,splits,window", [
    (1, 4, 256, 700, [600], 4, 512),       # Gemma 3 270M's heads and window, split in four
    (3, 3, 64, 300, [257, 100, 20], 2, 128),  # rows past, near and inside the window
    (2, 6, 96, 200, [150], 1, 7),          # the in-place f16 path, a window shorter than a chunk
])
def test_decode_attention_reads_only_the_window(attend, kv, g, d, T, positions, splits, window):
    rng = np.random.default_rng(window + d)
    cache = (rng.standard_normal((2, 2, len(positions), T, kv, d)) * 2).astype(np.float16)
    q = (rng.standard_normal((len(positions), kv * g * d)) * 1.5).astype(np.float32)
    pos = np.asarray(positions, np.int64)
    y = _call(attend, q, cache, pos, 1, 0, 1, splits, window=window)
    np.testing.assert_allclose(y, _numpy(q, cache, pos, 1, 0, 1, window), rtol=2e-5, atol=2e-5)
    assert not np.allclose(y, _numpy(q, cache, pos, 1, 0, 1), rtol=1e-3, atol=1e-3)  # the full cache differs


@pytest.mark.parametrize("kv,g,d,T,start,rows,window", [
    (1, 4, 256, 900, 400, 300, 512),  # Gemma 3 270M: a chunk whose rows cross the window's edge
    (3, 3, 64, 600, 250, 300, 100),   # windows starting mid-chunk, different for each row
    (2, 4, 40, 97, 0, 90, 9),         # a window shorter than a block of rows
])
def test_prompt_attention_reads_only_the_window(attend, kv, g, d, T, start, rows, window):
    rng = np.random.default_rng(window + d + start)
    cache = (rng.standard_normal((2, 2, 2, T, kv, d)) * 2).astype(np.float16)
    q = (rng.standard_normal((rows, kv * g * d)) * 1.5).astype(np.float32)
    pos = np.arange(start, start + rows, dtype=np.int64)
    y = _call_rows(attend, q, cache, pos, 1, 1, cpu_kernels.attention_block_rows(g, d), window)
    np.testing.assert_allclose(y, _numpy(q, cache, pos, 1, 1, 0, window), rtol=2e-5, atol=2e-5)
    np.testing.assert_allclose(_call_rows(attend, q, cache, pos, 1, 1, 3, window), y, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("order", [1, -1], ids=["first-first", "last-first"])
@pytest.mark.parametrize("kv,g,d,p0,rows,splits,rope", [
    (3, 3, 64, 37, 5, 1, False),   # SmolLM2's heads: the rows cross the 40-position chunk boundary
    (3, 3, 64, 37, 5, 3, True),    # the same, split in three, RoPE in the kernel
    (2, 4, 40, 0, 3, 2, False),    # odd head size, the first positions: empty splits
    (2, 6, 96, 190, 8, 4, True),   # in-place f16 path, 8 rows, the splits' bounds among the rows
    (1, 2, 16, 11, 7, 2, True),    # tiny heads, 7 rows
])
def test_verify_rows_of_one_slot_are_causal(attend, kv, g, d, p0, rows, splits, rope, order):
    """A verify: rows r = 0.. of one slot at positions p0 + r. Row r attends
    to positions <= p0 + r, the step's own earlier rows included, whatever
    order the workgroups run in, and every row's K and V land at its position."""
    rng = np.random.default_rng(kv * 100 + d + p0 + rows)
    T, layer, slot = 200, 1, 1
    cache = (rng.standard_normal((2, 2, 3, T, kv, d)) * 2).astype(np.float16)
    pos = np.arange(p0, p0 + rows, dtype=np.int64)
    q = (rng.standard_normal((rows, kv * g * d)) * 1.5).astype(np.float32)
    kn, vn = (rng.standard_normal((rows, kv * d)).astype(np.float32) for _ in range(2))
    tables = _rope_tables(pos, d) if rope else None
    want = cache.copy()
    want[layer, 0, slot, pos] = (_rotate(kn, *tables, d) if rope else kn).astype(np.float16).reshape(rows, kv, d)
    want[layer, 1, slot, pos] = vn.astype(np.float16).reshape(rows, kv, d)
    y = _call(attend, q, cache, pos, layer, slot, 0, splits, new_kv=(kn, vn), rope=tables, order=order)
    assert np.array_equal(cache, want)
    q_ref = _rotate(q, *tables, d) if rope else q
    np.testing.assert_allclose(y, _numpy(q_ref, want, pos, layer, slot, 0), rtol=2e-5, atol=2e-5)


def _ring_slab(rng, full, pmax, base, rows, slab_rows):
    """A slab of ``slab_rows`` rows (random: other layers' rings) holding
    ``full``'s (1, 2, P, T, kv, d) positions pmax - rows + 1 .. pmax in a ring
    at ``base``: position t in row base + t mod rows (compiler/kv_layout.py)."""
    slab = (rng.standard_normal((1, 2, *full.shape[2:3], slab_rows, *full.shape[4:])) * 2).astype(np.float16)
    for t in range(max(0, pmax - rows + 1), pmax + 1):
        slab[0, :, :, base + t % rows] = full[0, :, :, t]
    return slab


@pytest.mark.parametrize("kv,g,d,positions,splits,window,base,rows", [
    (1, 4, 256, [600], 4, 512, 528, 528),       # Gemma 3 270M's heads and window, slack 16: the second ring
    (3, 3, 64, [350, 130], 2, 100, 0, 116),     # windows across the ring's end (348 is row 0), chunk edges
    (2, 6, 96, [150], 1, 7, 40, 23),            # the in-place f16 path, a short window past the wrap
])
def test_decode_attention_over_a_ring_equals_the_full_cache(attend, kv, g, d, positions, splits, window, base, rows):
    """Each row's slot keeps only its ring; the kernel writes the step's K and
    V at base + p mod R and reads the window's rows in runs cut at the
    ring's end: the same result as the full-length cache."""
    rng = np.random.default_rng(window + d + base)
    full = (rng.standard_normal((1, 2, len(positions), 700, kv, d)) * 2).astype(np.float16)
    pos = np.asarray(positions, np.int64)
    slab = np.concatenate([_ring_slab(rng, full[:, :, [r]], p, base, rows, base + rows + 9)
                           for r, p in enumerate(positions)], axis=2)
    q = (rng.standard_normal((len(positions), kv * g * d)) * 1.5).astype(np.float32)
    new_kv = tuple(np.ascontiguousarray(full[0, w, np.arange(len(pos)), pos].reshape(len(pos), kv * d), np.float32)
                   for w in (0, 1))
    y = _call(attend, q, slab, pos, 0, 0, 1, splits, new_kv=new_kv, window=window, ring=(base, rows))
    np.testing.assert_allclose(y, _numpy(q, full, pos, 0, 0, 1, window), rtol=2e-5, atol=2e-5)
    assert np.array_equal(slab[0, 0, np.arange(len(pos)), base + pos % rows], full[0, 0, np.arange(len(pos)), pos])


@pytest.mark.parametrize("kv,g,d,start,rows,window,base,ring", [
    (1, 4, 256, 590, 17, 512, 0, 528),      # Gemma 3 270M: a 17-row chunk, the window across the ring's end
    (3, 3, 64, 300, 17, 100, 116, 116),     # rows whose windows start on both sides of the wrap
    (2, 4, 40, 50, 9, 30, 5, 38),           # a window shorter than a block of rows
])
def test_prompt_attention_over_a_ring_equals_the_full_cache(attend, kv, g, d, start, rows, window, base, ring):
    rng = np.random.default_rng(window + d + start + base)
    full = (rng.standard_normal((1, 2, 1, 700, kv, d)) * 2).astype(np.float16)
    slab = _ring_slab(rng, full, start + rows - 1, base, ring, base + ring + 3)
    q = (rng.standard_normal((rows, kv * g * d)) * 1.5).astype(np.float32)
    pos = np.arange(start, start + rows, dtype=np.int64)
    want = _numpy(q, full, pos, 0, 0, 0, window)
    for block_rows in (cpu_kernels.attention_block_rows(g, d), 3):
        y = _call_rows(attend, q, slab, pos, 0, 0, block_rows, window, ring=(base, ring))
        np.testing.assert_allclose(y, want, rtol=2e-5, atol=2e-5)


@pytest.mark.parametrize("kv,d,start,rows,ring,per", [
    (3, 40, 5, 37, (0, 0), 16),      # a full layer: rows ending mid-workgroup
    (2, 64, 80, 21, (7, 30), 8),     # a ring: positions 80-89 at rows 27-36, 90-100 wrap to 7-17
    (1, 256, 0, 45, (3, 17), 16),    # a step longer than the ring: only its last 17 rows stay
])
def test_prompt_kv_write_equals_numpy(attend, kv, d, start, rows, ring, per):
    """lse_kv_write_f16 puts each row's K and V, rounded to f16 to nearest
    even (numpy's astype), at its position's row of slot 1 in slab 1 (base +
    t mod R in a ring), workgroups in any order, and touches nothing else."""
    rng = np.random.default_rng(start + rows + d)
    L, P, T = 2, 3, 140
    cache = (rng.standard_normal((L, 2, P, T, kv, d)) * 2).astype(np.float16)
    kn, vn = ((rng.standard_normal((rows, kv * d)) * 3).astype(np.float32) for _ in range(2))
    pos = np.arange(start, start + rows, dtype=np.int64)
    want = cache.copy()
    base, R = ring
    for r, t in enumerate(pos):
        row = base + t % R if R else t
        want[1, 0, 1, row], want[1, 1, 1, row] = (a[r].reshape(kv, d).astype(np.float16) for a in (kn, vn))
    for wg in reversed(range(-(-rows // per))):
        attend.lse_kv_write_f16(kn.ctypes.data, 0, vn.ctypes.data, 0, cache.ctypes.data, 0, pos.ctypes.data, 0,
                                rows, 1, 1, P, T, kv, d, base, R, per, wg)
    assert np.array_equal(cache.view(np.uint16), want.view(np.uint16))
