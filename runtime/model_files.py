"""What the model set needs of files and engines: a model as the operator
named it (ModelSpec), a model's name from its path, the models a directory holds, what a loaded engine holds in memory, and
giving an unloaded engine's memory back (lse.runtime.models)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class ModelSpec:
    """One model as the operator named it: ``path`` None is LSE's default model."""

    name: str
    path: str | None
    aliases: tuple[str, ...] = ()


def engine_memory(engine: Any) -> int:
    """What a loaded engine holds, in bytes: its weights plus its KV cache
    (slots x context x layers x K and V, in its element type). Weights on a
    device are the tensors as stored (block formats stay packed); on the host
    interpreter (device cpu:0) every weight becomes a float32 copy as it is
    first used, so each counts 4 bytes an element. Scratch buffers IREE
    allocates per call are not counted: the runtime does not know their size."""
    import math

    from lse.compiler.weights import read_tensors
    from lse.runtime.backend import cache_bytes

    tensors = read_tensors(engine.model_dir).values()
    if getattr(engine.backend, "name", None) == "cpu:0":
        weights = sum(4 * math.prod(t.shape) for t in tensors)
    else:
        weights = sum(t.nbytes for t in tensors)
    kv_dtype = getattr(engine.backend, "kv_dtype", "f32")
    slabs = getattr(getattr(engine.backend, "layout", None), "slabs", None)  # compiler/kv_layout.py
    return weights + cache_bytes(engine.cfg, engine.slots, engine.kv_len, kv_dtype, slabs)


def check_spec(spec: ModelSpec) -> None:
    """What can be known of a model before any other is unloaded for it: its
    path is there, and a GGUF file's header (architecture, options, tensors,
    tokenizer) or a directory's config.json is one LSE serves. Raises
    RuntimeError with the reason; the default model (path None) passes."""
    if spec.path is None:
        return
    from lse.compiler.config import load_config
    from lse.compiler.gguf.importer import check_supported

    path = Path(spec.path)
    try:
        if path.is_file():
            check_supported(path)
        elif path.is_dir():
            load_config(path)
        else:
            raise RuntimeError(f"{path}: no such file or directory")
    except RuntimeError:
        raise
    except Exception as exc:  # noqa: BLE001 - any reason the model can't be served, said as the load's
        raise RuntimeError(f"{path}: {exc}") from exc


def release_memory() -> None:
    """Give an unloaded engine's memory back to the system: collect its
    cycles, then glibc's malloc_trim, since freed heap pages (numpy's float32
    weight copies among them) otherwise stay in the process."""
    import ctypes
    import gc

    gc.collect()
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):  # not glibc: nothing to trim
        pass


def model_specs(paths: Iterable[str], named: dict[str, str], aliases: dict[str, list[str]]) -> list[ModelSpec]:
    """The specs of the models named on the command line: each path's name is
    the one ``named`` gives it (``--served-model-name NAME=PATH``), else its stem."""
    by_path = {str(Path(p).expanduser().resolve()): n for n, p in named.items()}
    specs = []
    for path in paths:
        name = by_path.get(str(Path(path).expanduser().resolve())) or model_name(Path(path))
        specs.append(ModelSpec(name, path, tuple(aliases.get(name, ()))))
    return specs


def alias_pairs(items: Iterable[str], what: str) -> dict[str, list[str]]:
    """``NAME=ALIAS`` items (lse-server's --alias, lse_config.aliases) by name;
    a malformed one is refused at startup, naming ``what`` gave it."""
    from lse.runtime.engine import LseStartupError  # engine is heavy; only a refusal needs it

    out: dict[str, list[str]] = {}
    for item in items:
        name, sep, alias = item.partition("=")
        if not sep or not name or not alias:
            raise LseStartupError(f"{what} {item!r}: expected NAME=ALIAS")
        out.setdefault(name, []).append(alias)
    return out


def model_name(path: Path) -> str:
    """A GGUF file's name without its suffixes (importer.gguf_model_name:
    ``SmolLM2-135M-Instruct.Q4_1.gguf`` is ``SmolLM2-135M-Instruct``,
    ``Qwen2.5-1.5B-Instruct-Q4_K_M.gguf`` keeps its stem), else the directory's name."""
    if path.suffix.lower() != ".gguf":
        return path.name
    from lse.compiler.gguf.importer import gguf_model_name

    return gguf_model_name(path)


def scan_dir(directory: Path) -> list[Path]:
    """Every GGUF file and model directory (config.json) or artifact
    (manifest.json) directly in ``directory``, by name."""
    found = []
    for child in sorted(Path(directory).expanduser().iterdir()):
        if child.is_file() and child.suffix.lower() == ".gguf":
            found.append(child)
        elif child.is_dir() and ((child / "config.json").is_file() or (child / "manifest.json").is_file()):
            found.append(child)
    return found
