"""Compile targets: iree-compile flags, the runtime driver, and which ops
each can code-generate.

Every target generates code for every graph op today; the table is refined
by iree-compile's own diagnostics (see partition_by_capability.py) and by
operators' ``--no-kernel TARGET:OP`` declarations.
"""

from __future__ import annotations

import hashlib
import platform
from dataclasses import dataclass
from pathlib import Path

from lse.compiler.graph import OPS
from lse.compiler.weights import BLOCK_FORMATS


@dataclass(frozen=True)
class Target:
    name: str
    driver: str  # iree.runtime driver that runs its modules
    flags: tuple[str, ...]
    ops: frozenset[str]
    note: str = ""
    # Block formats it has matmul/embedding kernels for: every target
    # generates the dequantizing contraction from plain linalg today.
    formats: frozenset[str] = frozenset(BLOCK_FORMATS)
    # Flags added for a second module holding the decode functions (none: one module).
    decode_flags: tuple[str, ...] = ()


TARGETS = {
    "llvm-cpu": Target(
        "llvm-cpu", "local-task",
        ("--iree-hal-target-device=local", "--iree-hal-local-target-device-backends=llvm-cpu",
         "--iree-llvmcpu-target-cpu=host", "--iree-opt-data-tiling=true",
         # O3 fuses a block format's dequantization into the decode matvec
         # (shared/notes/iree-lowbit.md): decode reads int8 blocks, not f32.
         "--iree-opt-level=O3"),
        OPS, "host CPU features; the cache is keyed on them",
        # Decode's attention contractions have a few query rows: data-tiled,
        # the K/V window would be relaid out on every step, so decode is
        # faster without it (docs/kernels.md). Prefill's weight matmuls need
        # data tiling; decode's weights go through kernels or fused matvecs.
        decode_flags=("--iree-opt-data-tiling=false",)),
    "cuda": Target(
        "cuda", "cuda", ("--iree-hal-target-device=cuda", "--iree-cuda-target=sm_80"), OPS,
        "IREE 3.13 does not know sm_90 (iree#22147): sm_80 PTX, JIT-compiled by the driver on Hopper"),
    "rocm": Target(
        "rocm", "hip", ("--iree-hal-target-device=hip", "--iree-rocm-target=gfx942"), OPS, "gfx942 (MI300)"),
    "vulkan-spirv": Target(
        "vulkan-spirv", "vulkan", ("--iree-hal-target-device=vulkan",), OPS, "default Vulkan target"),
}


class TargetError(ValueError):
    pass


def get_target(name: str) -> Target:
    if name not in TARGETS:
        raise TargetError(f"unknown target {name!r}; targets: {', '.join(TARGETS)}")
    return TARGETS[name]


def cpu_features() -> str:
    """A short hash of this CPU's model and flags: `target-cpu=host` modules
    can fault on a CPU without the same features, so they key the cache."""
    text = platform.machine()
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.is_file():
        for line in cpuinfo.read_text().splitlines():
            if line.startswith(("flags", "model name", "Features")):
                text += line
                if line.startswith(("flags", "Features")):
                    break
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def parse_no_kernel(specs: list[str]) -> dict[str, frozenset[str]]:
    """``--no-kernel silu`` (every target) or ``--no-kernel llvm-cpu:silu``; a
    block format (``--no-kernel llvm-cpu:q4_k``) declares its matmuls kernel-less."""
    out: dict[str, set[str]] = {}
    for spec in specs:
        target, _, op = spec.rpartition(":")
        if op not in OPS | frozenset(BLOCK_FORMATS):
            raise TargetError(f"--no-kernel {spec}: unknown op {op!r}; ops: {', '.join(sorted(OPS))}; "
                              f"formats: {', '.join(BLOCK_FORMATS)}")
        for name in [target] if target else list(TARGETS):
            get_target(name)
            out.setdefault(name, set()).add(op)
    return {k: frozenset(v) for k, v in out.items()}
