"""lse-server --speculative ngram over HTTP: the same reply as a server
without it, timings' draft counts, /metrics' acceptance, lse_speculative."""

from __future__ import annotations

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

ECHO = "Repeat: the cat sat on the mat, the cat sat on the mat"
BODY = {"messages": [{"role": "user", "content": ECHO}], "temperature": 0, "max_tokens": 40}


@pytest.fixture(scope="module")
def servers(lse_server, fixture_model):
    model = fixture_model("smollm_like")
    with lse_server(model, "--kv-len", "160", "--parallel", "1", "--metrics-public") as (plain, _), \
            lse_server(model, "--kv-len", "160", "--parallel", "1", "--metrics-public",
                       "--speculative", "ngram") as (spec, _):
        yield plain, spec


def _post(base: str, body: dict) -> dict:
    r = httpx.post(f"{base}/v1/chat/completions", json=body, timeout=120)
    assert r.status_code == 200, r.text
    return r.json()


def test_reply_timings_and_metrics(servers) -> None:
    plain, spec = servers
    want, got = _post(plain, BODY), _post(spec, BODY)
    assert got["choices"] == want["choices"] and got["usage"] == want["usage"]
    assert "draft_n" not in want["timings"]
    drafted, accepted = got["timings"]["draft_n"], got["timings"]["draft_n_accepted"]
    assert 0 <= accepted <= drafted and drafted > 0
    text = httpx.get(f"{spec}/metrics", timeout=30).text
    samples = {s.name: s.value for f in text_string_to_metric_families(text) for s in f.samples}
    assert samples["lse_spec_decode_draft_tokens_total"] == drafted
    assert samples["lse_spec_decode_accepted_tokens_total"] == accepted
    status = httpx.get(f"{spec}/v1/lse/status", timeout=30).json()["engine"]["speculative"]
    assert (status["mode"], status["proposed"], status["accepted"]) == ("ngram", drafted, accepted)


def test_lse_speculative_false_and_a_bad_value(servers) -> None:
    _, spec = servers
    off = _post(spec, {**BODY, "lse_speculative": False})
    assert "draft_n" not in off["timings"]
    r = httpx.post(f"{spec}/v1/chat/completions", json={**BODY, "lse_speculative": "no"}, timeout=60)
    assert r.status_code == 400
    assert r.json()["error"]["param"] == "lse_speculative"
    assert r.json()["error"]["type"] == "invalid_request_error"
