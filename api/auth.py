"""API-key check, decided on the route the router chose, never on the raw path.

The key is accepted as ``Authorization: Bearer <key>`` (OpenAI's clients),
``api-key: <key>`` (AzureOpenAI) or ``x-api-key: <key>`` (Anthropic's), on
every route alike: one key, several spellings, so a client of any of these
SDKs reaches every route.

With a key set every route requires it, the fallback (404/405) included; only
the open routes (/health, /docs, /metrics under --metrics-public) are served
without it, so process supervisors need no credentials, and so are the chat
page's own files (``/`` and ``/ui/<file>``, api/webui.py), which hold no
data: the page asks for the key and sends it on its /v1 requests. The check
wraps each handler at registration, so however a client spells a path (case,
trailing slash, ``//``, percent-encoding, dot segments), whatever handler the
router picks for it carries its own check.

The key is read from any of the headers clients send it in:
``Authorization: Bearer <key>`` (OpenAI's SDKs), ``api-key: <key>`` (the
``AzureOpenAI`` client) and ``x-api-key: <key>`` (Anthropic's SDK and API).
"""

from __future__ import annotations

import hmac
from collections.abc import Awaitable, Callable

from blacksheep import Request, Response

from lse.runtime.errors import LseError

Handler = Callable[[Request], Awaitable[Response]]

# Headers that carry the key bare (no scheme), beside Authorization.
KEY_HEADERS = (b"api-key", b"x-api-key")


def require_key(api_key: str, handler: Handler) -> Handler:
    """``handler`` behind the API key (key_sent's spellings): 401 without it.

    An unauthenticated client learns nothing about which paths exist: the
    fallback route answers 401 before it would answer 404 or 405.
    """
    expected = api_key.encode("utf-8")

    async def checked(request: Request) -> Response:
        if not key_sent(request, expected):
            raise LseError("unauthorized", "missing or invalid API key: send 'Authorization: Bearer <key>' "
                                           "(or an api-key or x-api-key header holding the key)")
        return await handler(request)

    return checked


def key_sent(request: Request, expected: bytes) -> bool:
    """Whether any of the headers that carry a key holds ``expected``."""
    if _bearer_matches(request.get_first_header(b"authorization"), expected):
        return True
    return any(_bare_matches(request.get_first_header(name), expected) for name in KEY_HEADERS)


def _bearer_matches(header: bytes | None, expected: bytes) -> bool:
    scheme, _, token = (header or b"").partition(b" ")
    # The scheme is case-insensitive (RFC 9110 section 11.1); compare_digest keeps
    # the time taken from revealing how much of the key matched.
    return scheme.lower() == b"bearer" and hmac.compare_digest(token.strip(), expected)


def _bare_matches(header: bytes | None, expected: bytes) -> bool:
    return header is not None and hmac.compare_digest(header.strip(), expected)
