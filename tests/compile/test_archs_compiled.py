"""The compiled llvm-cpu modules of each architecture fixture (make_arch_fixtures.py,
imported from its GGUF with the block formats kept) against the committed
golden ids of transformers' float32 forward (tools/golden_transformers.py),
and lse_open serving an architecture's GGUF file itself."""

from __future__ import annotations

import json

import numpy as np
import pytest
from test_compiled_vs_reference import greedy_compiled

from lse.runtime.api import lse_close, lse_open, lse_request
from lse.tools.golden_transformers import NEAR_TIE, golden_path
from lse.compiler.gguf.importer import ensure_imported
from lse.fixtures.make_arch_fixtures import ARCH_FIXTURES, arch_gguf_path


def _golden(name: str) -> tuple[dict, int]:
    g = json.loads(golden_path(name).read_text())
    ties = [i for i, m in enumerate(g["margins"]) if m < NEAR_TIE]  # reported, not counted
    return g, ties[0] if ties else len(g["ids"])


@pytest.mark.parametrize("name", list(ARCH_FIXTURES))
def test_compiled_greedy_ids_match_transformers(name, open_backend, no_fallback):
    g, n = _golden(name)
    backend = open_backend(ensure_imported(arch_gguf_path(name), f"arch_{name}"))
    got, logits = greedy_compiled(backend, g["prompt"], n, no_fallback)
    assert got == g["ids"][:n]
    np.testing.assert_allclose(logits[0], g["prompt_logits"], atol=1e-4)


def test_lse_open_serves_a_phi3_gguf_file():
    """The GGUF path itself: imported once, compiled, served; its sliding window
    (1024) is the context it serves."""
    g, _ = _golden("phi3")
    engine = lse_open({"model": str(arch_gguf_path("phi3")), "kv_len": 128})
    try:
        status, body = lse_request(engine, {"prompt": g["prompt"], "max_tokens": 8, "temperature": 0},
                                   "completions").result()
    finally:
        lse_close(engine)
    assert status == 200 and body["usage"]["completion_tokens"] == 8
    from tokenizers import Tokenizer
    tok = Tokenizer.from_file(str(ensure_imported(arch_gguf_path("phi3"), "arch_phi3") / "tokenizer.json"))
    assert body["choices"][0]["text"] == tok.decode(g["ids"][:8], skip_special_tokens=False)
