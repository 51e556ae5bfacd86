"""The KV cache's layout (compiler/kv_layout.py): sliding layers' rings of
W + slack rows packed into slabs of T rows, full layers a slab each; the
ring layout only where at least two rings fit a slab. Gemma 3 270m's shape:
18 layers, every sixth global, W = 512."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from lse.compiler.kv_layout import DEFAULT_SLACK, KvLayout, LayerPlace, layout_bytes, plan_layout
from lse.runtime.kv_ring import PAST_KV_TOKENS, chunk_rows, slot_reuse
from lse.runtime.pacing import Pacer

pytestmark = pytest.mark.unit


def _gemma3_270m(window: int | None = 512, layers: int = 18) -> SimpleNamespace:
    return SimpleNamespace(num_hidden_layers=layers,
                           layer_window=lambda i: None if window is None or (i + 1) % 6 == 0 else window)


def _rows(layout: KvLayout, kv_len: int) -> list[set[tuple[int, int]]]:
    """Each layer's (slab, row) cells."""
    return [{(p.slab, p.base + r) for r in range(p.rows)} for p in layout.layers]


@pytest.mark.parametrize("kv_len, slabs", [(32768, 4), (8192, 5), (4096, 7), (2048, 11), (2047, 18), (1024, 18)])
def test_rings_pack_into_slabs_and_never_overlap(kv_len: int, slabs: int) -> None:
    layout = plan_layout(_gemma3_270m(), kv_len, DEFAULT_SLACK)
    assert layout.slabs == slabs
    cells = _rows(layout, kv_len)
    assert sum(len(c) for c in cells) == len(set().union(*cells))  # no row is two layers'
    assert all(0 <= slab < layout.slabs and row < kv_len for c in cells for slab, row in c)
    if slabs == 18:  # under two rings a slab: a slab a layer, as before rings
        assert not layout.rings and [p.slab for p in layout.layers] == list(range(18))
        return
    rings = [p for p in layout.layers if p.ring]
    assert len(rings) == 15 and {p.rows for p in rings} == {512 + DEFAULT_SLACK}
    per_slab = kv_len // 1024
    assert [(p.slab, p.base) for p in rings] == [(i // per_slab, i % per_slab * 1024) for i in range(15)]
    full = [p for i, p in enumerate(layout.layers) if (i + 1) % 6 == 0]
    assert [(p.slab, p.base, p.rows, p.ring) for p in full] == [(slabs - 3 + j, 0, kv_len, False) for j in range(3)]


def test_the_layout_reads_back_from_the_manifest_json() -> None:
    layout = plan_layout(_gemma3_270m(), 4096, 16)
    assert KvLayout.from_json(layout.to_json()) == layout
    assert layout.layers[0] == LayerPlace(0, 0, 528, True) and layout.layers[7] == LayerPlace(0, 6 * 528, 528, True)  # the 7th ring


def test_no_ring_without_sliding_layers_or_a_fixed_context() -> None:
    assert not plan_layout(_gemma3_270m(None), 32768).rings
    assert not plan_layout(_gemma3_270m(), None).rings


def test_layout_bytes_count_the_allocated_slabs() -> None:
    """f16, 1 KV head of 256: a row is 512 bytes; 32768 tokens, 1 slot: 4 slabs, not 18."""
    layout = plan_layout(_gemma3_270m(), 32768)
    allocated, rings, full = layout_bytes(layout, 1, 32768, 512)
    assert allocated == 4 * 32768 * 2 * 512
    assert rings == 15 * 1024 * 2 * 512 and full == 3 * 32768 * 2 * 512


def test_a_ring_model_reuses_a_prefix_only_within_the_slack() -> None:
    """kv_tokens + 3 (a verify's rejected rows) may exceed the kept prefix by the slack at most."""
    layout = plan_layout(_gemma3_270m(), 4096, 16)
    assert slot_reuse(layout, 100, 100 - 16 + PAST_KV_TOKENS) == 87
    assert slot_reuse(layout, 100, 86) == 0
    assert slot_reuse(plan_layout(_gemma3_270m(), 1024, 16), 100, 10) == 10  # no ring: any prefix
    assert slot_reuse(None, 100, 10) == 10


def test_a_ring_model_caps_prefill_chunks_at_slack_plus_one_rows() -> None:
    pacer = Pacer(512, 128)
    pacer.max_rows = chunk_rows(plan_layout(_gemma3_270m(), 4096, 16))
    assert pacer.max_rows == 17
    assert [pacer.take(n, False) for n in (600, 30, 17, 5)] == [17, 17, 17, 5]
    pacer.max_rows = chunk_rows(plan_layout(_gemma3_270m(), 1024, 16))
    assert pacer.max_rows is None and pacer.take(520, False) == 520


def test_every_layer_sliding_packs_every_layer() -> None:
    """Phi-3 with a window under its context: no global slab. The phi3-mini-4k
    shape (32 layers, window 2047) at 4096 tokens fits one ring a slab: no
    ring; at 16384 tokens six rings a slab: 6 slabs for 32 layers."""
    every = SimpleNamespace(num_hidden_layers=32, layer_window=lambda i: 2047)
    assert not plan_layout(every, 4096).rings
    layout = plan_layout(every, 16384)
    assert layout.slabs == 6 and all(p.ring and p.rows == 2559 for p in layout.layers)
    assert [p.base for p in layout.layers[:7]] == [0, 2559, 5118, 7677, 10236, 12795, 0]


@pytest.mark.parametrize("target, kv_len, slots", [("llvm-cpu", 32768, 8), (None, 32768, 1), ("llvm-cpu", 1024, 8)])
def test_parallel_auto_counts_the_slabs_the_compile_lays_out(target, kv_len: int, slots: int) -> None:
    """--parallel auto on llvm-cpu sizes a slot's cache with the rings (4 slabs
    at 32768 tokens, 128 MiB a slot in f16: 8 slots in the 1 GiB budget); the
    host interpreter keeps a slab a layer (576 MiB: one slot)."""
    from lse.runtime import engine as engine_module

    cfg = SimpleNamespace(**vars(_gemma3_270m()), num_key_value_heads=1, head_dim=256)
    said: list[str] = []
    stub = SimpleNamespace(cfg=cfg, kv_len=kv_len, device=SimpleNamespace(target=target),
                           config=SimpleNamespace(kv_slack=None), _say=said.append)
    assert engine_module.Engine._auto_slots(stub, "f16") == slots
    per_slot = {(None, 32768): 576, ("llvm-cpu", 32768): 128, ("llvm-cpu", 1024): 18}[(target, kv_len)]
    assert f"a f16 KV cache of {per_slot:.1f} MiB each" in said[0]
