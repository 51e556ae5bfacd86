"""PrefixRouter: a conversation's next turn goes to the replica that holds its prefix.

A Ray Serve ``RequestRouter`` (``ray.serve.request_router``) for the
``LseReplica`` deployment. It reads the request body (``generate``'s first
argument), so it sees what the engine will tokenize.

What it remembers is what LSE's KV cache keeps: each slot holds the last
sequence it ran, so each replica remembers the prompts of its last ``slots``
requests (its ``--parallel``, from the replica's routing stats). A prompt is
normalized to text (role and content of each message, or the completion
prompt), cut into ``BLOCK_CHARS``-character blocks, and each block hashed with
all before it (a hash chain: a prefix tree kept as the set of its nodes). A
replica's match for a new request is the longest run of leading blocks one of
its remembered prompts shares.

The choice, as Ray LLM's ``PrefixCacheAffinityRouter`` makes it
(ray/llm/_internal/serve/routing_policies/prefix_aware): load first, then
prefix. Replicas whose ongoing requests exceed the idlest one's by more than
``imbalance`` are out of the prefix contest (an idle replica beats a hot
cache); among the rest the longest match wins, ties going to the least
loaded; with no match anywhere, the least loaded wins, then the least
recently routed to, so new conversations spread over the replicas. The
ranking is returned as one replica per rank, so if the first refuses (full),
Serve tries the next. Unlike Ray LLM's, the memory lives in
the router itself (one ingress: no actor round trip on each request); with
several ingress replicas each learns from its own traffic.
"""

from __future__ import annotations

import hashlib
import random
import time
from collections import deque
from collections.abc import Iterable
from typing import Any

from ray.serve.request_router import PendingRequest, ReplicaID, RequestRouter, RunningReplica

# A module object, so the registry is the process's one: Serve pickles this
# module by value (RequestRouterConfig), so a global of its own would be a copy.
from . import routers

BLOCK_CHARS = 32
DEFAULT_IMBALANCE = 2  # ongoing requests more than the idlest replica's: no prefix preference


def prompt_text(body: Any) -> str:
    """The request's prompt as one string, in the order the engine reads it."""
    if not isinstance(body, dict):
        return ""
    messages = body.get("messages")
    if isinstance(messages, list):
        return "".join(f"{m.get('role', '')}\x00{_text(m.get('content'))}\x01"
                       for m in messages if isinstance(m, dict))
    return _text(body.get("prompt"))


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list):  # content parts, several prompts, or token ids
        return "\x02".join(_text(v) if not isinstance(v, int) else str(v) for v in value)
    if isinstance(value, dict):
        return _text(value.get("text"))
    return ""


def prefix_chain(text: str, block_chars: int = BLOCK_CHARS) -> list[bytes]:
    """One hash per whole block of ``text``, each covering every block before it."""
    chain, digest = [], b""
    for start in range(0, len(text) - block_chars + 1, block_chars):
        digest = hashlib.blake2b(digest + text[start:start + block_chars].encode("utf-8", "surrogatepass"),
                                 digest_size=8).digest()
        chain.append(digest)
    return chain


class PrefixMemory:
    """The prompts a replica's slots last held, as hash chains."""

    def __init__(self) -> None:
        self.prompts: deque[frozenset[bytes]] = deque()

    def match(self, chain: list[bytes]) -> int:
        """Leading blocks of ``chain`` one remembered prompt holds."""
        best = 0
        for held in self.prompts:
            n = 0
            while n < len(chain) and chain[n] in held:
                n += 1
            best = max(best, n)
        return best

    def remember(self, chain: list[bytes], slots: int) -> None:
        if chain:
            self.prompts.append(frozenset(chain))
        while len(self.prompts) > max(1, slots):
            self.prompts.popleft()


def rank(replicas: list[Any], loads: dict[Any, int], matches: dict[Any, int], last_used: dict[Any, float],
         imbalance: int, holding: set[Any] | None = None) -> list[Any]:
    """``replicas`` best first: the longest match among those within ``imbalance``
    of the idlest; without a match, the least loaded, then the one least
    recently routed to (a new conversation goes where no other was just sent,
    so conversations spread over the replicas' slots).

    ``holding`` (several models): the replicas where the request's model is
    loaded (or loading). Those within ``imbalance`` of the idlest come first,
    the choice by prefix made among them; only when every one is that much
    busier (or none holds it) does the request go where the model must load,
    so a busy model spreads to more replicas and an idle one stays put."""
    shuffled = random.sample(replicas, len(replicas))  # random among full equals
    by_load = sorted(shuffled, key=lambda r: (loads[r], last_used.get(r, 0.0)))
    idlest = loads[by_load[0]]
    near = [r for r in by_load if loads[r] - idlest <= imbalance]
    if holding:
        held = [r for r in near if r in holding]
        if held:
            first = _by_prefix(held, matches)
            return first + [r for r in by_load if r not in first]
    return _by_prefix(near, matches) + [r for r in by_load if r not in near]


def _by_prefix(replicas: list[Any], matches: dict[Any, int]) -> list[Any]:
    """``replicas`` (by load) with the longest prefix match, if any, moved first."""
    contenders = [r for r in replicas if matches[r] > 0]
    if not contenders:
        return replicas
    best = max(contenders, key=lambda r: matches[r])  # max keeps the first (least loaded) of equals
    return [best] + [r for r in replicas if r is not best]


HELD = ("loaded", "loading")
RECENT_S = 10.0  # a model routed to a replica this recently counts as held there (its stats may lag)


def model_of(body: Any, reports: list[dict[str, Any]]) -> str | None:
    """The model a request runs on, as the replicas resolve it (several
    models: by name or alias, none being the default); None with one model,
    or for a name no replica serves (it is refused wherever it goes)."""
    for stats in reports:
        models = stats.get("models")
        if not models:
            continue
        wanted = body.get("model") if isinstance(body, dict) else None
        if not isinstance(wanted, str) or not wanted or len(models) == 1:
            return stats.get("default_model")
        for entry in models:
            if wanted == entry["id"] or wanted in entry.get("aliases", ()):
                return entry["id"]
        return None
    return None


def holds(stats: dict[str, Any], model: str) -> bool:
    return any(e["id"] == model and e.get("status") in HELD for e in stats.get("models") or ())


def model_slots(stats: dict[str, Any], model: str | None) -> int:
    """The slots a model has on a replica (its prefix memory's size), else the replica's."""
    for entry in stats.get("models") or ():
        if entry["id"] == model and entry.get("slots"):
            return int(entry["slots"])
    return int(stats.get("slots", 1))


class PrefixRouter(RequestRouter):
    """Serve's request router for ``LseReplica`` (see the module docstring)."""

    def initialize_state(self, imbalance: int = DEFAULT_IMBALANCE, block_chars: int = BLOCK_CHARS, **_: Any) -> None:
        self.imbalance = imbalance
        self.block_chars = block_chars
        self.memories: dict[ReplicaID, PrefixMemory] = {}
        self.last_used: dict[ReplicaID, float] = {}
        self.routed: dict[ReplicaID, dict[str, float]] = {}  # several models: when each was last sent where
        routers.ROUTERS.add(self)

    async def choose_replicas(self, candidate_replicas: list[RunningReplica],
                              pending_request: PendingRequest | None = None) -> list[list[RunningReplica]]:
        if pending_request is None or len(candidate_replicas) < 2:
            return [candidate_replicas]
        avoid = set(pending_request.kwargs.get("avoid") or ())  # replicas that just answered "queue full"
        candidates = [r for r in candidate_replicas if r.replica_id.unique_id not in avoid] or candidate_replicas
        model = self._model(pending_request)
        chain = self._chain(pending_request, model)
        loads = await self._loads(candidates)
        matches = {r: self.memories.get(r.replica_id, PrefixMemory()).match(chain) for r in candidates}
        last_used = {r: self.last_used.get(r.replica_id, 0.0) for r in candidates}
        holding = None
        if model is not None:
            now = time.monotonic()
            holding = {r for r in candidates if holds(r.routing_stats or {}, model)
                       or now - self.routed.get(r.replica_id, {}).get(model, float("-inf")) < RECENT_S}
        return [[r] for r in rank(candidates, loads, matches, last_used, self.imbalance, holding)]

    def on_request_routed(self, pending_request: PendingRequest, replica_id: ReplicaID, result: Any) -> None:
        if pending_request.metadata.call_method != "generate":
            return
        replica = self.curr_replicas.get(replica_id)
        model = self._model(pending_request)
        slots = model_slots((replica.routing_stats if replica else None) or {}, model)
        self.memories.setdefault(replica_id, PrefixMemory()).remember(self._chain(pending_request, model), slots)
        self.last_used[replica_id] = time.monotonic()
        if model is not None:
            self.routed.setdefault(replica_id, {})[model] = time.monotonic()

    def on_replica_actor_died(self, replica_id: ReplicaID) -> None:
        super().on_replica_actor_died(replica_id)
        self.memories.pop(replica_id, None)
        self.last_used.pop(replica_id, None)
        self.routed.pop(replica_id, None)

    def update_replicas(self, replicas: list[RunningReplica]) -> None:
        super().update_replicas(replicas)
        live = {r.replica_id for r in replicas}
        for gone in [k for k in self.memories if k not in live]:
            del self.memories[gone]
            self.last_used.pop(gone, None)
            self.routed.pop(gone, None)

    def _model(self, pending_request: PendingRequest) -> str | None:
        if pending_request.metadata.call_method != "generate":
            return None
        body = pending_request.args[0] if pending_request.args else None
        return model_of(body, [r.routing_stats or {} for r in self.curr_replicas.values()])

    def _chain(self, pending_request: PendingRequest, model: str | None = None) -> list[bytes]:
        """The prompt's chain, keyed by its model with several (one model's
        cached prefix is nothing to another's)."""
        body = pending_request.args[0] if pending_request.args else None
        text = prompt_text(body)
        return prefix_chain(text if model is None else f"{model}\x03{text}", self.block_chars)

    async def _loads(self, replicas: Iterable[RunningReplica]) -> dict[RunningReplica, int]:
        """Ongoing requests per replica: Serve's cache, probing those it lacks."""
        loads: dict[RunningReplica, int] = {}
        missing = []
        for r in replicas:
            n = self.replica_queue_len_cache.get(r.replica_id)
            if n is None:
                missing.append(r)
            else:
                loads[r] = n
        if missing:
            # Ray LLM's router probes the same way (a private method of RequestRouter).
            for r, n in await self._probe_queue_lens(missing, 0):
                loads[r] = n if n is not None else r.max_ongoing_requests
        for r in replicas:
            loads.setdefault(r, r.max_ongoing_requests)
        return loads
