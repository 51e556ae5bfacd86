"""ModelConfig: the model's own config.json, with Hugging Face key names.

The architecture comes from ``model_type`` through a small registry, never
from a folder name. Absent keys are ``None``; derived values are properties.
Serving knobs (slots, context length) live in ``CompileOptions``, not here.
"""

from __future__ import annotations

import json
import math
import struct
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any


class ModelConfigError(ValueError):
    """config.json names an unknown architecture or lacks a required key."""


@dataclass(frozen=True)
class ModelConfig:
    model_type: str
    vocab_size: int
    hidden_size: int
    intermediate_size: int
    num_hidden_layers: int
    num_attention_heads: int
    num_key_value_heads: int
    rms_norm_eps: float
    rope_theta: float
    max_position_embeddings: int
    tie_word_embeddings: bool = False
    head_dim_: int | None = None  # config.json "head_dim" (qwen3 gives it explicitly)
    attention_bias: bool = False  # q/k/v biases (qwen2 always has them)
    qk_norm: bool = False  # RMSNorm on q and k per head (qwen3)
    rope_scaling: dict[str, Any] | None = None
    # RoPE frequency divisors, one per rotated pair (d/2): frequency k is
    # theta^(-2k/d) / rope_freq_factors[k]; None for plain RoPE (rope.py)
    rope_freq_factors: tuple[float, ...] | None = None
    fused_projections: bool = False  # one qkv_proj and one gate_up_proj a layer (phi3)
    # gemma3 (see _gemma3): RMSNorm times (1 + w), the embedding times
    # sqrt(hidden), GELU-tanh, norms after attention and around the MLP, and
    # per-layer attention kinds ("sliding_attention" layers with their own RoPE base)
    norm_offset: float = 0.0
    embed_scale: float | None = None
    hidden_activation: str = "silu"  # or "gelu_pytorch_tanh"
    sandwich_norms: bool = False
    layer_types: tuple[str, ...] | None = None
    rope_local_theta: float | None = None
    sliding_window: int | None = None  # keys a sliding layer sees: positions p - W < t <= p (gemma3, phi3)
    bos_token_id: int | list[int] | None = None
    eos_token_id: int | list[int] | None = None
    torch_dtype: str | None = None

    def __post_init__(self) -> None:
        for name in ("rope_freq_factors", "layer_types"):  # lists when read back from a manifest's JSON
            if isinstance(getattr(self, name), list):
                object.__setattr__(self, name, tuple(getattr(self, name)))

    def layer_rope(self, layer: int) -> tuple[float, tuple[float, ...] | None]:
        """RoPE base and divisors of a layer: a sliding layer's own base, unscaled (gemma3)."""
        if self.layer_types and self.layer_types[layer] == "sliding_attention" and self.rope_local_theta:
            return self.rope_local_theta, None
        return self.rope_theta, self.rope_freq_factors

    def layer_window(self, layer: int) -> int | None:
        """A sliding layer's window (it attends to the last W positions); None for a full layer."""
        if self.layer_types and self.layer_types[layer] == "sliding_attention":
            return self.sliding_window
        return None

    @property
    def head_dim(self) -> int:
        return self.head_dim_ if self.head_dim_ is not None else self.hidden_size // self.num_attention_heads

    @property
    def num_groups(self) -> int:
        """Query heads per KV head (GQA)."""
        return self.num_attention_heads // self.num_key_value_heads

    @property
    def eos_token_ids(self) -> tuple[int, ...]:
        eos = self.eos_token_id
        if eos is None:
            return ()
        return tuple(eos) if isinstance(eos, list) else (eos,)

    def to_json(self) -> dict[str, Any]:
        """The manifest's ``model_config``: every field, head_dim under config.json's key."""
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        out["head_dim"] = out.pop("head_dim_")
        return out

    @classmethod
    def from_json(cls, raw: dict[str, Any]) -> ModelConfig:
        """The config ``to_json`` wrote (a manifest's ``model_config``), field for field."""
        raw = dict(raw)
        raw["head_dim_"] = raw.pop("head_dim", None)
        return cls(**raw)


_REQUIRED = (
    "vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers",
    "num_attention_heads", "rms_norm_eps", "max_position_embeddings",
)


def _refuse(raw: dict[str, Any], key: str, allowed: tuple[Any, ...], default: Any) -> None:
    """A key whose other values LSE does not implement: refused naming it and its value."""
    value = raw.get(key, default)
    if value not in allowed:
        raise ModelConfigError(f"config.json {key} {value!r} is not supported; supported: "
                               f"{', '.join(map(repr, allowed))}")


def _common(raw: dict[str, Any], model_type: str, **arch: Any) -> ModelConfig:
    missing = [k for k in _REQUIRED if raw.get(k) is None]
    if missing:
        raise ModelConfigError(f"config.json ({model_type}) lacks required key(s): {', '.join(missing)}")
    _refuse(raw, "hidden_act", ("silu",), "silu")
    _refuse(raw, "mlp_bias", (False,), False)
    params = raw.get("rope_parameters") or {}  # transformers 5 writes rope_parameters (with rope_theta)
    rope_scaling = raw.get("rope_scaling") or (params if params.get("rope_type", "default") != "default" else None)
    theta = float(raw.get("rope_theta") or params.get("rope_theta") or 10000.0)
    head_dim = raw.get("head_dim") or int(raw["hidden_size"]) // int(raw["num_attention_heads"])
    return ModelConfig(
        model_type=model_type,
        vocab_size=int(raw["vocab_size"]),
        hidden_size=int(raw["hidden_size"]),
        intermediate_size=int(raw["intermediate_size"]),
        num_hidden_layers=int(raw["num_hidden_layers"]),
        num_attention_heads=int(raw["num_attention_heads"]),
        num_key_value_heads=int(raw.get("num_key_value_heads") or raw["num_attention_heads"]),
        rms_norm_eps=float(raw["rms_norm_eps"]),
        rope_theta=theta,
        max_position_embeddings=int(raw["max_position_embeddings"]),
        tie_word_embeddings=bool(raw.get("tie_word_embeddings", False)),
        head_dim_=raw.get("head_dim"),
        rope_scaling=rope_scaling,
        rope_freq_factors=rope_freq_factors(rope_scaling, theta, head_dim),
        bos_token_id=raw.get("bos_token_id"),
        eos_token_id=raw.get("eos_token_id"),
        torch_dtype=raw.get("torch_dtype") or raw.get("dtype"),
        **arch,
    )


ROPE_TYPES = ("default", "linear", "llama3", "freq_factors")


def rope_freq_factors(scaling: dict[str, Any] | None, theta: float, d: int) -> tuple[float, ...] | None:
    """Per-frequency divisors for the RoPE scaling config.json names (None: plain RoPE).

    ``linear``: every frequency divided by ``factor`` (HF's linear scaling);
    ``llama3``: HF's _compute_llama3_parameters (low frequencies divided by
    ``factor``, high ones kept, a smooth blend between), the same divisors
    llama.cpp's converter stores as a GGUF's ``rope_freqs``; ``freq_factors``:
    LSE's own name for those divisors as given (lse-import writes it from
    ``rope_freqs``). Any other type is refused, naming it.
    """
    if not scaling:
        return None
    kind = scaling.get("rope_type", scaling.get("type", "default"))
    if kind not in ROPE_TYPES:
        raise ModelConfigError(f"config.json rope_scaling.rope_type {kind!r} is not supported; "
                               f"supported: {', '.join(ROPE_TYPES)}")
    half = d // 2
    if kind == "default":
        return None
    if kind == "linear":
        return (float(scaling["factor"]),) * half
    if kind == "freq_factors":
        factors = tuple(float(f) for f in scaling["freq_factors"])
        if len(factors) != half:
            raise ModelConfigError(f"config.json rope_scaling.freq_factors has {len(factors)} entries; "
                                   f"head_dim {d} needs {half}")
        return factors
    factor, lo, hi = (float(scaling[k]) for k in ("factor", "low_freq_factor", "high_freq_factor"))
    old = float(scaling["original_max_position_embeddings"])
    out = []
    for k in range(half):
        wavelen = 2 * math.pi * theta ** (2 * k / d)
        if wavelen < old / hi:
            out.append(1.0)
        elif wavelen > old / lo:
            out.append(factor)
        else:
            smooth = (old / wavelen - lo) / (hi - lo)
            out.append(1 / ((1 - smooth) / factor + smooth))
    return tuple(out)


def _llama(raw: dict[str, Any]) -> ModelConfig:
    return _common(raw, "llama", attention_bias=bool(raw.get("attention_bias", False)))


def _qwen2(raw: dict[str, Any]) -> ModelConfig:
    _refuse(raw, "use_sliding_window", (False,), False)
    return _common(raw, "qwen2", attention_bias=True)


def _qwen3(raw: dict[str, Any]) -> ModelConfig:
    if raw.get("head_dim") is None:
        raise ModelConfigError("config.json (qwen3) lacks required key(s): head_dim")
    _refuse(raw, "use_sliding_window", (False,), False)
    return _common(raw, "qwen3", attention_bias=bool(raw.get("attention_bias", False)), qk_norm=True)


def _phi3(raw: dict[str, Any]) -> ModelConfig:
    """Phi-3: fused qkv_proj and gate_up_proj; LongRoPE refused (rope_freq_factors).
    A sliding window shorter than the context makes every layer a sliding one
    (transformers' Phi-3 windows all its layers): each sees positions
    p - W < t <= p (``layer_window``), over the whole context."""
    _refuse(raw, "partial_rotary_factor", (1.0,), 1.0)
    window = raw.get("sliding_window")
    if not window or int(window) >= int(raw.get("max_position_embeddings") or 0):
        return _common(raw, "phi3", attention_bias=False, fused_projections=True)
    return _common(raw, "phi3", attention_bias=False, fused_projections=True, sliding_window=int(window),
                   layer_types=("sliding_attention",) * int(raw["num_hidden_layers"]))


def _f32(x: float) -> float:
    """x rounded to float32 (gemma3's embedding scale is the activations' dtype's sqrt(hidden))."""
    return struct.unpack("<f", struct.pack("<f", x))[0]


def _gemma3(raw: dict[str, Any]) -> ModelConfig:
    """Gemma 3 (text): HF Gemma3TextConfig's defaults where a key is absent.
    Sliding-window layers see the last ``sliding_window`` positions
    (``layer_window``) and have their own RoPE base (``rope_local_base_freq``,
    or transformers 5's ``rope_parameters.sliding_attention``)."""
    head_dim = int(raw.get("head_dim") or 256)
    for key, allowed, default in (("final_logit_softcapping", (None,), None), ("attn_logit_softcapping", (None,), None),
                                  ("hidden_activation", ("gelu_pytorch_tanh",), "gelu_pytorch_tanh"),
                                  ("query_pre_attn_scalar", (head_dim,), 256), ("use_bidirectional_attention",
                                                                               (False, None), None)):
        _refuse(raw, key, allowed, default)
    n, pattern = int(raw["num_hidden_layers"]), int(raw.get("sliding_window_pattern") or 6)
    layer_types = tuple(raw.get("layer_types") or ("sliding_attention" if (i + 1) % pattern else "full_attention"
                                                   for i in range(n)))
    params = raw.get("rope_parameters") or {}
    local = float((params.get("sliding_attention") or {}).get("rope_theta") or raw.get("rope_local_base_freq", 10000.0))
    full = params.get("full_attention", params)
    theta = {} if raw.get("rope_theta") or full.get("rope_theta") else {"rope_theta": 1_000_000.0}
    raw = {"tie_word_embeddings": True, "head_dim": head_dim, **theta, **raw, "hidden_act": "silu",
           "rope_parameters": full}
    window = int(raw.get("sliding_window") or 4096)
    return _common(raw, "gemma3_text", norm_offset=1.0, embed_scale=_f32(raw["hidden_size"] ** 0.5),
                   hidden_activation="gelu_pytorch_tanh", sandwich_norms=True, qk_norm=True, layer_types=layer_types,
                   rope_local_theta=local, sliding_window=window)


ARCHITECTURES = {"llama": _llama, "qwen2": _qwen2, "qwen3": _qwen3, "phi3": _phi3, "gemma3_text": _gemma3}


def parse_config(raw: dict[str, Any]) -> ModelConfig:
    model_type = raw.get("model_type")
    if model_type not in ARCHITECTURES:
        raise ModelConfigError(
            f"config.json model_type {model_type!r} is not supported; supported: {', '.join(ARCHITECTURES)}")
    return ARCHITECTURES[model_type](raw)


def load_config(model_dir: str | Path) -> ModelConfig:
    path = Path(model_dir) / "config.json"
    if not path.is_file():
        raise ModelConfigError(f"{path} does not exist: a model directory needs config.json")
    return parse_config(json.loads(path.read_text()))
