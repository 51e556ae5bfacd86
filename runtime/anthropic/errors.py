"""LSE's errors in Anthropic's envelope:
``{"type": "error", "error": {"type", "message", ...}}``.

The status stays the one ``lse.runtime.errors.ERROR_TABLE`` gives, so a
Messages client sees the same status an OpenAI client would; the error's
``type`` is Anthropic's name for that status. LSE's own members (``param``,
``code``, and ``levels`` or ``lse_context`` where the chat route adds them)
follow ``type`` and ``message``, which is all the Anthropic SDK reads.

Settled here: a full queue and a loading or draining server answer 503
(with ``Retry-After``) as ``overloaded_error``, not Anthropic's 529: the
SDK retries both, and LSE's other routes and its operators' monitoring
already count 503 as "busy" (the SDK raises ServiceUnavailableError). A
timeout is 408 ``timeout_error``; a body over --max-body-bytes is 413
``invalid_request_error`` (Anthropic's documents name ``request_too_large``,
but the SDK's ``ErrorType`` has no such member, and strict clients refuse it).
"""

from __future__ import annotations

from typing import Any

from lse.runtime.errors import LseError

ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    405: "invalid_request_error",
    408: "timeout_error",
    413: "invalid_request_error",  # the SDK's ErrorType has no request_too_large
    429: "rate_limit_error",
    503: "overloaded_error",
}


def error_type(status: int) -> str:
    """Anthropic's error type for an HTTP status (api_error for any other 5xx)."""
    return ERROR_TYPES.get(status, "api_error" if status >= 500 else "invalid_request_error")


def anthropic_error(status: int, body: dict[str, Any]) -> dict[str, Any]:
    """An LSE error body (``{"error": {...}}``, OpenAI's envelope) in Anthropic's."""
    err = body.get("error") or {}
    out: dict[str, Any] = {"type": error_type(status), "message": err.get("message", "")}
    for key, value in err.items():
        if key not in ("type", "message") and value is not None:
            out[key] = value
    return {"type": "error", "error": out}


def lse_error_body(err: LseError) -> dict[str, Any]:
    return anthropic_error(err.status, err.body())


def error_event(event: dict[str, Any]) -> dict[str, Any]:
    """An engine error event with its data in Anthropic's envelope."""
    return {"type": "error", "status": event["status"], "data": anthropic_error(event["status"], event["data"])}
