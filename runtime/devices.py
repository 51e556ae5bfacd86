"""Devices: which backend runs the model.

``--pool`` names devices: ``local:0`` (IREE llvm-cpu on local-task),
``cuda:0``, ``hip:0``, ``vulkan:0`` (compiled modules on that IREE driver)
and ``cpu:0`` (the host interpreter). Without ``--pool`` the first device
backend that comes up is used, probing LSE_BACKENDS (default
``cuda,hip,vulkan,local``); if none comes up, the host interpreter runs the
model with a startup warning naming each backend that declined and why.
Under --no-cpu-fallback the spec's table holds word for word.

``--threads N`` sets how many worker threads IREE's CPU driver (local-task)
runs, unpinned, as llama-server's ``-t``; without it IREE takes one worker per
physical core the process may run on, each pinned to its core. IREE makes
that pool once a process, with the first local device, so every engine of a
process shares the first one's count (``local_threads``).
"""

from __future__ import annotations

import logging
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path

# device kind -> (IREE driver, compile target)
DEVICE_KINDS = {
    "local": ("local-task", "llvm-cpu"),
    "cuda": ("cuda", "cuda"),
    "hip": ("hip", "rocm"),
    "vulkan": ("vulkan", "vulkan-spirv"),
}
DEFAULT_PROBE_ORDER = ("cuda", "hip", "vulkan", "local")


class DeviceError(RuntimeError):
    """Startup fails: the message is the whole reason."""


@dataclass
class DeviceChoice:
    name: str  # "local:0", "cpu:0", ...
    target: str | None  # compile target; None for the host interpreter
    device: object | None  # iree.runtime.HalDevice
    declined: list[tuple[str, str]] = field(default_factory=list)  # (device, reason)
    warning: str | None = None


def declined_lines(choice: DeviceChoice) -> list[tuple[int, str]]:
    """The startup log's lines about the backends that did not come up, with
    their levels. When one came up, the others are only not present here: one
    line names them, and each one's reason is at debug. When none came up,
    ``choice.warning`` names each with its reason (lse-api.md, CPU fallback)."""
    lines = []
    if choice.declined and not choice.warning:
        names = ", ".join(name for name, _ in choice.declined)
        lines.append((logging.INFO, f"lse: device backends not present: {names} (LSE_LOG_LEVEL=debug gives each "
                                    "reason)"))
    lines += [(logging.DEBUG, f"lse: device {name} declined: {reason}") for name, reason in choice.declined]
    return lines


# The worker count this process's local-task pool was made with where LSE
# made it (the threads an engine asked for; 0: IREE's own choice), or None
# before the first local device.
_local_pool: int | None = None


def _open(kind: str, index: int, threads: int = 0):
    import iree.runtime as rt

    driver, _ = DEVICE_KINDS[kind]
    if kind == "local":
        _local_pool_for(threads, rt)
    device = rt.get_device(driver) if index == 0 else rt.get_driver(driver).create_device_by_uri(f"{driver}://{index}")
    workers = local_threads() if kind == "local" and threads else None
    if workers is not None and workers != threads:  # the pool predates LSE's first local device
        raise DeviceError(f"threads={threads}: this process's CPU workers were already started with {workers}, "
                          "and IREE keeps one worker pool a process")
    return device


def _local_pool_for(threads: int, rt) -> None:
    """Set IREE's worker count before the process's first local device is
    made; later, refuse a count other than the one the pool has."""
    global _local_pool
    if _local_pool is None:
        if threads:
            # the flags of IREE_PY_RUNTIME_FLAGS were parsed at import; this one overrides theirs
            rt.flags.parse_flags(f"--task_topology_group_count={threads}")
        _local_pool = threads
    elif threads and threads != _local_pool:
        had = f"{_local_pool}" if _local_pool else "IREE's default count"
        raise DeviceError(f"threads={threads}: this process's CPU workers were started with {had} by an "
                          "earlier engine, and IREE keeps one worker pool a process")


def local_threads() -> int | None:
    """Worker threads of this process's local-task pool (Linux: counted by
    name), or None where they can't be counted."""
    if sys.platform != "linux":
        return None
    try:
        names = [Path(f"/proc/self/task/{t}/comm").read_text().strip() for t in os.listdir("/proc/self/task")]
    except OSError:
        return None
    return sum(1 for n in names if n.startswith("iree-worker-")) or None


def _parse(spec: str) -> tuple[str, int]:
    kind, _, index = spec.partition(":")
    return kind, int(index) if index.isdigit() else -1


def choose_device(pool: list[str] | None, disable_cpu_fallback: bool, threads: int = 0) -> DeviceChoice:
    """``threads``: IREE's CPU workers (0: its default), for a local device."""
    if pool:
        if len(pool) > 1:
            raise DeviceError(f"--pool {','.join(pool)}: pools of several devices are not supported yet; "
                              "name one device")
        return _pool_device(pool[0], disable_cpu_fallback, threads)
    declined = []
    probe = os.environ.get("LSE_BACKENDS")
    kinds = DEFAULT_PROBE_ORDER if probe is None else tuple(k for k in probe.split(",") if k)
    for kind in DEFAULT_PROBE_ORDER:
        name = f"{kind}:0"
        if kind not in kinds:
            declined.append((name, "not in LSE_BACKENDS"))
            continue
        try:
            return DeviceChoice(name, DEVICE_KINDS[kind][1], _open(kind, 0, threads), declined)
        except DeviceError:
            raise
        except Exception as e:  # each driver raises its own error type when absent
            declined.append((name, _reason(e)))
    reasons = "; ".join(f"{d}: {r}" for d, r in declined)
    if disable_cpu_fallback:
        raise DeviceError(f"no device backend came up and CPU fallback is disabled (--no-cpu-fallback): {reasons}")
    return DeviceChoice("cpu:0", None, None, declined,
                        warning=f"no device backend came up; the CPU interpreter runs the model ({reasons})")


def _pool_device(spec: str, disable_cpu_fallback: bool, threads: int = 0) -> DeviceChoice:
    kind, index = _parse(spec)
    if kind == "cpu":
        if disable_cpu_fallback:
            raise DeviceError(f"device {spec} is refused: it has no device code generator "
                              "(it is the CPU interpreter) and CPU fallback is disabled (--no-cpu-fallback)")
        return DeviceChoice(spec, None, None)
    if kind not in DEVICE_KINDS or index < 0:
        raise DeviceError(f"device {spec} did not come up: unknown device; devices are "
                          f"{', '.join(k + ':N' for k in DEVICE_KINDS)} and cpu:0")
    try:
        return DeviceChoice(spec, DEVICE_KINDS[kind][1], _open(kind, index, threads))
    except DeviceError:
        raise
    except Exception as e:
        raise DeviceError(f"device {spec} did not come up: {_reason(e)}") from e


def _reason(e: Exception) -> str:
    return " ".join(str(e).split())[:300]
