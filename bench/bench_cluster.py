"""``python -m lse.bench.bench_cluster [MODEL]``: LSE through Ray Serve against lse-server, same run.

``lse-server`` and lse-cluster's application (``lse.cluster.app``) on a local
Ray cluster (or ``--address``), with each replica count of ``--replicas``
(default 1 and 2) in turn. Each round measures lse-server and then the cluster
back to back, so both see the same machine load, with the same requests:

- hop latency: ``--latency-requests`` non-streamed chats of one token (the same
  short conversation, so the prefix is cached and the engine's part is small)
  and as many streamed ones (time to the first content chunk); medians. The
  cluster's figure minus lse-server's is what the Ray hop adds (client ->
  Serve proxy -> ingress -> replica and back).
- aggregate decode: ``--streams`` concurrent streams of ``--tokens`` tokens
  each (distinct prompts, end-of-turn biased away), completion tokens over
  wall time; the median of ``--rounds``.

On one machine the replicas share its cores, so 2 replicas measure the cost
of the split, not a second machine's worth of throughput; run it with
``--address`` on a cluster of several to see that.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import socket
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx

SERVER_MAIN = "import sys; from lse.api.cli import main; sys.exit(main())"
READY_TIMEOUT_S = 1800.0


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_ready(base_url: str, replicas: int | None, timeout: float = READY_TIMEOUT_S) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{base_url}/health", timeout=5).status_code == 200:
                if replicas is None:
                    return
                listed = httpx.get(f"{base_url}/v1/lse/status", timeout=5).json().get("replicas", [])
                if sum(1 for r in listed if r["engine"]) == replicas:
                    return
        except httpx.TransportError:
            pass
        time.sleep(0.5)
    raise RuntimeError(f"{base_url} was not ready in {timeout:.0f}s")


def no_eos_bias(base_url: str) -> dict[str, int]:
    info = httpx.get(f"{base_url}/tokenizer_info", timeout=30).json()
    return {str(i): -100 for i in info.get("eos_token_ids") or [info["eos_token_id"]]}


def chat(client: httpx.Client, body: dict[str, Any]) -> tuple[float, dict[str, Any] | None]:
    """(seconds to the reply, or to the first content chunk of a stream; the usage)."""
    start = time.perf_counter()
    if not body.get("stream"):
        reply = client.post("/v1/chat/completions", json=body)
        reply.raise_for_status()
        return time.perf_counter() - start, reply.json()["usage"]
    first, usage = None, None
    with client.stream("POST", "/v1/chat/completions", json={**body, "stream_options": {"include_usage": True}}) as r:
        r.raise_for_status()
        for line in r.iter_lines():
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            chunk = json.loads(line[6:])
            if first is None and any((c.get("delta") or {}).get("content") for c in chunk.get("choices", [])):
                first = time.perf_counter() - start
            usage = chunk.get("usage") or usage
    return (first if first is not None else time.perf_counter() - start), usage


def hop_latency(base_url: str, n: int) -> dict[str, float]:
    messages = [{"role": "user", "content": "Say yes."}]
    with httpx.Client(base_url=base_url, timeout=300) as client:
        chat(client, {"messages": messages, "max_tokens": 1})  # warm: the prefix is cached from here on
        plain = [chat(client, {"messages": messages, "max_tokens": 1})[0] for _ in range(n)]
        streamed = [chat(client, {"messages": messages, "max_tokens": 2, "stream": True})[0] for _ in range(n)]
    return {"reply_ms": 1000 * statistics.median(plain), "first_chunk_ms": 1000 * statistics.median(streamed)}


def aggregate(base_url: str, streams: int, tokens: int, round_index: int) -> float:
    bias = no_eos_bias(base_url)

    def one(i: int) -> int:
        body = {"messages": [{"role": "user", "content": f"Round {round_index}, story {i}: tell it at length."}],
                "max_tokens": tokens, "temperature": 0, "logit_bias": bias, "stream": True}
        with httpx.Client(base_url=base_url, timeout=900) as client:
            return chat(client, body)[1]["completion_tokens"]

    start = time.perf_counter()
    with ThreadPoolExecutor(streams) as pool:
        total = sum(pool.map(one, range(streams)))
    return total / (time.perf_counter() - start)


def measure(base_url: str, args: argparse.Namespace, round_index: int) -> dict[str, Any]:
    return {**hop_latency(base_url, args.latency_requests),
            "tok_s": aggregate(base_url, args.streams, args.tokens, round_index)}


def start_direct(args: argparse.Namespace) -> tuple[str, subprocess.Popen[bytes]]:
    port = free_port()
    cmd = [sys.executable, "-c", SERVER_MAIN, *([args.model] if args.model else []), "--port", str(port),
           "--parallel", str(args.parallel)]
    with open(args.out / "bench-cluster-lse-server.log", "wb") as log:
        server = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
    base_url = f"http://127.0.0.1:{port}"
    wait_ready(base_url, None)
    return base_url, server


def run(args: argparse.Namespace) -> dict[int, list[dict[str, Any]]]:
    """Per replica count, its rounds: each measures lse-server, then the
    cluster, back to back, so both see the same machine load."""
    import ray
    from ray import serve

    from lse.cluster.app import application
    from lse.cluster.options import build_parser

    direct_url, server = start_direct(args)
    port = free_port()
    ray.init(address=args.address or "local", include_dashboard=False, logging_level=logging.WARNING)
    results: dict[int, list[dict[str, Any]]] = {}
    try:
        serve.start(http_options={"host": "127.0.0.1", "port": port})
        base_url = f"http://127.0.0.1:{port}"
        for n in args.replicas:
            argv = [*([args.model] if args.model else []), "--replicas", str(n), "--parallel", str(args.parallel),
                    "--replica-cpus", str(args.replica_cpus)]
            serve.run(application(build_parser().parse_args(argv)), name="lse-bench", route_prefix="/")
            wait_ready(base_url, n)
            results[n] = [{"lse-server": measure(direct_url, args, 2 * r),
                           "cluster": measure(base_url, args, 2 * r + 1),
                           "load1": os.getloadavg()[0]} for r in range(args.rounds)]
            serve.delete("lse-bench")
    finally:
        serve.shutdown()
        ray.shutdown()
        server.terminate()
        server.wait(60)
    return results


def report(results: dict[int, list[dict[str, Any]]], args: argparse.Namespace) -> str:
    def med(rounds: list[dict[str, Any]], side: str, key: str) -> float:
        return statistics.median(r[side][key] for r in rounds)

    def med_diff(rounds: list[dict[str, Any]], key: str) -> float:
        return statistics.median(r["cluster"][key] - r["lse-server"][key] for r in rounds)

    loads = [r["load1"] for rounds in results.values() for r in rounds]
    lines = [f"{args.streams} streams x {args.tokens} tokens, --parallel {args.parallel}, {args.rounds} rounds "
             f"(lse-server then the cluster, back to back), {os.cpu_count()} cores, 1-minute load "
             f"{min(loads):.1f}-{max(loads):.1f}; latencies: medians of {args.latency_requests}; "
             "cells: medians of the rounds", "",
             "| setup | aggregate tok/s | lse-server's, same rounds | ratio | 1-token reply (ms) | "
             "first stream chunk (ms) | Ray hop: reply / chunk (ms) |",
             "|---|---|---|---|---|---|---|"]
    for n, rounds in results.items():
        ratio = statistics.median(r["cluster"]["tok_s"] / r["lse-server"]["tok_s"] for r in rounds)
        lines.append(f"| Ray Serve, {n} replica{'s' if n > 1 else ''} | {med(rounds, 'cluster', 'tok_s'):.1f} | "
                     f"{med(rounds, 'lse-server', 'tok_s'):.1f} | {ratio:.2f}x | "
                     f"{med(rounds, 'cluster', 'reply_ms'):.1f} "
                     f"(lse-server {med(rounds, 'lse-server', 'reply_ms'):.1f}) | "
                     f"{med(rounds, 'cluster', 'first_chunk_ms'):.1f} "
                     f"(lse-server {med(rounds, 'lse-server', 'first_chunk_ms'):.1f}) | "
                     f"{med_diff(rounds, 'reply_ms'):+.1f} / {med_diff(rounds, 'first_chunk_ms'):+.1f} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m lse.bench.bench_cluster", description=__doc__.split("\n")[0])
    p.add_argument("model", nargs="?", default=None, help="model, artifact or GGUF (default: LSE's default model)")
    p.add_argument("--replicas", type=lambda s: [int(x) for x in s.split(",")], default=[1, 2])
    p.add_argument("--streams", type=int, default=4)
    p.add_argument("--tokens", type=int, default=128)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--parallel", type=int, default=4, help="each server's and replica's --parallel (default 4)")
    p.add_argument("--latency-requests", type=int, default=20)
    p.add_argument("--replica-cpus", type=float, default=0.5)
    p.add_argument("--address", default=None, help="a Ray cluster to run the replicas on (default: a local one)")
    p.add_argument("--out", type=Path, default=Path("bench-out"))
    args = p.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    results = run(args)
    text = report(results, args)
    print(text)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    (args.out / f"bench-cluster-{stamp}.md").write_text(text + "\n")
    (args.out / f"bench-cluster-{stamp}.json").write_text(json.dumps(
        {"args": {k: str(v) for k, v in vars(args).items()}, "rounds": {str(n): r for n, r in results.items()}},
        indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
