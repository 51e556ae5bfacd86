"""ModelConfig: the model's own config.json, with Hugging Face key names.

The architecture comes from ``model_type`` through a small registry, never
from a folder name. Absent keys are ``None``; derived values are properties.
Serving knobs (slots, context length) live in ``CompileOptions``, not here.
"""

from __future__ import annotations

import json
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
    bos_token_id: int | list[int] | None = None
    eos_token_id: int | list[int] | None = None
    torch_dtype: str | None = None

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
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        out["head_dim"] = out.pop("head_dim_")
        return out


_REQUIRED = (
    "vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers",
    "num_attention_heads", "rms_norm_eps", "max_position_embeddings",
)


def _common(raw: dict[str, Any], model_type: str, **arch: Any) -> ModelConfig:
    missing = [k for k in _REQUIRED if raw.get(k) is None]
    if missing:
        raise ModelConfigError(f"config.json ({model_type}) lacks required key(s): {', '.join(missing)}")
    rope_scaling = raw.get("rope_scaling")
    if rope_scaling and rope_scaling.get("rope_type", rope_scaling.get("type")) not in (None, "default"):
        raise ModelConfigError(
            f"config.json rope_scaling {rope_scaling!r} is not supported yet (only default RoPE)")
    return ModelConfig(
        model_type=model_type,
        vocab_size=int(raw["vocab_size"]),
        hidden_size=int(raw["hidden_size"]),
        intermediate_size=int(raw["intermediate_size"]),
        num_hidden_layers=int(raw["num_hidden_layers"]),
        num_attention_heads=int(raw["num_attention_heads"]),
        num_key_value_heads=int(raw.get("num_key_value_heads") or raw["num_attention_heads"]),
        rms_norm_eps=float(raw["rms_norm_eps"]),
        rope_theta=float(raw.get("rope_theta", 10000.0)),
        max_position_embeddings=int(raw["max_position_embeddings"]),
        tie_word_embeddings=bool(raw.get("tie_word_embeddings", False)),
        head_dim_=raw.get("head_dim"),
        rope_scaling=rope_scaling,
        bos_token_id=raw.get("bos_token_id"),
        eos_token_id=raw.get("eos_token_id"),
        torch_dtype=raw.get("torch_dtype") or raw.get("dtype"),
        **arch,
    )


def _llama(raw: dict[str, Any]) -> ModelConfig:
    return _common(raw, "llama", attention_bias=bool(raw.get("attention_bias", False)))


def _qwen2(raw: dict[str, Any]) -> ModelConfig:
    return _common(raw, "qwen2", attention_bias=True)


def _qwen3(raw: dict[str, Any]) -> ModelConfig:
    if raw.get("head_dim") is None:
        raise ModelConfigError("config.json (qwen3) lacks required key(s): head_dim")
    return _common(raw, "qwen3", attention_bias=bool(raw.get("attention_bias", False)), qk_norm=True)


ARCHITECTURES = {"llama": _llama, "qwen2": _qwen2, "qwen3": _qwen3}


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
