"""ClusterRuntime: the ``Runtime`` that ``create_app`` serves, over every replica.

``lse.api.app.create_app(open_engine, settings, runtime)`` takes the in-process
API as a parameter; this module is that API with the engine replaced by the
``LseReplica`` deployment behind a Serve handle. So the ingress runs the same
wire layer as ``lse-server`` (body limits, auth, SSE, timeouts, disconnects,
error envelopes, /openapi.json), and only the calls below cross to a replica.

- ``lse_request`` (called on the app's prepare thread) submits on the ingress's
  event loop and waits for the replica's ``lse.admitted`` marker, so a refusal
  is known before a stream's headers go out. A replica whose queue is full
  answers 503 at once; the request is offered to others (``avoid``, least
  loaded first), and when ``MAX_OFFERS`` refuse the client gets the 503 (with
  Retry-After), as from a single server with a full queue. Serve's own
  ``BackPressureError`` (if a ``max_queued_requests`` is set) is the same 503.
- A replica lost mid-reply (killed, its node gone) ends the reply with the
  in-stream error ``replica_unavailable`` (503, type ``unavailable_error``),
  then ``data: [DONE]`` for a stream; Serve routes new requests to the others
  and replaces the lost replica.
- Model and tokenizer info are read once at open (every replica serves the same
  model); ``lse_status`` reports every replica from the routing stats they
  send the router each second, so none of the app's synchronous reads waits
  on the network.
- ``lse_observe`` registers nothing: the ingress has no engine. Each replica
  exports its request metrics through Ray (replica.py).
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from collections.abc import AsyncIterator, Callable, Coroutine
from dataclasses import dataclass
from typing import Any, TypeVar

from ray.exceptions import RayActorError, RayTaskError
from ray.serve.exceptions import BackPressureError, RequestCancelledError
from ray.serve.handle import DeploymentHandle, DeploymentResponseGenerator

from lse.runtime.errors import LseError, error_body

from .routers import ROUTERS

log = logging.getLogger("lse.cluster")

T = TypeVar("T")

# Replicas a request is offered to before a full queue everywhere is a 503.
MAX_OFFERS = 3
# Seconds to wait for a replica's admission marker (routing plus the engine's prepare step).
ADMIT_TIMEOUT_S = 60.0
OPEN_TIMEOUT_S = 3600.0  # a first start compiles the model
# What a lost replica raises into its callers' streams (ActorDiedError and
# ActorUnavailableError are RayActorErrors).
REPLICA_LOST = (RayActorError, ConnectionError)


def replica_lost_event(exc: BaseException) -> dict[str, Any]:
    message = (f"the replica serving this request stopped ({type(exc).__name__}); the reply is incomplete. New "
               "requests go to the other replicas; retry")
    return {"type": "error", "status": 503,
            "data": error_body("shutting_down", message, code="replica_unavailable")}


def failed_event(exc: BaseException) -> dict[str, Any]:
    """A replica's own bug (its traceback is in the replica's log)."""
    return {"type": "error", "status": 500,
            "data": error_body("generation_failed", f"the replica failed: {type(exc).__name__}; see its log")}


def overloaded_event(message: str) -> dict[str, Any]:
    return {"type": "error", "status": 503, "data": error_body("overloaded", message)}


@dataclass(frozen=True)
class ClusterEngine:
    """What the ingress's app holds as its engine: what every replica answers alike."""

    model_info: dict[str, Any]
    tokenizer_info: dict[str, Any]
    deployment: str


class ClusterHandle:
    """One request's events from the replica that took it."""

    def __init__(self, rejection: dict[str, Any] | None, stream: DeploymentResponseGenerator | None = None,
                 replica: str | None = None) -> None:
        self._rejection, self._stream, self.replica = rejection, stream, replica

    def rejection(self) -> dict[str, Any] | None:
        return self._rejection

    async def aevents(self) -> AsyncIterator[dict[str, Any]]:
        if self._rejection is not None:
            yield self._rejection
            return
        try:
            async for event in self._stream:
                yield event
                if event["type"] != "chunk":
                    return
        except REPLICA_LOST as exc:
            log.warning("lse-cluster: replica %s lost mid-reply: %s", self.replica, type(exc).__name__)
            yield replica_lost_event(exc)
            return
        except RayTaskError as exc:
            log.error("lse-cluster: replica %s failed mid-reply: %s", self.replica, exc)
            yield failed_event(exc)
            return
        yield replica_lost_event(ConnectionError("the reply ended without a result"))

    def cancel(self) -> None:
        if self._stream is not None:
            self._stream.cancel()


class ClusterRuntime:
    """``lse.runtime.api``'s shape (``lse.api.completions.Runtime``) over the replicas."""

    def __init__(self, handle: DeploymentHandle, loop: asyncio.AbstractEventLoop) -> None:
        self._handle, self._loop = handle, loop

    def open(self) -> ClusterEngine:
        """The app's ``open_engine`` (on its loader thread): waits for a replica."""
        info = self._run(self._call_once("lse_model_info"), OPEN_TIMEOUT_S)
        tokenizer = self._run(self._call_once("lse_tokenizer_info"), OPEN_TIMEOUT_S)
        return ClusterEngine(info, tokenizer, self._handle.deployment_name)

    def lse_request(self, engine: ClusterEngine, body: dict[str, Any], endpoint: str) -> ClusterHandle:
        try:
            return self._run(self._submit(body, endpoint), ADMIT_TIMEOUT_S)
        except TimeoutError:
            return ClusterHandle(overloaded_event(
                f"no replica took the request within {ADMIT_TIMEOUT_S:g} s (none running?); retry later"))

    def lse_model_info(self, engine: ClusterEngine) -> dict[str, Any]:
        return engine.model_info

    def lse_tokenizer_info(self, engine: ClusterEngine) -> dict[str, Any]:
        return engine.tokenizer_info

    def lse_tokenize(self, engine: ClusterEngine, body: dict[str, Any]) -> dict[str, Any]:
        return self._run(self._call_once("lse_tokenize", body), ADMIT_TIMEOUT_S)

    def lse_detokenize(self, engine: ClusterEngine, body: dict[str, Any]) -> dict[str, Any]:
        return self._run(self._call_once("lse_detokenize", body), ADMIT_TIMEOUT_S)

    def lse_status(self, engine: ClusterEngine) -> dict[str, Any]:
        return cluster_status(engine.deployment)

    def lse_observe(self, engine: ClusterEngine, observer: Callable[[Any], None]) -> None:
        pass  # see the module docstring

    def lse_shutdown(self, engine: ClusterEngine, timeout: float) -> None:
        pass  # Serve drains and stops the replicas

    def lse_close(self, engine: ClusterEngine) -> None:
        pass  # the replicas' engines are theirs to close

    def _run(self, work: Coroutine[Any, Any, T], timeout: float) -> T:
        """``work`` on the ingress's event loop (Serve handles live there), from a worker thread."""
        return asyncio.run_coroutine_threadsafe(asyncio.wait_for(work, timeout), self._loop).result()

    async def _call_once(self, name: str, *args: Any) -> dict[str, Any]:
        reply = await self._handle.call.remote(name, *args)
        if "lse_error" in reply:
            raise LseError(**reply["lse_error"])
        return reply

    async def _submit(self, body: dict[str, Any], endpoint: str) -> ClusterHandle:
        avoid: list[str] = []
        rejection = None
        for _ in range(MAX_OFFERS):
            stream = self._handle.options(stream=True).generate.remote(body, endpoint, avoid=tuple(avoid))
            try:
                admitted = await stream.__anext__()
            except asyncio.CancelledError:  # the admission wait timed out: withdraw the request
                stream.cancel()
                raise
            except BackPressureError:
                return ClusterHandle(overloaded_event(
                    "every replica's queue is full (and the ingress's waiting places); retry later"))
            except (*REPLICA_LOST, RequestCancelledError) as exc:  # died between routing and admission
                log.warning("lse-cluster: replica lost before admission (%s); offering to another",
                            type(exc).__name__)
                continue
            except RayTaskError as exc:
                log.error("lse-cluster: replica failed before admission: %s", exc)
                return ClusterHandle(failed_event(exc))
            rejection = admitted["rejection"]
            if rejection is None:
                return ClusterHandle(None, stream, admitted["replica"])
            if rejection["data"]["error"].get("code") != "server_overloaded":
                return ClusterHandle(rejection)  # a 400 is the same on every replica
            avoid.append(admitted["replica"])
        return ClusterHandle(rejection or overloaded_event("no replica could take the request; retry later"))


@dataclass(frozen=True)
class ClusterModels(ClusterEngine):
    """The engine a set's ingress holds: the list read at open, until the replicas report theirs."""

    models: tuple[dict[str, Any], ...] = ()


class ClusterSetRuntime(ClusterRuntime):
    """Several models (every replica serves the whole set): ``/v1/models`` and
    ``/v1/lse/model_info?model=NAME`` over the replicas. A request's ``model``
    is resolved by the replica that takes it (404 ``model_not_found`` and 500
    ``model_load_failed`` come back as the replica's refusal); the router sends
    it where that model is loaded (router.py). The operator routes
    (load/unload/refresh) are not served: a Serve handle reaches one replica,
    not each (docs/cluster.md)."""

    def open(self) -> ClusterModels:
        engine = super().open()
        models = self._run(self._call_once("lse_models"), OPEN_TIMEOUT_S)
        return ClusterModels(engine.model_info, engine.tokenizer_info, engine.deployment, tuple(models))

    def lse_model_list(self, engine: ClusterModels, created: int) -> list[dict[str, Any]]:
        """Each model's entry from the replicas' routing stats (at most a second
        old): the status of the replica that has it furthest (loaded, loading,
        unloaded, failed) and ``replicas_loaded``, how many have it loaded."""
        reports = [stats["models"] for stats in replica_stats(engine.deployment) if stats.get("models")]
        return [{**entry, "created": created} for entry in merge_model_lists(reports or [list(engine.models)])]

    def lse_model_info_of(self, engine: ClusterModels, name: str | None) -> dict[str, Any]:
        """A replica's ``lse_model_info(set, name)`` (it loads a model never loaded there; blocking)."""
        return self._run(self._call_once("lse_model_info", name), OPEN_TIMEOUT_S)


STATUS_ORDER = ("loaded", "loading", "unloaded", "failed")


def merge_model_lists(reports: list[list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """One /v1/models list out of every replica's (each the whole set): per
    model the entry of the replica where it got furthest (its context_length,
    thinking and generation_defaults are known once it loaded anywhere), plus
    ``replicas_loaded``; the replicas' own ``slots`` and ``memory_bytes`` dropped."""
    merged: dict[str, dict[str, Any]] = {}
    loaded: Counter[str] = Counter()
    for report in reports:
        for entry in report:
            name = entry["id"]
            loaded[name] += entry.get("status") == "loaded"
            known = merged.get(name)
            if known is None or _rank(entry) < _rank(known) or (
                    known.get("context_length") is None and entry.get("context_length") is not None
                    and _rank(entry) == _rank(known)):
                merged[name] = entry
    out = []
    for name, entry in merged.items():
        row = {k: v for k, v in entry.items() if k not in ("slots", "memory_bytes")}
        if row.get("status") != "failed":
            row.pop("status_reason", None)
        row["replicas_loaded"] = loaded[name]
        out.append(row)
    return out


def _rank(entry: dict[str, Any]) -> int:
    status = entry.get("status")
    return STATUS_ORDER.index(status) if status in STATUS_ORDER else len(STATUS_ORDER)


def replica_stats(deployment: str) -> list[dict[str, Any]]:
    """Each live replica's last routing stats (empty before its first report)."""
    return [replica.routing_stats or {} for router in list(ROUTERS) for replica in router.curr_replicas.values()
            if replica.replica_id.deployment_id.name == deployment]


def cluster_status(deployment: str) -> dict[str, Any]:
    """Every replica's ``lse_status`` as its last routing stats gave it, and
    their sum in ``engine`` (the shape ``/metrics``' gauges read)."""
    replicas = []
    for router in list(ROUTERS):
        for replica in router.curr_replicas.values():
            if replica.replica_id.deployment_id.name != deployment:
                continue
            stats = replica.routing_stats or {}
            replicas.append({"replica": replica.replica_id.unique_id, "node": replica.node_id,
                             "ongoing_requests": router.replica_queue_len_cache.get(replica.replica_id),
                             "engine": stats.get("engine")})
    engines = [r["engine"] for r in replicas if r["engine"]]
    return {"engine": sum_engines(engines), "replicas": replicas}


def sum_engines(engines: list[dict[str, Any]]) -> dict[str, Any]:
    """The cluster as one engine: counts summed, devices and context listed once."""
    fallback: Counter[str] = Counter()
    for e in engines:
        for event in e["cpu_fallback"]["events"]:
            fallback[event["cause"]] += event["count"]
    return {
        "device": ",".join(sorted({e["device"] for e in engines})) or "none",
        "context_length": max((e["context_length"] for e in engines), default=0),
        **{k: sum(e[k] for e in engines) for k in ("slots", "active", "queued", "kv_tokens", "kv_capacity")},
        "cpu_fallback": {"allowed": all(e["cpu_fallback"]["allowed"] for e in engines),
                         "total": sum(fallback.values()),
                         "events": [{"cause": c, "count": n} for c, n in sorted(fallback.items())]},
        "replicas": len(engines),
    }
