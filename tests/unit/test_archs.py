"""Architectures from GGUF and from the HF layout: the numpy reference on each
fixture of make_arch_fixtures.py against the committed golden ids of an
independent oracle (tools/golden_transformers.py: transformers' float32
forward of the same GGUF), and the refusals of what LSE does not serve."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import gguf
import numpy as np
import pytest

from lse.compiler.config import ModelConfigError, load_config, parse_config
from lse.compiler.graph import build_graph
from lse.compiler.weights import check_weights, read_tensors
from lse.runtime.reference import ReferenceModel
from lse.tools.golden_transformers import NEAR_TIE, golden_path, sha256
from lse.compiler.gguf.importer import check_supported, ensure_imported, import_gguf
from lse.compiler.gguf.reader import GGUFError
from lse.fixtures.make_arch_fixtures import ARCH_FIXTURES, arch_gguf_path, hf_layout_dir

NAMES = list(ARCH_FIXTURES)


def _golden(name: str) -> dict:
    return json.loads(golden_path(name).read_text())


def compared_steps(golden: dict) -> int:
    """Steps compared: up to the first near tie (top-2 margin under NEAR_TIE), which is reported, not counted."""
    ties = [i for i, m in enumerate(golden["margins"]) if m < NEAR_TIE]
    return ties[0] if ties else len(golden["ids"])


@pytest.fixture(scope="module", params=NAMES)
def name(request) -> str:
    return request.param


def test_the_golden_data_is_of_the_fixture_rebuilt_here(name: str) -> None:
    g = _golden(name)
    assert g["gguf_sha256"] == sha256(arch_gguf_path(name)), "fixture changed: rerun tools/golden_transformers.py"
    assert g["architecture"] == ARCH_FIXTURES[name].arch and len(g["ids"]) == 64
    assert compared_steps(g) >= 48, g["near_ties"]


@pytest.mark.parametrize("layout", ["gguf", "hf"])
def test_reference_greedy_ids_match_transformers(name: str, layout: str) -> None:
    g = _golden(name)
    model_dir = ensure_imported(arch_gguf_path(name), f"arch_{name}") if layout == "gguf" else hf_layout_dir(name)
    ref = ReferenceModel.from_dir(model_dir)
    assert ref.config.model_type == {"gemma3": "gemma3_text"}.get(g["architecture"], g["architecture"])
    np.testing.assert_allclose(ref.forward(g["prompt"])[-1], g["prompt_logits"], atol=1e-4)
    n = compared_steps(g)
    assert ref.greedy(g["prompt"], n) == g["ids"][:n]


def test_the_imported_configs_say_what_differs_from_llama() -> None:
    configs = {n: load_config(ensure_imported(arch_gguf_path(n), f"arch_{n}")) for n in NAMES}
    assert configs["qwen2"].attention_bias and configs["qwen2"].tie_word_embeddings
    assert configs["qwen3"].qk_norm and configs["qwen3"].head_dim == 40 and configs["qwen3"].hidden_size == 96
    assert configs["phi3"].fused_projections and configs["phi3"].max_position_embeddings == 2048  # not capped at its window
    assert configs["llama"].rope_freq_factors is None
    factors = configs["llama3_rope"].rope_freq_factors
    assert factors is not None and len(factors) == 16 and factors[0] == 1.0 and factors[-1] == 8.0
    # The HF layout's llama3 rope_scaling gives the GGUF's rope_freqs, to f32 rounding.
    hf = load_config(hf_layout_dir("llama3_rope")).rope_freq_factors
    np.testing.assert_allclose(hf, factors, rtol=1e-6)


def test_phi3_graph_reads_the_fused_tensors() -> None:
    model_dir = ensure_imported(arch_gguf_path("phi3"), "arch_phi3")
    cfg = load_config(model_dir)
    graph = build_graph(cfg)
    assert check_weights(cfg, graph, read_tensors(model_dir)) == []
    slices = [(n.output, n.attrs["start"], n.attrs["size"]) for n in graph.nodes if n.op == "slice"][:5]
    assert slices == [("l0.q", 0, 96), ("l0.k", 96, 32), ("l0.v", 128, 32), ("l0.gate", 0, 256), ("l0.up", 256, 256)]


# ---- refusals -----------------------------------------------------------------


def _gguf(tmp_path: Path, arch: str, meta: dict | None = None, tensors: tuple[str, ...] = ()) -> Path:
    """A header-only-sized GGUF of ``arch``: the llama fixture's metadata and tensors, renamed."""
    src = gguf.GGUFReader(arch_gguf_path("llama"))
    path = tmp_path / f"{arch}.gguf"
    w = gguf.GGUFWriter(path, arch=arch)
    for key, field in src.fields.items():
        if key.startswith("llama."):
            key = f"{arch}." + key[len("llama."):]
        elif not key.startswith("tokenizer."):
            continue
        sub = field.types[-1] if field.types[0] == gguf.GGUFValueType.ARRAY else None
        w.add_key_value(key, field.contents(), field.types[0], sub)
    for key, value in (meta or {}).items():
        (w.add_string if isinstance(value, str) else w.add_uint32)(f"{arch}.{key}", value)
    for t in src.tensors:
        w.add_tensor(t.name, np.asarray(t.data), raw_dtype=t.tensor_type)
    for name in tensors:
        w.add_tensor(name, np.ones(16, np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


@pytest.mark.parametrize("arch", ["mamba", "deepseek2", "falcon"])
def test_an_unsupported_architecture_is_refused_with_the_supported_list(tmp_path: Path, arch: str) -> None:
    path = _gguf(tmp_path, arch)
    with pytest.raises(GGUFError) as e:
        check_supported(path)
    assert str(e.value) == f"general.architecture {arch!r} is not supported; supported: llama, qwen2, qwen3, phi3, gemma3"
    with pytest.raises(GGUFError):
        import_gguf(path, tmp_path / "out")
    assert not (tmp_path / "out").exists()  # refused before anything was written


@pytest.mark.parametrize(("arch", "meta", "tensors", "message"), [
    ("llama", {"rope.scaling.type": "yarn"}, (),
     "GGUF key llama.rope.scaling.type = 'yarn' is not supported; supported: none, linear"),
    ("llama", {"expert_count": 8}, (), "GGUF key llama.expert_count = 8 (mixture of experts) is not supported"),
    ("qwen2", {"rope.dimension_count": 16}, (),
     "GGUF key qwen2.rope.dimension_count = 16 (partial rotary) is not supported; head_dim is 32"),
    ("phi3", {}, ("rope_factors_long.weight",),
     "GGUF tensor rope_factors_long.weight (Phi-3 LongRoPE scaling, HF rope_scaling 'longrope') is not supported"),
])
def test_an_unsupported_option_is_refused_naming_it(tmp_path: Path, arch: str, meta: dict, tensors: tuple,
                                                    message: str) -> None:
    with pytest.raises(GGUFError) as e:
        check_supported(_gguf(tmp_path, arch, meta, tensors))
    assert str(e.value) == message


def test_lse_compile_refuses_an_unsupported_gguf_before_any_work(tmp_path: Path, capsys, monkeypatch) -> None:
    from lse.compiler import cli

    monkeypatch.setenv("LSE_CACHE_DIR", str(tmp_path / "cache"))
    path = _gguf(tmp_path, "mamba")
    assert cli.main([str(path), "-o", str(tmp_path / "art")]) == 1
    assert capsys.readouterr().err == ("lse-compile: error: general.architecture 'mamba' is not supported; "
                                       "supported: llama, qwen2, qwen3, phi3, gemma3\n")
    assert not (tmp_path / "cache" / "models").exists() and not (tmp_path / "art").exists()


def test_lse_open_refuses_before_any_work(tmp_path: Path, monkeypatch) -> None:
    """What lse-server opens: an unsupported GGUF architecture and an unknown
    rope type in a HF directory are refused with their message, nothing imported."""
    from lse.runtime.api import LseStartupError, lse_open

    monkeypatch.setenv("LSE_CACHE_DIR", str(tmp_path / "cache"))
    path = _gguf(tmp_path, "deepseek2")
    with pytest.raises(LseStartupError) as e:
        lse_open({"model": str(path), "kv_len": 64})
    assert str(e.value) == (f"{path}: general.architecture 'deepseek2' is not supported; "
                            "supported: llama, qwen2, qwen3, phi3, gemma3")
    hf = tmp_path / "hf"
    hf.mkdir()
    (hf / "config.json").write_text(json.dumps({**_BASE, "model_type": "gemma3_text",
                                                "rope_scaling": {"rope_type": "dynamic", "factor": 2.0}}))
    with pytest.raises(LseStartupError) as e:
        lse_open({"model": str(hf), "kv_len": 64})
    assert str(e.value) == ("config.json rope_scaling.rope_type 'dynamic' is not supported; "
                            "supported: default, linear, llama3, freq_factors")
    assert not (tmp_path / "cache" / "models").exists() and not (tmp_path / "cache" / "artifacts").exists()


_BASE = {"vocab_size": 301, "hidden_size": 96, "intermediate_size": 256, "num_hidden_layers": 2,
         "num_attention_heads": 3, "rms_norm_eps": 1e-5, "max_position_embeddings": 2048}


@pytest.mark.parametrize(("raw", "message"), [
    ({"model_type": "mamba"}, "config.json model_type 'mamba' is not supported; supported: llama, qwen2, qwen3, phi3, gemma3_text"),
    ({"model_type": "llama", "rope_scaling": {"rope_type": "yarn", "factor": 4.0}},
     "config.json rope_scaling.rope_type 'yarn' is not supported; supported: default, linear, llama3, freq_factors"),
    ({"model_type": "phi3", "rope_scaling": {"type": "longrope", "long_factor": [1.0], "short_factor": [1.0]}},
     "config.json rope_scaling.rope_type 'longrope' is not supported; supported: default, linear, llama3, "
     "freq_factors"),
    ({"model_type": "phi3", "partial_rotary_factor": 0.5},
     "config.json partial_rotary_factor 0.5 is not supported; supported: 1.0"),
    ({"model_type": "qwen2", "use_sliding_window": True},
     "config.json use_sliding_window True is not supported; supported: False"),
    ({"model_type": "llama", "hidden_act": "gelu"}, "config.json hidden_act 'gelu' is not supported; supported: 'silu'"),
    ({"model_type": "gemma3_text", "head_dim": 128, "query_pre_attn_scalar": 168},  # Gemma 3 27B
     "config.json query_pre_attn_scalar 168 is not supported; supported: 128"),
    ({"model_type": "gemma3_text", "final_logit_softcapping": 30.0},
     "config.json final_logit_softcapping 30.0 is not supported; supported: None"),
])
def test_an_unsupported_config_is_refused_naming_the_key(raw: dict, message: str) -> None:
    with pytest.raises(ModelConfigError) as e:
        parse_config({**_BASE, **raw})
    assert str(e.value) == message


def test_linear_and_llama3_rope_scaling_give_the_divisors() -> None:
    linear = parse_config({**_BASE, "model_type": "llama", "rope_scaling": {"rope_type": "linear", "factor": 2.0}})
    assert linear.rope_freq_factors == (2.0,) * 16
    v5 = parse_config({**_BASE, "model_type": "llama",  # transformers 5's rope_parameters spelling
                       "rope_parameters": {"rope_type": "llama3", "rope_theta": 500000.0, "factor": 8.0,
                                           "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                                           "original_max_position_embeddings": 64}})
    assert v5.rope_theta == 500000.0 and v5.rope_freq_factors == load_config(
        hf_layout_dir("llama3_rope")).rope_freq_factors


def test_the_llama3_fixture_needs_its_rope_scaling() -> None:
    """Not vacuous: the same weights with plain RoPE give other ids within the compared steps."""
    g = _golden("llama3_rope")
    model_dir = ensure_imported(arch_gguf_path("llama3_rope"), "arch_llama3_rope")
    ref = ReferenceModel.from_dir(model_dir)
    plain = ReferenceModel(replace(ref.config, rope_freq_factors=None, rope_scaling=None), ref.w)
    n = compared_steps(g)
    assert plain.greedy(g["prompt"], n) != g["ids"][:n]


@pytest.mark.parametrize(("pre", "pieces"), [
    ("llama-bpe", ["Hello", "Ġworld", "Ġ", "123", "45", "Ġdon", "'t", "ĊĊ", "Ġ", "Ġx", "'S"]),
    ("qwen2", ["Hello", "Ġworld", "Ġ", "1", "2", "3", "4", "5", "Ġdon", "'t", "ĊĊ", "Ġ", "Ġx", "'S"]),
])
def test_llama3_and_qwen2_pre_tokenizers_split_as_llama_cpp(pre: str, pieces: list[str]) -> None:
    """tokenizer.ggml.pre of Llama 3 and Qwen2/3 files: digits in runs of 3 or
    one by one, contractions case-insensitive, newlines apart from the spaces after them."""
    from lse.compiler.gguf.tokenizer import PRE_TOKENIZERS

    split = PRE_TOKENIZERS[pre]().pre_tokenize_str("Hello world 12345 don't\n\n  x'S")
    assert [p for p, _ in split] == pieces


def test_gemma3_imports_hf_norms_and_layer_kinds() -> None:
    """The GGUF's norms are 1 + w (llama.cpp's converter adds 1): the import
    writes HF's w; five sliding layers (RoPE base 10000) and a global sixth (1e6)."""
    model_dir = ensure_imported(arch_gguf_path("gemma3"), "arch_gemma3")
    cfg, ref = load_config(model_dir), ReferenceModel.from_dir(model_dir)
    stored = gguf.GGUFReader(arch_gguf_path("gemma3")).get_tensor(1)
    assert stored.name == "blk.0.attn_norm.weight"
    np.testing.assert_array_equal(ref.w["model.layers.0.input_layernorm.weight"], np.asarray(stored.data) - 1)
    assert cfg.layer_types == ("sliding_attention",) * 5 + ("full_attention",)
    assert [cfg.layer_rope(i)[0] for i in (0, 5)] == [10000.0, 1000000.0]
    assert (cfg.max_position_embeddings, cfg.sliding_window) == (2048, 128)  # the window no longer caps the context
    assert cfg.embed_scale == float(np.float32(np.sqrt(96)))
    g = _golden("gemma3")
    one_base = ReferenceModel(replace(cfg, rope_local_theta=None), ref.w)  # every layer at 1e6: other ids
    assert one_base.greedy(g["prompt"], compared_steps(g)) != g["ids"][:compared_steps(g)]
