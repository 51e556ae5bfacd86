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
process shares the first one's count (``local_workers``).

IREE makes that pool with its driver, and each worker names itself
(``iree-worker-N``) once it runs, so a count of named threads taken just after
is partial. The count LSE reports and checks is therefore the one it asked
IREE for; threads are counted only for a pool that was already there before
LSE's first local device (made by other code of the process), and then only
once the count has settled.
"""

from __future__ import annotations

import logging
import os
import sys
import time
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


# The worker count this process's local-task pool has as LSE knows it: the
# threads the engine that made it asked for (0: IREE's own choice), or the
# settled count of a pool found already started; None before the first local
# device.
_local_pool: int | None = None
_pool_maker = "an earlier engine"  # who started the pool, for a refusal's reason
_default_pool: int | None = None  # the settled count of a pool of IREE's own choice

# How long a pool found already started may take to show the workers asked
# for, and how long its count must hold still to be read as settled.
SETTLE_LIMIT_S = 3.0
SETTLE_STEADY_S = 0.25


def _open(kind: str, index: int, threads: int = 0):
    import iree.runtime as rt

    driver, _ = DEVICE_KINDS[kind]
    if kind == "local":
        if _local_pool is None:
            _pool_found(threads)
        _local_pool_for(threads, rt)
    return rt.get_device(driver) if index == 0 else rt.get_driver(driver).create_device_by_uri(f"{driver}://{index}")


def _pool_found(threads: int) -> None:
    """Before LSE's first local device: take the worker count of a pool other
    code of the process already started (read once settled), refusing
    ``threads`` that asks another."""
    global _local_pool, _pool_maker
    if not local_threads():
        return
    workers = settled_local_threads(threads)
    if threads and workers != threads:
        raise DeviceError(f"threads={threads}: this process's CPU workers were already started with {workers}, "
                          "and IREE keeps one worker pool a process")
    _local_pool, _pool_maker = workers, "code outside LSE"


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
        raise DeviceError(f"threads={threads}: this process's CPU workers were started with {had} by "
                          f"{_pool_maker}, and IREE keeps one worker pool a process")


def local_workers() -> int | None:
    """Worker threads of this process's local-task pool: the count LSE asked
    for or found, else (IREE's own choice) the settled count of named
    threads; None before the first local device or where they can't be
    counted."""
    global _default_pool
    if _local_pool:
        return _local_pool
    if _local_pool is None:
        return None
    if _default_pool is None:  # read once: the pool is the process's
        _default_pool = settled_local_threads(0)
    return _default_pool


def settled_local_threads(expected: int = 0) -> int | None:
    """The named worker count once it has held still for SETTLE_STEADY_S, at
    ``expected`` or above (0: at any count), or what it is after
    SETTLE_LIMIT_S: workers of a pool still starting have not all named
    themselves yet, so a count below the expected one is waited on."""
    if sys.platform != "linux":
        return None
    start = time.monotonic()
    count, since = local_threads(), start
    while True:
        now = time.monotonic()
        steady = count is not None and now - since >= SETTLE_STEADY_S
        if now - start >= SETTLE_LIMIT_S or (steady and count >= expected):
            return count
        time.sleep(0.02)
        latest = local_threads()
        if latest != count:
            count, since = latest, time.monotonic()


def local_threads() -> int | None:
    """Worker threads of this process's local-task pool that have named
    themselves (Linux: counted by name), or None where there are none or
    they can't be counted."""
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
