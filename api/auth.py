"""Bearer-key check for every /v1 route; /health stays open for supervisors."""

from __future__ import annotations

import hmac
from collections.abc import Awaitable, Callable

from blacksheep import Request, Response

from lse.runtime.errors import LseError

Handler = Callable[[Request], Awaitable[Response]]

PROTECTED_PREFIX = "/v1/"


def bearer_middleware(api_key: str) -> Callable[[Request, Handler], Awaitable[Response]]:
    """A BlackSheep middleware that answers 401 unless a /v1 request carries
    ``Authorization: Bearer <api_key>``.

    It runs before routing decides 404/405 too, so an unauthenticated client
    learns nothing about which /v1 paths exist.
    """
    expected = api_key.encode("utf-8")

    async def require_key(request: Request, handler: Handler) -> Response:
        if request.path.startswith(PROTECTED_PREFIX) or request.path == "/v1":
            if not _key_matches(request.get_first_header(b"authorization"), expected):
                raise LseError("unauthorized", "missing or invalid API key: send 'Authorization: Bearer <key>'")
        return await handler(request)

    return require_key


def _key_matches(header: bytes | None, expected: bytes) -> bool:
    scheme, _, token = (header or b"").partition(b" ")
    # The scheme is case-insensitive (RFC 9110 section 11.1); compare_digest keeps
    # the time taken from revealing how much of the key matched.
    return scheme.lower() == b"bearer" and hmac.compare_digest(token.strip(), expected)
