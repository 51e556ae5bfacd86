"""What a cluster process sets up that lse-server gets from its command line:
the replica's priority and log, the ingress's access log, and what
lse-cluster stops when it exits. Nothing here imports Ray, so each piece is
unit-tested without a cluster (tests/unit/test_cluster_process.py).
"""

from __future__ import annotations

import logging
import os
import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any

log = logging.getLogger("lse.cluster")

# The niceness a replica runs at: lse-server's, as a shell starts it. Ray's
# raylet starts workers niced (RAY_worker_niceness, 15 or more), which leaves
# the engine's scheduler and IREE's workers behind every other process.
REPLICA_NICENESS = 0
RAY_NICENESS_ENV = "RAY_worker_niceness"

Scope = dict[str, Any]
Asgi = Callable[[Scope, Callable[[], Awaitable[dict]], Callable[[dict], Awaitable[None]]], Awaitable[None]]


def standalone_priority(getpriority: Callable[[int, int], int] = os.getpriority,
                        setpriority: Callable[[int, int, int], None] = os.setpriority) -> int:
    """Bring this thread (the replica's, before the engine starts its threads,
    which inherit it) to REPLICA_NICENESS; returns the niceness it runs at.
    Lowering niceness needs privilege (CAP_SYS_NICE): without it the replica
    keeps Ray's and says how to start the cluster instead."""
    now = getpriority(os.PRIO_PROCESS, 0)
    if now <= REPLICA_NICENESS:
        return now
    try:
        setpriority(os.PRIO_PROCESS, 0, REPLICA_NICENESS)
    except PermissionError:
        log.warning("lse-cluster: this replica runs at nice %d (Ray's worker niceness) and may not lower it; "
                    "start the Ray cluster with %s=%d to run the engine at lse-server's priority",
                    now, RAY_NICENESS_ENV, REPLICA_NICENESS)
        return now
    return REPLICA_NICENESS


def replica_log() -> None:
    """The engine's startup lines and warnings ("lse" loggers, at info) on the
    replica's stderr, which Ray keeps in the replica's log and streams to the
    driver: a Ray worker configures no logging of its own for them."""
    lse = logging.getLogger("lse")
    lse.setLevel(logging.INFO)
    if not any(getattr(h, "lse_replica", False) for h in lse.handlers):
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(message)s"))
        handler.lse_replica = True  # type: ignore[attr-defined]
        lse.addHandler(handler)
        lse.propagate = False  # once: not again through Ray's own root handlers


def access_logged(app: Asgi) -> Asgi:
    """``app`` logging one line per HTTP request, as lse-server's uvicorn does:
    method, path, status and time. Serve's own request log names the route
    prefix ("POST / 200"), not the path."""
    async def logged(scope: Scope, receive, send) -> None:
        if scope.get("type") != "http":
            await app(scope, receive, send)
            return
        status = [500]
        start = time.perf_counter()

        async def sending(message: dict) -> None:
            if message.get("type") == "http.response.start":
                status[0] = message.get("status", 500)
            await send(message)

        try:
            await app(scope, receive, sending)
        finally:
            log.info("lse-cluster: %s %s %d %.1fms", scope.get("method"), scope.get("path"), status[0],
                     (time.perf_counter() - start) * 1000)

    return logged


def stop_cluster(serve: Any, ray: Any, app_name: str, *, local: bool, started_serve: bool) -> None:
    """What lse-cluster stops when it exits: its application always; Serve
    (its controller and the HTTP proxy on --port, which otherwise holds the
    port after exit) when the cluster is this process's own (no --address), or
    when this process started Serve and nothing else is deployed there; then
    it leaves Ray (which ends a cluster of its own)."""
    serve.delete(app_name)
    if local or (started_serve and not _other_applications(serve, app_name)):
        serve.shutdown()
    ray.shutdown()


def _other_applications(serve: Any, app_name: str) -> bool:
    try:
        return bool(set(serve.status().applications) - {app_name})
    except Exception:  # Serve can't say: leave it running rather than stop someone's application
        return True
