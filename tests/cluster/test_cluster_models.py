"""lse-cluster serving several models: every replica serves the set, a request's
``model`` picks one, and the router keeps a model's requests on the replicas
where it is loaded. Its own module-scoped cluster: 2 replicas of a set of two
fixtures (the host interpreter: no compile) and a broken file."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator

import httpx
import pytest

pytest.importorskip("ray.serve", reason="the cluster tier needs Ray Serve: pip install -e '.[cluster]' "
                    "(the test extra includes it)")
import ray
from ray import serve

from lse.cluster.app import application
from lse.cluster.options import build_parser
from lse.fixtures.make_fixtures import fixture_dir

REPLICAS = 2
BODY = {"prompt": "Once upon a time", "max_tokens": 3, "temperature": 0}


def free_port() -> int:
    import socket

    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def models_list(base_url: str) -> dict[str, dict]:
    return {e["id"]: e for e in httpx.get(f"{base_url}/v1/models", timeout=30).json()["data"]}


def until(check, timeout: float = 60.0):
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(0.5)


@pytest.fixture(scope="module")
def set_cluster(tmp_path_factory) -> Iterator[str]:
    broken = tmp_path_factory.mktemp("models") / "broken.gguf"
    broken.write_bytes(b"not a gguf file at all")
    port = free_port()
    ray.init(address="local", num_cpus=4, include_dashboard=False, namespace="lse-tests",
             logging_level=logging.WARNING)
    try:
        serve.start(http_options={"host": "127.0.0.1", "port": port})
        args = build_parser().parse_args([
            str(fixture_dir("smollm_like")), str(fixture_dir("qwen38_like")), str(broken),
            "--served-model-name", f"smol={fixture_dir('smollm_like')}",
            "--served-model-name", f"qwen={fixture_dir('qwen38_like')}", "--alias", "qwen=q",
            "--preload", "smol", "--pool", "cpu:0", "--kv-len", "128",
            "--replicas", str(REPLICAS), "--replica-cpus", "0.5", "--parallel", "1"])
        serve.run(application(args), name="lse-models", route_prefix="/")
        base_url = f"http://127.0.0.1:{port}"
        assert until(lambda: httpx.get(f"{base_url}/health", timeout=5).status_code == 200, 600)
        # both replicas report, smol preloaded on each
        assert until(lambda: models_list(base_url)["smol"]["replicas_loaded"] == REPLICAS), models_list(base_url)
        yield base_url
    finally:
        serve.shutdown()
        ray.shutdown()


def test_the_set_is_listed(set_cluster: str) -> None:
    listed = models_list(set_cluster)
    assert list(listed) == ["smol", "qwen", "broken"]
    assert listed["smol"]["status"] == "loaded" and listed["smol"]["context_length"] == 128
    assert listed["qwen"]["status"] == "unloaded" and listed["qwen"]["aliases"] == ["q"]
    assert httpx.get(f"{set_cluster}/v1/models/q", timeout=30).json()["id"] == "qwen"
    missing = httpx.get(f"{set_cluster}/v1/models/nope", timeout=30)
    assert (missing.status_code, missing.json()["error"]["code"]) == (404, "model_not_found")


def test_each_model_answers_by_name(set_cluster: str) -> None:
    with httpx.Client(base_url=set_cluster, timeout=120) as http:
        smol = http.post("/v1/completions", json={**BODY, "model": "smol"}).json()
        qwen = http.post("/v1/completions", json={**BODY, "model": "q"}).json()
        default = http.post("/v1/completions", json=BODY).json()
        info = http.get("/v1/lse/model_info", params={"model": "qwen"}).json()
    assert (smol["model"], qwen["model"], default["model"], info["id"]) == ("smol", "q", "smol", "qwen")
    assert default["choices"][0]["text"] == smol["choices"][0]["text"] != qwen["choices"][0]["text"]


def test_a_model_stays_on_the_replica_that_loaded_it(set_cluster: str) -> None:
    """qwen, loaded by one request on one replica, serves the next ones there:
    it is never loaded on the other (the requests come one at a time)."""
    with httpx.Client(base_url=set_cluster, timeout=120) as http:
        for i in range(4):
            reply = http.post("/v1/completions", json={**BODY, "prompt": f"Story {i}: once", "model": "qwen"})
            assert reply.status_code == 200, reply.text
            time.sleep(0.3)
    assert until(lambda: models_list(set_cluster)["qwen"]["status"] == "loaded")
    time.sleep(2)  # every replica's stats reported since
    assert models_list(set_cluster)["qwen"]["replicas_loaded"] == 1


def test_unknown_and_broken_models(set_cluster: str) -> None:
    with httpx.Client(base_url=set_cluster, timeout=120) as http:
        unknown = http.post("/v1/completions", json={**BODY, "model": "nope"})
        broken = http.post("/v1/completions", json={**BODY, "model": "broken"})
        fine = http.post("/v1/completions", json={**BODY, "model": "smol"})
        operator = http.post("/v1/lse/models/qwen/load")
    assert (unknown.status_code, unknown.json()["error"]["code"]) == (404, "model_not_found")
    assert unknown.json()["error"]["models"] == ["smol", "qwen", "broken"]
    assert (broken.status_code, broken.json()["error"]["code"]) == (500, "model_load_failed")
    assert fine.status_code == 200  # the others serve on
    assert operator.status_code == 404  # not served by lse-cluster (docs/cluster.md)
