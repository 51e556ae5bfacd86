"""One error table: every error LSE returns, over HTTP or over lse_request.

Each kind maps to an HTTP status, OpenAI's ``error.type`` and a default
``error.code``. One function builds the OpenAI envelope
``{"error": {"message", "type", "param", "code", ...extra}}``; the API layer
and the in-process API both answer through it, so they cannot drift.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

# kind -> (HTTP status, error.type, default error.code)
ERROR_TABLE: dict[str, tuple[int, str, str | None]] = {
    "invalid_request": (400, "invalid_request_error", None),
    "malformed_json": (400, "invalid_request_error", "invalid_json"),
    "context_full": (400, "invalid_request_error", "context_full"),
    "unsupported_reasoning_effort": (400, "invalid_request_error", "unsupported_reasoning_effort"),
    "thinking_unsupported": (400, "invalid_request_error", "thinking_unsupported"),
    "conflicting_thinking": (400, "invalid_request_error", "conflicting_thinking"),
    "invalid_thinking": (400, "invalid_request_error", "invalid_thinking"),
    "unauthorized": (401, "authentication_error", "invalid_api_key"),
    "not_found": (404, "not_found_error", "not_found"),
    "model_not_found": (404, "invalid_request_error", "model_not_found"),  # OpenAI's answer for another model id
    "response_not_found": (404, "invalid_request_error", "response_not_found"),  # /v1/responses: unknown id
    "method_not_allowed": (405, "invalid_request_error", "method_not_allowed"),
    "request_timeout": (408, "timeout_error", "request_timeout"),
    "body_too_large": (413, "invalid_request_error", "request_too_large"),
    "generation_failed": (500, "server_error", "generation_failed"),
    "cpu_fallback_disabled": (500, "server_error", "cpu_fallback_disabled"),
    "model_load_failed": (500, "server_error", "model_load_failed"),  # one model of a set failed to load
    "internal_error": (500, "server_error", "internal_error"),
    "embeddings_disabled": (501, "not_supported_error", "embeddings_disabled"),  # llama-server's 501 type
    "model_loading": (503, "unavailable_error", "model_loading"),
    "model_busy": (503, "unavailable_error", "model_busy"),  # an unload asked of a model serving requests
    "overloaded": (503, "unavailable_error", "server_overloaded"),
    "shutting_down": (503, "unavailable_error", "server_shutting_down"),
}


@dataclass
class LseError(Exception):
    """An error with a kind from ERROR_TABLE; ``extra`` adds spec members
    such as ``lse_context`` or ``levels`` to the envelope."""

    kind: str
    message: str
    param: str | None = None
    code: str | None = None
    extra: dict[str, Any] | None = None

    def __post_init__(self) -> None:
        if self.kind not in ERROR_TABLE:
            raise ValueError(f"unknown error kind {self.kind!r}")
        super().__init__(self.message)

    @property
    def status(self) -> int:
        return ERROR_TABLE[self.kind][0]

    def body(self) -> dict[str, Any]:
        return error_body(self.kind, self.message, param=self.param, code=self.code, extra=self.extra)


def error_body(kind: str, message: str, *, param: str | None = None, code: str | None = None,
               extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """The OpenAI error envelope for ``kind``."""
    _, etype, default_code = ERROR_TABLE[kind]
    err: dict[str, Any] = {
        "message": message,
        "type": etype,
        "param": param,
        "code": code if code is not None else default_code,
    }
    if extra:
        err.update(extra)
    return {"error": err}


def invalid(param: str, message: str, code: str | None = None) -> LseError:
    """A 400 for one request field, naming it in ``param``."""
    return LseError("invalid_request", message, param=param, code=code)
