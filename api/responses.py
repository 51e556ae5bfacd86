"""The OpenAI Responses API: POST /v1/responses, GET and DELETE
/v1/responses/{id}, POST /v1/responses/{id}/cancel.

The wire layer (``lse.runtime.responses``) translates a body into a chat
request the engine runs as any other and turns its events into Responses
events; this module reads the body, watches the client (``Guard``: a
disconnect or --request-timeout-secs cancels the request) and sends the
reply: the response object, or the events as server-sent events
(``event: <type>`` and ``data: <json>``, no ``[DONE]``: OpenAI's framing). A
request refused before it starts gets its HTTP status and error envelope,
streamed or not; an error after the stream began is a ``response.failed``
event.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
from collections.abc import AsyncIterator
from concurrent.futures import Executor
from typing import Any
from urllib.parse import unquote

from blacksheep import Request, Response, StreamedContent

from lse.runtime.errors import LseError
from lse.runtime.responses.service import ResponseHandle, ResponsesService
from lse.runtime.responses.store import DEFAULT_MAX_BYTES, DEFAULT_MAX_ENTRIES, DEFAULT_TTL_SECS, ResponseStore
from lse.runtime.responses.store import StoreOptions

from .completions import Runtime, read_json_object
from .guard import Guard
from .replies import dumps, event_error_response, json_response
from .sse import KEEPALIVE_FRAME, KEEPALIVE_SECS

log = logging.getLogger("lse.api")

CHAT = "chat.completions"
_SSE_HEADERS = [(b"cache-control", b"no-cache")]
# Once one of these has gone out the request has left the queue: no more keep-alive comments.
OUTPUT_STARTED = ("response.output_item.added", "response.completed", "response.incomplete", "response.failed")


def _at_least_zero(kind: type) -> Any:
    def parse(text: str) -> Any:
        value = kind(text)
        if not value >= 0:  # NaN too
            raise argparse.ArgumentTypeError(f"must be 0 or more, got {text}")
        return value

    parse.__name__ = kind.__name__
    return parse


def add_store_arguments(p: argparse.ArgumentParser) -> None:
    """lse-server's options for the Responses store (lse.runtime.responses.store)."""
    p.add_argument("--responses-store-entries", type=_at_least_zero(int), default=DEFAULT_MAX_ENTRIES, metavar="N",
                   help=f"responses kept for previous_response_id and GET (default {DEFAULT_MAX_ENTRIES}; 0: none)")
    p.add_argument("--responses-store-bytes", type=_at_least_zero(int), default=DEFAULT_MAX_BYTES, metavar="BYTES",
                   help=f"bytes of JSON the response store holds at most (default {DEFAULT_MAX_BYTES})")
    p.add_argument("--responses-store-ttl-secs", type=_at_least_zero(float), default=DEFAULT_TTL_SECS,
                   metavar="SECS", help=f"seconds a stored response is kept (default {DEFAULT_TTL_SECS:g}; "
                   "0: until evicted)")


def store_options(args: argparse.Namespace) -> StoreOptions:
    return StoreOptions(args.responses_store_entries, args.responses_store_bytes, args.responses_store_ttl_secs)


def frame(event: dict[str, Any]) -> bytes:
    return b"event: " + event["type"].encode() + b"\ndata: " + dumps(event) + b"\n\n"


class ResponsesRoutes:
    """The four routes over one store; ``require`` gives the engine or raises 503."""

    def __init__(self, require: Any, runtime: Runtime, settings: Any, pool: Executor) -> None:
        self.require, self.runtime, self.settings, self.pool = require, runtime, settings, pool
        self.service = ResponsesService(ResponseStore(settings.responses_store))
        self.table = [
            ("POST", "/v1/responses", self.create),
            ("GET", "/v1/responses/{response_id}", self.get),
            ("DELETE", "/v1/responses/{response_id}", self.delete),
            ("POST", "/v1/responses/{response_id}/cancel", self.cancel),
        ]

    def allowed(self, path: str) -> list[str] | None:
        """The methods of a /v1/responses/{id} path (for the 405's Allow), None for another path."""
        parts = path.split("/")  # "", "v1", "responses", id[, "cancel"]
        if len(parts) < 4 or parts[1:3] != ["v1", "responses"] or not parts[3]:
            return None
        if len(parts) == 4:
            return ["GET", "DELETE"]
        return ["POST"] if len(parts) == 5 and parts[4] == "cancel" else None

    def status(self) -> dict[str, Any]:
        """The store's figures, under /v1/lse/status's ``responses_store``."""
        return self.service.store.status()

    async def create(self, request: Request) -> Response:
        engine = self.require()
        receive = request.content.receive
        body = await read_json_object(request, receive, self.settings.max_body_bytes,
                                      self.settings.read_timeout_secs)
        started = asyncio.get_running_loop().time()

        def submit(chat: dict[str, Any]) -> Any:
            return self.runtime.lse_request(engine, chat, CHAT)

        handle = await _on_pool(self.pool, self.service.create, body, submit)
        guard = Guard(handle, receive, self.settings.request_timeout_secs, started)
        rejected = handle.rejection()
        if rejected is not None:
            guard.close(finished=True)
            return event_error_response(rejected)
        if handle.stream:
            return Response(200, list(_SSE_HEADERS), StreamedContent(b"text/event-stream", _frames(guard, handle)))
        return await _whole(guard, handle)

    async def get(self, request: Request) -> Response:
        self.require()
        return json_response(200, self.service.get(_rid(request)))

    async def delete(self, request: Request) -> Response:
        self.require()
        return json_response(200, self.service.delete(_rid(request)))

    async def cancel(self, request: Request) -> Response:
        self.require()
        return json_response(200, self.service.cancel(_rid(request)))


def _rid(request: Request) -> str:
    return unquote(request.route_values.get("response_id") or "")


async def _on_pool(pool: Executor, call: Any, *args: Any) -> ResponseHandle:
    future = asyncio.get_running_loop().run_in_executor(pool, call, *args)
    try:
        return await asyncio.shield(future)
    except asyncio.CancelledError:  # the handler was cancelled: cancel the request once it exists
        future.add_done_callback(lambda f: None if f.cancelled() or f.exception() else f.result().cancel())
        raise


async def _whole(guard: Guard, handle: ResponseHandle) -> Response:
    """Non-streamed: the done event's response (the fold of the events) or the error."""
    finished = False
    try:
        last = await guard.race(_last(handle))
        if guard.stopped:
            return guard.stopped_response()
        finished = True
    finally:
        guard.close(finished)
        handle.close()
    if last is None:
        raise LseError("generation_failed", "the engine ended the request without a result")
    if last["type"] == "error":
        return event_error_response(last)
    return json_response(200, last["data"])


async def _last(handle: ResponseHandle) -> dict[str, Any] | None:
    async for event in handle.aevents():
        if event["type"] != "chunk":
            return event
    return None


def _frames(guard: Guard, handle: ResponseHandle) -> Any:
    async def frames() -> AsyncIterator[bytes]:
        finished = False
        try:
            async for item in _with_keepalive(handle.aevents().__aiter__()):
                if guard.disconnected:
                    break  # nobody reads on
                if guard.timed_out:  # the engine ends the cancelled request; its stream ends response.failed
                    timeout = guard.timeout_error()
                    handle.fail_with(timeout.body(), timeout.status)
                yield item if isinstance(item, bytes) else frame(item["data"])
            finished = not guard.stopped
        except Exception:  # headers are out: report in the stream
            log.exception("lse-server: streamed response failed")
            for event in handle.failed_events(LseError("internal_error", "internal server error; see the server "
                                                       "log").body()):
                yield frame(event)
        finally:
            guard.close(finished)
            handle.close()

    return frames


async def _with_keepalive(events: AsyncIterator[dict[str, Any]]) -> AsyncIterator[bytes | dict[str, Any]]:
    """The chunk events, with an SSE comment every KEEPALIVE_SECS while no output has started: a queued
    request's stream stays alive through proxies' idle timeouts (see api/sse.py)."""
    while True:
        task = asyncio.ensure_future(anext(events, None))
        while not (await asyncio.wait({task}, timeout=KEEPALIVE_SECS))[0]:
            yield KEEPALIVE_FRAME
        event = task.result()
        if event is None or event["type"] != "chunk":
            return
        yield event
        if event["data"]["type"] in OUTPUT_STARTED:
            break
    async for event in events:  # output has started: one hop per event, no timer
        if event["type"] != "chunk":
            return
        yield event
