"""POST /v1/messages and /v1/messages/count_tokens: Anthropic's Messages API
over the same engine path as /v1/chat/completions (lse.runtime.anthropic
translates; this module reads the body, frames the stream and answers
every error in Anthropic's envelope).

The stream is Anthropic's server-sent events, ``event: <type>`` then
``data: <json>`` per event. Between ``message_start`` and the first content
(while the request waits for a slot and its prompt is read) a ``ping`` event
goes out every KEEPALIVE_SECS, as Anthropic's own stream sends them, so
proxies and clients see a live connection. An error after the headers went
out is an ``error`` event, and the stream ends there.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator, Callable
from typing import Any

from blacksheep import Request, Response, StreamedContent

from lse.runtime.anthropic.errors import anthropic_error, lse_error_body
from lse.runtime.errors import LseError

from .auth import Handler
from .completions import _prepare, read_body
from .guard import Guard
from .replies import RETRY_AFTER_SECS, dumps, json_response

log = logging.getLogger("lse.api")

MESSAGES_PATHS = ("/v1/messages", "/v1/messages/count_tokens")
KEEPALIVE_SECS = 5.0
PING = {"type": "ping"}
_SSE_HEADERS = [(b"cache-control", b"no-cache")]
Event = dict[str, Any]


def anthropic_errors(handler: Handler) -> Handler:
    """``handler`` with every LseError it raises (auth's 401, the body's 413
    and 400, model_loading's 503) answered in Anthropic's envelope."""
    async def answered(request: Request) -> Response:
        try:
            return await handler(request)
        except LseError as exc:
            return error_reply(exc.status, lse_error_body(exc))

    return answered


def messages_fallback(handler: Handler) -> Handler:
    """The fallback route (401, 404, 405) in Anthropic's envelope for a path
    under /v1/messages, in OpenAI's elsewhere."""
    wrapped = anthropic_errors(handler)

    async def answered(request: Request) -> Response:
        if not request.path.startswith("/v1/messages"):
            return await handler(request)
        response = await wrapped(request)
        if response.status == 405:  # the fallback answers 405 (with Allow) rather than raising it
            rewrapped = error_reply(405, anthropic_error(405, json.loads(response.content.body)))
            rewrapped.add_header(b"allow", response.get_first_header(b"allow") or b"POST")
            return rewrapped
        return response

    return answered


def error_reply(status: int, body: dict[str, Any]) -> Response:
    headers = [(b"retry-after", RETRY_AFTER_SECS)] if status == 503 else None
    return json_response(status, body, headers)


def sse(event: Event) -> bytes:
    return b"event: " + event["type"].encode() + b"\ndata: " + dumps(event) + b"\n\n"


class MessagesRoutes:
    """The two routes, over the app's Routes (engine holder, runtime, settings, pool)."""

    def __init__(self, routes: Any) -> None:
        self.routes = routes

    async def create(self, request: Request) -> Response:
        return await self._serve(request, "messages")

    async def count_tokens(self, request: Request) -> Response:
        return await self._serve(request, "messages.count_tokens")

    async def _serve(self, request: Request, endpoint: str) -> Response:
        routes = self.routes
        engine = routes.holder.require()
        receive = request.content.receive
        data = await read_body(request, receive, routes.settings.max_body_bytes, routes.settings.read_timeout_secs)
        started = asyncio.get_running_loop().time()
        # On a prepare pool: the body's JSON, its checks and the prompt (a 400 for a body that is not an object)
        handle, stream = await _prepare(routes.pool.for_size(len(data)), routes.runtime, engine, data, endpoint)
        guard = Guard(handle, receive, routes.settings.request_timeout_secs, started)
        rejected = handle.rejection()
        if rejected is not None:
            guard.close(finished=True)
            return error_reply(rejected["status"], rejected["data"])
        # From the body, as the chat route decides: a cluster's handle carries no stream flag.
        if endpoint == "messages" and stream:
            return Response(200, list(_SSE_HEADERS), StreamedContent(b"text/event-stream", _frames(guard)))
        return await _whole(guard)


async def _whole(guard: Guard) -> Response:
    """Non-streamed: the done event's Message (the fold of the events) or the error."""
    finished = False
    try:
        last = await guard.race(_last_event(guard.handle))
        if guard.stopped:
            return _stopped(guard)
        finished = True
    finally:
        guard.close(finished)
    if last is None:
        raise LseError("generation_failed", "the engine ended the request without a result")
    if last["type"] == "error":
        return error_reply(last["status"], last["data"])
    return json_response(200, last["data"])


def _stopped(guard: Guard) -> Response:
    err = guard.timeout_error() if guard.timed_out else \
        LseError("invalid_request", "the client disconnected; the request was cancelled")
    return error_reply(err.status, lse_error_body(err))


async def _last_event(handle: Any) -> Event | None:
    async for event in handle.aevents():
        if event["type"] != "chunk":
            return event
    return None


def _frames(guard: Guard) -> Callable[[], AsyncIterator[bytes]]:
    async def frames() -> AsyncIterator[bytes]:
        finished = False
        events = guard.handle.aevents().__aiter__()
        try:
            async for item in _events(guard, events):
                yield item
            finished = not guard.stopped
            if guard.timed_out:
                yield sse(lse_error_body(guard.timeout_error()))
        except Exception:  # headers are out: report in the stream
            log.exception("lse-server: streamed messages request failed")
            yield sse(lse_error_body(LseError("internal_error", "internal server error; see the server log")))
        finally:
            guard.close(finished)

    return frames


async def _events(guard: Guard, events: AsyncIterator[Event]) -> AsyncIterator[bytes]:
    """Each event as a frame until the terminal one (done adds nothing:
    message_stop was its last chunk); pings while nothing has come since
    message_start. Once content flows, events are read as they come (a
    disconnect or timeout cancels the handle, which ends them)."""
    content = False
    task: asyncio.Future | None = None
    try:
        while True:
            if content:
                event = await anext(events, None)
            else:
                task = task or asyncio.ensure_future(anext(events, None))
                await guard.race(asyncio.wait({task}, timeout=KEEPALIVE_SECS))
                if guard.stopped:
                    return
                if not task.done():
                    yield sse(PING)
                    continue
                event, task = task.result(), None
            if guard.stopped:
                return
            if event is None:
                yield sse(lse_error_body(LseError("generation_failed", "the engine ended the stream without a result")))
                return
            if event["type"] == "error":
                yield sse(event["data"])
                return
            if event["type"] == "done":
                return
            yield sse(event["data"])
            content = event["data"]["type"] != "message_start"
    finally:
        if task is not None and not task.done():
            task.cancel()
