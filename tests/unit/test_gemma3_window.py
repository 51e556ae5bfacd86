"""Gemma 3's sliding window in the numpy reference: over a 150-token prompt
and 64 steps on the gemma3 fixture (window 128), the reference's greedy ids
equal transformers' (tools/golden_window.py); full attention in the sliding
layers gives other ids. Then the ring KV cache's arithmetic
(runtime/kv_ring.py) in a reference that uses it."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest

from lse.runtime.kv_ring import SLACK, RingReference, reusable, ring_mask, write_segments
from lse.runtime.reference import ReferenceModel
from lse.tools.golden_transformers import sha256
from lse.tools.golden_window import GOLDEN
from lse.compiler.gguf.importer import ensure_imported
from lse.fixtures.make_arch_fixtures import arch_gguf_path


def test_the_window_masks_older_keys_as_transformers() -> None:
    g = json.loads(GOLDEN.read_text())
    assert sha256(arch_gguf_path("gemma3")) == g["gguf_sha256"] and g["near_ties"] == []
    ref = ReferenceModel.from_dir(ensure_imported(arch_gguf_path("gemma3"), "arch_gemma3"))
    assert ref.config.sliding_window == g["sliding_window"] == 128
    assert ref.greedy(g["prompt"], len(g["ids"])) == g["ids"]
    full = ReferenceModel(replace(ref.config, sliding_window=None), ref.w)
    assert full.greedy(g["prompt"], len(g["ids"])) != g["ids"]


# ---- the ring KV cache (runtime/kv_ring.py) -----------------------------------


def _ring() -> RingReference:
    ref = ReferenceModel.from_dir(ensure_imported(arch_gguf_path("gemma3"), "arch_gemma3"))
    return RingReference(ref.config, ref.w)


def _greedy(ring: RingReference, prompt: list[int], steps: int, chunk: int) -> list[int]:
    cache = ring.new_cache()
    logits, out = ring.run_chunks(prompt, cache, chunk), []
    for _ in range(steps):
        out.append(int(np.argmax(logits[-1])))
        logits = ring._run(out[-1:], cache)
    return out


def test_a_ring_of_window_plus_slack_rows_gives_transformers_ids() -> None:
    """Sliding layers keep 128 + 16 rows (position p in row p mod 144); the
    prompt runs in chunks of 17 rows, the most the slack allows."""
    g = json.loads(GOLDEN.read_text())
    ring = _ring()
    assert [c["k"].shape[1] for c in ring.new_cache()] == [144] * 5 + [0]
    assert _greedy(ring, g["prompt"], len(g["ids"]), SLACK + 1) == g["ids"]
    with pytest.raises(ValueError, match="a step of 18 rows overwrites its own window"):
        ring.run_chunks(g["prompt"], ring.new_cache(), SLACK + 2)


def test_a_ring_continues_a_prefix_rolled_back_by_at_most_the_slack() -> None:
    """Prefix reuse: 190 positions cached, continued from 174 (16 back) equals
    a fresh run; from 150 (40 back) the stale rows show, so reuse refuses it."""
    g = json.loads(GOLDEN.read_text())
    ids = g["prompt"] + g["ids"][:40]
    ring, tail = _ring(), [7, 8, 9, 10]
    for back, same in ((16, True), (40, False)):
        cache = ring.new_cache()
        ring.run_chunks(ids, cache, 10)
        keep = len(ids) - back
        ring.roll_back(cache, keep)
        got = ring.run_chunks(tail, cache, 4)[-1]
        want = ring.run_chunks(ids[:keep] + tail, ring.new_cache(), 10)[-1]
        assert np.allclose(got, want, atol=1e-5) == same
        assert reusable(len(ids), keep) == (keep if same else 0)


def test_ring_writes_wrap_and_masks_follow_positions() -> None:
    assert write_segments(140, 10, 144) == [(140, 0, 4), (0, 4, 6)]
    assert write_segments(3, 5, 144) == [(3, 0, 5)]
    mask = ring_mask(np.array([150]), 150, 144, 128)  # rows hold 7..150; 150 sees 23..150
    visible = np.flatnonzero(~mask[0])
    assert sorted((150 - np.mod(150 - visible, 144)).tolist()) == list(range(23, 151))


def test_the_startup_memory_line_says_the_sliding_and_global_layers_kv_bytes() -> None:
    """The gemma3 fixture (five sliding layers, one global; kv 1 head of 48):
    at 256 tokens, 2 slots, f16, a slab is 2 x 2 x 256 x 48 x 2 bytes. A slab
    a layer (no ring: 256 rows hold one ring of 144) is six slabs; at 512
    tokens rings of 128 + 16 rows go three to a slab: 2 slabs of rings, 1
    global, and the line's bytes are the allocated buffer's."""
    from lse.compiler.kv_layout import plan_layout
    from lse.runtime.backend import cache_bytes
    from lse.runtime.engine import _memory_line
    model_dir = ensure_imported(arch_gguf_path("gemma3"), "arch_gemma3")
    cfg = ReferenceModel.from_dir(model_dir).config
    slab = 2 * 2 * 256 * cfg.num_key_value_heads * cfg.head_dim * 2
    full = plan_layout(cfg, 256, SLACK)
    assert not full.rings and full.slabs == 6
    line = _memory_line(model_dir, cfg, 2, 256, "f16", full)
    assert f"KV cache {6 * slab / 2**20:.1f} MiB" in line and cache_bytes(cfg, 2, 256, "f16", full.slabs) == 6 * slab
    assert line.endswith(f"; sliding layers {5 * slab / 2**20:.1f} MiB (window 128, every position: no ring (another "
                         "target, a host attention, or a context under two rings a slab)), "
                         f"global layers {slab / 2**20:.1f} MiB)")
    ring = plan_layout(cfg, 512, SLACK)
    line = _memory_line(model_dir, cfg, 2, 512, "f16", ring)
    assert cache_bytes(cfg, 2, 512, "f16", ring.slabs) == 3 * 2 * slab
    assert f"KV cache {6 * slab / 2**20:.1f} MiB" in line
    assert line.endswith(f"; sliding layers {4 * slab / 2**20:.1f} MiB (window 128, rings of 144 rows = window + slack "
                         f"16, 5 in 2 slab(s)), global layers {2 * slab / 2**20:.1f} MiB)")


def test_the_host_interpreter_masks_the_window_as_transformers() -> None:
    """The host interpreter (runtime/host_kernels.attention, what a host group runs):
    the prompt and 16 of the golden steps; the window is what makes them equal."""
    from lse.runtime.backend import HostBackend
    g = json.loads(GOLDEN.read_text())
    model_dir = ensure_imported(arch_gguf_path("gemma3"), "arch_gemma3")
    host = HostBackend(model_dir, ReferenceModel.from_dir(model_dir).config, 1, 256)
    logits, _ = host.prefill(np.asarray(g["prompt"], np.int64), 0, 0, lambda cause: None)
    out = [int(np.argmax(logits))]
    for i in range(15):
        out.append(int(np.argmax(host.decode_one(out[-1], len(g["prompt"]) + i, 0, lambda cause: None))))
    assert out == g["ids"][:16]
