"""The engines the device tier opens, as one table that the device tests and
``lse.tools.device_check`` share: the check compiles each case's cuda
artifact ahead (here, or on the device machine) and the tests open the same
case, so their compile-on-first-use finds it in the cache.

A case names a model (a fixture, the default model, or a directory given to
the check with ``--model``: the hook for 1B/7B-shaped checkpoints), the
context and slots the engine is opened with, and its ``--no-kernel``
declarations. ``compile_options`` is what the engine itself passes to the
compiler for that configuration (lse.runtime.engine), so both name the same
cache entry.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path

from lse.runtime.devices import DEVICE_KINDS

# The GPU the tier runs on; LSE_DEVICE names another (hip:0, or local:0 to
# run the tier's tests on the CPU), its compile target following.
DEVICE = os.environ.get("LSE_DEVICE", "cuda:0")
TARGET = DEVICE_KINDS[DEVICE.partition(":")[0]][1]
DEFAULT_MODEL = "default"  # a case's model: the packaged SmolLM2-135M-Instruct


@dataclass(frozen=True)
class Case:
    name: str
    model: str  # a fixture's name, DEFAULT_MODEL, or a model directory
    kv_len: int
    parallel: int = 1
    no_kernel: tuple[str, ...] = ()
    speculative: bool = False  # the artifact carries the verify entry (CompileOptions.speculative)

    def model_dir(self) -> Path:
        if self.model == DEFAULT_MODEL:
            from lse.compiler.gguf.importer import ensure_default_model

            return ensure_default_model()
        if self.model.startswith(GGUF_PREFIX):  # an architecture's seeded GGUF, written where it runs
            from lse.compiler.gguf.importer import ensure_imported
            from lse.fixtures.make_arch_fixtures import arch_gguf_path

            return ensure_imported(arch_gguf_path(self.model.removeprefix(GGUF_PREFIX)))
        from lse.fixtures.make_fixtures import FIXTURES, fixture_dir

        return fixture_dir(self.model) if self.model in FIXTURES else Path(self.model).resolve()

    def engine_config(self, **extra) -> dict:
        """lse_open's configuration for this case on the GPU."""
        return {"model": str(self.model_dir()), "pool": [DEVICE], "kv_len": self.kv_len,
                "parallel": self.parallel, "no_kernel": list(self.no_kernel),
                **({"speculative": "ngram"} if self.speculative else {}), **extra}

    def compile_options(self, model_dir: Path | None = None):
        """The CompileOptions the engine passes for this case (kv_dtype "auto")."""
        from lse.compiler.pipeline import CompileOptions
        from lse.compiler.targets import parse_no_kernel
        from lse.compiler.weights import default_kv_dtype

        model_dir = model_dir or self.model_dir()
        return CompileOptions(targets=(TARGET,), slots=self.parallel, no_kernel=parse_no_kernel(list(self.no_kernel)),
                              kv_dtype=default_kv_dtype(model_dir), kv_len=self.kv_len, speculative=self.speculative)


# The fixtures checked against the numpy reference: each architecture variant
# the compiler emits (llama, qwen2's q/k/v biases, qwen3's q/k norms, tied
# embeddings).
FIXTURE_CASES = tuple(Case(name, name, 128) for name in ("llama", "qwen2_bias", "qwen3_qk_norm", "tied_embeddings"))
# Each architecture's seeded GGUF (fixtures/make_arch_fixtures.py: block
# formats from Q4_0 to Q6_K, read in place), whose parts the GPU modules read
# from the artifact's block-parts file: against the numpy reference too.
GGUF_PREFIX = "gguf:"
GGUF_CASES = tuple(Case(f"gguf-{arch}", GGUF_PREFIX + arch, 128) for arch in ("llama", "qwen2", "qwen3", "phi3", "gemma3"))
# A host group on a GPU pool: silu declared kernel-less for cuda.
FALLBACK_CASE = Case("llama-no-silu", "llama", 64, no_kernel=(f"{TARGET}:silu",))
# The default model's greedy replies against the f32 reference.
DEFAULT_CASE = Case("default", DEFAULT_MODEL, 256)
# Throughput: up to 64 concurrent streams, prompts of up to 2048 tokens.
BENCH_STREAMS = (1, 8, 32, 64)
BENCH_PREFILLS = (512, 2048)
BENCH_CASE = Case("default-bench", DEFAULT_MODEL, 4096, parallel=max(BENCH_STREAMS))

TEST_CASES = (*FIXTURE_CASES, *GGUF_CASES, FALLBACK_CASE, DEFAULT_CASE)


def bench_case_for(model: str) -> Case:
    """The throughput case of a model given to the check with --model."""
    return Case(f"bench-{Path(model).name}", model, BENCH_CASE.kv_len, BENCH_CASE.parallel)


def portable_key(model_dir: Path, options) -> str:
    """What a cuda artifact depends on, leaving out this CPU (its features,
    its core count, the CPU kernels' build): the same key here and on the
    device machine for the same checkout, model shapes and options. The
    cache's own key (lse.compiler.cache) covers the CPU too, so an artifact
    compiled here is placed under the device machine's key when this one
    matches."""
    from lse.compiler.cache import _sources_digest
    from lse.compiler.config import load_config
    from lse.compiler.iree_compile import COMPILER_VERSION
    from lse.compiler.weights import read_tensors

    shaping = {k: v for k, v in load_config(model_dir).to_json().items()
               if k not in ("bos_token_id", "eos_token_id", "torch_dtype", "max_position_embeddings")}
    payload = {
        "config": shaping,
        "weights": sorted((n, t.dtype, list(t.shape)) for n, t in read_tensors(model_dir).items()),
        "targets": list(options.targets), "slots": options.slots, "kv_dtype": options.kv_dtype,
        "kv_len": options.kv_len, "no_kernel": {k: sorted(v) for k, v in sorted(options.no_kernel.items())},
        "no_cpu_fallback": options.no_cpu_fallback, "compiler": COMPILER_VERSION, "lse_compiler": _sources_digest(),
    }
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:24]
