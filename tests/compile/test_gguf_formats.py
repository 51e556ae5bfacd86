"""Compiling straight from a GGUF whose matrices use every block format LSE
runs natively (fixtures/make_gguf_fixtures.py): the compiled llvm-cpu modules
read the blocks as stored and match the numpy reference on the dequantized
weights; a format declared kernel-less runs on the host with the documented
cause; and lse_open serves the GGUF file itself."""

from __future__ import annotations

import numpy as np
import pytest
from tokenizers import Tokenizer
from test_compiled_vs_reference import greedy_compiled, greedy_reference

from lse.compiler import cpu_kernel_build as cpu_kernels
from lse.compiler.weights import read_tensors
from lse.runtime.api import lse_close, lse_model_info, lse_open, lse_request
from lse.runtime.reference import ReferenceModel
from lse.compiler.gguf.importer import ensure_imported
from lse.fixtures.make_gguf_fixtures import FORMATS, gguf_fixture_path

PROMPT = [504, 3575, 282, 4649, 314, 17, 9, 4000, 250]
STEPS = 64


@pytest.fixture(scope="module")
def model_dir():
    path = gguf_fixture_path()
    return ensure_imported(path)


def test_every_format_is_kept_as_stored(model_dir):
    kept = {t.dtype for t in read_tensors(model_dir).values()}
    assert kept == {"q4_0", "q4_1", "q8_0", "q5_0", "q5_1", "q4_k", "q5_k", "q6_k", "F16", "BF16", "F32"}
    assert len({q.name for q in FORMATS.values()}) == 11


def test_compiled_blocks_match_the_reference_for_64_greedy_steps(model_dir, open_backend, no_fallback):
    backend = open_backend(model_dir)
    ref = ReferenceModel.from_dir(model_dir)
    want, want_logits = greedy_reference(ref, PROMPT, STEPS)
    got, got_logits = greedy_compiled(backend, PROMPT, STEPS, no_fallback)
    # Both sides are f32 on the same dequantized values; only summation order differs.
    assert float(np.abs(np.asarray(got_logits) - np.asarray(want_logits)).max()) < 1e-4
    assert got == want
    # A random tied-embedding model answers one token over and over; its logits
    # still move with every step, so the comparison covers the whole forward pass.
    assert float(np.ptp(np.asarray(want_logits), axis=0).max()) > 1e-2


def test_a_format_without_a_kernel_runs_on_the_host_with_its_cause(model_dir, open_backend):
    backend = open_backend(model_dir, no_kernel={"llvm-cpu": frozenset({"q4_k"})})
    causes: list[str] = []
    got, _ = greedy_compiled(backend, PROMPT, 8, causes.append)
    assert got == greedy_reference(ReferenceModel.from_dir(model_dir), PROMPT, 8)[0]
    kinds = sorted(set(causes))
    # blk.0 ffn_gate and blk.1 attn_v are Q4_K
    assert len(kinds) == 2 and all(c.endswith("llvm-cpu: no kernel for q4_k matmul") for c in kinds), kinds


def test_lse_open_serves_the_gguf_file(model_dir):
    path = gguf_fixture_path()
    engine = lse_open({"model": str(path), "kv_len": 128})
    try:
        assert lse_model_info(engine)["id"] == path.name.removesuffix(".gguf")  # mixed_formats-<digest>
        status, body = lse_request(engine, {"prompt": PROMPT, "max_tokens": 8, "temperature": 0},
                                   "completions").result()
    finally:
        lse_close(engine)
    assert status == 200
    want = greedy_reference(ReferenceModel.from_dir(model_dir), PROMPT, 8)[0]
    assert body["usage"]["completion_tokens"] == 8
    tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
    assert body["choices"][0]["text"] == tokenizer.decode(want, skip_special_tokens=False)


def test_batched_decode_of_three_slots_matches_the_reference(model_dir, open_backend, no_fallback):
    """Three slots decoded together (three rows through each decode matvec: the
    hand-written kernels' several-row path, every block format) give each
    slot's own reference logits."""
    backend = open_backend(model_dir, slots=3)
    ref = ReferenceModel.from_dir(model_dir)
    prompts = [PROMPT, PROMPT[3:], [7, 300, 4000, 12]]
    for slot, prompt in enumerate(prompts):
        backend.prefill(np.asarray(prompt, np.int64), 0, slot, no_fallback)
    nxt = [11, 2222, 40000]
    logits = backend.decode(np.asarray(nxt, np.int64), np.asarray([len(p) for p in prompts], np.int64), no_fallback)
    for slot, prompt in enumerate(prompts):
        want = ref.forward(prompt + [nxt[slot]])[-1]
        assert float(np.abs(logits[slot] - want).max()) < 1e-4, slot


def test_an_f16_kv_cache_keeps_the_greedy_tokens(model_dir, open_backend, no_fallback):
    """K and V rounded to f16 in the cache (the default for block weights): the
    greedy reply is the reference's token for token; logits move by rounding only."""
    backend = open_backend(model_dir, kv_dtype="f16")
    want, want_logits = greedy_reference(ReferenceModel.from_dir(model_dir), PROMPT, STEPS)
    got, got_logits = greedy_compiled(backend, PROMPT, STEPS, no_fallback)
    assert got == want
    diff = float(np.abs(np.asarray(got_logits) - np.asarray(want_logits)).max())
    assert 0 < diff < 1e-2, diff  # not the f32 cache (diff > 0), within f16 rounding of K and V


def test_the_attention_kernel_equals_the_generic_attention_on_an_f16_cache(model_dir, open_backend, no_fallback):
    """With an f16 cache, decode's attention runs in lse_attend_write_f16 (split
    positions, merged) and the general prefill's in lse_attend_rows_f16
    (cpu_kernels/lse_attn.c): over the same cache, three slots decoded
    together, and one slot alone (decode1, its slot a runtime value), give the
    general prefill's logits for the same token at the same position."""
    backend = open_backend(model_dir, slots=3, kv_dtype="f16")
    prompts = [PROMPT, PROMPT[3:], [7, 300, 4000, 12] * 9]
    for slot, prompt in enumerate(prompts):
        backend._run("prefill", {"tokens": np.asarray(prompt, np.int64), "positions": np.arange(len(prompt))},
                     {"slot": slot}, no_fallback, slot)
    nxt, pos = [11, 2222, 40000], [len(p) for p in prompts]
    batched = backend.decode(np.asarray(nxt, np.int64), np.asarray(pos, np.int64), no_fallback)
    alone = backend.decode_one(nxt[1], pos[1], 1, no_fallback)

    def general(slot: int) -> np.ndarray:
        v = backend._run("prefill", {"tokens": np.asarray([nxt[slot]], np.int64), "positions": np.asarray([pos[slot]])},
                         {"slot": slot}, no_fallback, slot)
        return np.asarray(v["logits"])[0]
    for slot in range(3):
        np.testing.assert_allclose(batched[slot], general(slot), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(alone, general(1), rtol=1e-4, atol=1e-4)


def test_a_bucket_steps_any_two_slots_as_the_full_step_does(model_dir, open_backend, no_fallback):
    """Three slots compile a 2-row bucket (decode_r2): rows name their slots
    (2 and 0, out of order) and give the full step's logits for them, and the
    slot not named keeps its cache."""
    backend = open_backend(model_dir, slots=3, kv_dtype="f16")
    assert backend.buckets == [2]
    prompts = [PROMPT, PROMPT[3:], [7, 300, 4000, 12]]
    for slot, prompt in enumerate(prompts):
        backend.prefill(np.asarray(prompt, np.int64), 0, slot, no_fallback)
    nxt, pos = [11, 2222, 40000], [len(p) for p in prompts]
    before = np.array(backend.cache.to_host())
    rows = backend.decode_rows(np.asarray([2, 0], np.int64), np.asarray([nxt[2], nxt[0]], np.int64),
                               np.asarray([pos[2], pos[0]], np.int64), no_fallback)
    after = np.array(backend.cache.to_host())
    np.testing.assert_array_equal(after[:, :, 1], before[:, :, 1])
    for slot in (0, 2):  # the new K/V went to each row's own slot and position
        assert not np.array_equal(after[:, :, slot, pos[slot]], before[:, :, slot, pos[slot]])
    full = backend.decode(np.asarray(nxt, np.int64), np.asarray(pos, np.int64), no_fallback)
    np.testing.assert_allclose(rows, full[[2, 0]], rtol=1e-5, atol=1e-5)


def test_the_prompt_kernels_equal_the_generic_code(model_dir, open_backend, no_fallback, monkeypatch):
    """The general prefill runs its q4_1 / q8_0 matmuls in lse_gemm.c, its
    RMSNorms in lse_norm.c and, on an f16 cache, its K and V writes in
    lse_kv_write_f16 and its attention in lse_attend_rows_f16; without the kernels (LSE_CPU_KERNELS=0) all are
    IREE's generic code (dequantize, then an f32 matmul; a reduction; an
    insert into the cache; a masked softmax). A prompt in three chunks, the later ones
    reading the earlier ones' K/V, gives the same logits and hidden rows.
    Chunks of 1 and 7 rows: the GEMM's 6-row tiles with a ragged last one."""
    if cpu_kernels.kernels_available() is not None:
        pytest.skip(f"kernels not built here: {cpu_kernels.kernels_available()}")
    kernel = open_backend(model_dir, kv_len=256, kv_dtype="f16")
    monkeypatch.setenv("LSE_CPU_KERNELS", "0")
    assert cpu_kernels.kernels_available() is not None  # another cache key: the generic artifact
    generic = open_backend(model_dir, kv_len=256, kv_dtype="f16")
    tokens = np.asarray([(13 * i + 5) % 250 + 4 for i in range(170)], np.int64)
    for start, end in ((0, 1), (1, 8), (8, 49), (49, 108), (108, 170)):
        got, want = ({k: np.asarray(v) for k, v in b._run("prefill", {
            "tokens": tokens[start:end], "positions": np.arange(start, end)}, {"slot": 0}, no_fallback).items()
            if k in ("logits", "hidden")} for b in (kernel, generic))
        np.testing.assert_allclose(got["logits"], want["logits"], rtol=1e-4, atol=1e-4)
        np.testing.assert_allclose(got["hidden"], want["hidden"], rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("kv_dtype", ["f32", "f16"])
def test_a_prefix_copied_between_slots_continues_as_if_computed_there(model_dir, open_backend, no_fallback, kv_dtype):
    """copy_kv (a multi-slot artifact's entry point) gives slot 1 slot 0's
    prefix over what slot 1 held: the prompt's last token then prefills to
    slot 0's logits. Before the copy, slot 1's own stale prefix gives others."""
    backend = open_backend(model_dir, slots=2, kv_dtype=kv_dtype)
    prompt = np.asarray(PROMPT * 3, np.int64)
    n = len(prompt)

    def prefill(tokens, start, slot):
        v = backend._run("prefill", {"tokens": tokens, "positions": np.arange(start, start + len(tokens))},
                         {"slot": slot}, no_fallback, slot)
        return np.array(v["logits"].to_host())[0]  # a host copy: the next call reuses the device buffer
    whole = prefill(prompt, 0, 0)
    prefill(prompt[::-1].copy(), 0, 1)  # slot 1 holds something else
    stale = prefill(prompt[-1:], n - 1, 1)
    assert float(np.abs(stale - whole).max()) > 1e-2
    assert backend.copy_prefix(0, 1, n - 1)
    np.testing.assert_allclose(prefill(prompt[-1:], n - 1, 1), whole, rtol=1e-4, atol=1e-4)


def test_lse_compile_picks_the_servers_kv_cache_type(model_dir, tmp_path):
    """lse-compile's --kv-dtype defaults to auto, resolved as the engine does
    (compiler.weights.default_kv_dtype): f16 for block-format weights, so an
    artifact compiled by hand serves like the one lse-server would compile."""
    from lse.compiler.cli import main as lse_compile
    from lse.compiler.manifest import read_manifest

    assert lse_compile([str(model_dir), "-o", str(tmp_path / "auto")]) == 0
    assert read_manifest(tmp_path / "auto").kv_dtype == "f16"
    assert lse_compile([str(model_dir), "-o", str(tmp_path / "f32"), "--kv-dtype", "f32"]) == 0
    assert read_manifest(tmp_path / "f32").kv_dtype == "f32"
