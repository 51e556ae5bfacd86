"""A plain numpy forward pass: the oracle the compiled modules are checked against.

Written for reading, not speed. float32 throughout, following Hugging Face
transformers' modeling_llama.py; qwen2 adds q/k/v biases, qwen3 adds an
RMSNorm over d on every q and k head before RoPE (modeling_qwen3.py), phi3
fuses q/k/v and gate/up into one matrix each (modeling_phi3.py); RoPE
scaling (llama3, linear) divides each frequency by the config's factor.

Shapes, legend stated once:
    S = new tokens this call, T = cached + new tokens, H = hidden_size,
    nh = query heads, kv = KV heads, d = head_dim, F = intermediate_size, V = vocab.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path

import numpy as np

from lse.compiler.config import ModelConfig, load_config
from lse.compiler.weights import load_array, read_tensors

# safetensors dtype → numpy dtype of the stored bytes. BF16 is not a numpy
# dtype: it is read as uint16 and widened by a 16-bit shift (it is the top
# half of an IEEE float32).
_STORED = {"F32": "<f4", "F16": "<f2", "BF16": "<u2", "I8": "i1", "U8": "u1"}
_FOUR_BIT = ("q4_0", "q4_1", "q4_k")


def read_safetensors(path: Path) -> dict[str, np.ndarray]:
    """Every tensor in one .safetensors file, as float32. A block-format
    matrix (named in the header's "lse.formats"; lse-import keeps GGUF block
    formats) is stored as <name>.q (N, K/B, B), <name>.d and maybe <name>.m
    (N, K/B), and read as w = d * q + m."""
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n))
    data = np.memmap(path, np.uint8, mode="r", offset=8 + n)
    out = {}
    for name, info in header.items():
        if name == "__metadata__" or name.startswith("__pad"):
            continue
        if info["dtype"] not in _STORED:
            raise ValueError(f"{path.name}: {name} has dtype {info['dtype']}; only F32, F16, BF16 are read")
        begin, end = info["data_offsets"]
        raw = np.asarray(data[begin:end]).view(_STORED[info["dtype"]])
        if info["dtype"] == "BF16":
            raw = (raw.astype(np.uint32) << 16).view(np.float32)
        out[name] = raw.astype(np.float32, copy=False).reshape(info["shape"])
    for name, fmt in json.loads(header.get("__metadata__", {}).get("lse.formats", "{}")).items():
        q = out.pop(f"{name}.q")
        if fmt in _FOUR_BIT:  # two 4-bit values per byte, value 2j in the low nibble
            raw = q.astype(np.uint8)
            q = np.stack([raw & 0x0F, raw >> 4], axis=-1).reshape(*q.shape[:-1], -1).astype(np.float32)
            q -= 16 * (q >= 8) * (fmt == "q4_0")  # Q4_0 stores -8..7 in two's complement
        w = out.pop(f"{name}.d")[..., None] * q + out.pop(f"{name}.m", np.zeros(1, np.float32))[..., None]
        out[name] = w.reshape(q.shape[0], -1)
    return out


def load_weights(model_dir: Path) -> dict[str, np.ndarray]:
    """model.safetensors, or every shard named by model.safetensors.index.json,
    and the block matrices a cached GGUF import reads from the file
    (lse.compiler.weights.GGUF_KEY; d * q + m as the import's parts give them)."""
    index = model_dir / "model.safetensors.index.json"
    files = sorted(set(json.loads(index.read_text())["weight_map"].values())) if index.is_file() \
        else ["model.safetensors"]
    weights: dict[str, np.ndarray] = {}
    for name in files:
        weights.update(read_safetensors(model_dir / name))
    for t in read_tensors(model_dir).values():  # block matrices a cached import reads in place from its GGUF
        if t.gguf is not None:
            weights[t.name] = load_array(t)
    return weights


def rms_norm(x: np.ndarray, weight: np.ndarray, eps: float) -> np.ndarray:
    """Normalize over the last axis: x / sqrt(mean(x²) + eps) · weight."""
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * weight


def rotate_half(x: np.ndarray) -> np.ndarray:
    """[x1, x2] → [-x2, x1] over the halves of the last axis (HF's RoPE layout)."""
    half = x.shape[-1] // 2
    return np.concatenate([-x[..., half:], x[..., :half]], axis=-1)


def softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def silu(x: np.ndarray) -> np.ndarray:
    """x · sigmoid(x), with sigmoid written through tanh so no exp overflows."""
    return x * (0.5 + 0.5 * np.tanh(0.5 * x))


def gelu_tanh(x: np.ndarray) -> np.ndarray:
    """PyTorch's gelu(approximate="tanh"): 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x³)))."""
    return 0.5 * x * (1 + np.tanh(np.float32(np.sqrt(2 / np.pi)) * (x + np.float32(0.044715) * x * x * x)))


class ReferenceModel:
    def __init__(self, config: ModelConfig, weights: dict[str, np.ndarray]) -> None:
        self.config, self.w = config, weights
        self.embed = weights["model.embed_tokens.weight"]  # [V, H]
        self.lm_head = self.embed if config.tie_word_embeddings else weights["lm_head.weight"]  # [V, H]
        # per layer, RoPE's frequencies [d/2]: gemma3's sliding layers have their own base
        self.inv_freq = [self._inv_freq(*config.layer_rope(i)) for i in range(config.num_hidden_layers)]

    def _inv_freq(self, theta: float, factors: tuple[float, ...] | None) -> np.ndarray:
        d = self.config.head_dim
        inv_freq = theta ** (-np.arange(0, d, 2, dtype=np.float64) / d)  # [d/2]
        if factors is not None:  # RoPE scaling (llama3, linear): each frequency over its divisor
            inv_freq = inv_freq / np.asarray(factors, np.float64)
        return inv_freq

    @classmethod
    def from_dir(cls, model_dir: str | Path) -> ReferenceModel:
        return cls(load_config(model_dir), load_weights(Path(model_dir)))

    def forward(self, token_ids: list[int]) -> np.ndarray:
        """Logits [S, V] for every position, recomputed from scratch (no cache)."""
        return self._run(token_ids, self.new_cache())

    def greedy(self, token_ids: list[int], n_new: int, eos_ids: tuple[int, ...] = ()) -> list[int]:
        """The argmax continuation: up to ``n_new`` new ids, ending after the first eos id."""
        cache = self.new_cache()
        logits = self._run(token_ids, cache)
        out: list[int] = []
        while len(out) < n_new:
            out.append(int(np.argmax(logits[-1])))
            if out[-1] in eos_ids:
                break
            logits = self._run(out[-1:], cache)
        return out

    def new_cache(self) -> list[dict[str, np.ndarray]]:
        """Per layer: k and v, each [kv, T, d], T growing as tokens are run."""
        c = self.config
        empty = np.zeros((c.num_key_value_heads, 0, c.head_dim), np.float32)
        return [{"k": empty, "v": empty} for _ in range(c.num_hidden_layers)]

    def hidden(self, token_ids: list[int]) -> np.ndarray:
        """The final RMSNorm's output [S, H] for every position (lm_head's input: what embeddings pool)."""
        return self._hidden(token_ids, self.new_cache())

    def _run(self, token_ids: list[int], cache: list[dict[str, np.ndarray]]) -> np.ndarray:
        """Run S new tokens after the T - S already in ``cache`` (which grows); logits [S, V]."""
        return self._hidden(token_ids, cache) @ self.lm_head.T  # [S, V]

    def _hidden(self, token_ids: list[int], cache: list[dict[str, np.ndarray]]) -> np.ndarray:
        """The final-normed rows [S, H] of S new tokens after those in ``cache`` (which grows)."""
        c = self.config
        x = self.embed[np.asarray(token_ids)]  # [S, H]
        if c.embed_scale is not None:  # gemma3: times sqrt(H), as float32
            x = x * np.float32(c.embed_scale)
        past = self._past(cache)
        for i in range(c.num_hidden_layers):
            angles = np.arange(past, past + len(token_ids))[:, None] * self.inv_freq[i][None, :]  # [S, d/2]
            angles = np.concatenate([angles, angles], axis=-1)  # [S, d]
            cos, sin = np.cos(angles).astype(np.float32), np.sin(angles).astype(np.float32)
            x = self._layer(f"model.layers.{i}.", x, cos, sin, cache[i], c.layer_window(i))
        return self._norm("model.norm.weight", x)

    def _past(self, cache: list[dict[str, np.ndarray]]) -> int:
        """Positions already in the cache."""
        return cache[0]["k"].shape[1]

    def _norm(self, name: str, x: np.ndarray) -> np.ndarray:
        """RMSNorm by a weight; gemma3's weight is an offset from 1 (its RMSNorm multiplies by 1 + w)."""
        return rms_norm(x, self.w[name] + np.float32(self.config.norm_offset), self.config.rms_norm_eps)

    def _layer(self, p: str, x: np.ndarray, cos: np.ndarray, sin: np.ndarray, cache: dict[str, np.ndarray],
               window: int | None = None) -> np.ndarray:
        """One decoder layer; gemma3 also normalizes the attention's and the MLP's outputs (sandwich_norms)."""
        sandwich = self.config.sandwich_norms
        a = self._attention(p + "self_attn.", self._norm(p + "input_layernorm.weight", x), cos, sin, cache, window)
        x = x + (self._norm(p + "post_attention_layernorm.weight", a) if sandwich else a)
        pre = "pre_feedforward_layernorm" if sandwich else "post_attention_layernorm"
        m = self._mlp(p + "mlp.", self._norm(p + pre + ".weight", x))
        return x + (self._norm(p + "post_feedforward_layernorm.weight", m) if sandwich else m)

    def _linear(self, name: str, x: np.ndarray) -> np.ndarray:
        """x @ Wᵀ (+ b): W is [out, in] as HF stores it."""
        y = x @ self.w[name + ".weight"].T
        bias = self.w.get(name + ".bias")
        return y if bias is None else y + bias

    def _attention(self, p: str, x: np.ndarray, cos: np.ndarray, sin: np.ndarray,
                   cache: dict[str, np.ndarray], window: int | None = None) -> np.ndarray:
        c, S, d = self.config, x.shape[0], self.config.head_dim
        if c.fused_projections:  # phi3: one qkv_proj, rows q, then k, then v
            qkv = self._linear(p + "qkv_proj", x)
            q_end, k_end = c.num_attention_heads * d, (c.num_attention_heads + c.num_key_value_heads) * d
            q, k, v = qkv[:, :q_end], qkv[:, q_end:k_end], qkv[:, k_end:]
        else:
            q, k, v = (self._linear(p + f"{n}_proj", x) for n in "qkv")
        q = q.reshape(S, -1, d).transpose(1, 0, 2)  # [nh, S, d]
        k = k.reshape(S, -1, d).transpose(1, 0, 2)  # [kv, S, d]
        v = v.reshape(S, -1, d).transpose(1, 0, 2)  # [kv, S, d]
        if c.qk_norm:
            q, k = self._norm(p + "q_norm.weight", q), self._norm(p + "k_norm.weight", k)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        keys, vals, hidden = self._store(cache, k, v, window)  # [kv, T, d] twice, [S, T] masked
        # GQA: query head h reads KV head h // (nh / kv), as HF's repeat_kv does.
        k_all = np.repeat(keys, c.num_groups, axis=0)  # [nh, T, d]
        v_all = np.repeat(vals, c.num_groups, axis=0)  # [nh, T, d]
        scores = q @ k_all.transpose(0, 2, 1) / np.float32(np.sqrt(d))  # [nh, S, T]
        scores = np.where(hidden, -np.inf, scores)
        out = softmax(scores) @ v_all  # [nh, S, d]
        return self._linear(p + "o_proj", out.transpose(1, 0, 2).reshape(S, -1))  # [S, H]

    def _store(self, cache: dict[str, np.ndarray], k: np.ndarray, v: np.ndarray,
               window: int | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Append this call's K and V ([kv, S, d]); the layer's keys, values and the
        [S, T] mask of the keys each new row may not see."""
        cache["k"] = np.concatenate([cache["k"], k], axis=1)  # [kv, T, d]
        cache["v"] = np.concatenate([cache["v"], v], axis=1)  # [kv, T, d]
        S, T = k.shape[1], cache["k"].shape[1]
        # Causal: new token s sits at position T - S + s and sees keys 0..T - S + s.
        at = (T - S + np.arange(S))[:, None]
        hidden = np.arange(T)[None, :] > at  # [S, T]
        if window is not None:  # a sliding layer: keys older than the window are masked too
            hidden |= np.arange(T)[None, :] <= at - window
        return cache["k"], cache["v"], hidden

    def _mlp(self, p: str, x: np.ndarray) -> np.ndarray:
        if self.config.fused_projections:  # phi3: gate_up_proj, the gate's rows first
            gate, up = np.split(self._linear(p + "gate_up_proj", x), 2, axis=-1)  # [S, F] each
        else:
            gate, up = self._linear(p + "gate_proj", x), self._linear(p + "up_proj", x)  # [S, F]
        act = gelu_tanh(gate) if self.config.hidden_activation == "gelu_pytorch_tanh" else silu(gate)
        return self._linear(p + "down_proj", act * up)  # [S, H]
