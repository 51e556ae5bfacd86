"""LSE against llama.cpp on GGUF files with the shapes people serve (issue 37).

``python -m lse.bench.bench --scale 1b`` (or ``python -m lse.bench.bench_scale``)
writes, once, into ``<cache>/bench/scale/``, a GGUF with the exact shape of
Llama-3.2-1B / -3B or Qwen2.5-7B (bench_bytes.SHAPES; qwen2-1.5b: Qwen2.5-1.5B's,
as a qwen2 file with q/k/v biases) in a llama.cpp mix
(Q4_K_M, Q4_0, Q8_0): seeded random but valid blocks, the default model's
tokenizer, written with gguf.GGUFWriter, the output projection tied to the
embedding (decode reads the same bytes as an untied file's output). Then it
opens LSE in-process and llama.cpp (llama-cpp-python) on the same file and
alternates them: prefill of a raw prompt to its first token, and greedy
decode (EOS ignored) of N tokens, the same threads each. Beside each figure:
bytes of weights a token reads (bench_bytes: the GGUF's for llama.cpp, the
kernel layout's for LSE) and the read rate they imply. Then what LSE keeps
on disk for the file (lse_disk: its import and every cached artifact of it,
a hard-linked file once) against the file's size, and each engine's peak RSS
in a process of its own (bench_memory; ``--no-memory`` skips it).

"tiny" (hidden 256, 2 layers) and "tiny-qwen2" are smoke sizes that
exercise the whole path in seconds.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import inspect
import json
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import gguf
import numpy as np
from gguf.constants import GGML_QUANT_SIZES
from gguf.constants import GGMLQuantizationType as Q

from lse.bench.bench_bytes import MIXES, SHAPES, Shape, bytes_per_token, matrices
from lse.fixtures.make_gguf_fixtures import copy_tokenizer

SCALES = {**SHAPES, "tiny": Shape(256, 512, 2, 4, 2), "tiny-qwen2": Shape(256, 512, 2, 4, 2, arch="qwen2")}
SEED = 37


def random_blocks(rng: np.random.Generator, qtype: Q, rows: int, k: int) -> np.ndarray:
    """Random valid blocks (rows, bytes a row) of ``qtype``: any bytes, with
    the f16 scales set so that |w| ~ 0.05 (K-quants: d and dmin; Q6_K: its
    d at the block's end; Q4_0 / Q8_0: d first)."""
    block, size = GGML_QUANT_SIZES[qtype]
    raw = rng.integers(0, 256, (rows * k // block, size), dtype=np.uint8)
    f16 = lambda lo, hi: np.float16(rng.uniform(lo, hi, len(raw))).view(np.uint8).reshape(-1, 2)  # noqa: E731
    if qtype == Q.Q6_K:
        raw[:, 208:210] = f16(2e-5, 6e-5)
    elif qtype in (Q.Q4_K, Q.Q5_K):
        raw[:, 0:2], raw[:, 2:4] = f16(1e-4, 3e-4), f16(1e-4, 3e-4)
    elif qtype == Q.Q4_0:
        raw[:, 0:2] = f16(0.005, 0.01)
    elif qtype == Q.Q8_0:
        raw[:, 0:2] = f16(2e-4, 5e-4)
    else:
        raise ValueError(f"no random blocks for {qtype.name}")
    return raw.reshape(rows, -1)


def write_scale_gguf(path: Path, shape: Shape, mix: dict[str, str], source: Path, seed: int = SEED) -> None:
    """The shaped model at ``path``, with ``source``'s tokenizer and chat template."""
    reader = gguf.GGUFReader(source)
    rng = np.random.default_rng(seed)
    writer = gguf.GGUFWriter(path, arch=shape.arch)
    copy_tokenizer(reader, writer)
    vocab = len(reader.fields["tokenizer.ggml.tokens"].contents())
    if vocab != shape.vocab:
        raise ValueError(f"{source}: {vocab} tokens, the shape has {shape.vocab}")
    for add, value in ((writer.add_block_count, shape.layers), (writer.add_context_length, 8192),
                       (writer.add_embedding_length, shape.hidden), (writer.add_feed_forward_length, shape.ffn),
                       (writer.add_head_count, shape.heads), (writer.add_head_count_kv, shape.kv_heads),
                       (writer.add_rope_dimension_count, shape.hidden // shape.heads)):
        add(value)
    writer.add_layer_norm_rms_eps(1e-5)
    writer.add_rope_freq_base(1e6 if shape.arch == "qwen2" else 500000.0)
    writer.add_file_type(gguf.LlamaFileType[{"q4_k_m": "MOSTLY_Q4_K_M", "q4_0": "MOSTLY_Q4_0",
                                             "q8_0": "MOSTLY_Q8_0"}[_mix_name(mix)]])
    norm = lambda: (1.0 + 0.1 * rng.standard_normal(shape.hidden)).astype(np.float32)  # noqa: E731
    mats = matrices(shape)
    role, n, k = mats[-1]  # the tied output projection is the embedding table
    writer.add_tensor("token_embd.weight", random_blocks(rng, Q[mix[role].upper()], n, k),
                      raw_dtype=Q[mix[role].upper()])
    for i in range(shape.layers):
        writer.add_tensor(f"blk.{i}.attn_norm.weight", norm())
        writer.add_tensor(f"blk.{i}.ffn_norm.weight", norm())
        for role, n, k in mats[7 * i:7 * i + 7]:
            qtype = Q[mix[role].upper()]
            writer.add_tensor(f"blk.{i}.{role}.weight", random_blocks(rng, qtype, n, k), raw_dtype=qtype)
            if shape.arch == "qwen2" and role in ("attn_q", "attn_k", "attn_v"):
                writer.add_tensor(f"blk.{i}.{role}.bias", (0.02 * rng.standard_normal(n)).astype(np.float32))
    writer.add_tensor("output_norm.weight", norm())
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def _mix_name(mix: dict[str, str]) -> str:
    return next(name for name, m in MIXES.items() if m == mix)


def scale_gguf(scale: str, mix: str, cache: Path | None = None) -> Path:
    """The shaped file in the cache, written (atomically) if missing; keyed by
    what its bytes depend on: the writer's source, the shape, the mix, the seed."""
    from lse.compiler.cache import cache_dir
    from lse.compiler.gguf.importer import default_gguf_path

    what = [inspect.getsource(f) for f in (random_blocks, write_scale_gguf, copy_tokenizer)]
    digest = hashlib.sha256(repr((what, SCALES[scale], MIXES[mix], SEED)).encode()).hexdigest()[:12]
    final = (cache or cache_dir()) / "bench" / "scale" / f"{scale}-{mix}-{digest}.gguf"
    if final.is_file():
        return final
    final.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{scale}-{mix}-", suffix=".gguf", dir=final.parent)
    os.close(fd)
    try:
        write_scale_gguf(Path(tmp), SCALES[scale], MIXES[mix], default_gguf_path())
        os.replace(tmp, final)
    finally:
        Path(tmp).unlink(missing_ok=True)
    return final


class LseScaleRunner:
    """LSE in-process on the file: the raw-prompt calls bench_lse's runner makes, EOS ignored."""

    label = "LSE"

    def __init__(self, path: Path, threads: int):
        from lse.runtime import api

        self.api = api
        t0 = time.perf_counter()
        self.engine = api.lse_open({"model": str(path), "threads": threads})
        self.open_s = time.perf_counter() - t0

    def _times(self, ids: list[int], n: int) -> list[float]:
        t0, out = time.perf_counter(), []
        body = {"prompt": ids, "max_tokens": n, "temperature": 0, "ignore_eos": True, "stream": True}
        for ev in self.api.lse_request(self.engine, body, "completions").events():
            if ev["type"] == "error":
                raise RuntimeError(f"LSE: {ev['status']} {ev['data']}")
            out.append(time.perf_counter() - t0)
        return out

    def prefill(self, ids: list[int]) -> float:
        return self._times(ids, 1)[0]

    def decode(self, ids: list[int], n: int) -> tuple[int, float]:
        t = self._times(ids, n)[:-1]  # the last event is "done"
        return len(t), t[-1] - t[0]

    def close(self) -> None:
        self.engine.close()


def runners_by_env(path: Path, threads: int, variable: str) -> dict[str, LseScaleRunner]:
    """An engine on the file for ``variable`` = "0" and "1" (a kernel build
    switch such as LSE_KERNEL_AMX, read when the engine compiles and opens its
    artifact, so each gets its own), opened in turn; their open times said."""
    runners = {}
    for value in ("0", "1"):
        os.environ[variable] = value
        runners[value] = LseScaleRunner(path, threads)
        print(f"{variable}={value}: open {runners[value].open_s:.1f} s", flush=True)
    return runners


def lse_disk(gguf_path: Path) -> tuple[int, int]:
    """(bytes, artifacts): what LSE keeps on disk for the file, its import and
    every cached artifact compiled from it (any slots, context, kv dtype,
    target), each file once however many links it has (the shared layout)."""
    from lse.compiler.cache import cache_dir
    from lse.compiler.gguf.importer import ensure_imported

    model = ensure_imported(gguf_path)
    artifacts = [a for a in (cache_dir() / "artifacts").glob("*/manifest.json")
                 if json.loads(a.read_text()).get("model_dir") == str(model)]
    sizes = {}
    for d in [model, *(a.parent for a in artifacts)]:
        for f in d.rglob("*"):
            if f.is_file():
                st = f.stat()
                sizes[(st.st_dev, st.st_ino)] = st.st_size
    return sum(sizes.values()), len(artifacts)


@contextlib.contextmanager
def new_model_cache():
    """LSE's cache as a machine has it that has opened other models but not
    this one: LSE_CACHE_DIR pointed at a new directory beside the cache
    holding only a copy of its kernels' C objects (built once a machine), so
    an open imports, lays out and compiles. The variable is restored and the
    directory removed after."""
    from lse.compiler.cache import cache_dir

    real = cache_dir()
    real.mkdir(parents=True, exist_ok=True)
    before = os.environ.get("LSE_CACHE_DIR")
    with tempfile.TemporaryDirectory(prefix="first-open-", dir=real) as fresh:
        if (real / "kernels").is_dir():
            shutil.copytree(real / "kernels", Path(fresh) / "kernels")
        os.environ["LSE_CACHE_DIR"] = fresh
        try:
            yield Path(fresh)
        finally:
            if before is None:
                os.environ.pop("LSE_CACHE_DIR", None)
            else:
                os.environ["LSE_CACHE_DIR"] = before


def measure(scale: str, mix: str, threads: int, rounds: int, tokens: int, prompt: int, memory: bool = True,
            path: Path | None = None) -> dict:
    """Open both engines on the file (``path``, else scale_gguf's) and
    alternate them ``rounds`` times; then open LSE once more (its later
    open), LSE's disk, and each engine's peak RSS in a process of its own."""
    from lse.bench.bench_machine import measure_bandwidth
    from lse.bench.bench_memory import measure_memory
    from lse.bench.bench_peers import LlamaCppRunner, PeerMissing

    path = path or scale_gguf(scale, mix)
    reads = bytes_per_token(SCALES[scale], MIXES[mix])["total"]
    # The machine's read rate moves with other tenants' load (docs/kernels.md): read before and after.
    before = statistics.median(measure_bandwidth(threads, repeats=3)["read_gbs"])
    runners = {"lse": LseScaleRunner(path, threads)}
    result = {"file": str(path), "file_bytes": path.stat().st_size, "open_s": {"lse": runners["lse"].open_s},
              "bytes_per_token": {"lse": reads["layout"], "llama.cpp": reads["gguf"]}, "decode": {}, "prefill": {}}
    try:
        t0 = time.perf_counter()
        runners["llama.cpp"] = LlamaCppRunner("llamacpp-q4_1", mix, path, threads, max(2 * prompt, 512))
        result["open_s"]["llama.cpp"] = time.perf_counter() - t0
    except PeerMissing as e:
        result["llama.cpp"] = str(e)
    rng = np.random.default_rng(0)
    try:
        for _ in range(rounds):
            for key, r in runners.items():
                ids = rng.integers(1000, 40000, prompt).tolist()
                result["prefill"].setdefault(key, []).append(r.prefill(ids))
                n, dt = r.decode(ids[:8], tokens)
                result["decode"].setdefault(key, []).append((n - 1) / dt)
    finally:
        for r in runners.values():
            getattr(r, "close", lambda: None)()
    later = LseScaleRunner(path, threads)  # the artifact cached now: what every later open costs
    result["open_s"]["lse later"] = later.open_s
    later.close()
    result["read_gbs"] = {"before": before, "after": statistics.median(measure_bandwidth(threads, repeats=3)["read_gbs"])}
    result["disk"], result["artifacts"] = lse_disk(path)
    if memory:
        result["memory"] = measure_memory(path, threads, MEMORY_CTX, "llama.cpp" in result["open_s"], str(path))
    return result


MEMORY_CTX = 4096  # both engines' context for the peak-RSS processes


def _open_cell(result: dict, key: str) -> str:
    """An engine's open time; LSE's with its later open beside it, the first
    named where --first-open made it one, and each as a ratio to llama.cpp's load."""
    opens = result["open_s"]
    if key != "lse" or "lse later" not in opens:
        return f"{opens[key]:.1f}"
    peer = opens.get("llama.cpp")
    ratio = (lambda s: f" ({s / peer:.2f}x)") if peer else (lambda s: "")
    first = "first " if result.get("first_open") else ""
    return f"{first}{opens['lse']:.1f}{ratio(opens['lse'])}, later {opens['lse later']:.1f}{ratio(opens['lse later'])}"


def report(scale: str, mix: str, result: dict) -> str:
    machine = result.get("read_gbs")
    lines = [f"{scale} {mix}: {result['file']} ({result['file_bytes'] / 2**20:.0f} MiB), load {os.getloadavg()[0]:.2f}",
             "| engine | decode tok/s | GB/s read | share of the machine's | prefill s | open s |",
             "|---|---|---|---|---|---|"]
    for key in result["decode"]:
        tok_s = statistics.median(result["decode"][key])
        gbs = tok_s * result["bytes_per_token"][key] / 1e9
        share = f"{gbs / max(machine.values()):.0%}" if machine else "-"
        lines.append(f"| {key} | {tok_s:.2f} | {gbs:.2f} | {share} | {statistics.median(result['prefill'][key]):.3f} | "
                     f"{_open_cell(result, key)} |")
    if machine:
        lines.append(f"the machine read {machine['before']:.1f} GB/s before and {machine['after']:.1f} after "
                     "(bench_machine.measure_bandwidth; the share is of the higher)")
    if "llama.cpp" in result:
        lines.append(f"llama.cpp: {result['llama.cpp']}")
    lines.append(f"LSE on disk: {result['disk'] / 2**20:.0f} MiB, {result['disk'] / result['file_bytes']:.2f}x the file "
                 f"(its import and {result['artifacts']} artifact(s))")
    mem = result.get("memory")
    if mem:
        rss = {k: mem[k].get("rss") for k in ("lse", "llamacpp-q4_1") if k in mem}
        name = {"lse": "LSE", "llamacpp-q4_1": "llama.cpp"}  # bench_memory's keys; here both run this file
        said = ", ".join(f"{name[k]} {v / 2**20:.0f} MiB" if v else f"{name[k]} {mem[k]['status']}"
                         for k, v in rss.items())
        ratio = f" ({rss['lse'] / rss['llamacpp-q4_1']:.2f}x)" if all(rss.values()) and len(rss) == 2 else ""
        lines.append(f"peak RSS at context {mem['n_ctx']}, 128 greedy tokens, each in its own process: {said}{ratio}")
    return "\n".join(lines)


def add_bench_args(p: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """lse.bench.bench's --scale and --mix, added to its parser ``p``; ``p``."""
    p.add_argument("--scale", default=None, help="instead of the default model: LSE and llama.cpp on shaped GGUF "
                   "files written once into the cache (lse.bench.bench_scale), comma-separated: " + ", ".join(SCALES))
    p.add_argument("--mix", default=",".join(MIXES), help="with --scale: the files' formats (default all)")
    return p


def from_bench(args: argparse.Namespace) -> int:
    """lse.bench.bench --scale: its --runs, --threads, and --quick's shorter prompt and decode."""
    return main(["--scale", args.scale, "--mix", args.mix, "--threads", str(args.threads),
                 *(["--runs", str(args.runs)] if args.runs else []),
                 *(["--tokens", "32", "--prompt", "128"] if args.quick else [])])


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m lse.bench.bench_scale", description=__doc__.split("\n\n")[0])
    p.add_argument("--scale", default="1b", help="comma-separated: " + ", ".join(SCALES))
    p.add_argument("--mix", default="q4_k_m", help="comma-separated: " + ", ".join(MIXES))
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--runs", type=int, default=3, help="alternating rounds (default 3)")
    p.add_argument("--tokens", type=int, default=128, help="greedy decode tokens (default 128)")
    p.add_argument("--prompt", type=int, default=512, help="prefill prompt tokens (default 512)")
    p.add_argument("--no-memory", action="store_true", help="skip the peak-RSS processes")
    p.add_argument("--first-open", action="store_true",
                   help="LSE's open is its first of the file (new_model_cache: a cache without its artifacts)")
    a = p.parse_args(argv)
    for scale in a.scale.split(","):
        for mix in a.mix.split(","):
            path = scale_gguf(scale, mix)  # written into the real cache, before new_model_cache moves it
            with new_model_cache() if a.first_open else contextlib.nullcontext():
                result = measure(scale, mix, a.threads, a.runs, a.tokens, a.prompt, not a.no_memory, path)
            result["first_open"] = a.first_open
            print(report(scale, mix, result), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
