"""Host groups in the middle of a plan, --no-cpu-fallback at compile time,
the content-hash cache, and the in-place KV cache."""

from __future__ import annotations

import json
import time

import numpy as np
import pytest

from lse.compiler.cache import compiled_artifact
from lse.compiler.cli import main as lse_compile
from lse.compiler.manifest import ABI_VERSION, read_manifest
from lse.compiler.pipeline import CompileError, CompileOptions
from lse.compiler.targets import parse_no_kernel
from lse.runtime.api import LseStartupError, lse_open
from lse.runtime.reference import ReferenceModel
from lse.fixtures.make_fixtures import fixture_dir

PROMPT = [5, 17, 200, 3, 99, 42, 7]


def test_host_group_in_the_middle_gives_the_same_logits(open_backend):
    """device -> host (silu groups) -> device, with every host run counted."""
    model = fixture_dir("llama")
    backend = open_backend(model, no_kernel=parse_no_kernel(["llvm-cpu:silu"]))
    kinds = [s.kind for s in backend.plan]
    assert kinds == ["device", "host", "device", "host", "device"]
    causes: list[str] = []
    logits, _ = backend.prefill(np.asarray(PROMPT, np.int64), 0, 0, causes.append)
    ref = ReferenceModel.from_dir(model)
    np.testing.assert_allclose(logits, ref.forward(PROMPT)[-1], atol=1e-4)
    token = int(np.argmax(logits))
    step = backend.decode(np.asarray([token], np.int64), np.asarray([len(PROMPT)], np.int64), causes.append)
    np.testing.assert_allclose(step[0], ref.forward(PROMPT + [token])[-1], atol=1e-4)
    assert causes == [
        "fused group 11 (3 nodes: matmul, silu, mul); llvm-cpu: no kernel for silu",
        "fused group 23 (3 nodes: matmul, silu, mul); llvm-cpu: no kernel for silu",
    ] * 2


def test_no_cpu_fallback_compile_fails_naming_every_group(tmp_path):
    options = CompileOptions(no_kernel=parse_no_kernel(["silu"]), no_cpu_fallback=True)
    with pytest.raises(CompileError) as e:
        compiled_artifact(fixture_dir("llama"), options, report=lambda m: None)
    assert str(e.value) == (
        "CPU fallback disabled (--no-cpu-fallback): "
        "fused group 11 (3 nodes: matmul, silu, mul); llvm-cpu: no kernel for silu; "
        "fused group 23 (3 nodes: matmul, silu, mul); llvm-cpu: no kernel for silu")


def test_lse_compile_reuses_the_cache_and_dumps_intermediates(tmp_path, capsys):
    model = fixture_dir("llama")
    assert lse_compile([str(model), "-o", str(tmp_path / "a")]) == 0
    start = time.monotonic()
    assert lse_compile([str(model), "-o", str(tmp_path / "b")]) == 0
    assert "cache hit" in capsys.readouterr().err
    a, b = read_manifest(tmp_path / "a"), read_manifest(tmp_path / "b")
    assert a.cache_key == b.cache_key and a.model_dir == str(model)
    assert time.monotonic() - start < 5  # a hit copies files; it never runs iree-compile
    assert lse_compile([str(model), "-o", str(tmp_path / "c"), "--dump-dir", str(tmp_path / "dump")]) == 0
    dumped = sorted(p.name for p in (tmp_path / "dump").iterdir())
    assert dumped == ["graph.txt", "groups.txt", "llvm-cpu-decode.cmd", "llvm-cpu-decode.mlir", "llvm-cpu.cmd",
                      "llvm-cpu.mlir", "llvm-cpu.plan.txt"]
    assert (tmp_path / "dump" / "llvm-cpu.plan.txt").read_text() == "device segment 0: nodes 0..34\n"
    cmd = (tmp_path / "dump" / "llvm-cpu.cmd").read_text()
    assert "iree-compile" in cmd and "--iree-opt-data-tiling=true" in cmd
    # decode's module: the same flags, data tiling turned off last (its attention has a few query rows)
    decode_cmd = (tmp_path / "dump" / "llvm-cpu-decode.cmd").read_text().split()
    assert decode_cmd[-1] == "--iree-opt-data-tiling=false"
    assert "func.func @decode_0" in (tmp_path / "dump" / "llvm-cpu-decode.mlir").read_text()
    assert "func.func @decode_0" not in (tmp_path / "dump" / "llvm-cpu.mlir").read_text()


def test_manifest_records_entry_points_and_refuses_other_abi(tmp_path):
    model = fixture_dir("llama")
    assert lse_compile([str(model), "-o", str(tmp_path / "a")]) == 0
    m = read_manifest(tmp_path / "a")
    names = [(e.name, e.module) for e in m.targets["llvm-cpu"].entry_points]
    assert names == [("prefill_0", "llvm-cpu.vmfb"), ("lm_head_all", "llvm-cpu.vmfb"), ("decode_0", "llvm-cpu-decode.vmfb")]
    assert list(m.targets["llvm-cpu"].modules) == ["llvm-cpu.vmfb", "llvm-cpu-decode.vmfb"]
    raw = (tmp_path / "a" / "manifest.json").read_text().replace(f'"abi_version": {ABI_VERSION}', '"abi_version": 99')
    (tmp_path / "a" / "manifest.json").write_text(raw)
    with pytest.raises(ValueError, match="recompile with lse-compile"):
        read_manifest(tmp_path / "a")


def test_an_artifact_from_a_cpu_with_other_features_is_refused(tmp_path):
    """llvm-cpu modules are compiled for the host CPU (and link AVX2 kernels):
    opened on a CPU whose features differ they could fault, so the engine
    refuses them with the documented fix."""
    model = fixture_dir("llama")
    assert lse_compile([str(model), "-o", str(tmp_path / "a")]) == 0
    raw = json.loads((tmp_path / "a" / "manifest.json").read_text())
    raw["cpu_features"] = "0000000000000000"
    (tmp_path / "a" / "manifest.json").write_text(json.dumps(raw))
    with pytest.raises(LseStartupError, match="compiled on a CPU with other features .*recompile with lse-compile"):
        lse_open({"model": str(tmp_path / "a")})


def _median_step(backend, steps: int = 30) -> float:
    noop = lambda cause: None  # noqa: E731
    backend.prefill(np.asarray(PROMPT, np.int64), 0, 0, noop)
    times = []
    for i in range(steps):
        t = time.perf_counter()
        backend.decode(np.asarray([3], np.int64), np.asarray([len(PROMPT) + i], np.int64), noop)
        times.append(time.perf_counter() - t)
    return float(np.median(times))


def test_decode_does_not_copy_the_kv_cache(open_backend):
    """With a 256x larger cache the step must not grow by the cache's copy
    time: IREE updates the caller-owned cache in place."""
    model = fixture_dir("llama")
    small = open_backend(model, kv_len=128)
    large = open_backend(model, kv_len=128 * 256)
    cache_bytes = int(np.prod(large.cache.shape)) * 4
    blob = np.ones(cache_bytes // 4, np.float32)
    t = time.perf_counter()
    for _ in range(5):
        blob.copy()
    copy_time = (time.perf_counter() - t) / 5
    small_step, large_step = _median_step(small), _median_step(large)
    assert large_step - small_step < 0.5 * copy_time, (small_step, large_step, copy_time)


def test_speculative_compiles_the_verify_entry_and_an_artifact_without_it_is_named(tmp_path):
    """lse-compile --speculative ngram adds the verify entry to the decode
    module (its own cache key); a speculating engine given an artifact
    without one says so at startup, and still serves."""
    model = fixture_dir("llama")
    assert lse_compile([str(model), "-o", str(tmp_path / "spec"), "--speculative", "ngram"]) == 0
    entries = [(e.name, e.module) for e in read_manifest(tmp_path / "spec").targets["llvm-cpu"].entry_points]
    assert entries[-1] == ("verify_0", "llvm-cpu-decode.vmfb")
    assert lse_compile([str(model), "-o", str(tmp_path / "plain")]) == 0
    engine = lse_open({"model": str(tmp_path / "plain"), "speculative": "ngram"})
    try:
        warned = [line for line in engine.log_lines if "has no verify entry" in line]
        assert warned == [f"lse: WARNING: {tmp_path / 'plain'} has no verify entry: --speculative checks its drafts "
                          "through prefill, which costs more a step; recompile with lse-compile --speculative ngram"]
    finally:
        engine.close()
    engine = lse_open({"model": str(tmp_path / "spec"), "speculative": "ngram"})
    try:
        assert not [line for line in engine.log_lines if "has no verify entry" in line]
    finally:
        engine.close()
