"""The listening socket and the connection-level read timeout.

``bind`` binds the port before anything says it listens, so a port in use is
one clear line and exit status 3 (uvicorn's own startup-failure status), not a
"listening on" line followed by errno 98.

``http_protocol`` is uvicorn's HTTP/1.1 protocol (httptools when installed,
else h11: what uvicorn itself picks) with a deadline on each request's
headers: they must arrive within ``--read-timeout`` seconds of the connection
opening or of the previous response ending, or the connection is closed.
uvicorn bounds only the idle gap between requests (its keep-alive timeout,
cancelled by the first byte of the next one), so a client that sends half a
request line or half its headers would hold a connection forever (slow loris).
The body's own deadline is checked where it is read (api/completions.py).
"""

from __future__ import annotations

import asyncio
import errno
import logging
import socket

from uvicorn.protocols.http.auto import AutoHTTPProtocol

log = logging.getLogger("lse.api")


BACKLOG = 2048  # uvicorn's default


class BindError(Exception):
    """The address could not be bound; the message is the line to print."""


def bind(host: str, port: int) -> socket.socket:
    """A listening stream socket for ``host:port`` (IPv6 when ``host`` has a
    colon); connections wait in its backlog until uvicorn serves it."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn binds: restart past TIME_WAIT
    try:
        sock.bind((host, port))
        sock.listen(BACKLOG)  # the port is ours from here: another bind of it fails, even with SO_REUSEADDR
    except OSError as exc:
        sock.close()
        shown = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
        why = "the port is in use (choose another with --port)" if exc.errno == errno.EADDRINUSE else (
            exc.strerror or str(exc))
        raise BindError(f"lse-server: cannot listen on {shown}: {why} "
                        f"[{errno.errorcode.get(exc.errno or 0, exc.errno)}]") from exc
    return sock


def http_protocol(read_timeout_secs: float) -> type[asyncio.Protocol]:
    """uvicorn's HTTP protocol class with the header deadline (0: none)."""
    if read_timeout_secs <= 0:
        return AutoHTTPProtocol

    class HeaderDeadline(AutoHTTPProtocol):  # type: ignore[misc, valid-type]
        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            super().connection_made(transport)  # type: ignore[arg-type]
            self._arm_header_deadline()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            self._arm_header_deadline()  # the next request's headers, on a kept-alive connection

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm_header_deadline()
            super().connection_lost(exc)

        def _arm_header_deadline(self) -> None:
            self._disarm_header_deadline()
            self._header_deadline = self.loop.call_later(read_timeout_secs, self._headers_overdue)

        def _disarm_header_deadline(self) -> None:
            deadline = getattr(self, "_header_deadline", None)
            if deadline is not None:
                deadline.cancel()
                self._header_deadline = None

        def _headers_overdue(self) -> None:
            self._header_deadline = None
            in_flight = self.cycle is not None and not self.cycle.response_complete
            if not in_flight and not self.transport.is_closing():
                # No request's headers arrived in time (none at all, or part of one).
                log.debug("lse-server: closed a connection whose request headers did not arrive within "
                         "--read-timeout (%gs)", read_timeout_secs)
                self.transport.close()

    return HeaderDeadline
