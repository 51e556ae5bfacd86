"""Golden ids beyond Gemma 3's sliding window: transformers' float32 forward
of the gemma3 fixture (window 128) over a 150-token prompt and 64 greedy
steps, so every step's sliding layers see only the last 128 positions.

    python -m lse.tools.golden_window

writes tests/unit/data/golden_gemma3_window.json (the layout of
golden_transformers.py's files). The oracle for the ring KV cache.
"""

from __future__ import annotations

import json
import sys

import numpy as np

from lse.tools.golden_transformers import DATA_DIR, NEAR_TIE, STEPS, _model, sha256
from lse.tools.make_arch_fixtures import arch_gguf_path

PROMPT = [int(t) for t in np.random.default_rng(38).integers(5, 300, 150)]
GOLDEN = DATA_DIR / "golden_gemma3_window.json"


def main() -> int:
    import torch
    import transformers

    path = arch_gguf_path("gemma3")
    model = _model(path, "gemma3")
    ids, steps, margins = list(PROMPT), [], []
    with torch.no_grad():
        for _ in range(STEPS):
            logits = model(torch.tensor([ids])).logits[0, -1].double().numpy()
            top = np.sort(logits)[-2:]
            margins.append(float(top[1] - top[0]))
            steps.append(int(np.argmax(logits)))
            ids.append(steps[-1])
    data = {"fixture": "gemma3", "gguf_sha256": sha256(path), "sliding_window": model.config.sliding_window,
            "prompt": PROMPT, "ids": steps, "margins": [round(m, 6) for m in margins],
            "near_ties": [i for i, m in enumerate(margins) if m < NEAR_TIE],
            "oracle": f"transformers {transformers.__version__}, torch {torch.__version__}, float32, gguf_file="}
    GOLDEN.write_text(json.dumps(data, indent=1) + "\n")
    print(f"window {data['sliding_window']}: {steps[:8]}..., near ties at {data['near_ties']}, "
          f"min margin {min(margins):.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
