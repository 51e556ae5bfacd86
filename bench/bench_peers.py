"""Peers for ``lse.bench.bench``: llama.cpp (llama-cpp-python) on the shipped
Q4_1 GGUF and on an F32 GGUF of the same weights, and Hugging Face
transformers + torch CPU on LSE's imported f32 directory.

Each runner answers the same three calls as LSE's (see bench_lse): the time
from a raw token prompt to its first token, the decode time of N greedy
tokens, and the time to the first token of a chat prompt with the reply.
A peer whose package is absent raises ``PeerMissing`` saying what to install.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import time
from pathlib import Path

import numpy as np

PEERS = ("llamacpp-q4_1", "llamacpp-f32", "transformers")
# key → (engine, weights), the row's names whether or not the peer runs
PEER_NAMES = {
    "llamacpp-q4_1": ("llama.cpp", "Q4_1 (as shipped)"),
    "llamacpp-f32": ("llama.cpp", "F32 (dequantized GGUF)"),
    "transformers": ("transformers + torch", "f32 (lse-import --dequantize)"),
}
INSTALL_HINT = {
    "llamacpp-q4_1": "pip install '.[bench]' (llama-cpp-python)",
    "llamacpp-f32": "pip install '.[bench]' (llama-cpp-python)",
    "transformers": "pip install torch==2.13.0 transformers (the CPU build of torch)",
}


class PeerMissing(RuntimeError):
    """The peer can't run here; the message says why and how to install it."""


# ---- the F32 GGUF of the same weights ----------------------------------------------
def f32_gguf_path(src: Path, cache: Path) -> Path:
    st = src.stat()
    key = hashlib.sha256(f"{src.name}:{st.st_size}:{st.st_mtime_ns}".encode()).hexdigest()[:12]
    return cache / f"{src.name.split('.')[0]}-F32-{key}.gguf"


def ensure_f32_gguf(src: Path, cache: Path) -> Path:
    """The shipped GGUF with every tensor dequantized to f32 in place: the
    same names, metadata, tokenizer and (GGUF's own, permuted) Q/K layout."""
    dst = f32_gguf_path(src, cache)
    if dst.is_file():
        return dst
    import gguf

    cache.mkdir(parents=True, exist_ok=True)
    reader = gguf.GGUFReader(src)
    tmp = dst.with_suffix(f".tmp{os.getpid()}")
    writer = gguf.GGUFWriter(tmp, arch=reader.fields["general.architecture"].contents())
    for name, field in reader.fields.items():
        if name.startswith("GGUF.") or name == "general.architecture":
            continue  # the writer writes these itself
        if name == "general.file_type":
            writer.add_file_type(gguf.LlamaFileType.ALL_F32)
            continue
        sub = field.types[-1] if field.types[0] == gguf.GGUFValueType.ARRAY else None
        writer.add_key_value(name, field.contents(), field.types[0], sub)
    for t in reader.tensors:
        # (rows, cols) in numpy order: GGUF's ne reversed, as the writer expects
        arr = gguf.quants.dequantize(t.data, t.tensor_type).astype(np.float32)
        writer.add_tensor(t.name, arr.reshape(tuple(reversed([int(x) for x in t.shape]))))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    os.replace(tmp, dst)
    return dst


def gguf_bytes_per_token(path: Path) -> int:
    from gguf import GGUFReader

    from lse.bench.bench_report import weight_bytes_per_token

    sizes = {t.name: int(t.n_bytes) for t in GGUFReader(path).tensors}
    return weight_bytes_per_token(sizes, "token_embd.weight", tied="output.weight" not in sizes)


# ---- llama.cpp ----------------------------------------------------------------------
def amx_cpu() -> bool:
    """Whether this CPU has AMX tiles, where llama.cpp's extra buffer types stay off."""
    from lse.compiler.cpu_kernel_build import _cpu_flags

    return "amx_tile" in _cpu_flags()


@contextlib.contextmanager
def llama_cpp_params():
    """llama.cpp's model parameters as the peers use them: its defaults,
    except that on a CPU with AMX its extra buffer types (the AMX matmul and
    the repacked weights) are off, since llama-cpp-python 0.3.36's
    ggml_backend_amx_mul_mat segfaults on this project's Xeon at the first
    prompt batch (a Q4_1 file); llama.cpp then runs its AVX-512 code, as
    LSE's kernels do. Yields the llama_model_params; the high-level Llama
    takes them while the block lasts."""
    import llama_cpp.llama_cpp as C

    default = C.llama_model_default_params

    def params():
        p = default()
        if amx_cpu():
            p.use_extra_bufts = False
        return p

    C.llama_model_default_params = params
    try:
        yield params()
    finally:
        C.llama_model_default_params = default


class LlamaCppRunner:
    def __init__(self, key: str, weights: str, path: Path, threads: int, n_ctx: int):
        try:
            import llama_cpp
        except ImportError as e:
            raise PeerMissing(f"missing: {e} ({INSTALL_HINT[key]})") from e
        self.key, self.label, self.weights, self.path = key, "llama.cpp", weights, "in-process"
        self.version = llama_cpp.__version__
        with llama_cpp_params():
            self.llm = llama_cpp.Llama(model_path=str(path), n_threads=threads, n_threads_batch=threads,
                                       n_ctx=n_ctx, n_batch=512, seed=0, verbose=False)
        self.weight_bytes_per_token = gguf_bytes_per_token(path)

    def prefill(self, ids: list[int]) -> float:
        t0 = time.perf_counter()
        next(iter(self.llm.generate(ids, temp=0.0, reset=True)))
        return time.perf_counter() - t0

    def decode(self, ids: list[int], n: int) -> tuple[int, float]:
        """Greedy tokens; ``generate`` never stops by itself, like the counting prompt."""
        count, first = 0, 0.0
        for _ in self.llm.generate(ids, temp=0.0, reset=True):
            count += 1
            if count == 1:
                first = time.perf_counter()
            if count == n:
                break
        return count, time.perf_counter() - first

    def chat(self, messages: list[dict], max_tokens: int) -> tuple[float, str]:
        """The GGUF's own chat template (llama-cpp-python reads tokenizer.chat_template)."""
        t0 = time.perf_counter()
        ttft, parts = None, []
        for chunk in self.llm.create_chat_completion(messages, max_tokens=max_tokens, temperature=0.0,
                                                     stream=True):
            text = chunk["choices"][0]["delta"].get("content")
            if text:
                ttft = ttft or time.perf_counter() - t0
                parts.append(text)
        return ttft, "".join(parts)

    def close(self) -> None:
        self.llm.close()


def _load_model(L, path: Path):
    with llama_cpp_params() as params:
        return L.llama_model_load_from_file(str(path).encode(), params)


def llamacpp_streams(path: Path, threads: int, streams: tuple[int, ...], n: int, runs: int,
                     prompt: list[int]) -> dict:
    """llama.cpp decoding N sequences in one batch, as llama-server runs N
    parallel slots: the prompt prefilled once and its cache copied to each
    sequence, then n - 1 greedy steps of one token a sequence. Aggregate
    tok/s (N * n tokens / wall, the prefill included, as lse-server's
    concurrency measure counts it), ``runs`` times per N."""
    try:
        import llama_cpp as L
        from llama_cpp import _logger
    except ImportError as e:
        return {"status": f"missing: {e} ({INSTALL_HINT['llamacpp-q4_1']})"}
    _logger.set_verbose(False)
    width = max(streams)
    model = _load_model(L, path)
    if not model:
        return {"status": f"failed: llama.cpp could not load {path.name}"}
    cp = L.llama_context_default_params()
    per_seq = -(-(len(prompt) + n + 64) // 256) * 256
    cp.n_ctx, cp.n_seq_max, cp.n_batch, cp.n_ubatch = width * per_seq, width, 512, 512
    cp.n_threads = cp.n_threads_batch = threads
    ctx = L.llama_init_from_model(model, cp)
    batch = L.llama_batch_init(max(len(prompt), width), 0, 1)
    mem, vocab = L.llama_get_memory(ctx), L.llama_vocab_n_tokens(L.llama_model_get_vocab(model))

    def step(entries: list[tuple[int, int, int, bool]]) -> None:  # (token, position, sequence, logits)
        batch.n_tokens = len(entries)
        for i, (token, pos, seq, logits) in enumerate(entries):
            batch.token[i], batch.pos[i], batch.n_seq_id[i], batch.logits[i] = token, pos, 1, logits
            batch.seq_id[i][0] = seq
        if L.llama_decode(ctx, batch) != 0:
            raise RuntimeError("llama_decode failed")

    def greedy(i: int) -> int:
        return int(np.ctypeslib.as_array(L.llama_get_logits_ith(ctx, i), shape=(vocab,)).argmax())

    def aggregate(seqs: int) -> float:
        L.llama_memory_clear(mem, True)
        t0 = time.perf_counter()
        step([(t, p, 0, p == len(prompt) - 1) for p, t in enumerate(prompt)])
        tokens = [greedy(len(prompt) - 1)] * seqs
        for seq in range(1, seqs):
            L.llama_memory_seq_cp(mem, 0, seq, -1, -1)
        for pos in range(len(prompt), len(prompt) + n - 1):
            step([(tokens[seq], pos, seq, True) for seq in range(seqs)])
            tokens = [greedy(seq) for seq in range(seqs)]
        return seqs * n / (time.perf_counter() - t0)

    try:
        found: dict[str, list[float]] = {}
        for _ in range(runs):
            for w in streams:
                found.setdefault(str(w), []).append(aggregate(w))
        return {"status": "ok", "version": L.__version__, "streams": found}
    except RuntimeError as e:  # reported in the table, never dropped
        return {"status": f"failed: {e}"}
    finally:
        L.llama_batch_free(batch)
        L.llama_free(ctx)
        L.llama_model_free(model)


# ---- transformers ---------------------------------------------------------------------
class TransformersRunner:
    key, path = "transformers", "in-process"
    label, weights = PEER_NAMES["transformers"]

    def __init__(self, model_dir: Path, threads: int):
        try:
            import torch
            from transformers import AutoModelForCausalLM, AutoTokenizer
        except ImportError as e:
            raise PeerMissing(f"missing: {e} ({INSTALL_HINT['transformers']})") from e
        torch.set_num_threads(threads)
        self.torch = torch
        self.model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32).eval()
        self.tokenizer = AutoTokenizer.from_pretrained(model_dir)
        self.eos = set(self.model.generation_config.eos_token_id or []) if isinstance(
            self.model.generation_config.eos_token_id, list) else {self.model.generation_config.eos_token_id}
        sizes = {n: p.numel() * p.element_size() for n, p in self.model.named_parameters()}  # tied: once
        self.weight_bytes_per_token = sum(sizes.values())

    def _step(self, ids: list[int], past=None):
        """One forward pass; logits for the last position only, as generate() asks."""
        out = self.model(self.torch.tensor([ids]), cache=past, use_cache=True, logits_to_keep=1)
        return int(out.logits[0, -1].argmax()), out.cache

    def prefill(self, ids: list[int]) -> float:
        with self.torch.inference_mode():
            t0 = time.perf_counter()
            self._step(ids)
            return time.perf_counter() - t0

    def decode(self, ids: list[int], n: int) -> tuple[int, float]:
        with self.torch.inference_mode():
            token, past = self._step(ids)
            first = time.perf_counter()
            for _ in range(n - 1):
                token, past = self._step([token], past)
            return n, time.perf_counter() - first

    def chat(self, messages: list[dict], max_tokens: int) -> tuple[float, str]:
        with self.torch.inference_mode():
            t0 = time.perf_counter()
            ids = self.tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=True,
                                                     return_dict=False)
            token, past = self._step(list(ids))
            ttft = time.perf_counter() - t0
            out = [token]
            while len(out) < max_tokens and token not in self.eos:
                token, past = self._step([token], past)
                out.append(token)
            return ttft, self.tokenizer.decode([t for t in out if t not in self.eos])

    def close(self) -> None:
        self.model = None


def open_peer(key: str, gguf_q4: Path, gguf_f32: Path | None, model_dir: Path, threads: int, n_ctx: int):
    """The runner for ``key``, or PeerMissing."""
    if key == "llamacpp-q4_1":
        return LlamaCppRunner(key, PEER_NAMES[key][1], gguf_q4, threads, n_ctx)
    if key == "llamacpp-f32":
        if gguf_f32 is None:
            raise PeerMissing("missing: no F32 GGUF (the gguf package could not write it)")
        return LlamaCppRunner(key, PEER_NAMES[key][1], gguf_f32, threads, n_ctx)
    if key == "transformers":  # LSE serves the blocks as stored; torch reads the float32 import
        from lse.compiler.gguf.importer import ensure_default_model

        return TransformersRunner(ensure_default_model(dequantize=True), threads)
    raise ValueError(f"unknown peer {key!r}; known: {', '.join(PEERS)}")
