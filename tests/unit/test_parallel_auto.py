"""--parallel auto (lse-server's default, LseConfig.parallel 0): up to
AUTO_SLOTS slots whose full-context KV caches fit AUTO_KV_BUDGET, at least
one; the startup log says what it chose. On the host interpreter (cpu:0),
whose cache is f32: no compile needed."""

from __future__ import annotations

import pytest

from lse.runtime import engine as engine_module
from lse.runtime.api import lse_close, lse_open
from lse.runtime.backend import cache_bytes
from lse.fixtures.make_fixtures import fixture_dir


def _open(**config):
    return lse_open({"model": str(fixture_dir("llama")), "kv_len": 96, "pool": ["cpu:0"], **config})


@pytest.mark.parametrize("budget_slots,want", [(None, 8), (2.5, 2), (0.5, 1)])
def test_auto_takes_the_slots_whose_caches_fit_the_budget(monkeypatch, budget_slots, want):
    engine = _open(parallel=1)
    per_slot = cache_bytes(engine.cfg, 1, 96, "f32")
    lse_close(engine)
    if budget_slots is not None:
        monkeypatch.setattr(engine_module, "AUTO_KV_BUDGET", int(per_slot * budget_slots))
    engine = _open(parallel=0)
    try:
        assert engine.slots == len(engine.scheduler.slots) == want
        line = next(x for x in engine.log_lines if x.startswith("lse: --parallel auto"))
        assert line.startswith(f"lse: --parallel auto: {want} slot(s), a f32 KV cache of ")
        assert f"{per_slot / 2**20:.1f} MiB each at 96 tokens" in line
    finally:
        lse_close(engine)


def test_an_explicit_count_is_taken_as_given():
    engine = _open(parallel=3)
    try:
        assert engine.slots == 3
        assert not any(x.startswith("lse: --parallel auto") for x in engine.log_lines)
    finally:
        lse_close(engine)
