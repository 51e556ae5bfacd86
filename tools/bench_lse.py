"""LSE's side of ``lse.tools.bench``: the in-process engine, lse-server over
HTTP (non-streamed and streamed), concurrent streams, and a fresh compile.

Runners answer three calls (the peers in bench_peers answer the same):
``prefill(ids)`` seconds from a raw token prompt to its first token;
``decode(ids, n)`` (tokens, seconds from the first token to the last);
``chat(messages, max_tokens)`` (seconds to the first content token, reply).
A reply that reused cached prompt tokens raises: the benchmark varies the
first token of every prompt so that each prefill is a real one.
"""

from __future__ import annotations

import http.client
import json
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

SERVER_MAIN = "import sys; from lse.api.cli import main; sys.exit(main())"
COMPILE_MAIN = "import sys; from lse.compiler.cli import main; sys.exit(main())"


class BenchError(RuntimeError):
    """A measurement went wrong; the message says how."""


def _check(status: int, body: dict, what: str, allow_cached: bool = False) -> dict:
    if status != 200:
        raise BenchError(f"{what}: HTTP {status}: {json.dumps(body)[:300]}")
    cached = body.get("usage", {}).get("prompt_tokens_details", {}).get("cached_tokens", 0)
    if cached and not allow_cached:
        raise BenchError(f"{what}: {cached} prompt tokens came from the prefix cache; the prefill was not real")
    return body


def _content(chunk: dict) -> str:
    choice = (chunk.get("choices") or [{}])[0]
    return choice.get("text") or (choice.get("delta") or {}).get("content") or ""


# ---- in-process -------------------------------------------------------------------
class LseEngineRunner:
    key, label, weights, path = "lse-engine", "LSE", "Q4_1 GGUF, blocks kept", "engine, in-process"

    def __init__(self, threads: int):
        from lse.runtime import api

        self.api = api
        t0 = time.perf_counter()
        self.engine = api.lse_open({"model": None, "threads": threads})
        self.open_s = time.perf_counter() - t0

    def _events(self, body: dict, endpoint: str):
        """(seconds since submit, event) for each event of the request."""
        t0 = time.perf_counter()
        for ev in self.api.lse_request(self.engine, body, endpoint).events():
            yield time.perf_counter() - t0, ev

    def prefill(self, ids: list[int]) -> float:
        for t, ev in self._events({"prompt": ids, "max_tokens": 1, "temperature": 0}, "completions"):
            if ev["type"] != "chunk":
                _check(200 if ev["type"] == "done" else ev["status"], ev["data"], "prefill")
                return t
        raise BenchError("prefill: no terminal event")

    def decode(self, ids: list[int], n: int) -> tuple[int, float]:
        first = None
        for t, ev in self._events({"prompt": ids, "max_tokens": n, "temperature": 0}, "completions"):
            if ev["type"] == "chunk" and first is None and _content(ev["data"]):
                first = t
            elif ev["type"] != "chunk":
                body = _check(200 if ev["type"] == "done" else ev["status"], ev["data"], "decode", True)
                return body["usage"]["completion_tokens"], t - first
        raise BenchError("decode: no terminal event")

    def chat(self, messages: list[dict], max_tokens: int) -> tuple[float, str]:
        ttft, parts = None, []
        body = {"messages": messages, "max_tokens": max_tokens, "temperature": 0}
        for t, ev in self._events(body, "chat.completions"):
            if ev["type"] == "chunk" and _content(ev["data"]):
                ttft = ttft or t
                parts.append(_content(ev["data"]))
            elif ev["type"] != "chunk":
                _check(200 if ev["type"] == "done" else ev["status"], ev["data"], "chat")
        return ttft, "".join(parts)

    def close(self) -> None:
        self.api.lse_close(self.engine)


# ---- lse-server -----------------------------------------------------------------------
def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LseServer:
    """``lse-server`` as a subprocess on a free loopback port."""

    def __init__(self, parallel: int | str, threads: int, log_path: Path, ready_timeout_s: float = 1200):
        self.parallel, self.port, self.log_path = parallel, free_port(), log_path
        cmd = [sys.executable, "-c", SERVER_MAIN, "--host", "127.0.0.1", "--port", str(self.port),
               "--parallel", str(parallel), "--threads", str(threads)]
        self._log = open(log_path, "wb")
        t0 = time.perf_counter()
        self.proc = subprocess.Popen(cmd, stdout=self._log, stderr=subprocess.STDOUT)
        self._wait_ready(ready_timeout_s)
        self.startup_s = time.perf_counter() - t0

    def _wait_ready(self, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise BenchError(f"lse-server exited with {self.proc.returncode}: {self.log_tail()}")
            try:
                status, _ = request(self.port, "GET", "/health", None, timeout=5)
                if status == 200:
                    return
            except OSError:
                pass
            time.sleep(0.5)
        self.stop()
        raise BenchError(f"lse-server not ready after {timeout_s:.0f} s: {self.log_tail()}")

    def log_tail(self, n: int = 800) -> str:
        self._log.flush()
        return self.log_path.read_text(errors="replace")[-n:]

    def slots(self) -> int | None:
        """The slots the server took (its startup line, for --parallel auto)."""
        for line in self.log_path.read_text(errors="replace").splitlines():
            if line.startswith("lse: model ") and " slot(s)" in line:
                return int(line.rsplit(", ", 1)[1].split()[0])
        return None

    def vm_hwm_bytes(self) -> int | None:
        """Peak resident set of the server process (Linux /proc)."""
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
        return None

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._log.close()


def request(port: int, method: str, path: str, body: dict | None, timeout: float = 900) -> tuple[int, dict]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        data = json.dumps(body).encode() if body is not None else None
        conn.request(method, path, body=data, headers={"Content-Type": "application/json"})
        resp = conn.getresponse()
        raw = resp.read()
        return resp.status, json.loads(raw) if raw else {}
    finally:
        conn.close()


class LseHttpRunner:
    """The server's /v1 routes, a new loopback connection per request: uvicorn
    closes idle keep-alive connections after 5 s, less than a round takes."""

    key_prefix, label, weights = "lse-http", "LSE", "Q4_1 GGUF, blocks kept"

    def __init__(self, server: LseServer, stream: bool):
        self.server, self.stream = server, stream
        self.key = "lse-http-stream" if stream else "lse-http"
        self.path = "HTTP, streamed" if stream else "HTTP, non-streamed"

    def _post(self, route: str, body: dict, allow_cached: bool = False) -> tuple[float, dict, float | None, str]:
        """(seconds to the end, final body, seconds to the first content, content)."""
        t0 = time.perf_counter()
        if not self.stream:
            status, reply = request(self.server.port, "POST", route, body)
            reply = _check(status, reply, route, allow_cached)
            choice = reply["choices"][0]
            text = choice.get("text") or (choice.get("message") or {}).get("content") or ""
            return time.perf_counter() - t0, reply, None, text
        body = {**body, "stream": True, "stream_options": {"include_usage": True}}
        conn = http.client.HTTPConnection("127.0.0.1", self.server.port, timeout=900)
        try:
            conn.request("POST", route, body=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
            resp = conn.getresponse()
            if resp.status != 200:
                _check(resp.status, json.loads(resp.read() or b"{}"), route)
            first, parts, last = None, [], {}
            for line in resp:
                if not line.startswith(b"data: ") or line.strip() == b"data: [DONE]":
                    continue
                chunk = json.loads(line[6:])
                if _content(chunk):
                    first = first or time.perf_counter() - t0
                    parts.append(_content(chunk))
                if chunk.get("usage"):
                    last = chunk
        finally:
            conn.close()
        return time.perf_counter() - t0, _check(200, last, route, allow_cached), first, "".join(parts)

    def prefill(self, ids: list[int]) -> float:
        end, _, first, _ = self._post("/v1/completions", {"prompt": ids, "max_tokens": 1, "temperature": 0})
        return first if self.stream and first is not None else end

    def decode(self, ids: list[int], n: int) -> tuple[int, float]:
        """Streamed: first to last chunk as the client sees them. Non-streamed:
        the client sees only the end, so this is the server's own ``timings``."""
        body = {"prompt": ids, "max_tokens": n, "temperature": 0}
        end, reply, first, _ = self._post("/v1/completions", body, allow_cached=True)
        count = reply["usage"]["completion_tokens"]
        if self.stream:
            return count, end - first
        return count, reply["timings"]["predicted_ms"] / 1000.0

    def chat(self, messages: list[dict], max_tokens: int) -> tuple[float, str]:
        """Streamed: the first content chunk. Non-streamed: the whole reply (its
        first token is in it, and the client can see nothing sooner)."""
        body = {"messages": messages, "max_tokens": max_tokens, "temperature": 0}
        end, _, first, text = self._post("/v1/chat/completions", body)
        return (first if self.stream else end), text

    def close(self) -> None:
        pass  # the server is stopped by its owner


def aggregate_decode(port: int, prompts: list[list[int]], n: int) -> tuple[int, float]:
    """Every prompt at once, each on its own connection, non-streamed:
    (completion tokens in all, seconds from the first request to the last reply)."""
    results: list[int | BaseException] = [0] * len(prompts)

    def one(i: int) -> None:
        try:
            status, reply = request(port, "POST", "/v1/completions",
                                    {"prompt": prompts[i], "max_tokens": n, "temperature": 0})
            results[i] = _check(status, reply, "stream", True)["usage"]["completion_tokens"]
        except BaseException as e:  # reported below, in the caller's thread
            results[i] = e

    pool = [threading.Thread(target=one, args=(i,)) for i in range(len(prompts))]
    t0 = time.perf_counter()
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    wall = time.perf_counter() - t0
    for r in results:
        if isinstance(r, BaseException):
            raise BenchError(f"concurrent streams: {r}") from r
    return sum(results), wall


def _stream_times(port: int, body: dict, times: list[float], started: threading.Event) -> None:
    """A streamed completion; the clock time of each chunk that carries text."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=900)
    try:
        conn.request("POST", "/v1/completions", body=json.dumps({**body, "stream": True}).encode(),
                     headers={"Content-Type": "application/json"})
        resp = conn.getresponse()
        if resp.status != 200:
            raise BenchError(f"stream: HTTP {resp.status}: {resp.read()[:200]!r}")
        for line in resp:
            if line.startswith(b"data: {") and json.loads(line[6:])["choices"]:
                times.append(time.perf_counter())
                started.set()
    finally:
        started.set()
        conn.close()


def prefill_beside_a_stream(port: int, stream_ids: list[int], prompt: list[int], alone_prompt: list[int],
                            stream_tokens: int = 256, lead: int = 16) -> dict:
    """A long prompt arriving while another request streams: the prompt's
    seconds to its first token, alone and beside the stream, and the
    stream's gaps between tokens before it and while it is prefilled."""
    def first_token(ids: list[int]) -> float:
        t0 = time.perf_counter()
        status, reply = request(port, "POST", "/v1/completions", {"prompt": ids, "max_tokens": 1, "temperature": 0})
        _check(status, reply, "long prompt")
        return time.perf_counter() - t0

    alone = first_token(alone_prompt)
    times: list[float] = []
    started, failed = threading.Event(), []

    def run() -> None:
        try:
            _stream_times(port, {"prompt": stream_ids, "max_tokens": stream_tokens, "temperature": 0}, times,
                          started)
        except BaseException as e:  # reported below
            failed.append(e)

    reader = threading.Thread(target=run)
    reader.start()
    started.wait()
    while len(times) < lead and reader.is_alive():
        time.sleep(0.005)
    sent = time.perf_counter()
    beside = first_token(prompt)
    done = time.perf_counter()
    reader.join()
    if failed:
        raise BenchError(f"stream beside a long prompt: {failed[0]}") from failed[0]
    gaps = np.diff(times)
    during = gaps[(np.asarray(times[1:]) > sent) & (np.asarray(times[:-1]) < done)]
    before = gaps[np.asarray(times[1:]) <= sent]
    if len(during) == 0 or len(before) == 0:
        raise BenchError(f"the stream ended before the long prompt was done ({len(times)} tokens)")
    return {"prompt_tokens": len(prompt), "ttft_alone_s": alone, "ttft_beside_s": beside,
            "gap_before_p50_s": float(np.median(before)), "gap_during_p50_s": float(np.median(during)),
            "gap_during_p99_s": float(np.percentile(during, 99)), "gap_during_max_s": float(during.max()),
            "gaps_during": len(during)}


def lse_bytes_per_token(model_dir: Path) -> int:
    """Bytes of weights a decode token reads: block matrices in the CPU kernels' layout."""
    from lse.compiler.config import load_config
    from lse.compiler.weights import read_tensors
    from lse.tools.bench_bytes import layout_sizes
    from lse.tools.bench_report import weight_bytes_per_token

    sizes = layout_sizes(read_tensors(model_dir))
    return weight_bytes_per_token(sizes, "model.embed_tokens.weight", load_config(model_dir).tie_word_embeddings)


def measure_compile(model_dir: Path, log_path: Path) -> dict:
    """``lse-compile --no-cache`` into a temporary directory: seconds, and the
    artifact's bytes apart from (layout_bytes) the kernels' interleaved copy
    of the block weights it holds."""
    from lse.compiler.kernel_layout import LAYOUT_FILE

    with tempfile.TemporaryDirectory(prefix="lse-bench-compile-") as tmp:
        out = Path(tmp) / "artifact"
        t0 = time.perf_counter()
        with open(log_path, "wb") as log:
            run = subprocess.run([sys.executable, "-c", COMPILE_MAIN, str(model_dir), "-o", str(out), "--no-cache"],
                                 stdout=log, stderr=subprocess.STDOUT)
        seconds = time.perf_counter() - t0
        if run.returncode != 0:
            return {"status": f"failed: lse-compile exited {run.returncode} (see {log_path.name})"}
        layout = out / LAYOUT_FILE
        layout_bytes = layout.stat().st_size if layout.is_file() else 0
        size = sum(p.stat().st_size for p in out.rglob("*") if p.is_file()) - layout_bytes
    weights = sum(p.stat().st_size for p in Path(model_dir).glob("*.safetensors"))
    return {"status": "ok", "seconds": seconds, "artifact_bytes": size, "layout_bytes": layout_bytes,
            "weights_bytes": weights}
