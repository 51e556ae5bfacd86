"""Devices: which backend runs the model.

``--pool`` names devices: ``local:0`` (IREE llvm-cpu on local-task),
``cuda:0``, ``hip:0``, ``vulkan:0`` (compiled modules on that IREE driver)
and ``cpu:0`` (the host interpreter). Without ``--pool`` the first device
backend that comes up is used, probing LSE_BACKENDS (default
``cuda,hip,vulkan,local``); if none comes up, the host interpreter runs the
model with a startup warning naming each backend that declined and why.
Under --no-cpu-fallback the spec's table holds word for word.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

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


def _open(kind: str, index: int):
    import iree.runtime as rt

    driver, _ = DEVICE_KINDS[kind]
    if index == 0:
        return rt.get_device(driver)
    return rt.get_driver(driver).create_device_by_uri(f"{driver}://{index}")


def _parse(spec: str) -> tuple[str, int]:
    kind, _, index = spec.partition(":")
    return kind, int(index) if index.isdigit() else -1


def choose_device(pool: list[str] | None, disable_cpu_fallback: bool) -> DeviceChoice:
    if pool:
        if len(pool) > 1:
            raise DeviceError(f"--pool {','.join(pool)}: pools of several devices are not supported yet; "
                              "name one device")
        return _pool_device(pool[0], disable_cpu_fallback)
    declined = []
    probe = os.environ.get("LSE_BACKENDS")
    kinds = DEFAULT_PROBE_ORDER if probe is None else tuple(k for k in probe.split(",") if k)
    for kind in DEFAULT_PROBE_ORDER:
        name = f"{kind}:0"
        if kind not in kinds:
            declined.append((name, "not in LSE_BACKENDS"))
            continue
        try:
            return DeviceChoice(name, DEVICE_KINDS[kind][1], _open(kind, 0), declined)
        except Exception as e:  # each driver raises its own error type when absent
            declined.append((name, _reason(e)))
    reasons = "; ".join(f"{d}: {r}" for d, r in declined)
    if disable_cpu_fallback:
        raise DeviceError(f"no device backend came up and CPU fallback is disabled (--no-cpu-fallback): {reasons}")
    return DeviceChoice("cpu:0", None, None, declined,
                        warning=f"no device backend came up; the CPU interpreter runs the model ({reasons})")


def _pool_device(spec: str, disable_cpu_fallback: bool) -> DeviceChoice:
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
        return DeviceChoice(spec, DEVICE_KINDS[kind][1], _open(kind, index))
    except Exception as e:
        raise DeviceError(f"device {spec} did not come up: {_reason(e)}") from e


def _reason(e: Exception) -> str:
    return " ".join(str(e).split())[:300]
