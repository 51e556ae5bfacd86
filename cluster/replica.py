"""LseReplica: one engine, opened through lse.runtime.api, answering the ingress's calls.

Serve makes this class a deployment (``app.py``). It speaks Python, not HTTP:
the ingress runs the HTTP layer once for all replicas (``remote.py``).

- ``generate`` streams a request's events: first an ``lse.admitted`` marker
  (this replica's id, and the error event if the engine refused the request:
  400s, or 503 when its queue is full), then the engine's events; chunks only
  for ``"stream": true`` (a non-streamed reply is the done event, the fold).
  When the caller goes away (a client disconnect, cancelled through Serve),
  the engine request is cancelled and its slot freed.
- ``check_health`` is Serve's health check: it reads ``lse_status``.
- ``record_routing_stats`` gives the router and the ingress's
  ``/v1/lse/status`` this engine's status (every ``ROUTING_STATS_PERIOD_S``).
- ``ReplicaMetrics``: the engine's finished requests and its running,
  waiting and KV-cache gauges as Ray metrics
  (``ray.serve.metrics`` tags each with its deployment and replica), scraped
  from each node's Ray metrics export.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from typing import Any

from ray import serve
from ray.serve import metrics as serve_metrics

from lse.runtime import api as runtime_api
from lse.runtime.errors import LseError

from .process import replica_log, standalone_priority
from .remote import sum_engines

log = logging.getLogger("lse.cluster")

ROUTING_STATS_PERIOD_S = 1.0


class ReplicaMetrics:
    """lse_* counters of finished requests, per replica, through Ray's metrics export."""

    def __init__(self) -> None:
        tags = ("endpoint",)
        self.finished = serve_metrics.Counter("lse_requests_finished", "Generation requests ended, by endpoint "
                                              "and outcome", tag_keys=("endpoint", "outcome"))
        self.prompt_tokens = serve_metrics.Counter("lse_prompt_tokens", "Prompt tokens of finished requests, "
                                                   "cached ones included", tag_keys=tags)
        self.generated_tokens = serve_metrics.Counter("lse_generation_tokens", "Tokens generated", tag_keys=tags)
        self.cached_tokens = serve_metrics.Counter("lse_prefix_cache_hit_tokens", "Prompt tokens reused from a "
                                                   "slot's KV cache", tag_keys=tags)
        self.running = serve_metrics.Gauge("lse_requests_running", "Sequences holding a slot")
        self.waiting = serve_metrics.Gauge("lse_requests_waiting", "Sequences waiting for a slot")
        self.kv_tokens = serve_metrics.Gauge("lse_kv_cache_tokens", "Tokens whose K/V the cache holds")
        self.e2e = serve_metrics.Histogram("lse_e2e_request_latency_seconds", "Request received to its end",
                                           boundaries=[0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 480], tag_keys=tags)

    def observe(self, record: runtime_api.RequestRecord) -> None:
        tags = {"endpoint": record.endpoint}
        self.finished.inc(1, tags={**tags, "outcome": record.outcome})
        for counter, value in ((self.prompt_tokens, record.prompt_tokens),
                               (self.generated_tokens, record.generated_tokens),
                               (self.cached_tokens, record.cached_tokens)):
            if value:
                counter.inc(value, tags=tags)
        self.e2e.observe(record.e2e_seconds, tags=tags)

    def states(self, engine: dict[str, Any]) -> None:
        """The engine's gauges, set with each routing-stats report."""
        self.running.set(engine["active"])
        self.waiting.set(engine["queued"])
        self.kv_tokens.set(engine["kv_tokens"])


class LseReplica:
    """One LSE engine in a Serve replica (see the module docstring)."""

    def __init__(self, config: runtime_api.LseConfig | dict[str, Any]) -> None:
        replica_log()  # the engine's startup lines, as lse-server logs them
        standalone_priority()  # before lse_open: the engine's threads inherit it
        preload: list[str] = []
        if isinstance(config, dict):  # several models (lse.api.models.set_config): this replica serves the set
            config = dict(config)
            preload = config.pop("preload", [])
        self.engine = runtime_api.lse_open(config)  # Serve waits: the replica is not routed to until this returns
        self.several = isinstance(config, dict)
        for name in preload:  # --preload: loaded before the replica is routed to
            try:
                runtime_api.lse_model_info(self.engine, name)
            except LseError as exc:  # the model stays failed; the others serve
                log.error("lse-cluster: --preload: %s", exc.message)
        self.replica_id = serve.get_replica_context().replica_id.unique_id
        self.metrics = ReplicaMetrics()
        runtime_api.lse_observe(self.engine, self.metrics.observe)

    async def generate(self, body: dict[str, Any], endpoint: str, avoid: tuple[str, ...] = ()) -> AsyncIterator[dict]:
        # ``avoid`` is read by the router (router.py), not here.
        handle = await asyncio.to_thread(runtime_api.lse_request, self.engine, body, endpoint)
        rejected = handle.rejection()
        yield {"type": "lse.admitted", "replica": self.replica_id, "rejection": rejected}
        if rejected is not None:
            return
        stream = body.get("stream") is True
        finished = False
        try:
            async for event in handle.aevents():
                if event["type"] != "chunk":
                    finished = True
                    yield event
                    return
                if stream:
                    yield event
        finally:
            if not finished:  # the caller left (Serve cancelled this generator): free the slot now
                handle.cancel()

    async def call(self, name: str, *args: Any) -> Any:
        """lse_model_info, lse_tokenizer_info, lse_tokenize, lse_detokenize,
        lse_status or lse_models; an LseError comes back as ``{"lse_error": fields}``."""
        if name not in ("lse_model_info", "lse_tokenizer_info", "lse_tokenize", "lse_detokenize", "lse_status",
                        "lse_models"):
            raise ValueError(f"not a replica call: {name}")
        try:
            return await asyncio.to_thread(getattr(runtime_api, name), self.engine, *args)
        except LseError as e:
            return {"lse_error": {"kind": e.kind, "message": e.message, "param": e.param, "code": e.code,
                                 "extra": e.extra}}

    def check_health(self) -> None:
        runtime_api.lse_status(self.engine)  # raises if the engine can't answer
        engines = [e for _, e in self.engine.loaded_engines()] if self.several else [self.engine]
        for engine in engines:
            if not engine.scheduler.thread.is_alive():
                raise RuntimeError("the engine's scheduler thread has stopped")

    def record_routing_stats(self) -> dict[str, Any]:
        status = runtime_api.lse_status(self.engine)
        if not self.several:
            engine = status["engine"]
            self.metrics.states(engine)
            return {"replica": self.replica_id, "slots": engine["slots"], "engine": engine}
        return self._set_stats(status)

    def _set_stats(self, status: dict[str, Any]) -> dict[str, Any]:
        """Several models: the loaded models' engines summed (``engine``), and
        ``models``, each model's /v1/models entry with its ``slots`` and
        ``memory_bytes`` here (the router keeps a model's requests where it is loaded)."""
        rows = {row["name"]: row for row in status["models"]}
        engines = [row["engine"] for row in rows.values() if row["engine"] is not None]
        engine = sum_engines(engines)  # zeros while none is loaded
        del engine["replicas"]
        self.metrics.states(engine)
        models = []
        for entry in runtime_api.lse_models(self.engine):
            row = rows.get(entry["id"]) or {}
            models.append({**entry, "slots": (row.get("engine") or {}).get("slots"),
                           "memory_bytes": row.get("memory_bytes")})
        return {"replica": self.replica_id, "slots": max([e["slots"] for e in engines], default=1),
                "engine": engine, "models": models, "default_model": self.engine.default_entry().name}

    def __del__(self) -> None:
        engine = getattr(self, "engine", None)
        if engine is not None:
            runtime_api.lse_shutdown(engine, 0)
            runtime_api.lse_close(engine)
