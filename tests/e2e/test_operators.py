"""Operating LSE, against live servers: --version, the startup option lines,
/metrics moving by the amounts a known request implies (CPU fallback forced
with --no-kernel silu), /openapi.json as valid OpenAPI 3.1, and Schemathesis
over that document in a short profile."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from openapi_spec_validator import validate
from prometheus_client.parser import text_string_to_metric_families

from lse.runtime.api import AUTO_SLOTS

KEY = "ops-secret"
COMMANDS = ("lse", "lse-server", "lse-compile", "lse-import", "lse-spec", "lse-config")
# Schemathesis' checks but one: positive_data_acceptance expects every schema-valid body
# to be served, and some are refused by documented 400s the schema cannot state: a prompt
# longer than the served context (context_full), an integer written 4.0 (JSON Schema counts
# it as an integer; LSE's validator does not), thinking level names of the served model.


def script(name: str) -> str:
    return str(Path(sys.executable).with_name(name))


@pytest.mark.parametrize("command", COMMANDS)
def test_version(command):
    out = subprocess.run([script(command), "--version"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0].startswith(f"{command} (LSE) ") and lines[1].startswith("IREE compiler ")
    assert lines[2].startswith("IREE runtime ") and lines[3].startswith("Python ")


@pytest.fixture(scope="module")
def server(lse_server, fixture_model):
    env = {k: v for k, v in os.environ.items() if k != "LSE_API_KEY"} | {"LSE_API_KEY": KEY}
    with lse_server(fixture_model("smollm_like"), "--no-kernel", "silu", "--kv-len", "64", "--metrics-public",
                    env=env) as (base_url, process):
        yield base_url, process


def scrape(base_url: str) -> dict[tuple[str, tuple], float]:
    text = httpx.get(f"{base_url}/metrics", timeout=30).text  # --metrics-public: no key
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def test_startup_lines_give_each_option_and_its_source(server, lse_server_log):
    log = lse_server_log(server[1])
    assert "lse-server: option --api-key = set (environment LSE_API_KEY)" in log
    assert "lse-server: option --no-kernel = ['silu'] (flag)" in log
    assert "lse-server: option --parallel = auto (default)" in log
    assert f"lse: --parallel auto: {AUTO_SLOTS} slot(s), a f32 KV cache of " in log  # the fixture's caches are tiny
    assert KEY not in log


def test_metrics_move_by_what_one_request_did(server):
    base_url, _ = server
    before = scrape(base_url)
    reply = httpx.post(f"{base_url}/v1/chat/completions", headers={"authorization": f"Bearer {KEY}"}, timeout=120,
                       json={"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 4, "temperature": 0})
    assert reply.status_code == 200, reply.text
    body = reply.json()
    after = scrape(base_url)

    def moved(name: str, **labels: str) -> float:
        key = (name, tuple(sorted(labels.items())))
        return after.get(key, 0.0) - before.get(key, 0.0)

    chat = {"endpoint": "chat.completions"}
    assert moved("lse_http_requests_total", endpoint="/v1/chat/completions", method="POST", status="200") == 1
    assert moved("lse_prompt_tokens_total", **chat) == body["usage"]["prompt_tokens"]
    assert moved("lse_generation_tokens_total", **chat) == body["usage"]["completion_tokens"] == 4
    assert moved("lse_requests_finished_total", outcome="length", **chat) == 1
    assert moved("lse_prefix_cache_hit_tokens_total") == body["usage"]["prompt_tokens_details"]["cached_tokens"]
    for histogram in ("lse_time_to_first_token_seconds", "lse_time_per_output_token_seconds",
                      "lse_e2e_request_latency_seconds", "lse_request_queue_time_seconds"):
        assert moved(f"{histogram}_count") == 1, histogram
    warnings = body["lse_warnings"]
    assert warnings and all("silu" in w["cause"] for w in warnings)
    for w in warnings:  # one request alone: the engine's count moves as the reply's does
        assert moved("lse_cpu_fallback_runs_total", cause=w["cause"]) == w["count"]
    info = [labels for (name, labels) in after if name == "lse_engine_info"]
    assert len(info) == 1 and dict(info[0])["device"]
    assert after[("lse_slots", ())] == AUTO_SLOTS == 8  # --parallel auto
    assert after[("lse_kv_cache_capacity_tokens", ())] == AUTO_SLOTS * 64


def test_openapi_document_is_valid_3_1(server):
    base_url, _ = server
    assert httpx.get(f"{base_url}/openapi.json", timeout=30).status_code == 401  # behind the key, as /v1 is
    doc = httpx.get(f"{base_url}/openapi.json", headers={"authorization": f"Bearer {KEY}"}, timeout=30).json()
    validate(doc)
    assert doc["openapi"] == "3.1.0" and "/v1/chat/completions" in doc["paths"]


def test_schemathesis_short_profile_finds_nothing(server):
    """Schemathesis over /openapi.json, through the spec kit (lse-spec --schemathesis), so the
    kit's report carries the same checks; see lse.spec.schemathesis_run for the one check left out."""
    from lse.spec.runner import run

    base_url, _ = server
    report = run(base_url, api_key=KEY, only=["__none__"], schemathesis=True, echo=lambda line: None)
    result = next(s for s in report.scenarios if s.name == "schemathesis")
    assert result.status == "passed", result.detail