"""The streamed reply: engine events as server-sent events.

Each chunk goes out as ``data: <json>\\n\\n`` and a finished stream ends with
``data: [DONE]\\n\\n``. The status line is held back until the first event,
so a request the engine rejects up front (validation, context_full) still gets
a plain JSON error with its own status. An error after chunks went out is sent
in the stream as ``data: {"error": {...}}`` and the stream still ends with
[DONE], which is what OpenAI clients look for.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable
from typing import Any

from blacksheep import Response, StreamedContent

from lse.runtime.errors import LseError

from .guard import Guard
from .replies import dumps, event_error_response

log = logging.getLogger("lse.api")

DONE_FRAME = b"data: [DONE]\n\n"
_SSE_HEADERS = [(b"cache-control", b"no-cache")]
_EVENT_STREAM = b"text/event-stream"

Event = dict[str, Any]


def frame(obj: Any) -> bytes:
    """One SSE data frame."""
    return b"data: " + dumps(obj) + b"\n\n"


async def stream_response(guard: Guard) -> Response:
    """The reply to a ``"stream": true`` request; takes over ``guard``."""
    events = guard.handle.aevents().__aiter__()
    try:
        first = await guard.race(anext(events, None))
    except BaseException:
        guard.close(finished=False)
        raise
    if guard.stopped:
        guard.close(finished=False)
        return guard.stopped_response()
    if first is not None and first["type"] == "error":
        guard.close(finished=True)
        return event_error_response(first)
    return Response(200, list(_SSE_HEADERS), StreamedContent(_EVENT_STREAM, _frames(guard, first, events)))


def _frames(guard: Guard, first: Event | None, events: AsyncIterator[Event]) -> Callable[[], AsyncIterator[bytes]]:
    async def frames() -> AsyncIterator[bytes]:
        finished = False
        last = first
        try:
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
