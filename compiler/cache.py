"""Compiled artifacts cached by content hash.

The key covers everything the modules depend on: the graph-shaping config
values, the weight names/shapes/dtypes (not their values, nor where they
live: weights are parameters read at load time), the targets, slots,
--no-kernel declarations, the iree-compile version, this CPU's features and
LSE's compiler sources. The same model compiled the same way again reuses the
artifact, and so does another checkpoint of the same shape: its manifest is
re-bound to that checkpoint's directory and parameter files. Except where the
artifact holds weights of its own (the CPU kernels' interleaved copy of
block matrices, kernel_layout.py): then the key names the parameter files
themselves (path, size, modification time), so a checkpoint rewritten or
another one compiles its own copy. That copy is written once per model into
``layouts/`` and hard-linked into every artifact of the model.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from dataclasses import replace
from pathlib import Path

from lse.compiler.config import load_config
from lse.compiler.cpu_kernel_build import amx, int_dots, isa, kernels_available, lanes, matvec_groups
from lse.compiler.iree_compile import COMPILER_VERSION
from lse.compiler.layout_store import link_or_copy, prune
from lse.compiler.manifest import MANIFEST_NAME, Manifest, read_manifest
from lse.compiler.pipeline import CompileOptions, compile_model, progress
from lse.compiler.targets import cpu_features
from lse.compiler.weights import parameter_files, read_tensors


def cache_dir() -> Path:
    """Where LSE keeps what it makes (imported models, fixtures, artifacts):
    ``$LSE_CACHE_DIR``, else ``$XDG_CACHE_HOME/lse``, else ``~/.cache/lse``.
    Not created here; whoever writes into it creates what it needs."""
    if os.environ.get("LSE_CACHE_DIR"):
        return Path(os.environ["LSE_CACHE_DIR"]).expanduser()
    if os.environ.get("XDG_CACHE_HOME"):
        return Path(os.environ["XDG_CACHE_HOME"]).expanduser() / "lse"
    return Path.home() / ".cache" / "lse"


def _sources_digest() -> str:
    h = hashlib.sha256()
    here = Path(__file__).parent
    for path in sorted([*here.glob("*.py"), *here.glob("gguf/*.py"), *here.glob("cpu_kernels/*.[ch]")]):
        h.update(str(path.relative_to(here)).encode() + path.read_bytes())
    return h.hexdigest()


def cache_key(model_dir: Path, options: CompileOptions) -> str:
    tensors = read_tensors(model_dir)
    shaping = {k: v for k, v in load_config(model_dir).to_json().items()
               if k not in ("bos_token_id", "eos_token_id", "torch_dtype", "max_position_embeddings")}
    payload = {
        "config": shaping,
        "weights": sorted((n, t.dtype, list(t.shape)) for n, t in tensors.items()),
        "targets": list(options.targets),
        "slots": options.slots,
        "kv_dtype": options.kv_dtype,
        "kv_len": options.kv_len,
        "kv_slack": options.kv_slack,
        "no_kernel": {k: sorted(v) for k, v in sorted(options.no_kernel.items())},
        "no_cpu_fallback": options.no_cpu_fallback,
        "speculative": options.speculative,
        "compiler": COMPILER_VERSION,
        "cpu": cpu_features(),
        "lse_compiler": _sources_digest(),
        "cpu_kernels": kernels_available() or f"built for x86-64-{isa()}, {lanes()} lanes, AMX GEMM {amx()}, int8 dots {int_dots()}",
        "matvec_groups": matvec_groups(),  # shapes the decode dispatches
    }
    if kernels_available() is None and any(t.is_blocks for t in tensors.values()):
        files = sorted({t.file for t in tensors.values()})
        payload["layout_of"] = [(str(f), f.stat().st_size, f.stat().st_mtime_ns) for f in files]
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:24]


def compiled_artifact(model_dir: str | Path, options: CompileOptions, report=progress) -> tuple[Path, Manifest]:
    """The cached artifact for this model and options, compiled on a miss.

    Compiles into a temporary directory beside the cache entry and renames it
    into place, so an interrupted compile never leaves a half artifact."""
    model_dir = Path(model_dir).resolve()
    key = cache_key(model_dir, options)
    final = cache_dir() / "artifacts" / key
    if (final / MANIFEST_NAME).is_file():
        report(f"cache hit: {final}")
        return final, _rebind(read_manifest(final), model_dir)
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f"{key}.", dir=final.parent))

    def in_place(line: str) -> None:
        # The compile writes into tmp, but every file it names is read from
        # final once the rename below is done: name that one.
        report(line.replace(str(tmp), str(final)))

    try:
        options = replace(options, layout_store=options.layout_store or cache_dir() / "layouts",
                          kernel_store=options.kernel_store or cache_dir() / "kernels")
        compile_model(model_dir, tmp, options, cache_key=key, report=in_place)
        try:
            tmp.rename(final)
        except OSError:  # another process finished the same compile first
            if not (final / MANIFEST_NAME).is_file():
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    pruned = prune(cache_dir() / "layouts", final.parent)
    if pruned.entries:
        report(str(pruned))
    return final, _rebind(read_manifest(final), model_dir)


def link_tree(src: Path, dst: Path) -> None:
    """``src``'s files at ``dst``, hard-linked where the file system allows
    (an artifact's modules and its weight layout take no second copy on disk)."""
    shutil.copytree(src, dst, dirs_exist_ok=True, copy_function=link_or_copy)


def _rebind(manifest: Manifest, model_dir: Path) -> Manifest:
    """The cached modules, with this checkpoint's directory and weights."""
    return replace(manifest, model_dir=str(model_dir), parameter_files=parameter_files(read_tensors(model_dir)),
                   model_config=load_config(model_dir).to_json())
