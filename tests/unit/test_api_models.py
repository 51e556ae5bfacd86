"""lse-server over a model set (api/models.py, lse.runtime.model_runtime) with
fake engines: selection by `model` on every route, 404 model_not_found, a
request waiting for a load (keep-alive comments on a stream), a broken model
beside a good one, the operator routes and the key, status and metrics."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import httpx
import pytest
from api_fake_engine import CHAT, FakeEngine, FakeRuntime, FakeStartupError, assert_error, until_health

from lse.api.app import ServerSettings, create_app
from lse.runtime.model_runtime import ModelSetRuntime
from lse.runtime.telemetry import RequestRecord
from lse.runtime.models import ModelSet, ModelSpec

KEY = "sk-test"


class NamedEngine(FakeEngine):
    def __init__(self, name: str) -> None:
        super().__init__()
        self.name = name


class Engines(FakeRuntime):
    """FakeRuntime that records which model's engine each request ran on."""

    def __init__(self) -> None:
        super().__init__()
        self.ran: list[str] = []

    def lse_request(self, engine: NamedEngine, body: dict[str, Any], endpoint: str):
        self.ran.append(engine.name)
        return super().lse_request(engine, body, endpoint)

    def lse_tokenize(self, engine: NamedEngine, body: dict[str, Any]) -> dict[str, Any]:
        self.ran.append(engine.name)
        return super().lse_tokenize(engine, body)

    def lse_model_info(self, engine: NamedEngine) -> dict[str, Any]:
        return {**self.MODEL_INFO, "id": engine.name}


def run(scenario, names=("small", "big", "broken"), gate: dict[str, threading.Event] | None = None, **settings):
    engines = Engines()
    gate = gate or {}

    def open_engine(spec: ModelSpec) -> NamedEngine:
        if spec.name in gate:
            assert gate[spec.name].wait(10)
        if spec.name == "broken":
            raise RuntimeError("broken: not a GGUF file")
        return NamedEngine(spec.name)

    models = ModelSet([ModelSpec(n, f"/m/{n}") for n in names], open_engine, engines.lse_close,
                      measure=lambda e: 1000, describe=engines.lse_model_info)
    app = create_app(lambda: models, ServerSettings(**settings), ModelSetRuntime(engines),
                     startup_error=FakeStartupError)

    async def main() -> Any:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://lse.test") as client:
            await until_health(client, 200)
            return await scenario(client, engines, models)

    return asyncio.run(main())


def chat(model: str | None, **extra: Any) -> dict[str, Any]:
    body = {k: v for k, v in CHAT.items() if k != "model"}
    return {**body, **({"model": model} if model is not None else {}), **extra}


def test_models_lists_every_model_with_its_status():
    async def scenario(client, engines, models):
        listed = (await client.get("/v1/models")).json()["data"]
        assert [(m["id"], m["status"], m["context_length"]) for m in listed] == [
            ("small", "unloaded", None), ("big", "unloaded", None), ("broken", "unloaded", None)]
        assert (await client.post("/v1/chat/completions", json=chat("big"))).status_code == 200
        assert (await client.post("/v1/chat/completions", json=chat("broken"))).status_code == 500
        listed = {m["id"]: m for m in (await client.get("/v1/models")).json()["data"]}
        assert (listed["big"]["status"], listed["big"]["context_length"]) == ("loaded", 512)
        assert listed["big"]["generation_defaults"] == FakeRuntime.MODEL_INFO["generation_defaults"]
        assert (listed["broken"]["status"], listed["broken"]["status_reason"]) == ("failed", "broken: not a GGUF file")
        one = await client.get("/v1/models/big")
        assert one.json()["id"] == "big" and one.json()["status"] == "loaded"
        assert_error(await client.get("/v1/models/nope"), 404, "invalid_request_error", "model_not_found", "model")
    run(scenario)


@pytest.mark.parametrize("path", ["/v1/chat/completions", "/v1/completions", "/v1/messages", "/v1/responses",
                                  "/tokenize"])
def test_the_body_model_picks_the_engine_on_every_route(path):
    body = {"model": "big", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 5,
            "prompt": "hi", "input": "hi", "content": "hi"}

    async def scenario(client, engines, models):
        for model in ("big", "small"):
            response = await client.post(path, json={**body, "model": model})
            assert response.status_code == 200, response.text
        assert engines.ran == ["big", "small"]
    run(scenario)


def test_missing_model_is_the_default_and_unknown_is_404_listing_the_names():
    async def scenario(client, engines, models):
        assert (await client.post("/v1/chat/completions", json=chat(None))).status_code == 200
        assert engines.ran == ["small"]
        err = assert_error(await client.post("/v1/chat/completions", json=chat("gpt-4o")), 404,
                           "invalid_request_error", "model_not_found", "model")
        assert err["models"] == ["small", "big", "broken"] and "'gpt-4o'" in err["message"]
        msg = await client.post("/v1/messages", json={"model": "gpt-4o", "max_tokens": 5,
                                                      "messages": [{"role": "user", "content": "hi"}]})
        assert msg.status_code == 404
        assert msg.json()["type"] == "error"
        assert (msg.json()["error"]["type"], msg.json()["error"]["code"]) == ("not_found_error", "model_not_found")
        stream = await client.post("/v1/chat/completions", json=chat("gpt-4o", stream=True))
        assert stream.status_code == 404 and stream.json()["error"]["code"] == "model_not_found"
    run(scenario)


def test_a_broken_model_fails_its_own_requests_and_the_others_serve():
    async def scenario(client, engines, models):
        err = assert_error(await client.post("/v1/chat/completions", json=chat("broken")), 500, "server_error",
                           "model_load_failed", "model")
        assert "broken: not a GGUF file" in err["message"]
        again = await client.post("/v1/chat/completions", json=chat("broken", stream=True))  # failed: refused up front
        assert again.status_code == 500 and again.json()["error"]["code"] == "model_load_failed"
        assert (await client.post("/v1/chat/completions", json=chat("big"))).status_code == 200
    run(scenario)


def test_a_stream_waits_for_the_load_with_keepalive_comments(monkeypatch):
    monkeypatch.setattr("lse.api.sse.KEEPALIVE_SECS", 0.02)
    gate = {"big": threading.Event()}

    async def scenario(client, engines, models):
        asyncio.get_running_loop().call_later(0.2, gate["big"].set)
        response = await client.post("/v1/chat/completions", json=chat("big", stream=True))
        assert response.status_code == 200
        assert response.text.startswith(": queued\n\n")
        assert response.text.endswith("data: [DONE]\n\n") and '"content":"Hel"' in response.text
        assert engines.ran == ["big"] and models.entries["big"].users == 0
    run(scenario, gate=gate)


def test_concurrent_requests_during_a_load_share_it():
    gate = {"big": threading.Event()}

    async def scenario(client, engines, models):
        asyncio.get_running_loop().call_later(0.2, gate["big"].set)
        replies = await asyncio.gather(*(client.post("/v1/chat/completions", json=chat("big")) for _ in range(3)))
        assert [r.status_code for r in replies] == [200, 200, 200]
        assert models.entries["big"].loads == 1 and engines.ran == ["big"] * 3
    run(scenario, gate=gate)


def test_a_request_timeout_counts_the_load():
    gate = {"big": threading.Event()}

    async def scenario(client, engines, models):
        response = await client.post("/v1/chat/completions", json=chat("big"))
        assert_error(response, 408, "timeout_error", "request_timeout")
        gate["big"].set()
        assert models.entries["big"].users == 0
    run(scenario, gate=gate, request_timeout_secs=0.2)


def test_operator_routes_need_the_key_and_load_unload_refresh():
    async def scenario(client, engines, models):
        auth = {"authorization": f"Bearer {KEY}"}
        for path in ("/v1/lse/models/big/load", "/v1/lse/models/big/unload", "/v1/lse/models/refresh"):
            assert_error(await client.post(path), 401, "authentication_error", "invalid_api_key")
        loaded = await client.post("/v1/lse/models/big/load", headers=auth)
        assert loaded.status_code == 200 and loaded.json()["status"] == "loaded"
        failed = await client.post("/v1/lse/models/broken/load", headers=auth)
        assert failed.status_code == 500 and failed.json()["error"]["code"] == "model_load_failed"
        assert_error(await client.post("/v1/lse/models/nope/load", headers=auth), 404, "invalid_request_error",
                     "model_not_found", "model")
        unloaded = await client.post("/v1/lse/models/big/unload", headers=auth)
        assert unloaded.status_code == 200 and unloaded.json()["status"] == "unloaded"
        refreshed = await client.post("/v1/lse/models/refresh", headers=auth)
        assert refreshed.json() == {"added": [], "removed": [], "models": ["small", "big", "broken"]}
        assert models.entries["broken"].status == "unloaded"  # a refresh clears a failure
    run(scenario, api_key=KEY)


def test_status_and_metrics_per_model():
    async def scenario(client, engines, models):
        await client.post("/v1/chat/completions", json=chat("big"))
        status = (await client.get("/v1/lse/status")).json()
        rows = {m["name"]: m for m in status["models"]}
        assert (rows["big"]["status"], rows["big"]["engine"]["slots"], rows["small"]["engine"]) == ("loaded", 2, None)
        assert status["engine"] is None  # the default (small) is not loaded
        record = RequestRecord("chat.completions", "stop", 3, 2, 0, 0.1, 0.2, 0.05, 0.3)
        for observe in engines.observers:  # one per loaded model, each naming its model
            observe(record)
        metrics = (await client.get("/metrics")).text
        assert 'lse_model_requests_finished_total{endpoint="chat.completions",model="big",outcome="stop"} 1.0' \
            in metrics
        assert 'lse_model_generation_tokens_total{model="big"} 2.0' in metrics
        assert 'lse_requests_finished_total{endpoint="chat.completions",outcome="stop"} 1.0' in metrics
        assert 'lse_slots{model="big"} 2.0' in metrics
        assert 'lse_model_status{model="small",status="unloaded"} 1.0' in metrics
        assert 'lse_model_memory_bytes{model="big"} 1000.0' in metrics
    run(scenario)


def test_model_info_names_a_model_and_loads_it():
    async def scenario(client, engines, models):
        assert models.entries["big"].status == "unloaded"
        info = await client.get("/v1/lse/model_info", params={"model": "big"})
        assert (info.status_code, info.json()["id"], models.entries["big"].status) == (200, "big", "loaded")
        assert (await client.get("/v1/lse/model_info")).json()["id"] == "small"  # no name: the default
        assert_error(await client.get("/v1/lse/model_info", params={"model": "nope"}), 404,
                     "invalid_request_error", "model_not_found", "model")
        failed = await client.get("/v1/lse/model_info", params={"model": "broken"})
        assert (failed.status_code, failed.json()["error"]["code"]) == (500, "model_load_failed")
        assert models.entries["big"].users == 0 and models.entries["broken"].users == 0
    run(scenario)
