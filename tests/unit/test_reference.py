"""The numpy reference on tiny random models with odd sizes (vocab 259, hidden 48, ffn 23)."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import numpy as np
import pytest
from safetensors.numpy import save_file

from lse.compiler.config import parse_config
from lse.runtime.reference import ReferenceModel, read_safetensors

VOCAB, HIDDEN, FFN, HEAD_DIM = 259, 48, 23, 16


def tiny_config(model_type: str = "llama", n_heads: int = 3, n_kv: int = 1, **extra) -> dict:
    return {"model_type": model_type, "vocab_size": VOCAB, "hidden_size": HIDDEN, "intermediate_size": FFN,
            "num_hidden_layers": 2, "num_attention_heads": n_heads, "num_key_value_heads": n_kv,
            "head_dim": HEAD_DIM, "rms_norm_eps": 1e-6, "rope_theta": 10000.0,
            "max_position_embeddings": 64, "tie_word_embeddings": False, **extra}


def tiny_weights(raw: dict, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    nh, kv, d = raw["num_attention_heads"], raw["num_key_value_heads"], HEAD_DIM

    def rand(*shape: int, scale: float = 0.2) -> np.ndarray:
        return (rng.standard_normal(shape) * scale).astype(np.float32)

    w = {"model.embed_tokens.weight": rand(VOCAB, HIDDEN, scale=1.0), "model.norm.weight": 1 + rand(HIDDEN),
         "lm_head.weight": rand(VOCAB, HIDDEN)}
    for i in range(raw["num_hidden_layers"]):
        p = f"model.layers.{i}."
        w |= {p + "input_layernorm.weight": 1 + rand(HIDDEN), p + "post_attention_layernorm.weight": 1 + rand(HIDDEN),
              p + "self_attn.q_proj.weight": rand(nh * d, HIDDEN), p + "self_attn.k_proj.weight": rand(kv * d, HIDDEN),
              p + "self_attn.v_proj.weight": rand(kv * d, HIDDEN), p + "self_attn.o_proj.weight": rand(HIDDEN, nh * d),
              p + "mlp.gate_proj.weight": rand(FFN, HIDDEN), p + "mlp.up_proj.weight": rand(FFN, HIDDEN),
              p + "mlp.down_proj.weight": rand(HIDDEN, FFN)}
        if raw["model_type"] == "qwen2":
            w |= {p + f"self_attn.{n}_proj.bias": rand(k * d) for n, k in (("q", nh), ("k", kv), ("v", kv))}
        if raw["model_type"] == "qwen3":
            w |= {p + "self_attn.q_norm.weight": 1 + rand(d), p + "self_attn.k_norm.weight": 1 + rand(d)}
    return w


def tiny_model(model_type: str = "llama", **kw) -> ReferenceModel:
    raw = tiny_config(model_type, **kw)
    return ReferenceModel(parse_config(raw), tiny_weights(raw))


@pytest.mark.parametrize("model_type", ["llama", "qwen2", "qwen3"])
def test_attention_is_causal(model_type: str) -> None:
    model = tiny_model(model_type)
    ids = [5, 17, 258, 3, 99, 42, 7]
    changed = ids[:4] + [1, 2, 250]
    a, b = model.forward(ids), model.forward(changed)
    assert a.shape == (7, VOCAB) and a.dtype == np.float32
    np.testing.assert_allclose(a[:4], b[:4], rtol=1e-5, atol=1e-5)
    assert not np.allclose(a[4:], b[4:])


@pytest.mark.parametrize("model_type", ["llama", "qwen2", "qwen3"])
def test_kv_cache_matches_full_recompute(model_type: str) -> None:
    model = tiny_model(model_type)
    prompt = [1, 2, 3, 200]
    new = model.greedy(prompt, 6)
    for step in range(len(new)):
        logits = model.forward(prompt + new[:step])
        assert int(np.argmax(logits[-1])) == new[step]
    cache = model.new_cache()
    model._run(prompt, cache)
    np.testing.assert_allclose(model._run(new[:1], cache)[-1], model.forward(prompt + new[:1])[-1],
                               rtol=1e-4, atol=1e-4)


def test_greedy_stops_after_eos() -> None:
    model = tiny_model()
    free = model.greedy([4, 8, 15], 5)
    assert len(free) == 5
    assert model.greedy([4, 8, 15], 5, eos_ids=(free[1],)) == free[:2]


def test_gqa_reads_kv_head_h_over_groups() -> None:
    """GQA with 4 query heads on 2 KV heads equals MHA whose KV heads are repeated
    as HF's repeat_kv does: query head h reads KV head h // 2."""
    gqa_raw = tiny_config(n_heads=4, n_kv=2)
    gqa_w = tiny_weights(gqa_raw)
    mha_w = dict(gqa_w)
    for name, w in gqa_w.items():
        if name.endswith(("k_proj.weight", "v_proj.weight")):
            mha_w[name] = np.repeat(w.reshape(2, HEAD_DIM, HIDDEN), 2, axis=0).reshape(4 * HEAD_DIM, HIDDEN)
    ids = [9, 8, 7, 6, 5]
    gqa = ReferenceModel(parse_config(gqa_raw), gqa_w).forward(ids)
    mha = ReferenceModel(parse_config(tiny_config(n_heads=4, n_kv=4)), mha_w).forward(ids)
    np.testing.assert_allclose(gqa, mha, rtol=1e-5, atol=1e-5)


def test_qwen2_biases_are_used() -> None:
    raw = tiny_config("qwen2")
    w = tiny_weights(raw)
    no_bias = {k: (np.zeros_like(v) if k.endswith("bias") else v) for k, v in w.items()}
    llama = ReferenceModel(parse_config(tiny_config("llama")), {k: v for k, v in w.items() if "bias" not in k})
    ids = [1, 2, 3]
    np.testing.assert_allclose(ReferenceModel(parse_config(raw), no_bias).forward(ids), llama.forward(ids),
                               rtol=1e-5, atol=1e-5)
    assert not np.allclose(ReferenceModel(parse_config(raw), w).forward(ids), llama.forward(ids))


def _write_bf16_safetensors(path: Path, tensors: dict[str, np.ndarray]) -> None:
    """bf16 by hand (numpy has no bf16): keep each float32's top 16 bits."""
    header, blobs, pos = {}, [], 0
    for name, arr in tensors.items():
        blob = (arr.astype("<f4").view("<u4") >> 16).astype("<u2").tobytes()
        header[name] = {"dtype": "BF16", "shape": list(arr.shape), "data_offsets": [pos, pos + len(blob)]}
        blobs.append(blob)
        pos += len(blob)
    text = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def test_from_dir_reads_sharded_f16_and_bf16(tmp_path: Path) -> None:
    raw = tiny_config(tie_word_embeddings=True)
    w = tiny_weights(raw)
    del w["lm_head.weight"]
    # Values exactly representable in bf16 and f16, so upcasting must be exact.
    w = {k: ((v.view(np.uint32) & 0xFFFF0000).view(np.float32).astype(np.float16).astype(np.float32))
         for k, v in w.items()}
    names = sorted(w)
    f16 = {n: w[n].astype(np.float16) for n in names[::2]}
    bf16 = {n: w[n] for n in names[1::2]}
    save_file(f16, str(tmp_path / "a.safetensors"))
    _write_bf16_safetensors(tmp_path / "b.safetensors", bf16)
    weight_map = {n: "a.safetensors" for n in f16} | {n: "b.safetensors" for n in bf16}
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps({"weight_map": weight_map}))
    (tmp_path / "config.json").write_text(json.dumps(raw))

    assert all(a.dtype == np.float32 for a in read_safetensors(tmp_path / "b.safetensors").values())
    model = ReferenceModel.from_dir(tmp_path)
    assert sorted(model.w) == names
    for n in names:
        np.testing.assert_array_equal(model.w[n], w[n])
    assert model.lm_head is model.embed
    ids = [3, 1, 4, 1, 5]
    np.testing.assert_allclose(model.forward(ids), ReferenceModel(parse_config(raw), w).forward(ids), rtol=1e-6)
