"""What the engine tells observers about each finished request.

The runtime never imports the HTTP layer: a server (or any embedder) that
wants per-request numbers registers a callback with ``lse_observe``; the
scheduler thread calls it once per request, when its last choice ends or the
request fails. The callback must be quick and must not raise into the
engine (an exception is logged and dropped). Numbers that are a state
rather than an event (running, waiting, KV tokens, CPU-fallback counts) are
read from ``lse_status`` instead.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

log = logging.getLogger("lse")


@dataclass(frozen=True)
class RequestRecord:
    """One finished request. Times are seconds; None where the request never got there."""

    endpoint: str  # "chat.completions" or "completions"
    outcome: str  # choice 0's finish_reason (stop, length, tool_calls), "cancelled" or "error"
    prompt_tokens: int  # n choices of one prompt count it once, as usage does
    generated_tokens: int
    cached_tokens: int  # prompt tokens reused from a slot's cache (prefix-cache hits)
    queue_seconds: float | None  # request created -> its first choice had a slot
    first_token_seconds: float | None  # request created -> choice 0's first token
    per_output_token_seconds: float | None  # choice 0: mean gap between tokens after the first
    e2e_seconds: float  # request created -> it ended
    model: str | None = None  # the model of a set (lse.runtime.model_runtime) that ran it; None: a lone engine


Observer = Callable[[RequestRecord], None]


class Observers:
    """The engine's observer list; ``notify`` shields the scheduler from them."""

    def __init__(self) -> None:
        self._observers: list[Observer] = []

    def add(self, observer: Observer) -> None:
        self._observers.append(observer)

    def notify(self, record: RequestRecord) -> None:
        for observer in list(self._observers):
            try:
                observer(record)
            except Exception:  # an observer's bug must not fail a request
                log.exception("lse: a request observer failed")
