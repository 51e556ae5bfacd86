"""tokenizer.json and tokenizer_config.json from a GGUF's tokenizer metadata.

Only byte-level BPE (``tokenizer.ggml.model == "gpt2"``) is built. The
pre-tokenizer comes from ``tokenizer.ggml.pre``, the name llama.cpp gives to a
split regex (llama.cpp src/llama-vocab.cpp, ``LLAMA_VOCAB_PRE_TYPE_*``); each
supported name maps to the ``tokenizers`` pre-tokenizers that split alike.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, pre_tokenizers, processors

from lse.compiler.gguf import spm as gguf_spm
from lse.compiler.gguf.errors import TokenizerImportError

# GGUF token types (gguf.constants.TokenType).
NORMAL, UNKNOWN, CONTROL, USER_DEFINED, UNUSED, BYTE = 1, 2, 3, 4, 5, 6


def _byte_level() -> pre_tokenizers.PreTokenizer:
    return pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)


def _split_then_bytes(pattern: str) -> pre_tokenizers.PreTokenizer:
    """A split regex, then byte-level mapping without GPT-2's own regex: the
    form of Llama 3's and Qwen2's tokenizer.json."""
    return pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(pattern), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=False, use_regex=False)])


# The split regexes of llama.cpp's LLAMA_VOCAB_PRE_TYPE_LLAMA3 ("llama-bpe":
# digits in runs of up to 3) and _QWEN2 ("qwen2": each digit alone).
_LLAMA3_SPLIT = (r"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}"
                 r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
_QWEN2_SPLIT = _LLAMA3_SPLIT.replace(r"\p{N}{1,3}", r"\p{N}")

# tokenizer.ggml.pre → pre-tokenizer. "smollm" is llama.cpp's
# {"\\p{N}", <GPT-2 regex>}: every digit on its own, then the GPT-2 split;
# SmolLM2's own tokenizer.json says Digits(individual_digits=True), ByteLevel.
PRE_TOKENIZERS = {
    "smollm": lambda: pre_tokenizers.Sequence([pre_tokenizers.Digits(individual_digits=True), _byte_level()]),
    "gpt-2": _byte_level,
    "llama-bpe": lambda: _split_then_bytes(_LLAMA3_SPLIT),
    "qwen2": lambda: _split_then_bytes(_QWEN2_SPLIT),
}


def build_tokenizer(meta: dict[str, Any]) -> Tokenizer:
    kind, pre = meta.get("tokenizer.ggml.model"), meta.get("tokenizer.ggml.pre", "gpt-2")
    arch = meta.get("general.architecture")
    if kind == "llama" and arch in gguf_spm.GEMMA_ARCHS:
        return _with_specials(gguf_spm.build_gemma(meta), meta, byte_level=False)
    if kind != "gpt2":
        raise TokenizerImportError(
            f"tokenizer.ggml.model {kind!r} is not supported in a {arch} file; supported: 'gpt2' (byte-level BPE), "
            f"'llama' (SentencePiece) in {', '.join(gguf_spm.GEMMA_ARCHS)}")
    if pre not in PRE_TOKENIZERS:
        raise TokenizerImportError(
            f"tokenizer.ggml.pre {pre!r} is not supported; supported: {', '.join(PRE_TOKENIZERS)}")
    tokens: list[str] = meta["tokenizer.ggml.tokens"]
    merges = [tuple(m.split(" ")) for m in meta.get("tokenizer.ggml.merges", [])]
    if any(len(m) != 2 for m in merges):
        raise TokenizerImportError("tokenizer.ggml.merges has an entry that is not two space-separated tokens")

    tok = Tokenizer(models.BPE(vocab={t: i for i, t in enumerate(tokens)}, merges=merges,
                               fuse_unk=False, byte_fallback=False))
    tok.pre_tokenizer = PRE_TOKENIZERS[pre]()
    tok.decoder = decoders.ByteLevel()
    return _with_specials(tok, meta, byte_level=True)


def _with_specials(tok: Tokenizer, meta: dict[str, Any], byte_level: bool) -> Tokenizer:
    tokens: list[str] = meta["tokenizer.ggml.tokens"]
    types: list[int] = meta.get("tokenizer.ggml.token_type") or [NORMAL] * len(tokens)
    # Control tokens are the special ones (parsed in text, skipped when
    # decoding with skip_special_tokens); user-defined tokens always match whole
    # (those the vocabulary spells as stored: not Gemma's respelled space runs).
    vocab = tok.get_vocab()
    tok.add_special_tokens([AddedToken(t, special=True, normalized=False)
                            for t, ty in zip(tokens, types) if ty == CONTROL])
    tok.add_tokens([AddedToken(t, special=False, normalized=False)
                    for t, ty in zip(tokens, types) if ty == USER_DEFINED and t in vocab])
    post = _post_processor(meta, tokens, byte_level)
    if post is not None:
        tok.post_processor = post
    return tok


def _post_processor(meta: dict[str, Any], tokens: list[str], byte_level: bool) -> processors.PostProcessor | None:
    """BOS/EOS added by encode() only when the GGUF says so (add_bos_token / add_eos_token)."""
    level = [processors.ByteLevel(trim_offsets=False)] if byte_level else []
    bos, eos = meta.get("tokenizer.ggml.bos_token_id"), meta.get("tokenizer.ggml.eos_token_id")
    add_bos = bool(meta.get("tokenizer.ggml.add_bos_token")) and bos is not None
    add_eos = bool(meta.get("tokenizer.ggml.add_eos_token")) and eos is not None
    if not (add_bos or add_eos):
        return level[0] if level else None
    single = " ".join([f"{tokens[bos]}:0"] * add_bos + ["$A:0"] + [f"{tokens[eos]}:0"] * add_eos)
    specials = [(tokens[bos], bos)] * add_bos + [(tokens[eos], eos)] * add_eos
    return processors.Sequence([*level, processors.TemplateProcessing(single=single, special_tokens=specials)])


def tokenizer_config(meta: dict[str, Any], model_max_length: int) -> dict[str, Any]:
    """tokenizer_config.json: the chat template, special-token strings and add_* flags the GGUF states."""
    tokens = meta["tokenizer.ggml.tokens"]
    out: dict[str, Any] = {"tokenizer_class": "PreTrainedTokenizerFast"}
    for name, key in (("bos", "bos"), ("eos", "eos"), ("unk", "unknown"), ("pad", "padding")):
        tid = meta.get(f"tokenizer.ggml.{key}_token_id")
        if tid is not None:
            out[f"{name}_token"] = tokens[tid]
    # An absent flag is false, HF's default for a byte-level BPE tokenizer.
    out["add_bos_token"] = bool(meta.get("tokenizer.ggml.add_bos_token", False))
    out["add_eos_token"] = bool(meta.get("tokenizer.ggml.add_eos_token", False))
    out["clean_up_tokenization_spaces"] = False
    out["model_max_length"] = model_max_length
    if "tokenizer.chat_template" in meta:
        out["chat_template"] = meta["tokenizer.chat_template"]
    return out


def write_tokenizer(meta: dict[str, Any], out_dir: Path, model_max_length: int) -> Tokenizer:
    """Write tokenizer.json and tokenizer_config.json into ``out_dir``; return the tokenizer."""
    tok = build_tokenizer(meta)
    tok.save(str(out_dir / "tokenizer.json"))
    config = tokenizer_config(meta, model_max_length)
    (out_dir / "tokenizer_config.json").write_text(json.dumps(config, indent=2, ensure_ascii=False) + "\n")
    return tok
