"""Golden greedy token ids from an independent oracle: transformers' float32
forward of each architecture fixture's GGUF (make_arch_fixtures.py), loaded
with ``gguf_file=`` (transformers dequantizes the blocks itself, undoes
Llama's Q/K permutation itself and builds its own model class).

    python -m lse.tools.golden_transformers [NAME ...]

writes tests/unit/data/golden_<name>.json: the prompt, 64 greedy ids, each
step's top-2 logit margin, the steps whose margin is under NEAR_TIE (a near
tie: reported, and a test stops comparing there), the last prompt position's
logits, the GGUF's sha256 (a test checks it is the file it rebuilds) and the
versions used. Needs torch and transformers (not test dependencies: the
tests read the committed json).

The oracle runs the model as the GGUF says, with two keys the loader drops
set on its config by hand: transformers' GGUF loader ignores Llama 3's
``rope_freqs`` tensor, so for a fixture with ``hf_rope_scaling`` the rope
scaling it encodes is set in HF's own terms (rope_type llama3 and its
parameters) and transformers computes the scaled frequencies itself; and it
reads ``attention.key_length`` for qwen3_moe but not qwen3, so an explicit
head_dim is set from the fixture's; and gemma3's attention scale, which
llama.cpp takes as 1/sqrt(head_dim) and the loader leaves at
Gemma3TextConfig's query_pre_attn_scalar default (256), is set to head_dim;
and phi3's ``attention.sliding_window``, which the loader drops (Phi3Config's
default is no window), is set from the fixture's.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

from lse.fixtures.make_arch_fixtures import ARCH_FIXTURES, arch_gguf_path

PROMPT = [5, 17, 200, 3, 99, 42, 7, 150, 260, 31, 8]
STEPS = 64
NEAR_TIE = 2e-3
DATA_DIR = Path(__file__).resolve().parent.parent / "tests" / "unit" / "data"


def golden_path(name: str) -> Path:
    return DATA_DIR / f"golden_{name}.json"


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _model(path: Path, name: str) -> Any:
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    config = AutoConfig.from_pretrained(str(path.parent), gguf_file=path.name)
    fx = ARCH_FIXTURES[name]
    if fx.head_dim * fx.heads != config.hidden_size:  # the file's attention.key_length, which the
        config.head_dim = fx.head_dim  # loader reads for qwen3_moe but not qwen3
    if fx.arch == "gemma3":  # llama.cpp's gemma3 attention scale, 1/sqrt(head_dim); the loader keeps HF's default 256
        config.query_pre_attn_scalar = fx.head_dim
    if fx.arch == "phi3" and "attention.sliding_window" in fx.extra_meta:  # the loader drops phi3's window
        config.sliding_window = fx.extra_meta["attention.sliding_window"]
    if getattr(config, "pad_token_id", None) is not None and config.pad_token_id >= config.vocab_size:
        config.pad_token_id = None  # Phi3Config's default (32000) names no row of a 301-token table
    scaling = ARCH_FIXTURES[name].hf_rope_scaling
    if scaling is not None:
        theta = ARCH_FIXTURES[name].rope_theta
        config.rope_parameters = {**scaling, "rope_theta": theta}
    model = AutoModelForCausalLM.from_pretrained(str(path.parent), gguf_file=path.name, config=config,
                                                 dtype=torch.float32)
    return model.eval()


def golden(name: str) -> dict[str, Any]:
    import torch
    import transformers

    path = arch_gguf_path(name)
    model = _model(path, name)
    ids, steps, margins, prompt_logits = list(PROMPT), [], [], None
    with torch.no_grad():
        for _ in range(STEPS):
            logits = model(torch.tensor([ids])).logits[0, -1].double().numpy()
            if prompt_logits is None:
                prompt_logits = logits
            top = np.sort(logits)[-2:]
            margins.append(float(top[1] - top[0]))
            steps.append(int(np.argmax(logits)))
            ids.append(steps[-1])
    return {
        "fixture": name, "architecture": ARCH_FIXTURES[name].arch, "gguf_sha256": sha256(path),
        "model_class": type(model).__name__, "prompt": PROMPT, "ids": steps,
        "margins": [round(m, 6) for m in margins],
        "near_ties": [i for i, m in enumerate(margins) if m < NEAR_TIE],
        "prompt_logits": [round(float(v), 6) for v in prompt_logits],
        "oracle": f"transformers {transformers.__version__}, torch {torch.__version__}, float32, gguf_file=",
    }


def main(argv: list[str] | None = None) -> int:
    names = (sys.argv[1:] if argv is None else argv) or list(ARCH_FIXTURES)
    DATA_DIR.mkdir(parents=True, exist_ok=True)
    for name in names:
        data = golden(name)
        golden_path(name).write_text(json.dumps(data, indent=1) + "\n")
        print(f"{name}: {data['model_class']}, ids {data['ids'][:8]}..., near ties at {data['near_ties']}, "
              f"min margin {min(data['margins']):.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
