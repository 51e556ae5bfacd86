"""Gemma 3's sliding window in the numpy reference: over a 150-token prompt
and 64 steps on the gemma3 fixture (window 128), the reference's greedy ids
equal transformers' (tools/golden_window.py); full attention in the sliding
layers gives other ids. The oracle for the ring KV cache."""

from __future__ import annotations

import json
from dataclasses import replace

from lse.runtime.reference import ReferenceModel
from lse.tools.golden_transformers import sha256
from lse.tools.golden_window import GOLDEN
from lse.tools.import_gguf import ensure_imported
from lse.tools.make_arch_fixtures import arch_gguf_path


def test_the_window_masks_older_keys_as_transformers() -> None:
    g = json.loads(GOLDEN.read_text())
    assert sha256(arch_gguf_path("gemma3")) == g["gguf_sha256"] and g["near_ties"] == []
    ref = ReferenceModel.from_dir(ensure_imported(arch_gguf_path("gemma3"), "arch_gemma3"))
    assert ref.config.sliding_window == g["sliding_window"] == 128
    assert ref.greedy(g["prompt"], len(g["ids"])) == g["ids"]
    full = ReferenceModel(replace(ref.config, sliding_window=None), ref.w)
    assert full.greedy(g["prompt"], len(g["ids"])) != g["ids"]
