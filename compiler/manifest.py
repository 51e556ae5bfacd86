"""The one contract between compiler and runtime: the artifact manifest.

Both sides import this module. The runtime refuses a manifest whose
``abi_version`` or entry points differ from what it was built for, saying
"recompile with lse-compile".
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

# 2: kv_dtype; 3: several modules per target, each entry point names its own;
# 4: logits_node, the id of the graph node that writes the logits; 5: kv_layout
ABI_VERSION = 5
MANIFEST_NAME = "manifest.json"
# Entry-point modes the runtime calls; every target artifact provides them.
REQUIRED_MODES = ("prefill", "decode")


class ManifestError(ValueError):
    pass


@dataclass(frozen=True)
class EntryPoint:
    """One function of a compiled module: what goes in and what comes out, in order.
    The emitter writes it (emit_module.py), the pipeline names its module, the
    runtime calls it (backend.py)."""

    name: str
    mode: str  # "prefill" | "decode" | "decode1" | "decode_r<R>" | "verify" | "lm_head_all" | "copy_kv"
    inputs: tuple[str, ...]  # graph values (and a bucket's "slot_ids"), in argument order
    scalars: tuple[str, ...]  # i64 scalars after the inputs: "slot" (prefill), "window"
    uses_cache: bool  # the cache is the last argument and result 0
    outputs: tuple[str, ...]  # graph values after the cache result
    module: str = ""  # the module file (in TargetArtifact.modules) that exports it; set once modules are split

    @classmethod
    def from_json(cls, raw: dict[str, Any]) -> EntryPoint:
        return cls(**{**raw, **{k: tuple(raw[k]) for k in ("inputs", "scalars", "outputs")}})


@dataclass(frozen=True)
class PlanStep:
    kind: str  # "device" | "host"
    nodes: list[int]  # graph node ids, in order
    segment: int | None = None
    group: int | None = None
    cause: str | None = None


@dataclass(frozen=True)
class TargetArtifact:
    target: str
    driver: str
    modules: dict[str, list[str]]  # module file inside the artifact directory -> its iree-compile flags
    plan: list[PlanStep]
    entry_points: list[EntryPoint]
    note: str = ""
    # parameter files inside the artifact directory that its modules read too
    # (scope "model"): the CPU kernels' interleaved block weights (kernel_layout.py)
    parameter_files: list[str] = field(default_factory=list)
    # where each layer's K/V live in the cache tensor (kv_layout.KvLayout.to_json):
    # sliding layers' rings packed into slabs; empty: a slab a layer (no rings)
    kv_layout: dict[str, Any] = field(default_factory=dict)

    @property
    def host_groups(self) -> list[PlanStep]:
        return [s for s in self.plan if s.kind == "host"]


@dataclass(frozen=True)
class Manifest:
    abi_version: int
    model_dir: str  # tokenizer, chat template and generation config live here
    model_config: dict[str, Any]
    parameter_files: list[str]  # safetensors files, scope "model"
    slots: int  # KV-cache slots = decode batch rows
    compiler_version: str
    cache_key: str
    cpu_features: str
    logits_node: int  # the graph node (its id) whose output is the logits: lm_head, scoring's lm_head_all
    targets: dict[str, TargetArtifact] = field(default_factory=dict)
    kv_dtype: str = "f32"  # the KV cache buffer's element type the modules expect
    kv_len: int | None = None  # the KV cache positions the modules fix; None: any (a dynamic size)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    def write(self, artifact_dir: Path) -> None:
        (artifact_dir / MANIFEST_NAME).write_text(json.dumps(self.to_json(), indent=1))


def _target_from_json(raw: dict[str, Any]) -> TargetArtifact:
    return TargetArtifact(
        **{**raw, "plan": [PlanStep(**s) for s in raw["plan"]],
           "entry_points": [EntryPoint.from_json(e) for e in raw["entry_points"]]})


def read_manifest(artifact_dir: str | Path) -> Manifest:
    path = Path(artifact_dir) / MANIFEST_NAME
    if not path.is_file():
        raise ManifestError(f"{path} does not exist: not an LSE artifact (recompile with lse-compile)")
    raw = json.loads(path.read_text())
    if raw.get("abi_version") != ABI_VERSION:
        raise ManifestError(f"{path}: manifest abi_version {raw.get('abi_version')} but this LSE reads "
                            f"{ABI_VERSION}; recompile with lse-compile")
    try:
        targets = {k: _target_from_json(v) for k, v in raw.pop("targets").items()}
        manifest = Manifest(**raw, targets=targets)
    except (KeyError, TypeError) as e:
        raise ManifestError(f"{path}: malformed manifest ({e}); recompile with lse-compile") from e
    for t in manifest.targets.values():
        modes = {e.mode for e in t.entry_points}
        if not set(REQUIRED_MODES) <= modes:
            raise ManifestError(f"{path}: target {t.target} lacks entry points for "
                                f"{sorted(set(REQUIRED_MODES) - modes)}; recompile with lse-compile")
    return manifest
