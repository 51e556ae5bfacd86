"""The in-process handle of one embeddings request (``lse_request(engine, body, "embeddings")``).

The request runs on a thread of its own as the handle is made (the
scheduler does the work; the thread waits for it), so ``lse_request``
returns at once as it does for the other endpoints; ``events`` and
``result`` wait for the single ``done`` or ``error`` event. ``cancel``
withdraws the prompts not yet embedded.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any, AsyncIterator, Iterator

from lse.runtime.embeddings.service import embed
from lse.runtime.errors import LseError

Event = dict[str, Any]


class EmbeddingHandle:
    def __init__(self, engine: Any, body: Any, timeout: float | None = None) -> None:
        self.stream = False
        self._event: Event | None = None
        self._done = threading.Event()
        self._jobs: list = []  # the request's job once started (to cancel it)
        self._lock = threading.Lock()
        self._waiters: list = []  # called once the event is there (aevents' wake-ups)
        threading.Thread(target=self._run, args=(engine, body, timeout), name="lse-embeddings",
                         daemon=True).start()

    def _run(self, engine: Any, body: Any, timeout: float | None) -> None:
        try:
            self._event = {"type": "done", "data": embed(engine, body, timeout, self._jobs.append)}
        except LseError as e:
            self._event = {"type": "error", "status": e.status, "data": e.body()}
        except Exception as e:  # a bug: the caller gets the 500 envelope, not a hung handle
            err = LseError("internal_error", f"embeddings failed: {type(e).__name__}: {e}")
            self._event = {"type": "error", "status": err.status, "data": err.body()}
        finally:
            with self._lock:
                self._done.set()
                waiters, self._waiters = self._waiters, []
            for wake in waiters:
                wake()

    def events(self) -> Iterator[Event]:
        self._done.wait()
        yield self._event

    async def aevents(self) -> AsyncIterator[Event]:
        """The event, awaited on the loop (no thread waits for it)."""
        loop = asyncio.get_running_loop()
        ready = loop.create_future()
        with self._lock:
            if self._done.is_set():
                ready.set_result(None)
            else:
                self._waiters.append(lambda: loop.call_soon_threadsafe(_settle, ready))
        await ready
        yield self._event

    def rejection(self) -> Event | None:
        """The error event where the request has already ended in one, else None (it does not wait)."""
        ev = self._event if self._done.is_set() else None
        return ev if ev is not None and ev["type"] == "error" else None

    def cancel(self) -> None:
        for job in self._jobs:
            job.cancel()

    def result(self) -> tuple[int, dict]:
        self._done.wait()
        ev = self._event
        return (200, ev["data"]) if ev["type"] == "done" else (ev["status"], ev["data"])


def _settle(future: asyncio.Future) -> None:
    if not future.done():
        future.set_result(None)
