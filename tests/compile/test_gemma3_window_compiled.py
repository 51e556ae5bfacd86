"""Gemma 3's sliding window in the compiled llvm-cpu modules: a 150-token
prompt on the gemma3 fixture (window 128) and 64 greedy steps, so every step
past position 127 needs the sliding layers to hide keys older than the
window. The ids are transformers' (tools/golden_window.py). The f32 cache
runs IREE's own attention (emit_ops._attend's mask); the f16 cache runs the
C kernels (lse_attend_rows_f16 for the prompt, lse_attend_write_f16 for
decode), each given the layer's window."""

from __future__ import annotations

import json

import pytest
from test_compiled_vs_reference import greedy_compiled

from lse.runtime.api import lse_close, lse_open, lse_request
from lse.tools.golden_window import GOLDEN
from lse.compiler.gguf.importer import ensure_imported
from lse.fixtures.make_arch_fixtures import arch_gguf_path


@pytest.mark.parametrize("kv_dtype", ["f32", "f16"])
def test_compiled_sliding_layers_give_transformers_ids_beyond_the_window(kv_dtype, open_backend, no_fallback):
    g = json.loads(GOLDEN.read_text())
    assert g["sliding_window"] == 128 and len(g["prompt"]) == 150 and g["near_ties"] == []
    backend = open_backend(ensure_imported(arch_gguf_path("gemma3"), "arch_gemma3"), kv_len=256, kv_dtype=kv_dtype)
    got, _ = greedy_compiled(backend, g["prompt"], len(g["ids"]), no_fallback)
    assert got == g["ids"]


def test_lse_open_serves_gemma3_past_its_window():
    """The engine's own path (prefill in chunks, decode rows, the context no
    longer capped at the window): a completion of 64 tokens after 150."""
    g = json.loads(GOLDEN.read_text())
    engine = lse_open({"model": str(arch_gguf_path("gemma3")), "kv_len": 256, "parallel": 1})
    try:
        status, body = lse_request(engine, {"prompt": g["prompt"], "max_tokens": 64, "temperature": 0},
                                           "completions").result()
    finally:
        lse_close(engine)
    assert status == 200 and body["usage"]["completion_tokens"] == 64
    from tokenizers import Tokenizer
    tok = Tokenizer.from_file(str(ensure_imported(arch_gguf_path("gemma3"), "arch_gemma3") / "tokenizer.json"))
    assert body["choices"][0]["text"] == tok.decode(g["ids"], skip_special_tokens=False)
