"""A local Ray cluster serving the smollm_like fixture from 2 LSE replicas.

``lse_cluster`` (module scope) starts Ray in this process (the test is the
driver, so it can ``ray.kill`` a replica), deploys lse-cluster's application
exactly as the command does (``lse.cluster.app.application`` over its parsed
options), and yields the ingress's base URL once both replicas report their
engines. The tier is skipped, saying why, where ray[serve] is not installed.
"""

from __future__ import annotations

import logging
import socket
import time
from collections.abc import Iterator

import httpx
import pytest

from lse.fixtures.make_fixtures import fixture_dir

try:  # each test module skips itself without ray (a skip raised here would be a collection error)
    import ray
    from ray import serve

    from lse.cluster.app import application
    from lse.cluster.options import build_parser
except ModuleNotFoundError:
    ray = None

REPLICAS = 2
QUEUE = 2  # per replica, with --parallel 1: 3 requests each before 503
START_TIMEOUT_S = 900.0


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def status(base_url: str) -> dict:
    return httpx.get(f"{base_url}/v1/lse/status", timeout=10).json()


def wait_replicas(base_url: str, count: int, timeout: float, exclude: frozenset[str] = frozenset()) -> list[dict]:
    """The ingress's replica list once ``count`` replicas (none of ``exclude``) report an engine."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{base_url}/health", timeout=5).status_code == 200:
                last = status(base_url)["replicas"]
                live = [r for r in last if r["engine"] is not None and r["replica"] not in exclude]
                if len(live) == count:
                    return live
        except httpx.TransportError as exc:
            last = repr(exc)
        time.sleep(0.5)
    raise AssertionError(f"{count} replicas did not report in {timeout:.0f}s; last status: {last}")


@pytest.fixture(scope="session")
def cluster_status():
    """``cluster_status(base_url)``: the ingress's /v1/lse/status (test modules can't import conftest)."""
    return status


@pytest.fixture(scope="session")
def cluster_replicas():
    """``cluster_replicas(base_url, count, timeout, exclude=frozenset())``: see ``wait_replicas``."""
    return wait_replicas


@pytest.fixture(scope="module")
def lse_cluster() -> Iterator[str]:
    port = free_port()
    # "local": a cluster of our own even where `ray start` runs one on this machine.
    ray.init(address="local", num_cpus=4, include_dashboard=False, namespace="lse-tests",
             logging_level=logging.WARNING)
    try:
        serve.start(http_options={"host": "127.0.0.1", "port": port})
        args = build_parser().parse_args([str(fixture_dir("smollm_like")), "--replicas", str(REPLICAS),
                                          "--replica-cpus", "0.5", "--parallel", "1", "--queue-size", str(QUEUE)])
        serve.run(application(args), name="lse", route_prefix="/")
        base_url = f"http://127.0.0.1:{port}"
        wait_replicas(base_url, REPLICAS, START_TIMEOUT_S)
        yield base_url
    finally:
        serve.shutdown()
        ray.shutdown()
