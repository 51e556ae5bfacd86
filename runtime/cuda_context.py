"""The CUDA device's context, current on every thread that drives it.

IREE's CUDA HAL makes the device's primary context current only on the
thread that creates the device (iree_hal_cuda_device_create:
cuDevicePrimaryCtxRetain, then cuCtxSetCurrent). A call from another thread
(the scheduler's, which runs every step) that copies a host buffer in fails
with CUDA_ERROR_INVALID_CONTEXT (seen on an H200 with IREE 3.13:
docs/device-check.md). ``bind`` makes the same primary context current on
the calling thread, once a thread, through the driver library IREE loaded.
"""

from __future__ import annotations

import ctypes
import threading

_bound = threading.local()


def bind(ordinal: int) -> None:
    """Make device ``ordinal``'s primary context current on this thread (once a thread)."""
    if getattr(_bound, "ordinal", None) == ordinal:
        return
    cuda = ctypes.CDLL("libcuda.so.1")
    dev, ctx = ctypes.c_int(), ctypes.c_void_p()
    for name, call in (("cuInit", lambda: cuda.cuInit(0)),
                       ("cuDeviceGet", lambda: cuda.cuDeviceGet(ctypes.byref(dev), ordinal)),
                       ("cuDevicePrimaryCtxRetain", lambda: cuda.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev)),
                       ("cuCtxSetCurrent", lambda: cuda.cuCtxSetCurrent(ctx))):
        rc = call()
        if rc != 0:
            raise RuntimeError(f"{name} failed with CUDA error {rc} making device {ordinal}'s context current")
    # IREE's device holds the context; this thread's retain is released at once (it stays current)
    release = getattr(cuda, "cuDevicePrimaryCtxRelease_v2", None) or cuda.cuDevicePrimaryCtxRelease
    release(dev)
    _bound.ordinal = ordinal
