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
