"""lse.tools.device_check's compile step stays buildable here: a fixture's
cuda artifact (sm_80, cached by content hash) goes into the bundle with a
manifest naming the cuda target and its entry points, and the bundle seeds
another machine's cache (another LSE_CACHE_DIR here) so the engine's compile
on first use finds it."""

from __future__ import annotations

import json

import pytest

from lse.compiler.cache import compiled_artifact
from lse.compiler.manifest import read_manifest
from lse.tools import device_cases
from lse.tools.device_check import INDEX, compile_bundle, seed_cache

CASE = device_cases.Case("llama", "llama", 128)
FLAGS = ["--iree-hal-target-device=cuda", "--iree-cuda-target=sm_80"]


@pytest.fixture
def on_cuda(monkeypatch):
    monkeypatch.setattr(device_cases, "TARGET", "cuda")  # whatever LSE_DEVICE says here


def test_the_bundle_holds_a_cuda_artifact_with_its_entry_points(tmp_path, on_cuda):
    index = compile_bundle([CASE], tmp_path, report=lambda m: None)
    entry = index["cases"]["llama"]
    assert entry["status"] == "compiled", entry.get("error")
    assert index["flags"] == FLAGS
    manifest = read_manifest(tmp_path / entry["artifact"])
    assert list(manifest.targets) == ["cuda"]
    built = manifest.targets["cuda"]
    assert built.driver == "cuda"
    assert built.modules == {"cuda.vmfb": FLAGS}
    assert sorted(e.name for e in built.entry_points) == ["decode_0", "lm_head_all", "prefill_0"]
    assert entry["entry_points"] == ["decode_0", "lm_head_all", "prefill_0"]
    assert built.host_groups == []
    assert (tmp_path / entry["artifact"] / "cuda.vmfb").stat().st_size > 10_000
    assert json.loads((tmp_path / INDEX).read_text()) == index


def test_the_bundle_seeds_another_cache_and_the_engine_compile_finds_it(tmp_path, monkeypatch, on_cuda):
    bundle = tmp_path / "bundle"
    assert compile_bundle([CASE], bundle, report=lambda m: None)["cases"]["llama"]["status"] == "compiled"
    monkeypatch.setenv("LSE_CACHE_DIR", str(tmp_path / "device-cache"))  # the device machine's cache
    assert seed_cache(bundle, [CASE], report=lambda m: None) == {"llama": "seeded"}
    said: list[str] = []
    artifact, manifest = compiled_artifact(CASE.model_dir(), CASE.compile_options(), report=said.append)
    assert said == [f"cache hit: {artifact}"]  # no iree-compile ran
    assert manifest.model_dir == str(CASE.model_dir())  # re-bound to this machine's copy of the fixture
    assert seed_cache(bundle, [CASE], report=lambda m: None) == {"llama": "cached"}
    other = device_cases.Case("llama", "llama", 64)  # another context: the bundle's artifact does not fit
    assert seed_cache(bundle, [other], report=lambda m: None) == {
        "llama": "the bundle's artifact is for another checkout or model shape: compiled here on first use"}


def test_several_slots_cross_compile_for_cuda(tmp_path, on_cuda):
    """copy_kv (several slots) in its GPU form: the plain slice copy failed
    cuda's code generator ("LLVM Translation failed for operation:
    builtin.unrealized_conversion_cast"). With speculative decoding's
    verify_0 (compiler/emit_verify.py; no verify4 off the CPU kernels)."""
    case = device_cases.Case("llama-2", "llama", 128, parallel=2, speculative=True)
    entry = compile_bundle([case], tmp_path, report=lambda m: None)["cases"]["llama-2"]
    assert entry["status"] == "compiled", entry.get("error")
    assert entry["entry_points"] == ["copy_kv", "decode1_0", "decode_0", "lm_head_all", "prefill_0", "verify_0"]


@pytest.mark.parametrize("kv_len", [128, None])
def test_the_gpu_form_of_copy_kv_copies_the_prefix(tmp_path, kv_len):
    """The GPU form's function compiled for the CPU and run: slot 1's first
    37 positions become slot 0's, the rest of slot 1 and slot 0 unchanged."""
    import iree.runtime as rt
    import numpy as np

    from lse.compiler.config import load_config
    from lse.compiler.emit_mlir import COPY_KV
    from lse.compiler.emit_module import emit_function
    from lse.compiler.graph import build_graph
    from lse.compiler.iree_compile import run_iree_compile
    from lse.compiler.targets import get_target

    cfg = load_config(CASE.model_dir())
    text = emit_function(build_graph(cfg), {}, [], COPY_KV, 2, False, "f32", "cuda", kv_len)
    (tmp_path / "m.mlir").write_text(f"module {{\n{text}\n}}\n")
    run_iree_compile(tmp_path / "m.mlir", tmp_path / "m.vmfb", list(get_target("llvm-cpu").flags), heartbeat=None)
    ctx = rt.SystemContext(config=rt.Config("local-task"))
    ctx.add_vm_module(rt.VmModule.mmap(ctx.instance, str(tmp_path / "m.vmfb")))
    cache = np.random.default_rng(0).random(
        (cfg.num_hidden_layers, 2, 2, 128, cfg.num_key_value_heads, cfg.head_dim)).astype(np.float32)
    want = cache.copy()
    want[:, :, 1, :37] = cache[:, :, 0, :37]
    assert np.array_equal(np.asarray(ctx.modules.module["copy_kv"](0, 1, 37, cache.copy()).to_host()), want)
