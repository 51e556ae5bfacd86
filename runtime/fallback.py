"""CPU fallback accounting: every host-group run is counted per cause.

The log prints ``lse: CPU FALLBACK (N so far for this cause): <cause>`` the
first time a cause occurs and again at each power of two. Under
--no-cpu-fallback (or LSE_REQUIRE_DEVICE_KERNELS=1) the run is refused with an
error starting ``CPU fallback disabled:``; the engine then serves the next
request.
"""

from __future__ import annotations

import logging
import threading

from lse.runtime.errors import LseError

log = logging.getLogger("lse")


class FallbackAccounting:
    def __init__(self, allowed: bool):
        self.allowed = allowed
        self._counts: dict[str, int] = {}
        self._lock = threading.Lock()

    def record(self, cause: str) -> None:
        """Count one host-group run for ``cause`` (or refuse it)."""
        if not self.allowed:
            raise LseError("cpu_fallback_disabled", f"CPU fallback disabled: {cause}")
        with self._lock:
            n = self._counts.get(cause, 0) + 1
            self._counts[cause] = n
        if n & (n - 1) == 0:  # 1, 2, 4, 8, ...
            log.warning("lse: CPU FALLBACK (%d so far for this cause): %s", n, cause)

    def status(self) -> dict:
        with self._lock:
            events = [{"cause": c, "count": n} for c, n in self._counts.items()]
        return {"allowed": self.allowed, "total": sum(e["count"] for e in events), "events": events}


def warnings_for(request_counts: dict[str, int]) -> list[dict]:
    """The response's ``lse_warnings`` for the host-group runs it caused."""
    return [{"type": "cpu_fallback", "cause": c, "count": n} for c, n in request_counts.items()]
