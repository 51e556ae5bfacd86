"""Stop a request's generation when its client leaves or its time runs out.

One ``Guard`` per completion request. A task waits on the ASGI ``receive``
for ``http.disconnect`` and a timer waits for ``--request-timeout-secs``;
either one cancels the engine handle at once, so the slot is freed while the
client is gone, not when the reply would have ended. Neither does any work
per generated chunk.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any, Protocol, TypeVar

from blacksheep import Response

from lse.runtime.errors import LseError

from .replies import error_response

log = logging.getLogger("lse.api")

T = TypeVar("T")
Receive = Callable[[], Awaitable[dict[str, Any]]]


class Handle(Protocol):
    """The part of lse_request's handle the HTTP layer uses."""

    def aevents(self) -> Any: ...

    def rejection(self) -> dict[str, Any] | None: ...

    def cancel(self) -> None: ...


class Guard:
    """Watches one request; call ``close`` when its reply is over."""

    def __init__(self, handle: Handle, receive: Receive, timeout_secs: float, started: float | None = None) -> None:
        """``started``: the loop time the request's clock runs from (its body
        read, before it was prepared and queued); now if not given."""
        loop = asyncio.get_running_loop()
        self.handle = handle
        self.timeout_secs = timeout_secs
        self.timed_out = False
        self.disconnected = False
        self._closed = False
        # Resolved when the request must stop; a plain future costs no task.
        self._stop: asyncio.Future[None] = loop.create_future()
        self._watcher = asyncio.ensure_future(self._watch(receive))
        self._deadline = (loop.time() if started is None else started) + timeout_secs if timeout_secs > 0 else None
        self._timer = loop.call_at(self._deadline, self._expire) if self._deadline is not None else None

    @property
    def stopped(self) -> bool:
        return self._stop.done()

    async def race(self, work: Awaitable[T]) -> T | None:
        """``work``'s result, or None once the request is stopped (``work`` is
        then cancelled). A stop wins a tie: a timed-out request answers 408
        even if the engine's reply to the cancel arrived in the same tick."""
        task = asyncio.ensure_future(work)
        try:
            await asyncio.wait((task, self._stop), return_when=asyncio.FIRST_COMPLETED)
        finally:
            if not task.done():
                task.cancel()
        if not self.stopped and self._deadline is not None and asyncio.get_running_loop().time() >= self._deadline:
            self._expire()  # the work ended past the deadline, before the timer's turn came
        if self.stopped:
            if task.done() and not task.cancelled():
                task.exception()  # retrieved, so asyncio does not log it as lost
            return None
        return task.result()

    def stopped_response(self) -> Response:
        """The reply for a stopped request: 408 on timeout. After a disconnect
        nobody reads it, but the ASGI cycle still wants a response."""
        if self.timed_out:
            return error_response(self.timeout_error())
        return error_response(LseError("invalid_request", "the client disconnected; the request was cancelled"))

    def timeout_error(self) -> LseError:
        return LseError("request_timeout",
                        f"generation exceeded --request-timeout-secs ({self.timeout_secs:g}s); the request was cancelled")

    def close(self, finished: bool) -> None:
        """Stop watching; cancel the handle unless its reply ``finished``."""
        if self._closed:
            return
        self._closed = True
        self._watcher.cancel()
        if self._timer is not None:
            self._timer.cancel()
        if not finished and not self.stopped:
            self.handle.cancel()

    async def _watch(self, receive: Receive) -> None:
        # The body has been read, so the next message is http.disconnect: the
        # client went away (or, after our reply, the cycle ended; close()
        # cancels this task before that can happen).
        while (await receive())["type"] != "http.disconnect":
            pass
        if not self._closed and not self.stopped:
            self.disconnected = True
            log.info("lse-server: client disconnected; request cancelled")
            self._stop_now()

    def _expire(self) -> None:
        if not self.stopped:
            self.timed_out = True
            log.warning("lse-server: request exceeded --request-timeout-secs (%gs); cancelled", self.timeout_secs)
            self._stop_now()

    def _stop_now(self) -> None:
        self._stop.set_result(None)
        self.handle.cancel()
