"""lse-cluster's process setup without a cluster (lse.cluster.process imports
no Ray): the replica's priority and log, the ingress's access log, and what
lse-cluster stops at exit (issue #44)."""

from __future__ import annotations

import logging
import os
from types import SimpleNamespace

import httpx
import pytest
from api_fake_engine import CHAT, FakeEngine, FakeRuntime

from lse.api.app import ServerSettings, create_app
from lse.cluster import process


def test_a_niced_replica_comes_back_to_lse_servers_priority():
    calls = []
    got = process.standalone_priority(lambda which, who: 19, lambda which, who, value: calls.append(value))
    assert (got, calls) == (0, [0])


def test_a_replica_that_may_not_renice_says_how_to_start_ray(caplog):
    def refused(which, who, value):
        raise PermissionError("not permitted")

    with caplog.at_level(logging.WARNING, logger="lse.cluster"):
        assert process.standalone_priority(lambda which, who: 15, refused) == 15
    assert "RAY_worker_niceness=0" in caplog.text and "nice 15" in caplog.text


def test_a_replica_at_normal_priority_is_left_alone():
    calls = []
    assert process.standalone_priority(lambda which, who: 0, lambda *a: calls.append(a)) == 0
    assert calls == []


def test_a_niced_thread_really_renices_when_it_may():
    import threading

    seen = []

    def niced_thread():  # Linux niceness is per thread: try it on one of our own, as Ray's worker is niced
        os.setpriority(os.PRIO_PROCESS, 0, 19)
        seen.append(process.standalone_priority())
        seen.append(os.getpriority(os.PRIO_PROCESS, 0))

    t = threading.Thread(target=niced_thread)
    t.start()
    t.join()
    if seen == [19, 19]:
        pytest.skip("no privilege to lower niceness here (the warning path is tested above)")
    assert seen == [0, 0]


def test_the_replica_log_shows_the_engines_info_lines_once(capsys):
    lse = logging.getLogger("lse")
    before = (lse.level, list(lse.handlers), lse.propagate)
    try:
        process.replica_log()
        process.replica_log()
        logging.getLogger("lse").info("lse: model m (/m), llama")
        assert capsys.readouterr().err == "lse: model m (/m), llama\n"
    finally:
        lse.setLevel(before[0])
        lse.handlers[:] = before[1]
        lse.propagate = before[2]


def test_the_ingress_logs_each_path_and_status(caplog):
    app = process.access_logged(create_app(FakeEngine, ServerSettings(), FakeRuntime()))

    async def scenario():
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://lse.test") as client:
            for _ in range(400):
                if (await client.get("/health")).status_code == 200:
                    break
            await client.post("/v1/chat/completions", json=CHAT)
            await client.get("/v1/nowhere")

    import asyncio

    with caplog.at_level(logging.INFO, logger="lse.cluster"):
        asyncio.run(scenario())
    lines = [r.getMessage().rsplit(" ", 1)[0] for r in caplog.records if r.name == "lse.cluster"]
    assert lines[-2:] == ["lse-cluster: POST /v1/chat/completions 200", "lse-cluster: GET /v1/nowhere 404"]


class FakeServe:
    def __init__(self, applications=("lse",)):
        self.calls = []
        self._applications = {name: None for name in applications}

    def delete(self, name):
        self.calls.append(("delete", name))

    def shutdown(self):
        self.calls.append(("serve.shutdown",))

    def status(self):
        return SimpleNamespace(applications=self._applications)


@pytest.mark.parametrize("local,started,applications,want", [
    (True, True, ("lse",), ["delete", "serve.shutdown", "ray.shutdown"]),          # our own cluster: all of it
    (False, True, ("lse",), ["delete", "serve.shutdown", "ray.shutdown"]),         # we started Serve there
    (False, True, ("lse", "theirs"), ["delete", "ray.shutdown"]),                  # someone else deployed since
    (False, False, ("lse",), ["delete", "ray.shutdown"]),                          # Serve was theirs
])
def test_what_lse_cluster_stops_at_exit(local, started, applications, want):
    serve = FakeServe(applications)
    ray = SimpleNamespace(shutdown=lambda: serve.calls.append(("ray.shutdown",)))
    process.stop_cluster(serve, ray, "lse", local=local, started_serve=started)
    assert [c[0] for c in serve.calls] == want
