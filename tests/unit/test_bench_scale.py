"""The scale bench's shaped GGUF files (bench/bench_scale.py): every matrix
in its mix's format, random but valid blocks, the bytes bench_bytes counts."""

from __future__ import annotations

import os

import gguf
import numpy as np
import pytest
from gguf.constants import GGMLQuantizationType as Q

from lse.bench import bench_bytes, bench_scale
from lse.compiler.gguf.importer import default_gguf_path

pytestmark = pytest.mark.unit


@pytest.mark.parametrize("qtype", [Q.Q4_0, Q.Q8_0, Q.Q4_K, Q.Q6_K])
def test_random_blocks_dequantise_to_small_finite_weights(qtype):
    raw = bench_scale.random_blocks(np.random.default_rng(0), qtype, 4, 512)
    w = gguf.quants.dequantize(raw, qtype)
    assert w.shape == (4, 512) and np.isfinite(w).all()
    assert 0.005 < np.abs(w).mean() < 0.2


@pytest.mark.parametrize("mix", ["q4_k_m", "q4_0"])
def test_a_tiny_file_holds_the_mix_and_the_counted_bytes(tmp_path, mix):
    path = tmp_path / "tiny.gguf"
    shape = bench_scale.SCALES["tiny"]
    bench_scale.write_scale_gguf(path, shape, bench_bytes.MIXES[mix], default_gguf_path())
    tensors = {t.name: t for t in gguf.GGUFReader(path).tensors}
    want = {"token_embd.weight": bench_bytes.MIXES[mix]["output"],
            **{f"blk.{i}.{r}.weight": bench_bytes.MIXES[mix][r] for i in range(2) for r in bench_bytes.ROLES}}
    assert {n: t.tensor_type.name.lower() for n, t in tensors.items() if n in want} == want
    assert len(tensors) == len(want) + 2 * 2 + 1  # two norms a layer and the output norm
    matrix_bytes = sum(int(t.n_bytes) for n, t in tensors.items() if n in want)
    assert matrix_bytes == bench_bytes.bytes_per_token(shape, bench_bytes.MIXES[mix])["total"]["gguf"]
    assert [int(x) for x in tensors["blk.1.ffn_down.weight"].shape] == [512, 256]  # GGUF's ne: (K, N)


def test_a_qwen2_shaped_file_has_its_biases_and_imports_as_qwen2(tmp_path):
    from lse.compiler.gguf.importer import hf_config
    from lse.compiler.gguf.reader import read_gguf

    path = tmp_path / "tiny-qwen2.gguf"
    shape = bench_scale.SCALES["tiny-qwen2"]
    bench_scale.write_scale_gguf(path, shape, bench_bytes.MIXES["q4_0"], default_gguf_path())
    tensors = {t.name: t for t in gguf.GGUFReader(path).tensors}
    biases = {n: [int(x) for x in t.shape] for n, t in tensors.items() if n.endswith(".bias")}
    assert biases == {f"blk.{i}.attn_{r}.bias": [n] for i in range(2) for r, n in (("q", 256), ("k", 128), ("v", 128))}
    config = hf_config(read_gguf(path))
    assert (config["architectures"], config["attention_bias"], config["rope_theta"]) == (["Qwen2ForCausalLM"], True, 1e6)


def test_the_report_gives_each_engines_share_of_the_machines_read_rate():
    result = {"file": "f.gguf", "file_bytes": 2**30, "open_s": {"lse": 4.3, "llama.cpp": 2.7},
              "bytes_per_token": {"lse": 714e6, "llama.cpp": 703e6}, "decode": {"lse": [40.0], "llama.cpp": [46.0]},
              "prefill": {"lse": [4.9], "llama.cpp": [3.6]}, "read_gbs": {"before": 36.0, "after": 40.0},
              "disk": 2**30, "artifacts": 1}
    lines = bench_scale.report("1b", "q4_k_m", result).splitlines()
    assert "| lse | 40.00 | 28.56 | 71% | 4.900 | 4.3 |" in lines  # 28.56 GB/s of the higher rate, 40
    assert "| llama.cpp | 46.00 | 32.34 | 81% | 3.600 | 2.7 |" in lines
    assert "the machine read 36.0 GB/s before and 40.0 after" in lines[-2]


def test_the_report_puts_lses_first_and_later_opens_beside_llama_cpps_load():
    result = {"file": "f.gguf", "file_bytes": 2**30, "open_s": {"lse": 5.4, "llama.cpp": 2.7, "lse later": 0.9},
              "bytes_per_token": {"lse": 714e6, "llama.cpp": 703e6}, "decode": {"lse": [40.0], "llama.cpp": [46.0]},
              "prefill": {"lse": [4.9], "llama.cpp": [3.6]}, "disk": 2**30, "artifacts": 1, "first_open": True}
    lines = bench_scale.report("1b", "q4_k_m", result).splitlines()
    assert "| lse | 40.00 | 28.56 | - | 4.900 | first 5.4 (2.00x), later 0.9 (0.33x) |" in lines
    assert "| llama.cpp | 46.00 | 32.34 | - | 3.600 | 2.7 |" in lines


def test_new_model_cache_keeps_the_kernel_objects_and_restores_the_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("LSE_CACHE_DIR", str(tmp_path))
    (tmp_path / "kernels" / "abc").mkdir(parents=True)
    (tmp_path / "kernels" / "abc" / "lse_qmv.o").write_bytes(b"obj")
    (tmp_path / "artifacts" / "x").mkdir(parents=True)
    with bench_scale.new_model_cache() as fresh:
        assert os.environ["LSE_CACHE_DIR"] == str(fresh) and fresh.parent == tmp_path
        assert (fresh / "kernels" / "abc" / "lse_qmv.o").read_bytes() == b"obj"
        assert not (fresh / "artifacts").exists()
    assert os.environ["LSE_CACHE_DIR"] == str(tmp_path) and not fresh.exists()
