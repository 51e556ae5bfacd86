"""``python -m lse.tools.bench``: LSE measured beside its peers, in one run on one machine.

    python -m lse.tools.bench [--runs 5] [--quick] [--skip-peer NAME] [--out bench-out] [--threads 2]

On the default model (SmolLM2-135M-Instruct) it measures prefill tokens/s at 128, 512 and 2048 prompt tokens, decode
tokens/s at batch 1 over 128 greedy tokens and the time to first token of a short chat prompt: through LSE's engine
in-process, through lse-server over HTTP (non-streamed and streamed), through llama.cpp on the shipped Q4_1 GGUF and
on an F32 GGUF of the same weights, and through transformers + torch on LSE's f32 import. Then aggregate decode with
1, 4 and 8 streams through lse-server (--parallel 1, 4, auto) and llama.cpp (as many sequences in one batch), its peak
RSS, on the default server a 2048-token prompt beside a running stream (its first token, the stream's gaps), a fresh
compile's time and artifact size, and the memory bandwidth. With --scale, shaped 1B-7B files instead
(lse.tools.bench_scale).

A shared 2-core machine is noisy, so each round measures every engine in an
order that rotates by round, decode of every engine back to back, and ratios
are taken per round; cells are medians with the min–max. Writes
bench-<time>.json, .md and .png into --out.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import traceback
from dataclasses import asdict, dataclass
from pathlib import Path

from lse.runtime.engine import DEFAULT_KV_LEN
from lse.tools import bench_machine, bench_report, bench_scale
from lse.tools.bench_lse import (BenchError, LseEngineRunner, LseHttpRunner, LseServer, aggregate_decode,
                                 lse_bytes_per_token, measure_compile, prefill_beside_a_stream)
from lse.tools.bench_memory import measure_memory
from lse.tools.bench_peers import PEER_NAMES, PEERS, PeerMissing, ensure_f32_gguf, llamacpp_streams, open_peer

CHAT = [{"role": "user", "content": "What is the capital of France?"}]
CHAT_MAX_TOKENS = 16
# Greedy decoding continues the count far past 128 tokens without an end of turn.
COUNT_PROMPT = "1, 2, 3, 4, 5, 6, 7, 8, 9, 10,"
FILLER = ("The history of the printing press begins in the fifteenth century, when movable type changed how "
          "books were made, sold and read across Europe. Workshops spread from city to city, and with them "
          "new trades, new laws about copying, and new arguments about who should be allowed to read. ")
FIRST_ID = 1000  # prompts start at FIRST_ID + k, a new k each time, so no prefix cache helps
PEER_ALIASES = {"llama.cpp": ("llamacpp-q4_1", "llamacpp-f32"), "llamacpp": ("llamacpp-q4_1", "llamacpp-f32")}
BUSY_LOAD = 2.5


@dataclass
class Settings:
    runs: int
    prefill_sizes: tuple[int, ...]
    decode_tokens: int
    streams: tuple[int, ...]
    parallel: tuple[str, ...]  # lse-server --parallel values: counts or "auto"
    concurrency_runs: int
    compile: bool
    threads: int
    quick: bool


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m lse.tools.bench",
                                description="LSE measured beside its peers, in one run on one machine.")
    p.add_argument("--runs", type=int, default=None, help="rounds (default 5; 2 with --quick)")
    p.add_argument("--quick", action="store_true",
                   help="smoke run: 2 rounds, prompts of 128 and 512, 32 decode tokens, 1 and 4 streams, "
                        "--parallel 1 only, no fresh compile")
    p.add_argument("--skip-peer", action="append", default=[], metavar="NAME",
                   help=f"leave a peer out (reported as skipped): {', '.join(PEERS)}, or llama.cpp for both")
    p.add_argument("--parallel", default=None, help="lse-server --parallel values for the concurrency "
                   "measurement, comma-separated counts or auto (default 1,4,auto; 1 with --quick)")
    p.add_argument("--out", type=Path, default=Path("bench-out"), help="output directory (default bench-out/)")
    p.add_argument("--threads", type=int, default=2, help="threads for every engine (default 2)")
    return bench_scale.add_bench_args(p)


def settings_from(args: argparse.Namespace) -> Settings:
    quick = args.quick
    runs = args.runs if args.runs is not None else (2 if quick else 5)
    if runs < 1:
        raise SystemExit("--runs must be 1 or more")
    parallel = tuple(x.strip() for x in (args.parallel or ("1" if quick else "1,4,auto")).split(","))
    if any(x != "auto" and not x.isdigit() for x in parallel):
        raise SystemExit(f"--parallel {args.parallel}: counts or auto")
    return Settings(runs=runs, prefill_sizes=(128, 512) if quick else (128, 512, 2048),
                    decode_tokens=32 if quick else 128, streams=(1, 4) if quick else (1, 4, 8),
                    parallel=parallel, concurrency_runs=min(runs, 3), compile=not quick,
                    threads=args.threads, quick=quick)


def skipped_peers(names: list[str]) -> set[str]:
    out: set[str] = set()
    for name in names:
        if name in PEER_ALIASES:
            out.update(PEER_ALIASES[name])
        elif name in PEERS:
            out.add(name)
        else:
            raise SystemExit(f"--skip-peer {name}: unknown; known: {', '.join(PEERS)}, llama.cpp")
    return out


def say(msg: str) -> None:
    print(f"bench: {msg}", file=sys.stderr, flush=True)


class Prompts:
    """Token-id prompts shared by every engine (LSE's tokenizer; the GGUF has the same vocabulary)."""

    def __init__(self, model_dir: Path, longest: int):
        from tokenizers import Tokenizer

        tok = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        text = FILLER * (longest // 40 + 2)
        self.filler = tok.encode(text).ids[:longest]
        self.count = tok.encode(COUNT_PROMPT).ids
        self._k = 0

    def raw(self, n: int) -> list[int]:
        self._k += 1
        return [FIRST_ID + self._k] + self.filler[: n - 1]


def new_row(key: str, status: str, label: str = "", weights: str = "", path: str = "") -> dict:
    return {"key": key, "label": label or key, "weights": weights, "path": path, "status": status,
            "samples": {}, "errors": [], "weight_bytes_per_token": None}


def runner_row(r) -> dict:
    row = new_row(r.key, "ok", r.label, r.weights, r.path)
    row["weight_bytes_per_token"] = getattr(r, "weight_bytes_per_token", None)
    return row


def sample_keys(s: Settings) -> list[str]:
    return [f"prefill_{n}" for n in s.prefill_sizes] + ["decode", "decode_tokens", "ttft"]


def measure_part(runner, part: str, prompts: Prompts, s: Settings, values: dict, record: bool = True) -> None:
    """One of a round's measurements for one runner, into values."""
    if part == "prefill":
        for n in s.prefill_sizes if record else s.prefill_sizes[:1]:
            values[f"prefill_{n}"] = n / runner.prefill(prompts.raw(n))
    elif part == "decode":
        count, secs = runner.decode(prompts.count, s.decode_tokens if record else 8)
        values["decode"] = (count - 1) / secs if count > 1 and secs > 0 else None
        values["decode_tokens"] = count
    else:
        values["ttft"], values["reply"] = runner.chat(CHAT, CHAT_MAX_TOKENS)


def measure_once(runner, prompts: Prompts, s: Settings, row: dict, record: bool = True) -> None:
    """Every single-stream measurement for one runner (the warm-up: record=False)."""
    values: dict = {}
    for part in ("prefill", "decode", "ttft"):
        measure_part(runner, part, prompts, s, values, record)
    row["reply"] = values.pop("reply")
    if record:
        for k, v in values.items():
            row["samples"].setdefault(k, []).append(v)


def round_steps(order: list) -> list:
    """A round's (runner, part) steps: each engine's prefills and chat, then
    every engine's decode back to back, so a decode ratio compares moments
    seconds apart, not most of a round (the machine drifts within a minute).
    The chats stay apart: two runners share a server and its prefix cache."""
    return [(runner, part) for runner in order for part in ("prefill", "ttft")] + [(r, "decode") for r in order]


def run_rounds(runners: list, rows: dict, prompts: Prompts, s: Settings, result: dict, save) -> None:
    """Rounds of round_steps, the engines in an order that rotates by round.
    An engine that fails a round gets None for all of it."""
    for r in range(s.runs):
        order = runners[r % len(runners):] + runners[: r % len(runners)]
        values: dict[str, dict] = {runner.key: {} for runner in order}
        failed: set[str] = set()
        for runner, part in round_steps(order):
            if runner.key in failed:
                continue
            try:
                measure_part(runner, part, prompts, s, values[runner.key])
            except Exception as e:  # one engine failing a round leaves a gap, not a dead run
                failed.add(runner.key)
                rows[runner.key]["errors"].append(f"round {r + 1}: {type(e).__name__}: {e}")
                say(f"round {r + 1}: {runner.key} failed: {e}")
        for runner in order:
            row, got = rows[runner.key], values[runner.key]
            if "reply" in got:
                row["reply"] = got.pop("reply")
            for key in sample_keys(s):  # round i at index i, for the paired ratios
                row["samples"].setdefault(key, []).append(None if runner.key in failed else got.get(key))
        bw = bench_machine.measure_bandwidth(s.threads, repeats=1)
        for k, v in bw.items():
            result["machine"]["bandwidth"][k] += v
        result["machine"]["load"][f"round {r + 1}"] = bench_machine.load()
        say(f"round {r + 1}/{s.runs} done, load {bench_machine.load()}: " + "; ".join(
            f"{k} decode {row['samples'].get('decode', [None])[-1]}" for k, row in rows.items() if row["samples"]))
        save()


def run_concurrency(server: LseServer | None, parallel: str, prompts: Prompts, s: Settings, out: Output) -> dict:
    """Aggregate decode through lse-server --parallel P; starts that server
    unless given. On the default server (auto), also a long prompt beside a
    running stream."""
    own = server is None
    try:
        if own:
            say(f"starting lse-server --parallel {parallel} (compiles on a cache miss)")
            server = LseServer(parallel, s.threads, out.path(f"-server-p{parallel}.log"))
        entry = {"status": "ok", "startup_s": server.startup_s, "streams": {}}
        for _ in range(s.concurrency_runs):
            for n in s.streams:
                tokens, wall = aggregate_decode(server.port, [prompts.count] * n, s.decode_tokens)
                entry["streams"].setdefault(str(n), []).append(tokens / wall)
                say(f"--parallel {parallel}, {n} streams: {tokens / wall:.1f} tok/s ({tokens} tokens, {wall:.1f} s)")
        if parallel == "auto":
            entry["slots"] = server.slots()
            n = max(s.prefill_sizes)
            say(f"--parallel auto: a {n}-token prompt beside a running stream")
            try:
                entry["beside"] = prefill_beside_a_stream(server.port, prompts.count, prompts.raw(n), prompts.raw(n))
            except (BenchError, OSError) as e:
                entry["beside"] = {"status": f"failed: {e}"}
        entry["vm_hwm_bytes"] = server.vm_hwm_bytes()
        return entry
    except (BenchError, OSError) as e:
        return {"status": f"failed: {e}"}
    finally:
        if own and server is not None:
            server.stop()


def open_runners(s: Settings, skip: set[str], model_dir: Path, gguf_q4: Path, rows: dict, result: dict,
                 out: Output):
    """Every runner that comes up, in table order; a row for each that doesn't."""
    runners, server = [], None
    engine = LseEngineRunner(s.threads)
    result["engine_open_s"] = engine.open_s
    runners.append(engine)
    try:
        server = LseServer(1, s.threads, out.path("-server-p1.log"))
        runners += [LseHttpRunner(server, stream=False), LseHttpRunner(server, stream=True)]
    except BenchError as e:
        for key, path in (("lse-http", "HTTP, non-streamed"), ("lse-http-stream", "HTTP, streamed")):
            rows[key] = new_row(key, f"failed: {e}", "LSE", "Q4_1 GGUF, blocks kept", path)
    gguf_f32 = None
    if "llamacpp-f32" not in skip:
        try:
            from lse.compiler.cache import cache_dir

            gguf_f32 = ensure_f32_gguf(gguf_q4, cache_dir() / "bench")
        except (ImportError, OSError, ValueError) as e:
            say(f"no F32 GGUF: {e}")
    for key in PEERS:
        if key in skip:
            rows[key] = new_row(key, "skipped (--skip-peer)", *PEER_NAMES[key], "in-process")
            continue
        try:
            runners.append(open_peer(key, gguf_q4, gguf_f32, model_dir, s.threads, engine.engine.kv_len))
        except PeerMissing as e:
            rows[key] = new_row(key, str(e), *PEER_NAMES[key], "in-process")
        except Exception as e:  # a peer that fails to load is reported, never dropped
            rows[key] = new_row(key, f"failed to load: {type(e).__name__}: {e}", *PEER_NAMES[key], "in-process")
    for r in runners:
        rows[r.key] = runner_row(r)
    rows["lse-engine"]["weight_bytes_per_token"] = lse_bytes_per_token(model_dir)
    for key in {"lse-http", "lse-http-stream"} & rows.keys():
        rows[key]["weight_bytes_per_token"] = rows["lse-engine"]["weight_bytes_per_token"]
    return runners, server


ROW_ORDER = ("lse-engine", "lse-http", "lse-http-stream", *PEERS)


def notes(result: dict, s: Settings) -> list[str]:
    out = [
        "prefill N: a raw prompt of N token ids to its first token (max_tokens 1); its first id differs every "
        "time so no prefix cache helps; the caller's clock (streamed HTTP: the first chunk).",
        f"decode: {s.decode_tokens} greedy tokens continuing {COUNT_PROMPT!r}; (tokens − 1) / (last − first "
        "token) as the caller sees them; non-streamed HTTP sees only the end, so that row uses the server's "
        "timings.predicted_ms.",
        f"TTFT: {CHAT[0]['content']!r} through each engine's chat template, to the first content token; "
        f"non-streamed HTTP: the whole reply (≤ {CHAT_MAX_TOKENS} tokens), the first thing its client sees.",
        "decode / bandwidth limit: measured decode over (read bandwidth / bytes of weights per token); the "
        "bandwidth is the best of the run's samples (at the start, after each round, at the end), since other "
        "work only lowers a sample; KV-cache reads are left out (small at these lengths).",
        f"threads: {s.threads} everywhere (llama.cpp n_threads = n_threads_batch; torch.set_num_threads; "
        "IREE --task_topology_group_count).",
        f"concurrency: median of {s.concurrency_runs} runs; total completion tokens / wall time from the first "
        "request to the last reply (includes each stream's short prefill); llama.cpp: N sequences in one batch.",
        f"long prompt beside a stream: on the default server, a raw {max(s.prefill_sizes)}-token prompt "
        "(max_tokens 1) to its first token alone, then sent once a greedy stream of "
        f"{COUNT_PROMPT!r} has 16 tokens; the stream's gaps between text chunks from the send to the reply.",
    ]
    loads = [x for v in result["machine"]["load"].values() for x in v[:1]]
    if loads and max(loads) > BUSY_LOAD:
        out.append(f"the machine was busy (1-minute load up to {max(loads):.2f} on {result['machine']['cores']} "
                   "cores): absolute figures are low and noisy; the per-round ratios are the figures to read.")
    for row in result["rows"].values():
        if row["status"] != "ok":
            out.append(f"{row['key']}: {row['status']}")
        out += [f"{row['key']}: {e}" for e in row.get("errors", [])]
    return out


class Output:
    """The run's files in --out: bench-<time>.json (rewritten after every
    stage, so a long run can be watched), .md, .png and the server logs."""

    def __init__(self, out: Path):
        out.mkdir(parents=True, exist_ok=True)
        self.dir, self.stamp = out, time.strftime("%Y%m%d-%H%M%S")

    def path(self, suffix: str) -> Path:
        return self.dir / f"bench-{self.stamp}{suffix}"

    def save(self, result: dict, rows: dict) -> None:
        result["rows"] = {k: rows[k] for k in ROW_ORDER if k in rows}
        self.path(".json").write_text(json.dumps(result, indent=1) + "\n")

    def report(self, result: dict) -> str:
        md = bench_report.render_markdown(result)
        self.path(".md").write_text(md)
        try:
            bench_report.write_chart(result, self.path(".png"))
        except ImportError as e:
            say(f"no chart: {e} (pip install '.[bench]')")
        return md


def start_result(s: Settings, argv: list[str], model_dir: Path, gguf_q4: Path) -> dict:
    return {"started": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "argv": argv, "settings": asdict(s),
            "machine": bench_machine.machine(s.threads), "versions": bench_machine.versions(),
            "model": {"name": gguf_q4.name, "gguf": str(gguf_q4), "dir": str(model_dir)}, "rows": {},
            "concurrency": {}, "compile": {"status": "skipped (--quick)"}}


def warm_up(runners: list, rows: dict, prompts: Prompts, s: Settings) -> None:
    """One unrecorded pass each; a runner that fails here is out, with the reason in its row."""
    for runner in list(runners):
        try:
            measure_once(runner, prompts, s, rows[runner.key], record=False)
        except Exception as e:
            rows[runner.key]["status"] = f"failed in warm-up: {type(e).__name__}: {e}"
            traceback.print_exc()
            runners.remove(runner)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.scale:  # shaped files instead of the default model
        return bench_scale.from_bench(args)
    s = settings_from(args)
    skip = skipped_peers(args.skip_peer)
    out = Output(args.out)
    from lse.compiler.gguf.importer import default_gguf_path, ensure_default_model

    model_dir, gguf_q4 = ensure_default_model(), default_gguf_path()
    result = start_result(s, sys.argv[1:] if argv is None else list(argv), model_dir, gguf_q4)
    rows: dict[str, dict] = {}
    say(f"measuring memory bandwidth with {s.threads} threads")
    result["machine"]["bandwidth"] = bench_machine.measure_bandwidth(s.threads)
    if s.compile:
        say("timing a fresh compile (lse-compile --no-cache)")
        result["compile"] = measure_compile(model_dir, out.path("-compile.log"))
    say("peak RSS of LSE and llama.cpp, each in its own process")
    result["memory"] = measure_memory(gguf_q4, s.threads, DEFAULT_KV_LEN, "llamacpp-q4_1" not in skip)
    say("opening the LSE engine, lse-server and the peers")
    runners, server = open_runners(s, skip, model_dir, gguf_q4, rows, result, out)
    try:
        prompts = Prompts(model_dir, max(s.prefill_sizes))
        warm_up(runners, rows, prompts, s)
        out.save(result, rows)
        run_rounds(runners, rows, prompts, s, result, lambda: out.save(result, rows))
        for p in s.parallel:
            result["concurrency"][p] = run_concurrency(server if p == "1" else None, p, prompts, s, out)
            out.save(result, rows)
        if "llamacpp-q4_1" not in skip:  # as llama-server runs as many slots
            result["peer_streams"] = llamacpp_streams(gguf_q4, s.threads, s.streams, s.decode_tokens,
                                                      s.concurrency_runs, prompts.count)
    finally:
        for runner in runners:
            runner.close()
        if server is not None:
            server.stop()
    result["machine"]["load"]["end"] = bench_machine.load()
    for k, v in bench_machine.measure_bandwidth(s.threads, repeats=3).items():
        result["machine"]["bandwidth"][k] += v
    result["finished"] = time.strftime("%Y-%m-%d %H:%M:%S %Z")
    result["notes"] = notes(result, s)
    out.save(result, rows)
    print(out.report(result))
    say(f"wrote {out.path('.json')}, .md, .png")
    return 0


if __name__ == "__main__":
    sys.exit(main())
