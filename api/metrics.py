"""GET /metrics: Prometheus text exposition, built by prometheus-client.

Each app has its own ``CollectorRegistry`` (never the process-wide default),
so tests can create several apps in one process. Three sources feed it:

- the HTTP layer counts every reply by route and status (``count``);
- the engine tells ``observe`` about each finished request
  (``lse_observe``, lse.runtime.telemetry): tokens and latencies;
- states (running, waiting, slots, KV tokens, CPU-fallback runs, the
  device) are read from ``lse_status`` / ``lse_model_info`` at scrape time.

Names follow Prometheus' conventions (``lse_`` prefix, seconds, ``_total``
counters); where vLLM exports a metric with the same meaning its HELP says
which (vLLM docs, "Production Metrics").
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Any

from blacksheep import Content, Request, Response
from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, InfoMetricFamily, Metric
from prometheus_client.exposition import CONTENT_TYPE_PLAIN_0_0_4

from lse.runtime.api import RequestRecord

# Buckets in seconds, vLLM's for the same histograms (vllm/v1/metrics/loggers.py).
FIRST_TOKEN_BUCKETS = (0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5,
                       10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0)
PER_TOKEN_BUCKETS = (0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0,
                     20.0, 40.0, 80.0)
REQUEST_BUCKETS = (0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0, 120.0,
                   240.0, 480.0, 960.0, 1920.0, 7680.0)


class Metrics:
    """The app's registry and the metrics the HTTP layer and the engine's observer move."""

    def __init__(self, status: Callable[[], dict[str, Any] | None], info: Callable[[], dict[str, Any] | None]) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.http = Counter("lse_http_requests", "HTTP replies by route and status; unknown paths are route "
                            "\"other\" (vLLM: http_requests_total from its FastAPI instrumentator)",
                            ["endpoint", "method", "status"], registry=r)
        self.finished = Counter("lse_requests_finished", "Generation requests ended, by endpoint and outcome "
                                "(choice 0's finish_reason, cancelled or error) (vLLM: vllm:request_success_total)",
                                ["endpoint", "outcome"], registry=r)
        self.prompt_tokens = Counter("lse_prompt_tokens", "Prompt tokens of finished requests, cached ones "
                                     "included (vLLM: vllm:prompt_tokens_total)", ["endpoint"], registry=r)
        self.generated_tokens = Counter("lse_generation_tokens", "Tokens generated, the end-of-turn token "
                                        "included (vLLM: vllm:generation_tokens_total)", ["endpoint"], registry=r)
        self.cached_tokens = Counter("lse_prefix_cache_hit_tokens", "Prompt tokens reused from a slot's KV cache "
                                     "instead of prefilled (vLLM: vllm:prefix_cache_hits_total)", registry=r)
        self.first_token = Histogram("lse_time_to_first_token_seconds", "Request received to its first "
                                     "generated token (vLLM: vllm:time_to_first_token_seconds)",
                                     buckets=FIRST_TOKEN_BUCKETS, registry=r)
        self.per_token = Histogram("lse_time_per_output_token_seconds", "Mean time between output tokens after "
                                   "the first, per request (vLLM: vllm:request_time_per_output_token_seconds)",
                                   buckets=PER_TOKEN_BUCKETS, registry=r)
        self.e2e = Histogram("lse_e2e_request_latency_seconds", "Request received to its last token or error "
                             "(vLLM: vllm:e2e_request_latency_seconds)", buckets=REQUEST_BUCKETS, registry=r)
        self.queue = Histogram("lse_request_queue_time_seconds", "Request received to its first choice getting "
                               "a slot (vLLM: vllm:request_queue_time_seconds)", buckets=REQUEST_BUCKETS, registry=r)
        r.register(EngineCollector(status, info))
        self.per_model: tuple[Counter, Counter, Counter] | None = None  # registered at a set's first record
        self._per_model_lock = threading.Lock()

    def _model_counters(self) -> tuple[Counter, Counter, Counter]:
        with self._per_model_lock:  # two models' scheduler threads may finish their first requests at once
            if self.per_model is None:
                self.per_model = self._register_model_counters()
            return self.per_model

    def _register_model_counters(self) -> tuple[Counter, Counter, Counter]:
        r = self.registry
        return (
            Counter("lse_model_requests_finished", "Generation requests ended, by model (several models), "
                    "endpoint and outcome", ["model", "endpoint", "outcome"], registry=r),
            Counter("lse_model_prompt_tokens", "Prompt tokens of finished requests, by model (several models)",
                    ["model"], registry=r),
            Counter("lse_model_generation_tokens", "Tokens generated, by model (several models)", ["model"],
                    registry=r))

    def count(self, endpoint: str, method: str, status: int) -> None:
        self.http.labels(endpoint, method, str(status)).inc()

    def observe(self, record: RequestRecord) -> None:
        """The engine's observer (called on the scheduler thread)."""
        endpoint = record.endpoint
        self.finished.labels(endpoint, record.outcome).inc()
        if record.model is not None:
            finished, prompt, generated = self._model_counters()
            finished.labels(record.model, endpoint, record.outcome).inc()
            prompt.labels(record.model).inc(record.prompt_tokens)
            generated.labels(record.model).inc(record.generated_tokens)
        self.prompt_tokens.labels(endpoint).inc(record.prompt_tokens)
        self.generated_tokens.labels(endpoint).inc(record.generated_tokens)
        self.cached_tokens.inc(record.cached_tokens)
        self.e2e.observe(record.e2e_seconds)
        for histogram, value in ((self.first_token, record.first_token_seconds),
                                 (self.per_token, record.per_output_token_seconds),
                                 (self.queue, record.queue_seconds)):
            if value is not None:
                histogram.observe(value)

    def response(self) -> Response:
        # The classic text format (0.0.4), which every Prometheus version reads.
        return Response(200, None, Content(CONTENT_TYPE_PLAIN_0_0_4.encode(), generate_latest(self.registry)))

    async def handler(self, request: Request) -> Response:
        return self.response()


class EngineCollector:
    """The engine's state, read at each scrape; nothing while it loads."""

    def __init__(self, status: Callable[[], dict[str, Any] | None], info: Callable[[], dict[str, Any] | None]) -> None:
        self._status, self._info = status, info

    def collect(self) -> Iterator[Metric]:
        status = self._status()
        if status is not None and "models" in status:  # several models: each one's, with a `model` label
            yield from model_set_metrics(status["models"])
            return
        info = self._info()
        if status is None or info is None:
            return
        engine = status["engine"]
        yield InfoMetricFamily("lse_engine", "The served model and the device the engine runs on", value={
            "model": str(info["id"]), "device": str(engine["device"]), "slots": str(engine["slots"]),
            "context_length": str(engine["context_length"])})
        for name, doc, value in engine_gauges(engine):
            yield GaugeMetricFamily(name, doc, value=value)
        fallback = CounterMetricFamily("lse_cpu_fallback_runs", "Host-group runs on the CPU interpreter, by "
                                       "cause (no vLLM equivalent)", labels=["cause"])
        for event in engine["cpu_fallback"]["events"]:
            fallback.add_metric([event["cause"]], event["count"])
        yield fallback
        yield from _speculative(engine.get("speculative"))


def model_set_metrics(models: list[dict[str, Any]]) -> Iterator[Metric]:
    """The engine gauges once per loaded model (label ``model``), and every model's state."""
    loaded = GaugeMetricFamily("lse_model_status", "1 with the model's status: loaded, loading, unloaded or "
                               "failed (several models)", labels=["model", "status"])
    memory = GaugeMetricFamily("lse_model_memory_bytes", "The model's weights and KV cache as its last load "
                               "measured them (several models)", labels=["model"])
    families: dict[str, GaugeMetricFamily] = {}
    for row in models:
        loaded.add_metric([row["name"], row["status"]], 1)
        if row["memory_bytes"] is not None:
            memory.add_metric([row["name"]], row["memory_bytes"])
        if row["engine"] is None:
            continue
        for name, doc, value in engine_gauges(row["engine"]):
            families.setdefault(name, GaugeMetricFamily(name, doc, labels=["model"])).add_metric([row["name"]], value)
    yield loaded
    yield memory
    yield from families.values()


def engine_gauges(engine: dict[str, Any]) -> tuple[tuple[str, str, Any], ...]:
    """(name, help, value) of each engine state gauge, out of lse_status's ``engine``."""
    return (
        ("lse_requests_running", "Sequences (one per choice) holding a slot "
         "(vLLM: vllm:num_requests_running)", engine["active"]),
        ("lse_requests_waiting", "Sequences waiting for a slot (vLLM: vllm:num_requests_waiting)",
         engine["queued"]),
        ("lse_slots", "KV-cache slots: sequences generated at once (--parallel)", engine["slots"]),
        ("lse_slots_in_use", "Slots running a sequence", engine["active"]),
        ("lse_kv_cache_tokens", "Tokens whose K/V the cache holds, idle slots' reusable prefixes included "
         "(vLLM's vllm:kv_cache_usage_perc is this over lse_kv_cache_capacity_tokens)", engine["kv_tokens"]),
        ("lse_kv_cache_capacity_tokens", "Tokens the KV cache can hold: slots x context length",
            engine["kv_capacity"]),
    )


def _speculative(spec: dict[str, Any] | None) -> Iterator[Metric]:
    """--speculative's drafts (lse_status' engine.speculative; absent when off)."""
    if spec is None:
        return
    yield CounterMetricFamily("lse_spec_decode_draft_tokens", "Tokens drafted by speculative decoding "
                              "(vLLM: vllm:spec_decode_num_draft_tokens_total)", value=spec["proposed"])
    yield CounterMetricFamily("lse_spec_decode_accepted_tokens", "Drafted tokens accepted "
                              "(vLLM: vllm:spec_decode_num_accepted_tokens_total)", value=spec["accepted"])
    yield GaugeMetricFamily("lse_spec_decode_acceptance_rate", "Accepted over drafted tokens since start "
                            "(0 before any draft)", value=spec["accepted"] / spec["proposed"] if spec["proposed"] else 0.0)
    yield GaugeMetricFamily("lse_spec_decode_verify_cost_steps", "A verification step's measured cost in plain "
                            "decode steps, as the back-off last judged it (0 before any verification)",
                            value=spec.get("verify_cost") or 0.0)
