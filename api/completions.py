"""POST /v1/chat/completions and /v1/completions: body in, engine events out.

The HTTP layer only reads and parses the body (size limit, JSON, an object)
and turns events into a reply; field validation is the engine's, so the same
error JSON comes back over HTTP and over lse_request.

Preparing a request (its JSON, checks, the chat template, tokenizing) runs on
the prepare pools (api/prepare_pools.py), never on the event loop: a large
prompt must not stall /health or the running streams' chunks.

The other routes that take a body (messages.py, responses.py, embeddings.py)
read it with this module's ``read_body`` / ``read_json_object``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from concurrent.futures import Executor
from typing import Any, Protocol

from blacksheep import Request, Response

from lse.runtime.openai.body import parse_json_object
from lse.runtime.errors import LseError

from .guard import Guard, Handle, Receive
from .prepare_pools import PreparePools
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


def prepare_pool() -> PreparePools:
    """The threads requests are prepared on (api/prepare_pools.py)."""
    return PreparePools()


async def serve_completion(request: Request, runtime: Runtime, engine: Any, endpoint: str,
                           max_body_bytes: int, timeout_secs: float, pool: PreparePools,
                           read_timeout_secs: float = 0.0) -> Response:
    receive = request.content.receive
    data = await read_body(request, receive, max_body_bytes, read_timeout_secs)
    # The timeout counts from here: a request can be prepared, queued and even
    # finished before the guard exists.
    started = asyncio.get_running_loop().time()
    # Request errors (400s, a full queue's 503) arrive as the handle's first event;
    # a body that is not a JSON object raises its 400 here.
    handle, stream = await _prepare(pool.for_size(len(data)), runtime, engine, data, endpoint)
    guard = Guard(handle, receive, timeout_secs, started)
    if stream:
        return await stream_response(guard)
    return await _complete(guard)


def _parse_and_submit(runtime: Runtime, engine: Any, data: bytes, endpoint: str) -> tuple[Handle, bool]:
    body = parse_json_object(data)
    return runtime.lse_request(engine, body, endpoint), body.get("stream") is True


async def _prepare(pool: Executor, runtime: Runtime, engine: Any, data: bytes, endpoint: str
                   ) -> tuple[Handle, bool]:
    future = asyncio.get_running_loop().run_in_executor(pool, _parse_and_submit, runtime, engine, data, endpoint)
    try:
        return await asyncio.shield(future)
    except asyncio.CancelledError:  # the handler was cancelled: cancel the request once it exists
        future.add_done_callback(lambda f: None if f.cancelled() or f.exception() else f.result()[0].cancel())
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
    """The body parsed as a JSON object (read_body's errors, then 400)."""
    return parse_json_object(await read_body(request, receive, limit, read_timeout_secs))


async def read_body(request: Request, receive: Receive, limit: int, read_timeout_secs: float = 0.0) -> bytes:
    """The body's bytes; 413 past ``limit`` bytes, 408 when it has not all
    arrived within ``read_timeout_secs`` (0: no limit) of its headers (a
    client that trickles a body must not hold its connection forever)."""
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
    return bytes(data)


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
