"""The tokenizer routes' bodies: /tokenize, /detokenize and /tokenizer_info.

The shapes are llama-server's (``{"content", "add_special"}`` -> ``{"tokens"}``;
``{"tokens"}`` -> ``{"content"}``), and vLLM's spellings are accepted too
(``prompt``, ``add_special_tokens``; /detokenize also answers ``prompt``), because
lm-evaluation-harness' ``tokenizer_backend=remote`` (lm_eval/utils.py
RemoteTokenizer, 0.4.x) speaks vLLM's: it posts ``{"prompt", "add_special_tokens"}``,
reads ``prompt`` back from /detokenize, and reads ``eos_token``, ``bos_token``,
``pad_token`` and ``chat_template`` from /tokenizer_info, finding the end
token's id by tokenizing its text, so special-token strings are parsed as
special tokens here (as both servers do).

Settled here: ``add_special`` defaults to false (llama-server's default);
``content`` must be a string; token ids outside the vocabulary are a 400.

Bounds, as the completion routes' (runtime/bounds.py): text holding a lone
surrogate is a 400 naming the field; a text longer than ``context_length ×
chars_per_token`` characters (more than any prompt of this model could be)
is the ``context_full`` 400 before a character is tokenized; /detokenize
takes at most ``context_length`` ids (more than any prompt plus reply).
lse.api runs these calls, the body's JSON and the reply's on the prepare
pool, never on the event loop.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lse.runtime.bounds import check_prompt_chars, check_unicode
from lse.runtime.chat.special import encode_ids
from lse.runtime.errors import invalid

if TYPE_CHECKING:
    from lse.runtime.engine import Engine


def tokenize(engine: "Engine", body: dict[str, Any]) -> dict[str, Any]:
    """llama-server's spellings (content, add_special) or vLLM's (prompt,
    add_special_tokens); every field sent is checked, the first spelling wins."""
    for name, kind in (("content", str), ("prompt", str), ("add_special", bool), ("add_special_tokens", bool)):
        value = body.get(name)
        if value is not None and not isinstance(value, kind):
            raise invalid(name, f"{name} must be a {'string' if kind is str else 'boolean'}; got {_kind(value)}")
    name = "content" if "content" in body or "prompt" not in body else "prompt"
    text = body.get(name)
    if not isinstance(text, str):
        raise invalid(name, f"{name} must be a string; got {_kind(text)}")
    check_unicode({name: text})
    check_prompt_chars(len(text), engine.kv_len, engine.prompts.chars_per_token, name)
    add_special = body.get("add_special", body.get("add_special_tokens")) or False
    ids = encode_ids(engine.tokenizer, text, add_special)
    return {"tokens": ids}


def detokenize(engine: "Engine", body: dict[str, Any]) -> dict[str, Any]:
    tokens = body.get("tokens")
    vocab = engine.cfg.vocab_size
    if not isinstance(tokens, list):
        raise invalid("tokens", f"tokens must be an array of token ids; got {_kind(tokens)}")
    if len(tokens) > engine.kv_len:
        raise invalid("tokens", f"tokens holds at most {engine.kv_len} ids (the context length); "
                      f"got {len(tokens)}")
    for t in tokens:
        if isinstance(t, bool) or not isinstance(t, int) or not 0 <= t < vocab:
            raise invalid("tokens", f"each token must be an integer id in 0..{vocab - 1}; got {_kind(t)}")
    text = engine.tokenizer.decode(tokens, skip_special_tokens=False)
    return {"content": text, "prompt": text}


def tokenizer_info(engine: "Engine") -> dict[str, Any]:
    """What a remote tokenizer client needs: the special tokens by text and
    id, the vocabulary size, the context length and the chat template."""
    config = _tokenizer_config(engine.model_dir)
    info: dict[str, Any] = {"model": engine.model_id, "tokenizer_class": config.get("tokenizer_class"),
                            "vocab_size": engine.cfg.vocab_size, "model_max_length": engine.kv_len,
                            "add_bos_token": bool(config.get("add_bos_token", False))}
    for role in ("bos", "eos", "pad", "unk"):
        text = _token_text(config.get(f"{role}_token"))
        if role == "eos" and text is None and engine.eos_ids:
            text = engine.token_text(min(engine.eos_ids))
        info[f"{role}_token"] = text
        info[f"{role}_token_id"] = engine.tokenizer.token_to_id(text) if text is not None else None
    info["eos_token_ids"] = sorted(engine.eos_ids)
    info["chat_template"] = engine.template.text if engine.template is not None else None
    return info


def _tokenizer_config(model_dir: Path) -> dict[str, Any]:
    path = Path(model_dir) / "tokenizer_config.json"
    if not path.is_file():
        return {}
    data = json.loads(path.read_text())
    return data if isinstance(data, dict) else {}


def _token_text(value: Any) -> str | None:
    """A tokenizer_config.json token: a string or {"content": ...}."""
    if isinstance(value, dict):
        value = value.get("content")
    return value if isinstance(value, str) else None


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return str(value)
    return {str: "a string", list: "an array", dict: "an object"}.get(type(value), type(value).__name__)
