"""POST /v1/chat/completions and /v1/completions: body in, engine events out.

The HTTP layer only reads and parses the body (size limit, JSON, an object)
and turns events into a reply; field validation is the engine's, so the same
error JSON comes back over HTTP and over lse_request.

Preparing a request (checks, the chat template, tokenizing) runs on a small
thread pool, never on the event loop: a large prompt must not stall /health
or the running streams' chunks. The pool takes half the cores at most, so the
scheduler thread keeps a core while prompts are tokenized.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from concurrent.futures import Executor, ThreadPoolExecutor
from typing import Any, Protocol

from blacksheep import Request, Response

from lse.runtime.openai.body import parse_json_object
from lse.runtime.errors import LseError

from .guard import Guard, Handle, Receive
from .replies import event_error_response, json_response
from .sse import stream_response


class Runtime(Protocol):
    """The in-process API the server is a layer over (``lse.runtime.api``)."""

    def lse_request(self, engine: Any, body: dict[str, Any], endpoint: str) -> Handle: ...

    def lse_model_info(self, engine: Any) -> dict[str, Any]: ...

    def lse_status(self, engine: Any) -> dict[str, Any]: ...

    def lse_observe(self, engine: Any, observer: Callable[[Any], None]) -> None: ...

    def lse_tokenize(self, engine: Any, body: dict[str, Any]) -> dict[str, Any]: ...

    def lse_detokenize(self, engine: Any, body: dict[str, Any]) -> dict[str, Any]: ...

    def lse_tokenizer_info(self, engine: Any) -> dict[str, Any]: ...

    def lse_shutdown(self, engine: Any, timeout: float) -> None: ...

    def lse_close(self, engine: Any) -> None: ...


def prepare_pool() -> ThreadPoolExecutor:
    """The threads requests are prepared on (see the module docstring)."""
    workers = max(1, min(4, (os.cpu_count() or 2) // 2))
    return ThreadPoolExecutor(max_workers=workers, thread_name_prefix="lse-prepare")


async def serve_completion(request: Request, runtime: Runtime, engine: Any, endpoint: str,
                           max_body_bytes: int, timeout_secs: float, pool: Executor,
                           read_timeout_secs: float = 0.0) -> Response:
    receive = request.content.receive
    body = await read_json_object(request, receive, max_body_bytes, read_timeout_secs)
    # The timeout counts from here: a request can be prepared, queued and even
    # finished before the guard exists.
    started = asyncio.get_running_loop().time()
    # Request errors (400s, a full queue's 503) arrive as the handle's first event.
    handle = await _prepare(pool, runtime, engine, body, endpoint)
    guard = Guard(handle, receive, timeout_secs, started)
    if body.get("stream") is True:
        return await stream_response(guard)
    return await _complete(guard)


async def _prepare(pool: Executor, runtime: Runtime, engine: Any, body: dict[str, Any], endpoint: str) -> Handle:
    future = asyncio.get_running_loop().run_in_executor(pool, runtime.lse_request, engine, body, endpoint)
    try:
        return await asyncio.shield(future)
    except asyncio.CancelledError:  # the handler was cancelled: cancel the request once it exists
        future.add_done_callback(lambda f: None if f.cancelled() or f.exception() else f.result().cancel())
        raise


async def _complete(guard: Guard) -> Response:
    """Non-streamed: the done event's object (the fold of the chunks) or the error."""
    finished = False
    try:
        last = await guard.race(_last_event(guard.handle))
        if guard.stopped:
            return guard.stopped_response()
        finished = True
    finally:
        guard.close(finished)
    if last is None:
        raise LseError("generation_failed", "the engine ended the request without a result")
    if last["type"] == "error":
        return event_error_response(last)
    return json_response(200, last["data"])


async def _last_event(handle: Handle) -> dict[str, Any] | None:
    async for event in handle.aevents():
        if event["type"] != "chunk":
            return event
    return None


async def read_json_object(request: Request, receive: Receive, limit: int,
                           read_timeout_secs: float = 0.0) -> dict[str, Any]:
    """The body parsed as a JSON object; 413 past ``limit`` bytes, 408 when it
    has not all arrived within ``read_timeout_secs`` (0: no limit) of its
    headers (a client that trickles a body must not hold its connection
    forever), 400 otherwise."""
    declared = request.get_first_header(b"content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise _too_large(limit)  # refused before a byte of it is read
    loop = asyncio.get_running_loop()
    deadline = loop.time() + read_timeout_secs if read_timeout_secs > 0 else None
    data = bytearray()
    while True:
        message = await _receive_by(receive, deadline, read_timeout_secs)
        if message["type"] == "http.disconnect":
            raise LseError("invalid_request", "the client disconnected before sending the whole body")
        data += message.get("body", b"")
        if len(data) > limit:
            raise _too_large(limit)
        if not message.get("more_body", False):
            break
    return parse_json_object(data)


async def _receive_by(receive: Receive, deadline: float | None, read_timeout_secs: float) -> dict[str, Any]:
    if deadline is None:
        return await receive()
    try:
        return await asyncio.wait_for(receive(), max(0.0, deadline - asyncio.get_running_loop().time()))
    except asyncio.TimeoutError:
        raise LseError("request_timeout", f"the request body did not arrive within --read-timeout "
                                          f"({read_timeout_secs:g}s)") from None


def _too_large(limit: int) -> LseError:
    return LseError("body_too_large", f"the request body is larger than --max-body-bytes ({limit} bytes)")
