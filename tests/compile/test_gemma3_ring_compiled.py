"""Gemma 3's sliding layers keep a ring of W + slack rows in the compiled
KV cache (compiler/kv_layout.py). The gemma3 fixture (window 128, five
sliding layers, one global) compiled for 512 positions with a slack of 16:
rings of 144 rows, three to a slab of 512, the global layer a slab: 3 slabs
where a slab a layer took 6. A prompt of 150 and 330 greedy steps run to
position 479, so every ring wraps three times; the ids are transformers'
for the first 64 (tools/golden_window.py) and the numpy reference's
(runtime/reference.py, every position kept) for all of them. The f32
cache runs IREE's attention (emit_ring's two-segment writes and ring mask),
the f16 cache the C kernels (lse_attn.c's ring rows), and with
LSE_CPU_KERNELS=0 the f16 cache runs the MLIR path."""

from __future__ import annotations

import json

import iree.runtime as rt
import numpy as np
import pytest

from lse.compiler.cache import compiled_artifact
from lse.compiler.gguf.importer import ensure_imported
from lse.compiler.pipeline import CompileOptions
from lse.fixtures.make_arch_fixtures import arch_gguf_path
from lse.runtime.api import lse_close, lse_open, lse_request, lse_status
from lse.runtime.backend import DeviceBackend, cache_bytes
from lse.runtime.engine import _memory_line
from lse.runtime.ngram import NgramIndex
from lse.runtime.reference import ReferenceModel
from lse.tools.golden_window import GOLDEN

KV_LEN, SLACK, STEPS = 512, 16, 330
LAYOUT = [[0, 0, 144, 1], [0, 144, 144, 1], [0, 288, 144, 1], [1, 0, 144, 1], [1, 144, 144, 1], [2, 0, 512, 0]]


def _model():
    return ensure_imported(arch_gguf_path("gemma3"), "arch_gemma3")


@pytest.fixture(scope="module")
def golden() -> dict:
    g = json.loads(GOLDEN.read_text())
    assert g["sliding_window"] == 128 and len(g["prompt"]) == 150
    return g


@pytest.fixture(scope="module")
def reference(golden) -> dict[str, list[int]]:
    """The reference's greedy ids for two prompts: the golden one and its reverse."""
    ref = ReferenceModel.from_dir(_model())
    out = {name: ref.greedy(prompt, STEPS) for name, prompt in
           (("golden", golden["prompt"]), ("reversed", golden["prompt"][::-1]))}
    assert out["golden"][:64] == golden["ids"]
    return out


def _backend(kv_dtype: str, slots: int) -> DeviceBackend:
    artifact, manifest = compiled_artifact(_model(), CompileOptions(slots=slots, kv_dtype=kv_dtype, kv_len=KV_LEN,
                                                                    kv_slack=SLACK), report=lambda m: None)
    target = manifest.targets["llvm-cpu"]
    assert target.kv_layout == {"slabs": 3, "slack": SLACK, "layers": LAYOUT}
    backend = DeviceBackend(manifest, artifact, target, rt.get_device("local-task"), "local:0", KV_LEN)
    assert tuple(backend.cache.shape[:4]) == (3, 2, slots, KV_LEN)
    # the startup line's bytes are the buffer's: 3 slabs, not 6
    allocated = int(np.prod(backend.cache.shape)) * np.dtype(backend.cache.dtype).itemsize
    assert allocated == cache_bytes(backend.cfg, slots, KV_LEN, kv_dtype, 3)
    line = _memory_line(_model(), backend.cfg, slots, KV_LEN, kv_dtype, backend.layout)
    assert f"KV cache {allocated / 2**20:.1f} MiB" in line and "5 in 2 slab(s)" in line
    return backend


def _prefill(backend, prompt: list[int], slot: int, start: int, fallback) -> int:
    """The prompt from ``start`` in chunks of slack + 1 rows; the first id."""
    for i in range(start, len(prompt), SLACK + 1):
        logits, _ = backend.prefill(np.asarray(prompt[i:i + SLACK + 1], np.int64), i, slot, fallback)
    return int(np.argmax(logits))


@pytest.mark.parametrize("kv_dtype, kernels", [("f32", "1"), ("f16", "1"), ("f16", "0")])
def test_rings_give_the_reference_ids_in_batched_decode(kv_dtype, kernels, golden, reference, no_fallback,
                                                        monkeypatch):
    """Two slots at once (decode's rows, each slot's own ring rows), then a
    copy of slot 0's prefix into slot 1 (copy_kv, the whole slot) continued
    9 positions back, within the slack, then a lone stream's steps (decode1):
    the ids that computing them gives."""
    monkeypatch.setenv("LSE_CPU_KERNELS", kernels)
    backend = _backend(kv_dtype, 2)
    prompts = [golden["prompt"], golden["prompt"][::-1]]
    out = [[_prefill(backend, p, slot, 0, no_fallback)] for slot, p in enumerate(prompts)]
    for step in range(STEPS - 1):
        tokens = np.asarray([o[-1] for o in out], np.int64)
        logits = backend.decode(tokens, np.full(2, 150 + step, np.int64), no_fallback)
        for o, row in zip(out, logits):
            o.append(int(np.argmax(row)))
    assert out == [reference["golden"], reference["reversed"]]
    # slot 0 holds 479 positions; a prompt of 476 that shares its first 470 continues from there in slot 1
    shared = golden["prompt"] + reference["golden"][:326]
    assert backend.copy_prefix(0, 1, 470)
    ids = [_prefill(backend, shared, 1, 470, no_fallback)]
    for position in range(476, 479):  # a lone stream's steps (decode1) in slot 1's ring
        ids.append(int(np.argmax(backend.decode_one(ids[-1], position, 1, no_fallback))))
    assert ids == reference["golden"][326:330]


def _complete(engine, body: dict) -> tuple[list[int], dict]:
    handle = lse_request(engine, body, "completions")
    status, reply = handle.result()
    assert status == 200
    return list(handle._request.seqs[0].generated), reply


def test_lse_open_reuses_a_prefix_within_the_slack_and_recomputes_beyond(golden, reference):
    """The engine's path (chunks capped at slack + 1 rows, prefix reuse): a
    second turn that continues the first reuses its cache (the rollback is
    under the slack); a prompt that leaves the cached one 100 tokens back is
    recomputed from 0. Both give the reference's ids."""
    engine = lse_open({"model": str(arch_gguf_path("gemma3")), "kv_len": KV_LEN, "parallel": 1,
                       "kv_slack": SLACK})
    try:
        ids, _ = _complete(engine, {"prompt": golden["prompt"], "max_tokens": 200, "temperature": 0})
        assert ids == reference["golden"][:200]
        turn = golden["prompt"] + ids
        ids2, reply = _complete(engine, {"prompt": turn, "max_tokens": 100, "temperature": 0})
        assert reply["usage"]["prompt_tokens_details"]["cached_tokens"] == len(turn) - 1
        assert ids2 == reference["golden"][200:300]
        back = golden["prompt"] + ids[:150]  # the slot holds 449 tokens: 149 back is past the slack
        ids3, reply = _complete(engine, {"prompt": back, "max_tokens": 100, "temperature": 0})
        assert reply["usage"]["prompt_tokens_details"]["cached_tokens"] == 0
        assert ids3 == reference["golden"][150:250]
    finally:
        lse_close(engine)


def _oracle(prompt: list[int], reply: list[int]):
    """Drafts from the plain reply itself, every fifth token wrong: the
    verification accepts runs and rejects inside them (rolled back within the slack)."""
    def propose(index: NgramIndex, k: int, min_n: int = 2) -> list[int]:
        done = len(index.tokens) - len(prompt)
        return [t + 1 if (done + i) % 5 == 4 else t for i, t in enumerate(reply[done:done + k])]
    return propose


def test_speculative_verify_over_rings_keeps_plain_ids(golden, reference, monkeypatch):
    """Every step verifies drafts (verify4 through the kernels' ring rows) while
    the rings wrap: the ids are plain decoding's, the reference's."""
    config = {"model": str(arch_gguf_path("gemma3")), "kv_len": KV_LEN, "parallel": 1, "kv_slack": SLACK,
              "speculative": "ngram"}
    want = reference["golden"][:300]
    monkeypatch.setattr(NgramIndex, "propose", _oracle(golden["prompt"], want))
    engine = lse_open(config)
    try:
        ids, _ = _complete(engine, {"prompt": golden["prompt"], "max_tokens": 300, "temperature": 0})
        counts = lse_status(engine)["engine"]["speculative"]
    finally:
        lse_close(engine)
    assert ids == want
    assert counts["accepted"] >= 100 and counts["proposed"] > counts["accepted"]
