"""Phi-3's sliding window (every layer sliding): the phi3 fixture (window
1024, context 2048) over a 1300-token prompt and 64 greedy steps, so every
step's attention must hide the keys older than the window. The ids are
transformers' (tools/golden_window.py); full attention gives other ids."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np

from lse.compiler.config import load_config
from lse.compiler.gguf.importer import ensure_imported
from lse.runtime.reference import ReferenceModel
from lse.tools.golden_transformers import sha256
from lse.tools.golden_window import golden_window_path
from lse.fixtures.make_arch_fixtures import arch_gguf_path


def _golden() -> dict:
    g = json.loads(golden_window_path("phi3").read_text())
    assert sha256(arch_gguf_path("phi3")) == g["gguf_sha256"] and g["near_ties"] == []
    assert g["sliding_window"] == 1024 and len(g["prompt"]) == 1300
    return g


def _model_dir():
    return ensure_imported(arch_gguf_path("phi3"), "arch_phi3")


def test_phi3_layers_are_sliding_over_the_whole_context() -> None:
    cfg = load_config(_model_dir())
    assert cfg.max_position_embeddings == 2048  # the file's context, no longer capped at the window
    assert [cfg.layer_window(i) for i in range(cfg.num_hidden_layers)] == [1024, 1024]


def test_phi3_reference_masks_older_keys_as_transformers() -> None:
    g = _golden()
    ref = ReferenceModel.from_dir(_model_dir())
    assert ref.greedy(g["prompt"], len(g["ids"])) == g["ids"]
    full = ReferenceModel(replace(ref.config, sliding_window=None, layer_types=None), ref.w)
    assert full.greedy(g["prompt"], len(g["ids"])) != g["ids"]


def test_phi3_host_interpreter_masks_the_window_as_transformers() -> None:
    """runtime/host_kernels.attention: the prompt and 16 of the golden steps."""
    from lse.runtime.backend import HostBackend
    g = _golden()
    host = HostBackend(_model_dir(), load_config(_model_dir()), 1, 1536)
    logits, _ = host.prefill(np.asarray(g["prompt"], np.int64), 0, 0, lambda cause: None)
    out = [int(np.argmax(logits))]
    for i in range(15):
        out.append(int(np.argmax(host.decode_one(out[-1], len(g["prompt"]) + i, 0, lambda cause: None))))
    assert out == g["ids"][:16]
