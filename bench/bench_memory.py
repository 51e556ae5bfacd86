"""Peak resident memory of LSE and of llama.cpp serving the same GGUF file,
each in a process of its own (so neither counts the other, nor the
benchmark's own imports): open the model at the same context length, decode
128 greedy tokens, report the process's peak RSS: VmHWM from
/proc/self/status, not ru_maxrss, which Linux carries across exec from the
forking parent (the benchmark, holding both engines, would be counted)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

PROMPT = list(range(1000, 1036))

_LSE = """
import json, re, sys
from lse.runtime import api
engine = api.lse_open({{"model": {model!r}, "kv_len": {n_ctx}, "threads": {threads}}})
status, body = api.lse_request(engine, {{"prompt": {prompt}, "max_tokens": 128, "temperature": 0}},
                               "completions").result()
assert status == 200, body
print(json.dumps({{"tokens": body["usage"]["completion_tokens"],
                   "rss": int(re.search(r"VmHWM:\\s+(\\d+) kB", open("/proc/self/status").read())[1]) * 1024}}))
"""

_LLAMA = """
import json, re
from llama_cpp import Llama
from lse.bench.bench_peers import llama_cpp_params
with llama_cpp_params():
    llm = Llama(model_path={path!r}, n_ctx={n_ctx}, n_threads={threads}, n_threads_batch={threads}, verbose=False)
out = llm.create_completion({prompt}, max_tokens=128, temperature=0)
print(json.dumps({{"tokens": out["usage"]["completion_tokens"],
                   "rss": int(re.search(r"VmHWM:\\s+(\\d+) kB", open("/proc/self/status").read())[1]) * 1024}}))
"""


def _run(code: str) -> dict:
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=1800)
    if proc.returncode != 0:
        return {"status": f"failed: {proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else proc.returncode}"}
    return {"status": "ok", **json.loads(proc.stdout.strip().splitlines()[-1])}


def measure_memory(gguf: Path, threads: int, n_ctx: int, with_llama: bool, model: str | None = None) -> dict:
    """{"lse": {...}, "llamacpp-q4_1": {...}, "n_ctx": n}: each with its peak RSS in bytes.
    LSE serves ``model`` (a path; None: the default model), llama.cpp ``gguf``."""
    out = {"n_ctx": n_ctx, "lse": _run(_LSE.format(model=model, threads=threads, n_ctx=n_ctx, prompt=PROMPT))}
    if with_llama:
        out["llamacpp-q4_1"] = _run(_LLAMA.format(path=str(gguf), threads=threads, n_ctx=n_ctx, prompt=PROMPT))
    return out
