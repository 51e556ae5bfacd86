"""Bearer-key check, decided on the route the router chose, never on the raw path.

With a key set every route requires it, the fallback (404/405) included; only
the health route is open, so process supervisors need no credentials, and the
chat page's own files (``/`` and ``/ui/<file>``, api/webui.py), which hold no
data: the page asks for the key and sends it on its /v1 requests. The
check wraps each handler at registration, so however a client spells a path
(case, trailing slash, ``//``, percent-encoding, dot segments), whatever
handler the router picks for it carries its own check.
"""

from __future__ import annotations

import hmac
from collections.abc import Awaitable, Callable

from blacksheep import Request, Response

from lse.runtime.errors import LseError

Handler = Callable[[Request], Awaitable[Response]]


def require_key(api_key: str, handler: Handler) -> Handler:
    """``handler`` behind ``Authorization: Bearer <api_key>``: 401 otherwise.

    An unauthenticated client learns nothing about which paths exist: the
    fallback route answers 401 before it would answer 404 or 405.
    """
    expected = api_key.encode("utf-8")

    async def checked(request: Request) -> Response:
        if not _key_matches(request.get_first_header(b"authorization"), expected):
            raise LseError("unauthorized", "missing or invalid API key: send 'Authorization: Bearer <key>'")
        return await handler(request)

    return checked


def _key_matches(header: bytes | None, expected: bytes) -> bool:
    scheme, _, token = (header or b"").partition(b" ")
    # The scheme is case-insensitive (RFC 9110 section 11.1); compare_digest keeps
    # the time taken from revealing how much of the key matched.
    return scheme.lower() == b"bearer" and hmac.compare_digest(token.strip(), expected)
