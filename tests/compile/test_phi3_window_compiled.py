"""Phi-3's sliding window (every layer sliding) in the compiled llvm-cpu
modules: the phi3 fixture (window 1024, context 2048), a 1300-token prompt
and 64 greedy steps, transformers' ids (tools/golden_window.py). The f32
cache runs IREE's attention (emit_ops._attend's mask); the f16 cache runs
the C kernels (lse_attend_rows_f16, lse_attend_write_f16), given the window."""

from __future__ import annotations

import json

import pytest
from test_compiled_vs_reference import greedy_compiled

from lse.compiler import cpu_kernel_build as cpu_kernels
from lse.compiler.config import load_config
from lse.compiler.gguf.importer import ensure_imported
from lse.runtime.api import lse_close, lse_open, lse_request
from lse.tools.golden_window import golden_window_path
from lse.fixtures.make_arch_fixtures import arch_gguf_path


def _golden() -> dict:
    g = json.loads(golden_window_path("phi3").read_text())
    assert g["sliding_window"] == 1024 and len(g["prompt"]) == 1300 and g["near_ties"] == []
    return g


@pytest.mark.parametrize("kv_dtype", ["f32", "f16"])
def test_compiled_phi3_gives_transformers_ids_beyond_its_window(kv_dtype, open_backend, no_fallback):
    g = _golden()
    model_dir = ensure_imported(arch_gguf_path("phi3"), "arch_phi3")
    cfg = load_config(model_dir)
    assert kv_dtype == "f32" or cpu_kernels.attention_supports(kv_dtype, cfg.head_dim, cfg.num_groups)
    backend = open_backend(model_dir, kv_len=1536, kv_dtype=kv_dtype)
    got, _ = greedy_compiled(backend, g["prompt"], len(g["ids"]), no_fallback)
    assert got == g["ids"]


def test_lse_open_serves_phi3_past_its_window():
    """The engine's own path: a context of 1536 (once capped at 1024), a
    completion of 64 tokens after 1300."""
    g = _golden()
    engine = lse_open({"model": str(arch_gguf_path("phi3")), "kv_len": 1536, "parallel": 1})
    try:
        status, body = lse_request(engine, {"prompt": g["prompt"], "max_tokens": 64, "temperature": 0},
                                   "completions").result()
    finally:
        lse_close(engine)
    assert status == 200 and body["usage"]["completion_tokens"] == 64
    from tokenizers import Tokenizer
    tok = Tokenizer.from_file(str(ensure_imported(arch_gguf_path("phi3"), "arch_phi3") / "tokenizer.json"))
    # The reply's text leaves out special tokens (<|endoftext|>, </think> are among the golden ids).
    assert body["choices"][0]["text"] == tok.decode(g["ids"], skip_special_tokens=True)
