"""Golden ids beyond a sliding window: transformers' float32 forward of a
fixture over a prompt longer than its window and 64 greedy steps, so every
step's sliding layers see only the last W positions. The gemma3 fixture
(window 128, five sliding layers and a global one): a 150-token prompt; the
phi3 fixture (window 1024, every layer sliding, context 2048): 1300 tokens.

    python -m lse.tools.golden_window [gemma3|phi3 ...]

writes tests/unit/data/golden_<fixture>_window.json (the layout of
golden_transformers.py's files). The oracle for the window and the ring KV cache.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

from lse.tools.golden_transformers import DATA_DIR, NEAR_TIE, STEPS, _model, sha256
from lse.fixtures.make_arch_fixtures import arch_gguf_path

PROMPT = [int(t) for t in np.random.default_rng(38).integers(5, 300, 150)]
PROMPTS = {"gemma3": PROMPT, "phi3": [int(t) for t in np.random.default_rng(3).integers(5, 300, 1300)]}
GOLDEN = DATA_DIR / "golden_gemma3_window.json"


def golden_window_path(fixture: str) -> Path:
    return DATA_DIR / f"golden_{fixture}_window.json"


def golden(fixture: str) -> dict:
    import torch
    import transformers

    path = arch_gguf_path(fixture)
    model = _model(path, fixture)
    ids, steps, margins = list(PROMPTS[fixture]), [], []
    with torch.no_grad():
        for _ in range(STEPS):
            logits = model(torch.tensor([ids])).logits[0, -1].double().numpy()
            top = np.sort(logits)[-2:]
            margins.append(float(top[1] - top[0]))
            steps.append(int(np.argmax(logits)))
            ids.append(steps[-1])
    return {"fixture": fixture, "gguf_sha256": sha256(path), "sliding_window": model.config.sliding_window,
            "prompt": PROMPTS[fixture], "ids": steps, "margins": [round(m, 6) for m in margins],
            "near_ties": [i for i, m in enumerate(margins) if m < NEAR_TIE],
            "oracle": f"transformers {transformers.__version__}, torch {torch.__version__}, float32, gguf_file="}


def main(argv: list[str] | None = None) -> int:
    for fixture in (sys.argv[1:] if argv is None else argv) or list(PROMPTS):
        data = golden(fixture)
        golden_window_path(fixture).write_text(json.dumps(data, indent=1) + "\n")
        print(f"{fixture}: window {data['sliding_window']}: {data['ids'][:8]}..., near ties at {data['near_ties']}, "
              f"min margin {min(data['margins']):.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
