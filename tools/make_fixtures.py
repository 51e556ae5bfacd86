"""Tiny seeded models for tests: full Hugging Face layout directories with odd
sizes (hidden 48, intermediate 37, vocab 301) and a real byte-level BPE
tokenizer, each exercising one case of the chat and sampling semantics.
fixtures/README.md lists them; the chat templates are files under fixtures/.

    python -m lse.tools.make_fixtures OUT_DIR [NAME ...]

``fixture_dir(name)`` builds into the cache on first use, keyed by a hash of
this file, the fixtures/ files and the library versions that shape the bytes.

The ``scripted_*`` fixtures decode an exact text greedily: every o_proj and
down_proj is zero, so a position's residual is its own token's one-hot
embedding, and lm_head maps each token of the script to the next one.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import shutil
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import tokenizers
from safetensors.numpy import save_file
from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, trainers

import lse.fixtures
from lse.runtime.chat.template import load_chat_template
from lse.compiler.cache import cache_dir

FIXTURES_DIR = Path(lse.fixtures.__file__).parent
SPECIAL_TOKENS = ("<|endoftext|>", "<|im_start|>", "<|im_end|>", "<think>", "</think>",
                  "<tool_call>", "</tool_call>")
BPE_VOCAB = 301  # 7 special + 256 byte tokens + 38 merges
CORPUS = (
    "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n",
    "<|im_start|>user\nWhat is the weather in Paris today?<|im_end|>\n",
    "<|im_start|>assistant\n<think>\nThe user asks about the weather.</think>\n\nIt is sunny.<|im_end|>\n",
    "Reasoning effort is set to low. Keep your thinking brief and focused.",
    "the quick brown fox jumps over the lazy dog; the dog sleeps in the sun.",
    '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>',
)

# Each script is the exact reply of one scripted fixture, split into the
# tokens it decodes as; it ends in the end-of-turn token.
SCRIPTS: dict[str, tuple[str, ...]] = {
    "reasoning": ("<think>", "\nabc", "</think>", "\n\nDone", "<|im_end|>"),
    "tool_call": ("<tool_call>", '\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n',
                  "</tool_call>", "<|im_end|>"),
    "bad_tool_call": ("<tool_call>", '\n{"name": get_weather}\n', "</tool_call>", "<|im_end|>"),
    "stop": ("Hello", " STOP", " world", "<|im_end|>"),
}
# Script pieces that are not special tokens become whole added tokens, so a
# script's tokens are distinct and the next token can depend on the current one only.
SCRIPT_WORDS = tuple(dict.fromkeys(p for s in SCRIPTS.values() for p in s if p not in SPECIAL_TOKENS))


@dataclass(frozen=True)
class Shape:
    model_type: str = "llama"
    hidden_size: int = 48
    num_hidden_layers: int = 2
    num_attention_heads: int = 4
    num_key_value_heads: int = 2
    intermediate_size: int = 37
    head_dim: int | None = None
    tie_word_embeddings: bool = False


@dataclass(frozen=True)
class Template:
    """Where the template goes: "chat_template.jinja", "tokenizer_config.json"
    or "chat_template.json"; ``files`` are (entry name, file under fixtures/),
    the name used only by tokenizer_config.json's list form."""

    where: str
    files: tuple[tuple[str | None, str], ...]
    as_list: bool = False


@dataclass(frozen=True)
class Spec:
    seed: int
    template: Template | None
    shape: Shape = Shape()
    generation_config: dict[str, Any] | None = None
    config_extra: dict[str, Any] = field(default_factory=dict)
    eos_as_object: bool = False  # tokenizer_config.json eos_token as {"content": ...}
    script: str | None = None


def _tpl(where: str, file: str) -> Template:
    return Template(where, ((None, file),))


CHATML = _tpl("chat_template.jinja", "chatml/template.jinja")
SPECS: dict[str, Spec] = {
    "qwen38_like": Spec(1, _tpl("chat_template.jinja", "qwen38_like/template.jinja"),
                        generation_config={"temperature": 1.0, "top_k": 20, "top_p": 0.95}),
    "qwen36_like": Spec(2, _tpl("tokenizer_config.json", "qwen36_like/template.jinja"), eos_as_object=True),
    "smollm_like": Spec(3, CHATML),
    "effort_levels": Spec(17, _tpl("chat_template.jinja", "effort_levels/template.jinja")),
    "no_template": Spec(4, None),
    "list_template": Spec(5, Template("tokenizer_config.json", (
        ("tool_use", "list_template/tool_use.jinja"), ("default", "chatml/template.jinja")), as_list=True)),
    "json_template": Spec(6, _tpl("chat_template.json", "chatml/template.jinja")),
    "broken_template": Spec(7, _tpl("chat_template.jinja", "broken_template/template.jinja")),
    "gen_sampling": Spec(8, CHATML, generation_config={"temperature": 0.6, "top_k": 20, "top_p": 0.95}),
    "gen_greedy": Spec(9, CHATML, generation_config={"do_sample": False, "temperature": 0.7}),
    "gen_max_new": Spec(10, CHATML, generation_config={"max_new_tokens": 7}),
    "gen_max_length": Spec(11, CHATML, generation_config={"max_length": 40}),
    "gen_embedded": Spec(12, CHATML, config_extra={
        "generation_config": {"temperature": 0.3, "top_p": 0.8}, "temperature": 0.9, "top_k": 5}),
    "llama": Spec(13, CHATML),
    "qwen2_bias": Spec(14, CHATML, Shape(model_type="qwen2")),
    "qwen3_qk_norm": Spec(15, CHATML, Shape(model_type="qwen3", head_dim=16)),
    "tied_embeddings": Spec(16, CHATML, Shape(tie_word_embeddings=True)),
    **{f"scripted_{name}": Spec(20 + i, _tpl("chat_template.jinja", "scripted/template.jinja"),
                                Shape(num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=1,
                                      head_dim=8, intermediate_size=7), script=name)
       for i, name in enumerate(SCRIPTS)},
}


# ---------------------------------------------------------------------------
# Tokenizer


def make_tokenizer(words: tuple[str, ...] = ()) -> Tokenizer:
    """Byte-level BPE trained on CORPUS (deterministic: no sampling, fixed
    input), with SPECIAL_TOKENS first and ``words`` added as whole tokens."""
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=BPE_VOCAB, min_frequency=2, show_progress=False,
                                  special_tokens=list(SPECIAL_TOKENS),
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(CORPUS, trainer)
    if tok.get_vocab_size() != BPE_VOCAB:
        raise AssertionError(f"BPE training gave {tok.get_vocab_size()} tokens, not {BPE_VOCAB}")
    tok.add_tokens([AddedToken(w, normalized=False) for w in words])
    return tok


def _tokenizer_config(spec: Spec, tok: Tokenizer) -> dict[str, Any]:
    added = json.loads(tok.to_str())["added_tokens"]
    keys = ("content", "lstrip", "normalized", "rstrip", "single_word", "special")
    eos = {"content": "<|im_end|>", **{k: False for k in keys[1:]}, "special": True} \
        if spec.eos_as_object else "<|im_end|>"
    out: dict[str, Any] = {
        "add_bos_token": False, "add_eos_token": False,
        "added_tokens_decoder": {str(a["id"]): {k: a[k] for k in keys} for a in added},
        "bos_token": None, "eos_token": eos, "pad_token": "<|endoftext|>", "unk_token": None,
        "clean_up_tokenization_spaces": False, "model_max_length": 2048,
        "tokenizer_class": "PreTrainedTokenizerFast",
    }
    t = spec.template
    if t is not None and t.where == "tokenizer_config.json":
        texts = [(name, (FIXTURES_DIR / f).read_text()) for name, f in t.files]
        out["chat_template"] = [{"name": n, "template": s} for n, s in texts] if t.as_list else texts[0][1]
    return out


# ---------------------------------------------------------------------------
# config.json and weights

_ARCHITECTURES = {"llama": "LlamaForCausalLM", "qwen2": "Qwen2ForCausalLM", "qwen3": "Qwen3ForCausalLM"}


def _config(spec: Spec, shape: Shape, vocab: int, tok: Tokenizer) -> dict[str, Any]:
    config: dict[str, Any] = {
        "architectures": [_ARCHITECTURES[shape.model_type]], "model_type": shape.model_type,
        "vocab_size": vocab, "hidden_size": shape.hidden_size,
        "intermediate_size": shape.intermediate_size, "num_hidden_layers": shape.num_hidden_layers,
        "num_attention_heads": shape.num_attention_heads,
        "num_key_value_heads": shape.num_key_value_heads,
        "hidden_act": "silu", "max_position_embeddings": 2048, "rms_norm_eps": 1e-6,
        "rope_theta": 10000.0, "tie_word_embeddings": shape.tie_word_embeddings,
        "bos_token_id": tok.token_to_id("<|endoftext|>"), "eos_token_id": tok.token_to_id("<|im_end|>"),
        "torch_dtype": "float32",
    }
    if shape.head_dim is not None:
        config["head_dim"] = shape.head_dim
    return {**config, **spec.config_extra}


def tensor_shapes(config: dict[str, Any]) -> list[tuple[str, tuple[int, ...]]]:
    """Every tensor of the model, with Hugging Face names and [out, in] shapes."""
    H, F, V = config["hidden_size"], config["intermediate_size"], config["vocab_size"]
    d = config.get("head_dim") or H // config["num_attention_heads"]
    q, kv = config["num_attention_heads"] * d, config["num_key_value_heads"] * d
    out: list[tuple[str, tuple[int, ...]]] = [("model.embed_tokens.weight", (V, H))]
    for i in range(config["num_hidden_layers"]):
        p = f"model.layers.{i}."
        out += [(p + "input_layernorm.weight", (H,)),
                (p + "self_attn.q_proj.weight", (q, H)), (p + "self_attn.k_proj.weight", (kv, H)),
                (p + "self_attn.v_proj.weight", (kv, H)), (p + "self_attn.o_proj.weight", (H, q))]
        if config["model_type"] == "qwen2":
            out += [(p + "self_attn.q_proj.bias", (q,)), (p + "self_attn.k_proj.bias", (kv,)),
                    (p + "self_attn.v_proj.bias", (kv,))]
        if config["model_type"] == "qwen3":
            out += [(p + "self_attn.q_norm.weight", (d,)), (p + "self_attn.k_norm.weight", (d,))]
        out += [(p + "post_attention_layernorm.weight", (H,)),
                (p + "mlp.gate_proj.weight", (F, H)), (p + "mlp.up_proj.weight", (F, H)),
                (p + "mlp.down_proj.weight", (H, F))]
    out.append(("model.norm.weight", (H,)))
    if not config["tie_word_embeddings"]:
        out.append(("lm_head.weight", (V, H)))
    return out


def random_weights(config: dict[str, Any], seed: int) -> dict[str, np.ndarray]:
    """Seeded weights scaled so the logits are neither flat nor saturated."""
    rng = np.random.default_rng(seed)
    weights = {}
    for name, shape in tensor_shapes(config):
        noise = rng.standard_normal(shape, dtype=np.float32)
        if name.endswith("norm.weight"):
            weights[name] = 1.0 + 0.1 * noise
        elif name.endswith(".bias"):
            weights[name] = 0.1 * noise
        elif "embed_tokens" in name or name == "lm_head.weight":
            weights[name] = 0.2 * noise
        else:
            weights[name] = 0.1 * noise
    return weights


def script_chain(tok: Tokenizer, script: str, start: int) -> dict[int, int]:
    """next-token map for ``script``: from ``start`` (the generation prompt's
    last token) through each of its tokens. Checks that the tokenizer splits
    the script as written and that no token is a predecessor twice."""
    pieces = SCRIPTS[script]
    ids = tok.encode("".join(pieces), add_special_tokens=False).ids
    if ids != [tok.token_to_id(p) for p in pieces]:
        raise AssertionError(f"script {script}: tokenized as {tok.encode(''.join(pieces)).tokens}")
    preds = [start] + ids[:-1]
    if len(set(preds)) != len(preds):
        raise AssertionError(f"script {script}: a token precedes two different ones: {preds}")
    return dict(zip(preds, ids))


def scripted_weights(config: dict[str, Any], seed: int, chain: dict[int, int], eos: int) -> dict[str, np.ndarray]:
    weights = random_weights(config, seed)
    V, H = config["vocab_size"], config["hidden_size"]
    for name, w in weights.items():
        if name.endswith(("o_proj.weight", "down_proj.weight")):
            weights[name] = np.zeros_like(w)  # each residual stays its token's embedding
        elif name.endswith("norm.weight"):
            weights[name] = np.ones_like(w)
    weights["model.embed_tokens.weight"] = np.eye(V, H, dtype=np.float32)
    lm_head = np.zeros((V, H), dtype=np.float32)
    for t in range(V):  # off the script, every token leads to end-of-turn
        lm_head[chain.get(t, eos), t] = 2.0
    weights["lm_head.weight"] = lm_head
    return weights


# ---------------------------------------------------------------------------
# Building


def _write_json(path: Path, data: Any) -> None:
    path.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def _place_template(template: Template | None, out_dir: Path) -> None:
    if template is None or template.where == "tokenizer_config.json":
        return
    text = (FIXTURES_DIR / template.files[0][1]).read_text()
    if template.where == "chat_template.jinja":
        (out_dir / "chat_template.jinja").write_text(text)
    else:
        _write_json(out_dir / "chat_template.json", {"chat_template": text})


def _start_token(out_dir: Path, tok: Tokenizer) -> int:
    template = load_chat_template(out_dir)
    assert template is not None
    prompt = template.render([{"role": "user", "content": "Hi"}], add_generation_prompt=True)
    return tok.encode(prompt, add_special_tokens=False).ids[-1]


def _build(spec: Spec, out_dir: Path) -> None:
    out_dir.mkdir(parents=True, exist_ok=True)
    tok = make_tokenizer(SCRIPT_WORDS if spec.script else ())
    vocab = tok.get_vocab_size() | 1  # an odd embedding table, padded past the tokenizer if need be
    shape = replace(spec.shape, hidden_size=vocab + 2) if spec.script else spec.shape
    config = _config(spec, shape, vocab, tok)
    _write_json(out_dir / "config.json", config)
    (out_dir / "tokenizer.json").write_text(tok.to_str(pretty=True), encoding="utf-8")
    _write_json(out_dir / "tokenizer_config.json", _tokenizer_config(spec, tok))
    _place_template(spec.template, out_dir)
    if spec.generation_config is not None:
        _write_json(out_dir / "generation_config.json", spec.generation_config)
    if spec.script:
        chain = script_chain(tok, spec.script, _start_token(out_dir, tok))
        weights = scripted_weights(config, spec.seed, chain, tok.token_to_id("<|im_end|>"))
    else:
        weights = random_weights(config, spec.seed)
    save_file(weights, str(out_dir / "model.safetensors"), metadata={"format": "pt"})


FIXTURES: dict[str, Callable[[Path], None]] = {
    name: functools.partial(_build, spec) for name, spec in SPECS.items()}


def build_fixture(name: str, out_dir: str | Path) -> Path:
    if name not in FIXTURES:
        raise KeyError(f"unknown fixture {name!r}; known: {', '.join(FIXTURES)}")
    FIXTURES[name](Path(out_dir))
    return Path(out_dir)


@functools.lru_cache(maxsize=1)
def generator_hash() -> str:
    """Changes whenever the bytes a build writes could change."""
    h = hashlib.sha256(Path(__file__).read_bytes())
    for path in sorted(FIXTURES_DIR.rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts:
            h.update(path.relative_to(FIXTURES_DIR).as_posix().encode() + b"\0" + path.read_bytes())
    h.update(f"tokenizers {tokenizers.__version__} numpy {np.__version__}".encode())
    return h.hexdigest()[:16]


def fixture_dir(name: str) -> Path:
    """The fixture's directory in the cache, built there (atomically) if missing."""
    if name not in FIXTURES:
        raise KeyError(f"unknown fixture {name!r}; known: {', '.join(FIXTURES)}")
    root = cache_dir() / "fixtures"
    final = root / f"{name}-{generator_hash()}"
    if final.is_dir():
        return final
    root.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{name}-", dir=root))
    try:
        build_fixture(name, tmp)
        os.chmod(tmp, 0o755)
        os.rename(tmp, final)
    except OSError:
        if not final.is_dir():  # not a concurrent builder that got there first
            raise
    finally:
        if tmp.exists():
            shutil.rmtree(tmp)
    return final


def scripted_fixture_dir(script: str) -> Path:
    """The scripted fixture that answers SCRIPTS[script]."""
    if script not in SCRIPTS:
        raise KeyError(f"unknown script {script!r}; known: {', '.join(SCRIPTS)}")
    return fixture_dir(f"scripted_{script}")


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if not args or args[0] in ("-h", "--help"):
        print(f"usage: python -m lse.tools.make_fixtures OUT_DIR [NAME ...]\nnames: {', '.join(FIXTURES)}",
              file=sys.stderr)
        return 2
    out, names = Path(args[0]), args[1:] or list(FIXTURES)
    unknown = [n for n in names if n not in FIXTURES]
    if unknown:
        print(f"unknown fixture(s): {', '.join(unknown)}; known: {', '.join(FIXTURES)}", file=sys.stderr)
        return 2
    for name in names:
        print(build_fixture(name, out / name))
    return 0


if __name__ == "__main__":
    sys.exit(main())
