"""Per-architecture GGUF → Hugging Face mapping: config.json keys and tensor names.

One ``Arch`` per ``general.architecture`` lse-import serves. Each says which
Hugging Face ``model_type`` it becomes, which tensors a layer has beyond
Llama's, whether llama.cpp's converter permuted the Q/K rows (only Llama: the
others use GGML's NeoX RoPE, which is HF's rotate_half layout already) and
which metadata options it refuses. Everything is checked from the header, so
an unsupported file is refused before any tensor is read.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from lse.compiler.gguf.reader import GGUFError, GGUFFile


@dataclass(frozen=True)
class Arch:
    model_type: str  # config.json model_type
    hf_class: str  # config.json architectures[0]
    permuted_qk: bool  # the converter reordered Q/K rows for GGML's "normal" RoPE
    layer_map: dict[str, str]  # GGUF tensor name → HF name, {i} the layer
    optional_layer_map: dict[str, str] = field(default_factory=dict)  # present in some files
    extra: Callable[[GGUFFile, "Meta"], dict[str, Any]] = lambda gguf, meta: {}  # arch-specific config keys


class Meta:
    """The ``<arch>.*`` metadata of one file, read with the key named on refusal."""

    def __init__(self, gguf: GGUFFile, arch: str) -> None:
        self.values, self.arch = gguf.metadata, arch

    def key(self, name: str) -> str:
        return f"{self.arch}.{name}"

    def get(self, name: str, default: Any = None) -> Any:
        return self.values.get(self.key(name), default)

    def need(self, name: str) -> Any:
        value = self.get(name)
        if value is None:
            raise GGUFError(f"GGUF lacks {self.key(name)}")
        return value


def _blk(names: dict[str, str]) -> dict[str, str]:
    return {f"blk.{{i}}.{g}.weight": f"model.layers.{{i}}.{h}.weight" for g, h in names.items()}


_LLAMA_LAYER = _blk({
    "attn_norm": "input_layernorm", "attn_q": "self_attn.q_proj", "attn_k": "self_attn.k_proj",
    "attn_v": "self_attn.v_proj", "attn_output": "self_attn.o_proj", "ffn_norm": "post_attention_layernorm",
    "ffn_gate": "mlp.gate_proj", "ffn_up": "mlp.up_proj", "ffn_down": "mlp.down_proj",
})
_QKV_BIAS = {f"blk.{{i}}.attn_{x}.bias": f"model.layers.{{i}}.self_attn.{x}_proj.bias" for x in "qkv"}
_QK_NORM = _blk({"attn_q_norm": "self_attn.q_norm", "attn_k_norm": "self_attn.k_norm"})
_PHI3_LAYER = _blk({
    "attn_norm": "input_layernorm", "attn_qkv": "self_attn.qkv_proj", "attn_output": "self_attn.o_proj",
    "ffn_norm": "post_attention_layernorm", "ffn_up": "mlp.gate_up_proj", "ffn_down": "mlp.down_proj",
})


def _rope_freqs(gguf: GGUFFile, meta: Meta) -> dict[str, Any]:
    """Llama 3's RoPE scaling: the converter stores HF's llama3 rope_scaling as a
    ``rope_freqs`` tensor of per-frequency divisors (llama.cpp divides each
    frequency by its factor); they go to config.json as LSE's ``freq_factors``
    rope type."""
    if "rope_freqs.weight" not in gguf.tensors:
        return {}
    factors = gguf.tensor("rope_freqs.weight").reshape(-1)
    return {"rope_scaling": {"rope_type": "freq_factors", "freq_factors": [float(f) for f in factors]}}


def _llama_extra(gguf: GGUFFile, meta: Meta) -> dict[str, Any]:
    experts = meta.get("expert_count", 0)
    if experts:
        raise GGUFError(f"GGUF key {meta.key('expert_count')} = {experts} (mixture of experts) is not supported")
    return {"attention_bias": False, **_rope_freqs(gguf, meta)}


def _phi3_extra(gguf: GGUFFile, meta: Meta) -> dict[str, Any]:
    for name in ("rope_factors_long.weight", "rope_factors_short.weight"):
        if name in gguf.tensors:
            raise GGUFError(f"GGUF tensor {name} (Phi-3 LongRoPE scaling, HF rope_scaling 'longrope') "
                            "is not supported")
    out: dict[str, Any] = {"attention_bias": False}
    window = meta.get("attention.sliding_window")
    if window:
        out["sliding_window"] = int(window)
    return out


_GEMMA3_LAYER = _blk({
    "attn_norm": "input_layernorm", "attn_q": "self_attn.q_proj", "attn_k": "self_attn.k_proj",
    "attn_v": "self_attn.v_proj", "attn_q_norm": "self_attn.q_norm", "attn_k_norm": "self_attn.k_norm",
    "attn_output": "self_attn.o_proj", "post_attention_norm": "post_attention_layernorm",
    "ffn_norm": "pre_feedforward_layernorm", "ffn_gate": "mlp.gate_proj", "ffn_up": "mlp.up_proj",
    "ffn_down": "mlp.down_proj", "post_ffw_norm": "post_feedforward_layernorm",
})


def _gemma3_extra(gguf: GGUFFile, meta: Meta) -> dict[str, Any]:
    """What llama.cpp fixes for gemma3 rather than reading (llama-model.cpp):
    every 6th layer global, the others sliding with RoPE base 10000; the
    attention scale 1/sqrt(head_dim), but 1/sqrt(hidden/heads) for the
    62-layer 27B, written as HF's query_pre_attn_scalar (config.py refuses
    one other than head_dim). The norms' stored 1 + w is undone at import."""
    layers, hidden, heads = meta.need("block_count"), meta.need("embedding_length"), meta.need("attention.head_count")
    head_dim = meta.get("attention.key_length", hidden // heads)
    return {"query_pre_attn_scalar": hidden // heads if layers == 62 else head_dim,
            "sliding_window": int(meta.need("attention.sliding_window")), "sliding_window_pattern": 6,
            "rope_local_base_freq": 10000.0, "hidden_activation": "gelu_pytorch_tanh", "hidden_act": None,  # dropped
            "final_logit_softcapping": meta.get("final_logit_softcapping"),
            "attn_logit_softcapping": meta.get("attn_logit_softcapping")}


ARCHS: dict[str, Arch] = {
    "llama": Arch("llama", "LlamaForCausalLM", True, _LLAMA_LAYER, extra=_llama_extra),
    "qwen2": Arch("qwen2", "Qwen2ForCausalLM", False, {**_LLAMA_LAYER, **_QKV_BIAS},
                  extra=lambda gguf, meta: {"attention_bias": True, **_rope_freqs(gguf, meta)}),
    "qwen3": Arch("qwen3", "Qwen3ForCausalLM", False, {**_LLAMA_LAYER, **_QK_NORM},
                  extra=lambda gguf, meta: {"attention_bias": False, **_rope_freqs(gguf, meta)}),
    "phi3": Arch("phi3", "Phi3ForCausalLM", False, _PHI3_LAYER, extra=_phi3_extra),
    "gemma3": Arch("gemma3_text", "Gemma3ForCausalLM", False, _GEMMA3_LAYER, extra=_gemma3_extra),
}
# RoPE scaling types (``<arch>.rope.scaling.type``) and what they become.
ROPE_SCALING = ("none", "linear")


def arch_of(gguf: GGUFFile) -> tuple[str, Arch]:
    """The file's architecture, or the refusal listing the supported ones."""
    arch = gguf.metadata.get("general.architecture")
    if arch not in ARCHS:
        raise GGUFError(f"general.architecture {arch!r} is not supported; supported: {', '.join(ARCHS)}")
    return arch, ARCHS[arch]


def _rope_scaling(meta: Meta) -> dict[str, Any]:
    kind = meta.get("rope.scaling.type", "none")
    if kind not in ROPE_SCALING:
        raise GGUFError(f"GGUF key {meta.key('rope.scaling.type')} = {kind!r} is not supported; "
                        f"supported: {', '.join(ROPE_SCALING)}")
    if kind == "linear":
        return {"rope_scaling": {"rope_type": "linear", "factor": float(meta.need("rope.scaling.factor"))}}
    return {}


def hf_config(gguf: GGUFFile) -> dict[str, Any]:
    """config.json for the file's architecture from its ``<arch>.*`` metadata."""
    name, arch = arch_of(gguf)
    meta = Meta(gguf, name)
    if "token_embd.weight" not in gguf.tensors:
        raise GGUFError("GGUF has no token_embd.weight")
    n_head = meta.need("attention.head_count")
    hidden = meta.need("embedding_length")
    head_dim = meta.get("attention.key_length", hidden // n_head)
    if meta.get("attention.value_length", head_dim) != head_dim:
        raise GGUFError(f"GGUF key {meta.key('attention.value_length')} = {meta.get('attention.value_length')} "
                        f"differs from the key length {head_dim}; not supported")
    rope_dims = meta.get("rope.dimension_count", head_dim)
    if rope_dims != head_dim:
        raise GGUFError(f"GGUF key {meta.key('rope.dimension_count')} = {rope_dims} (partial rotary) "
                        f"is not supported; head_dim is {head_dim}")
    config: dict[str, Any] = {
        "architectures": [arch.hf_class],
        "model_type": arch.model_type,
        "vocab_size": gguf.tensors["token_embd.weight"].ne[1],
        "hidden_size": hidden,
        "intermediate_size": meta.need("feed_forward_length"),
        "num_hidden_layers": meta.need("block_count"),
        "num_attention_heads": n_head,
        "num_key_value_heads": meta.get("attention.head_count_kv", n_head),
        "head_dim": head_dim,
        "rms_norm_eps": meta.need("attention.layer_norm_rms_epsilon"),
        "rope_theta": float(meta.get("rope.freq_base", 10000.0)),
        "max_position_embeddings": meta.need("context_length"),
        "tie_word_embeddings": "output.weight" not in gguf.tensors,
        "hidden_act": "silu",
        "torch_dtype": "float32",
    }
    config.update(_rope_scaling(meta))
    extra = arch.extra(gguf, meta)
    if "rope_scaling" in config and "rope_scaling" in extra:
        raise GGUFError(f"GGUF has both {meta.key('rope.scaling.type')} and rope_freqs.weight; not supported")
    config.update(extra)
    return {k: v for k, v in config.items() if v is not None}


def name_map(gguf: GGUFFile, n_layers: int) -> dict[str, str]:
    """GGUF name → HF name for every tensor to import, in file-writing order.

    Fails once, listing every missing and every unexpected tensor.
    """
    name, arch = arch_of(gguf)
    want = {"token_embd.weight": "model.embed_tokens.weight", "output_norm.weight": "model.norm.weight"}
    for i in range(n_layers):
        want.update({g.format(i=i): h.format(i=i) for g, h in arch.layer_map.items()})
        want.update({g.format(i=i): h.format(i=i) for g, h in arch.optional_layer_map.items()
                     if g.format(i=i) in gguf.tensors})
    if "output.weight" in gguf.tensors:  # absent when embeddings are tied
        want["output.weight"] = "lm_head.weight"
    unused = {"rope_freqs.weight"}  # read into config.json (hf_config)
    missing = sorted(set(want) - set(gguf.tensors))
    extra = sorted(set(gguf.tensors) - set(want) - unused)
    if missing or extra:
        raise GGUFError(f"{gguf.path.name}: tensors do not match a {n_layers}-layer {name}; "
                        f"missing: {missing or 'none'}; unexpected: {extra or 'none'}")
    return want
