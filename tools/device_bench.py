"""Throughput on the GPU for lse.tools.device_check: one engine of a bench
case (64 slots), in-process, greedy, with CPU fallback refused.

- prefill tok/s at each of BENCH_PREFILLS: prompt tokens over the seconds
  from submit to the first token (max_tokens 1), best of PREFILL_TRIES;
- decode tok/s at each of BENCH_STREAMS concurrent streams (16-token
  prompts, DECODE_TOKENS each, submitted at once): tokens after each
  stream's first over the seconds from the earliest first token to the
  latest last one, so the streams' prefills stay out of it at batch 1;
- the share of HBM bandwidth decode reaches: the weight bytes one step
  reads (every matrix once, lse.bench.bench_report.weight_bytes_per_token)
  times steps a second (tok/s over the streams) over HBM_BYTES_S. At batch
  1 that is bytes per token x tok/s / 4.8 TB/s.

Every prompt starts with a new id (lse.bench.bench.Prompts), so no prefix
cache serves it.
"""

from __future__ import annotations

import threading
import time

from lse.tools.device_cases import BENCH_PREFILLS, BENCH_STREAMS, Case

HBM_BYTES_S = 4.8e12  # H200: HBM3e, 4.8 TB/s
PREFILL_TRIES = 3
DECODE_TOKENS = 128
STREAM_PROMPT = 16


def hbm_share(weight_bytes: int, tok_s: float, streams: int, bandwidth: float = HBM_BYTES_S) -> float:
    """The bandwidth share of reading the weights once a decode step."""
    return weight_bytes * (tok_s / streams) / bandwidth


def _stream(handle, times: list[float], result: dict) -> None:
    """Each chunk's arrival time; the terminal event into ``result``."""
    for ev in handle.events():
        if ev["type"] == "chunk":
            times.append(time.perf_counter())
        else:
            result.update(ev)


def concurrent_decode(api, engine, prompts: list[list[int]], n: int) -> dict:
    """Every prompt submitted at once: decode tok/s over the window all
    streams decode in."""
    handles = [api.lse_request(engine, {"prompt": p, "max_tokens": n, "temperature": 0}, "completions")
               for p in prompts]
    times: list[list[float]] = [[] for _ in prompts]
    results: list[dict] = [{} for _ in prompts]
    threads = [threading.Thread(target=_stream, args=(h, t, r)) for h, t, r in zip(handles, times, results)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for r in results:
        if r.get("type") != "done":
            raise RuntimeError(f"a stream failed: {r}")
    tokens = sum(r["data"]["usage"]["completion_tokens"] - 1 for r in results)
    window = max(t[-1] for t in times) - min(t[0] for t in times)
    return {"streams": len(prompts), "tokens": tokens, "seconds": round(window, 4),
            "tok_s": tokens / window if window > 0 else None}


def prefill_seconds(api, engine, prompt: list[int]) -> float:
    t0 = time.perf_counter()
    for ev in api.lse_request(engine, {"prompt": prompt, "max_tokens": 1, "temperature": 0}, "completions").events():
        if ev["type"] == "chunk":
            return time.perf_counter() - t0
        if ev["type"] == "error":
            raise RuntimeError(f"prefill of {len(prompt)} tokens failed: {ev}")
    raise RuntimeError(f"prefill of {len(prompt)} tokens: no token came")


class FreshPrompts:
    """lse.bench.bench's prompts, each starting with a new id, kept inside a
    small vocabulary (a fixture's) by wrapping around."""

    def __init__(self, model_dir, longest: int):
        from lse.compiler.config import load_config
        from lse.bench.bench import Prompts

        self.prompts, self.vocab = Prompts(model_dir, longest), load_config(model_dir).vocab_size

    def raw(self, n: int) -> list[int]:
        ids = self.prompts.raw(n)
        return [ids[0] % self.vocab, *ids[1:]]


def measure(case: Case, say) -> dict:
    """The case's row of the report: its figures, or the error that stopped it."""
    from lse.runtime import api
    from lse.bench.bench_lse import lse_bytes_per_token

    row: dict = {"case": case.name, "model": case.model, "kv_len": case.kv_len, "slots": case.parallel,
                 "prefill": [], "decode": []}
    try:
        model_dir = case.model_dir()
        row["weight_bytes_per_token"] = lse_bytes_per_token(model_dir)
        prompts = FreshPrompts(model_dir, max(BENCH_PREFILLS))
        t0 = time.perf_counter()
        engine = api.lse_open(case.engine_config(disable_cpu_fallback=True))
        row["open_s"] = round(time.perf_counter() - t0, 1)
    except Exception as e:  # the report says why, in IREE's own words where it was IREE
        return {**row, "error": f"{type(e).__name__}: {e}"}
    try:
        row["device"] = api.lse_status(engine)["engine"]["device"]
        concurrent_decode(api, engine, [prompts.raw(STREAM_PROMPT)], 8)  # warm-up: first calls, first records
        for n in BENCH_PREFILLS:
            best = min(prefill_seconds(api, engine, prompts.raw(n)) for _ in range(PREFILL_TRIES))
            row["prefill"].append({"tokens": n, "seconds": round(best, 4), "tok_s": n / best})
            say(f"{case.name}: prefill {n}: {n / best:.0f} tok/s")
        for streams in BENCH_STREAMS:
            got = concurrent_decode(api, engine, [prompts.raw(STREAM_PROMPT) for _ in range(streams)], DECODE_TOKENS)
            if got["tok_s"]:
                got["hbm_share"] = hbm_share(row["weight_bytes_per_token"], got["tok_s"], streams)
            row["decode"].append(got)
            say(f"{case.name}: decode x{streams}: {got['tok_s'] or 0:.0f} tok/s")
    except Exception as e:
        row["error"] = f"{type(e).__name__}: {e}"
    finally:
        api.lse_close(engine)
    return row
