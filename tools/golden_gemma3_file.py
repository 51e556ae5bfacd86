"""Golden greedy ids for the real Gemma 3 270M Q4_K_M file (gemma3_file.py)
from an independent oracle: transformers' float32 forward of the same
dequantised weights (``gguf_file=``: transformers dequantizes the blocks and
undoes llama.cpp's 1 + w norms itself) and transformers' own tokenizer of the
file.

    python -m lse.tools.golden_gemma3_file

writes tests/unit/data/golden_gemma3_270m.json: per prompt its text, the
prompt ids transformers' tokenizer gives (BOS first, as the file says), STEPS
greedy ids, each step's top-2 logit margin and the steps under NEAR_TIE
(reported; a test stops comparing at the first), the file's sha256 and the
versions used. Needs torch and transformers (not test dependencies: the e2e
test reads the committed json). The 270M's attention scale (head_dim 256) is
Gemma3TextConfig's default, so nothing is set by hand.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

from lse.tools.gemma3_file import FILE_NAME, gemma3_gguf
from lse.tools.golden_transformers import DATA_DIR, NEAR_TIE, sha256

PROMPTS = [
    "The capital of France is",
    "def fibonacci(n):\n",
    "Once upon a time, in a small village by the sea,",
]
STEPS = 48
GOLDEN = DATA_DIR / "golden_gemma3_270m.json"


def _greedy(model: Any, prompt: list[int]) -> tuple[list[int], list[float]]:
    """STEPS greedy ids with the model's own KV cache, and each step's top-2 margin."""
    import torch

    ids, margins, past = [], [], None
    step = torch.tensor([prompt])
    with torch.no_grad():
        for _ in range(STEPS):
            out = model(step, past_key_values=past, use_cache=True)
            past = out.past_key_values
            logits = out.logits[0, -1].double().numpy()
            top = np.sort(logits)[-2:]
            margins.append(float(top[1] - top[0]))
            ids.append(int(np.argmax(logits)))
            step = torch.tensor([[ids[-1]]])
    return ids, margins


def golden(path: Path) -> dict[str, Any]:
    import torch
    import transformers
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name)
    model = AutoModelForCausalLM.from_pretrained(str(path.parent), gguf_file=path.name,
                                                 dtype=torch.float32).eval()
    cases = []
    for text in PROMPTS:
        prompt = tok(text)["input_ids"]
        ids, margins = _greedy(model, prompt)
        cases.append({"text": text, "prompt": prompt, "ids": ids, "completion": tok.decode(ids),
                      "margins": [round(m, 6) for m in margins],
                      "near_ties": [i for i, m in enumerate(margins) if m < NEAR_TIE]})
    return {"file": FILE_NAME, "gguf_sha256": sha256(path), "model_class": type(model).__name__,
            "steps": STEPS, "near_tie": NEAR_TIE, "cases": cases,
            "oracle": f"transformers {transformers.__version__}, torch {torch.__version__}, float32, gguf_file="}


def main(argv: list[str] | None = None) -> int:
    data = golden(gemma3_gguf())
    GOLDEN.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n")
    for case in data["cases"]:
        print(f"{case['text']!r}: {case['ids'][:8]}..., near ties at {case['near_ties']}, "
              f"min margin {min(case['margins']):.4f}: {case['completion']!r}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
