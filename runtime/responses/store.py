"""The bounded store of responses kept for ``previous_response_id`` and GET.

A response created with ``store: true`` (OpenAI's default) is kept with the
conversation that produced it (the chat messages, the reply's included) so a
later request naming it continues that conversation. The store holds at most
``max_entries`` responses and ``max_bytes`` bytes (each entry counted as its
compact JSON) and forgets an entry ``ttl_secs`` after it was stored; past a
cap the oldest entries go first. An entry larger than ``max_bytes`` by itself
is not kept (``too_large`` counts those). A forgotten id is unknown: GET and
``previous_response_id`` answer 404, never a silent fresh start.

Responses still being generated are tracked beside the store (``running``),
stored or not, so GET can show them in progress and cancel can stop them.
"""

from __future__ import annotations

import json
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

DEFAULT_MAX_ENTRIES = 1000
DEFAULT_MAX_BYTES = 64 * 2**20
DEFAULT_TTL_SECS = 3600.0


@dataclass(frozen=True)
class StoreOptions:
    """The operator's bounds (lse-server --responses-store-*); ttl_secs 0: no expiry."""

    max_entries: int = DEFAULT_MAX_ENTRIES
    max_bytes: int = DEFAULT_MAX_BYTES
    ttl_secs: float = DEFAULT_TTL_SECS


@dataclass
class Entry:
    response: dict[str, Any]
    conversation: list[dict[str, Any]]  # chat messages, instructions excluded
    size: int
    stored_at: float


@dataclass
class Running:
    """A response in flight: its current state and how to stop it."""

    snapshot: Callable[[], dict[str, Any]]
    cancel: Callable[[], None]


class ResponseStore:
    def __init__(self, options: StoreOptions | None = None, clock: Callable[[], float] = time.monotonic) -> None:
        self.options = options or StoreOptions()
        self._clock = clock
        self._entries: OrderedDict[str, Entry] = OrderedDict()
        self._bytes = 0
        self._running: dict[str, Running] = {}
        self._lock = threading.Lock()
        self.evicted = 0  # entries dropped by a cap
        self.expired = 0  # entries dropped by the TTL
        self.too_large = 0  # responses not kept: larger than max_bytes alone

    # ---- stored responses ----------------------------------------------------
    def put(self, rid: str, response: dict[str, Any], conversation: list[dict[str, Any]]) -> bool:
        """Keep ``response``; False when it is larger than the byte cap alone."""
        size = len(json.dumps(response, separators=(",", ":"))) + len(json.dumps(conversation, separators=(",", ":")))
        with self._lock:
            self._expire()
            if size > self.options.max_bytes or self.options.max_entries <= 0:
                self.too_large += 1
                return False
            old = self._entries.pop(rid, None)
            if old is not None:
                self._bytes -= old.size
            self._entries[rid] = Entry(response, conversation, size, self._clock())
            self._bytes += size
            while len(self._entries) > self.options.max_entries or self._bytes > self.options.max_bytes:
                _, gone = self._entries.popitem(last=False)
                self._bytes -= gone.size
                self.evicted += 1
            return True

    def get(self, rid: str) -> Entry | None:
        with self._lock:
            self._expire()
            return self._entries.get(rid)

    def delete(self, rid: str) -> bool:
        with self._lock:
            self._expire()
            gone = self._entries.pop(rid, None)
            if gone is None:
                return False
            self._bytes -= gone.size
            return True

    def _expire(self) -> None:
        ttl = self.options.ttl_secs
        if ttl <= 0:
            return
        cutoff = self._clock() - ttl
        while self._entries:
            rid, first = next(iter(self._entries.items()))
            if first.stored_at > cutoff:
                return
            del self._entries[rid]
            self._bytes -= first.size
            self.expired += 1

    # ---- responses in flight -------------------------------------------------
    def begin(self, rid: str, running: Running) -> None:
        with self._lock:
            self._running[rid] = running

    def end(self, rid: str) -> None:
        with self._lock:
            self._running.pop(rid, None)

    def running(self, rid: str) -> Running | None:
        with self._lock:
            return self._running.get(rid)

    def status(self) -> dict[str, Any]:
        """The store's figures, for /v1/lse/status."""
        with self._lock:
            self._expire()
            return {"entries": len(self._entries), "bytes": self._bytes, "running": len(self._running),
                    "max_entries": self.options.max_entries, "max_bytes": self.options.max_bytes,
                    "ttl_secs": self.options.ttl_secs, "evicted": self.evicted, "expired": self.expired,
                    "too_large": self.too_large}
