"""A one-way event channel from the scheduler thread to one request's
reader, usable from plain threads (``get``) and from asyncio (``aget``)."""

from __future__ import annotations

import asyncio
import collections
import threading


class Channel:
    def __init__(self) -> None:
        self._items: collections.deque = collections.deque()
        self._cond = threading.Condition()
        self._waiters: list[tuple[asyncio.AbstractEventLoop, asyncio.Future]] = []

    def put(self, item) -> None:
        with self._cond:
            self._items.append(item)
            self._cond.notify_all()
            waiters, self._waiters = self._waiters, []
        for loop, fut in waiters:
            loop.call_soon_threadsafe(_wake, fut)

    def get(self, timeout: float | None = None):
        with self._cond:
            if not self._cond.wait_for(lambda: self._items, timeout):
                raise TimeoutError
            return self._items.popleft()

    async def aget(self):
        while True:
            loop = asyncio.get_running_loop()
            with self._cond:
                if self._items:
                    return self._items.popleft()
                fut = loop.create_future()
                self._waiters.append((loop, fut))
            await fut


def _wake(fut: asyncio.Future) -> None:
    if not fut.done():
        fut.set_result(None)


def terminal_result(events) -> tuple[int, dict]:
    """Block on a handle's events until the terminal one: (HTTP status, body)."""
    for event in events:
        if event["type"] == "done":
            return 200, event["data"]
        if event["type"] == "error":
            return event["status"], event["data"]
    raise RuntimeError("request ended without a terminal event")
