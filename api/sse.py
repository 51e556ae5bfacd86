"""The streamed reply: engine events as server-sent events.

Each chunk goes out as ``data: <json>\\n\\n`` and a finished stream ends with
``data: [DONE]\\n\\n``. A request the engine rejects up front (validation,
context_full, a full queue) gets a plain JSON error with its own status. An
error after the headers went out is sent in the stream as
``data: {"error": {...}}`` and the stream still ends with [DONE], which is
what OpenAI clients look for.

Queued streams: the headers go out at admission, and until the first event
an SSE comment (``: queued\\n\\n``) every KEEPALIVE_SECS. Holding the headers
back until the first chunk (the other choice) leaves a queued client with no
byte at all for as long as it waits, which reads as a hung server and trips
idle timeouts in proxies (nginx proxy_read_timeout, 60 s by default) and
clients; sending headers alone fixes the first but not the second. SSE
comments are ignored by every conforming client (WHATWG HTML, "Server-sent
events", lines starting with a colon), the OpenAI SDK included. The cost:
errors that arise after admission (a timeout while queued, a shutdown) come
in the stream, with [DONE], not as an HTTP status.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable
from typing import Any

from blacksheep import Response, StreamedContent

from lse.runtime.errors import LseError

from .guard import Guard
from .replies import dumps, event_error_response

log = logging.getLogger("lse.api")

DONE_FRAME = b"data: [DONE]\n\n"
KEEPALIVE_FRAME = b": queued\n\n"
KEEPALIVE_SECS = 5.0
_SSE_HEADERS = [(b"cache-control", b"no-cache")]
_EVENT_STREAM = b"text/event-stream"

Event = dict[str, Any]


def frame(obj: Any) -> bytes:
    """One SSE data frame."""
    return b"data: " + dumps(obj) + b"\n\n"


async def stream_response(guard: Guard) -> Response:
    """The reply to a ``"stream": true`` request; takes over ``guard``."""
    rejected = guard.handle.rejection()
    if rejected is not None:
        guard.close(finished=True)
        return event_error_response(rejected)
    return Response(200, list(_SSE_HEADERS), StreamedContent(_EVENT_STREAM, _frames(guard)))


def _frames(guard: Guard) -> Callable[[], AsyncIterator[bytes]]:
    async def frames() -> AsyncIterator[bytes]:
        finished = False
        events = guard.handle.aevents().__aiter__()
        try:
            last = None
            async for item in _until_first(guard, events):
                if isinstance(item, bytes):
                    yield item
                else:
                    last = item
            if last is not None and last["type"] == "chunk":
                yield frame(last["data"])
                last = None
                # The hot loop: one type test and one encode per chunk.
                async for event in events:
                    if event["type"] != "chunk":
                        last = event
                        break
                    yield frame(event["data"])
            finished = True
            for tail in _ending(guard, last):
                yield tail
        except Exception:  # headers are out: report in the stream, keep serving
            log.exception("lse-server: streamed request failed")
            yield frame(LseError("internal_error", "internal server error; see the server log").body())
            yield DONE_FRAME
        finally:
            guard.close(finished)

    return frames


async def _until_first(guard: Guard, events: AsyncIterator[Event]) -> AsyncIterator[bytes | Event]:
    """Keep-alive comments until the first event, then that event; nothing
    more once the request is stopped."""
    task = asyncio.ensure_future(anext(events, None))
    try:
        while True:
            await guard.race(asyncio.wait({task}, timeout=KEEPALIVE_SECS))
            if guard.stopped:
                return
            if task.done():
                event = task.result()
                if event is not None:
                    yield event
                return
            yield KEEPALIVE_FRAME
    finally:
        if not task.done():
            task.cancel()


def _ending(guard: Guard, last: Event | None) -> list[bytes]:
    """The frames after the last chunk, given the event that ended the stream."""
    if guard.disconnected:
        return []
    if guard.timed_out:
        return [frame(guard.timeout_error().body()), DONE_FRAME]
    if last is None:  # the events ran out with neither done nor error
        err = LseError("generation_failed", "the engine ended the stream without a result")
        return [frame(err.body()), DONE_FRAME]
    if last["type"] == "error":
        return [frame(last["data"]), DONE_FRAME]
    return [DONE_FRAME]
