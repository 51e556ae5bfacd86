"""JSON and error responses: every reply the HTTP layer builds goes through here.

Errors come from the one table in ``lse.runtime.errors``, so a 401 from auth,
a 413 from the body reader and a 400 from the engine share one envelope.
"""

from __future__ import annotations

from typing import Any

from blacksheep import Content, Response

from lse.runtime.errors import LseError
from lse.runtime.openai.body import dumps

_JSON = b"application/json"

# Seconds a client should wait before retrying a request refused by a full
# queue, where the error carries no estimate of its own (error.retry_after).
RETRY_AFTER_SECS = b"1"


def json_response(status: int, obj: Any, headers: list[tuple[bytes, bytes]] | None = None) -> Response:
    return Response(status, headers, Content(_JSON, dumps(obj)))


def json_bytes_response(status: int, data: bytes) -> Response:
    """A reply whose JSON was serialized already (off the event loop)."""
    return Response(status, None, Content(_JSON, data))


def error_response(err: LseError) -> Response:
    """``err`` in OpenAI's envelope; a full queue adds ``Retry-After``."""
    headers = _retry_after(err.body()) if err.kind in ("overloaded", "model_busy") else None
    return json_response(err.status, err.body(), headers)


def event_error_response(event: dict[str, Any]) -> Response:
    """An engine error event as a reply, its status and body as they came. The
    engine's 503 is its full queue (lse_request reports it as an event, not an
    exception), so it gets ``Retry-After`` too."""
    status = event["status"]
    headers = _retry_after(event["data"]) if status == 503 else None
    return json_response(status, event["data"], headers)


def _retry_after(body: dict[str, Any]) -> list[tuple[bytes, bytes]]:
    """The scheduler's estimate (``error.retry_after``, seconds), else RETRY_AFTER_SECS."""
    secs = body.get("error", {}).get("retry_after") if isinstance(body, dict) else None
    value = str(secs).encode() if isinstance(secs, int) and not isinstance(secs, bool) and secs > 0 \
        else RETRY_AFTER_SECS
    return [(b"retry-after", value)]
