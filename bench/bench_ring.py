"""The ring KV cache against a slab a layer on the real Gemma 3 270M Q4_K_M
file (compiler/kv_layout.py): ``python -m lse.bench.bench_ring [SLACK ...]``
opens the file at ``kv_len`` 4096 with each slack (512: rings of 1024 rows;
4096: no ring, since one ring no longer fits a slab twice), prints the
startup memory line, then for three prompts of about 1050 tokens the
prefill time, the time of 300 greedy tokens after the same prompt (reused),
a digest of their ids (equal across slacks where the rings are right) and
``uptime``. docs/architectures.md carries the figures.
"""

from __future__ import annotations

import hashlib
import logging
import subprocess
import sys
import time
from pathlib import Path

from lse.runtime.api import lse_close, lse_open, lse_request
from lse.tools.gemma3_file import gemma3_gguf

TEXT = Path(__file__).resolve().parent.parent / "docs" / "architectures.md"


def run(slack: int) -> None:
    lines: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            lines.append(record.getMessage())

    logging.getLogger("lse").addHandler(Keep())
    logging.getLogger("lse").setLevel(logging.INFO)
    engine = lse_open({"model": str(gemma3_gguf()), "kv_len": 4096, "parallel": 1, "kv_slack": slack})
    try:
        print(next(m for m in lines if m.startswith("lse: memory")))
        text = TEXT.read_text()
        for rep in range(3):
            prompt = f"Note {rep}. " + text[rep * 300:rep * 300 + 3000] + "\n\nIn short,"
            t = time.perf_counter()
            lse_request(engine, {"prompt": prompt, "max_tokens": 1, "temperature": 0}, "completions").result()
            prefill = time.perf_counter() - t
            t = time.perf_counter()
            handle = lse_request(engine, {"prompt": prompt, "max_tokens": 300, "temperature": 0, "ignore_eos": True},
                                 "completions")
            _, body = handle.result()
            decode = time.perf_counter() - t
            ids = list(handle._request.seqs[0].generated)
            digest = hashlib.sha256(str(ids).encode()).hexdigest()[:12]
            load = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
            print(f"slack {slack} prompt {body['usage']['prompt_tokens']}: prefill {prefill:.2f} s, "
                  f"{len(ids)} tokens {decode:.2f} s, ids {digest}; {load}")
    finally:
        lse_close(engine)


if __name__ == "__main__":
    for arg in sys.argv[1:] or ["512", "4096"]:
        run(int(arg))
