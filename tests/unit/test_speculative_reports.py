"""Where speculative decoding is reported and switched: timings, /metrics,
lse_status' schema, lse-server's --speculative and lse_open's option."""

from __future__ import annotations

import pytest
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families
from speculative_fake import run, sequence

from lse.api.cli import build_parser, engine_config
from lse.api.metrics import EngineCollector
from lse.runtime.api import LseStartupError, lse_open
from lse.runtime.fallback import FallbackAccounting
from lse.runtime.openai.schema import STATUS
from lse.runtime.engine_api import RequestHandle
from lse.runtime.request_state import RequestState

ENGINE = {"device": "fake:0", "slots": 1, "active": 0, "queued": 0, "context_length": 64, "kv_tokens": 0,
          "kv_capacity": 64, "cpu_fallback": {"allowed": True, "total": 0, "events": []}}
INFO = {"id": "m"}


def _scrape(engine: dict) -> dict[str, float]:
    registry = CollectorRegistry()
    registry.register(EngineCollector(lambda: {"engine": engine}, lambda: INFO))
    return {s.name: s.value for f in text_string_to_metric_families(generate_latest(registry).decode())
            for s in f.samples}


def test_metrics_carry_drafted_accepted_and_the_rate() -> None:
    got = _scrape({**ENGINE, "speculative": {"mode": "ngram", "steps": 3, "proposed": 8, "accepted": 6,
                                             "verify_cost": 1.43}})
    assert got["lse_spec_decode_draft_tokens_total"] == 8
    assert got["lse_spec_decode_accepted_tokens_total"] == 6
    assert got["lse_spec_decode_acceptance_rate"] == 0.75
    assert got["lse_spec_decode_verify_cost_steps"] == 1.43
    unmeasured = _scrape({**ENGINE, "speculative": {"mode": "ngram", "steps": 0, "proposed": 0, "accepted": 0,
                                                    "verify_cost": None}})
    assert unmeasured["lse_spec_decode_verify_cost_steps"] == 0
    off = _scrape(ENGINE)
    assert not any(k.startswith("lse_spec_decode") for k in off)


def test_status_schema_lists_the_speculative_block() -> None:
    block = STATUS["properties"]["engine"]["properties"]["speculative"]
    assert block["required"] == ["mode", "steps", "proposed", "accepted"]


def test_timings_carry_draft_counts_where_the_speculator_ran() -> None:
    spec = [sequence([1, 2, 3, 4, 5, 1, 2, 3], 12)]
    run(spec, speculate=True)
    plain = [sequence([1, 2, 3, 4, 5, 1, 2, 3], 12)]
    run(plain, speculate=False)
    draft = spec[0].draft
    assert draft.accepted > 0
    timings = _timings(spec[0])
    assert (timings["draft_n"], timings["draft_n_accepted"]) == (draft.proposed, draft.accepted)
    assert "draft_n" not in _timings(plain[0])


def _timings(seq) -> dict:
    request = RequestState("chat.completions", "m", [seq], 256, False, FallbackAccounting(True), str, None)
    request.finish(seq, [])
    chunks = [e["data"] for e in RequestHandle(request).events() if e["type"] == "chunk"]
    return chunks[-1]["timings"]


def test_server_flag_and_open_option() -> None:
    assert engine_config(build_parser().parse_args(["--speculative", "ngram"])).speculative == "ngram"
    assert engine_config(build_parser().parse_args([])).speculative == "off"
    with pytest.raises(SystemExit):
        build_parser().parse_args(["--speculative", "draft"])
    with pytest.raises(LseStartupError, match="speculative must be one of off, ngram"):
        lse_open({"model": "/nonexistent", "speculative": "eagle"})
