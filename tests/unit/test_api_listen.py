"""lse-server's listening socket and read timeouts (issue #44): the port is
bound before anything says it listens, a port in use is one line and exit 3,
and a client that sends its headers or body too slowly is cut off.

The header deadline lives in uvicorn's protocol, so it is tested over a real
loopback socket: uvicorn in this process, serving the app over the fake
engine (no lse-server process, no model)."""

from __future__ import annotations

import asyncio
import logging
import socket
import time

import pytest
import uvicorn
from api_fake_engine import CHAT, FakeEngine, FakeRuntime, assert_error, run

from lse.api.app import ServerSettings, create_app
from lse.api.cli import BIND_FAILED, main
from lse.api.listen import BindError, bind, http_protocol


@pytest.fixture
def taken():
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(1)
    yield sock.getsockname()[1]
    sock.close()


def test_bind_names_the_address_in_use(taken):
    with pytest.raises(BindError) as err:
        bind("127.0.0.1", taken)
    assert str(err.value) == (f"lse-server: cannot listen on 127.0.0.1:{taken}: the port is in use "
                              "(choose another with --port) [EADDRINUSE]")


def test_lse_server_on_a_port_in_use_says_so_in_one_line_and_exits_3(taken, caplog):
    with caplog.at_level(logging.INFO, logger="lse"):
        status = main(["--port", str(taken), "--pool", "cpu:0"])
    assert status == BIND_FAILED == 3
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert errors == [f"lse-server: cannot listen on 127.0.0.1:{taken}: the port is in use "
                      "(choose another with --port) [EADDRINUSE]"]
    assert not any("listening on" in r.getMessage() for r in caplog.records)


def test_bind_holds_the_port_before_uvicorn_runs():
    sock = bind("127.0.0.1", 0)
    try:
        with pytest.raises(BindError):
            bind("127.0.0.1", sock.getsockname()[1])
    finally:
        sock.close()


def test_no_read_timeout_is_uvicorns_own_protocol():
    from uvicorn.protocols.http.auto import AutoHTTPProtocol

    assert http_protocol(0) is AutoHTTPProtocol
    assert issubclass(http_protocol(5), AutoHTTPProtocol)


async def _serve(read_timeout: float):
    app = create_app(FakeEngine, ServerSettings(read_timeout_secs=read_timeout), FakeRuntime())
    sock = bind("127.0.0.1", 0)
    config = uvicorn.Config(app, lifespan="on", http=http_protocol(read_timeout), log_level="warning")
    server = uvicorn.Server(config)
    task = asyncio.ensure_future(server.serve(sockets=[sock]))
    while not server.started:
        await asyncio.sleep(0.01)
    return server, task, sock.getsockname()[1]


async def _closed_after(port: int, first: bytes, wait: float) -> tuple[bool, bytes]:
    """Send ``first``, then nothing; whether the server closed the connection within ``wait`` seconds."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(first)
    await writer.drain()
    try:
        data = await asyncio.wait_for(reader.read(), wait)  # read() returns at EOF: the server closed
        closed = True
    except asyncio.TimeoutError:
        data, closed = b"", False
    writer.close()
    return closed, data


@pytest.mark.parametrize("first", [b"", b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-"],
                         ids=["nothing", "half-the-headers"])
def test_headers_that_do_not_arrive_in_time_close_the_connection(first):
    async def main_() -> tuple[float, bool, bytes, bool]:
        server, task, port = await _serve(0.3)
        try:
            t0 = time.monotonic()
            closed, data = await _closed_after(port, first, 5)
            took = time.monotonic() - t0
            # A request that does arrive whole is served as before.
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
            await writer.drain()
            healthy = (await reader.readline()).startswith(b"HTTP/1.1 200")
            writer.close()
        finally:
            server.should_exit = True
            await task
        return took, closed, data, healthy

    took, closed, data, healthy = asyncio.run(main_())
    assert closed and data == b"", data
    assert 0.25 <= took < 3, took
    assert healthy


def test_a_slow_streaming_reply_is_not_cut_by_the_header_deadline():
    """The deadline is on a request's headers only: a reply in flight past it is not cut."""
    class SlowRuntime(FakeRuntime):
        def __init__(self) -> None:
            from api_fake_engine import reply_events

            events = reply_events(["a", "b"])

            async def slow():
                for e in events:
                    await asyncio.sleep(0.15)
                    yield e

            super().__init__()
            self.handle_type = lambda script: type("H", (), {"aevents": lambda self: slow(), "cancel": lambda self: None,
                                                            "rejection": lambda self: None})()

    async def main_() -> bytes:
        app = create_app(FakeEngine, ServerSettings(read_timeout_secs=0.3), SlowRuntime())
        sock = bind("127.0.0.1", 0)
        server = uvicorn.Server(uvicorn.Config(app, lifespan="on", http=http_protocol(0.3), log_level="warning"))
        task = asyncio.ensure_future(server.serve(sockets=[sock]))
        while not server.started:
            await asyncio.sleep(0.01)
        try:
            reader, writer = await asyncio.open_connection("127.0.0.1", sock.getsockname()[1])
            body = b'{"messages": [{"role": "user", "content": "hi"}], "stream": true}'
            writer.write(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                         b"Content-Length: %d\r\nConnection: close\r\n\r\n%s" % (len(body), body))
            await writer.drain()
            data = await asyncio.wait_for(reader.read(), 10)
            writer.close()
        finally:
            server.should_exit = True
            await task
        return data

    data = asyncio.run(main_())
    assert data.startswith(b"HTTP/1.1 200") and data.rstrip().endswith(b"0"), data[-200:]
    assert b"data: [DONE]" in data


def test_a_body_that_does_not_arrive_in_time_is_408():
    async def trickle():
        yield b'{"messages": '
        await asyncio.sleep(5.0)  # far past the deadline: the reply must not wait for this
        yield b"[]}"

    async def scenario(client, runtime, app):
        t0 = time.monotonic()
        response = await client.post("/v1/chat/completions", content=trickle(),
                                     headers={"content-type": "application/json"})
        return response, time.monotonic() - t0, runtime.requests

    response, took, requests = run(scenario, read_timeout_secs=0.2)
    err = assert_error(response, 408, "timeout_error", "request_timeout")
    assert err["message"] == "the request body did not arrive within --read-timeout (0.2s)"
    assert took < 4 and requests == []


def test_a_body_in_time_is_served():
    async def scenario(client, runtime, app):
        return await client.post("/v1/chat/completions", json=CHAT)

    assert run(scenario, read_timeout_secs=0.5).status_code == 200
