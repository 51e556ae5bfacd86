"""The in-process API: the same JSON as the HTTP server, in Python.

``lse_open`` opens an engine; ``lse_request`` takes a request body and gives a
handle whose events are the chunks, then ``done`` with the whole reply (the
fold of the chunks), or ``error`` with the HTTP status and the error body.
``lse_request_json`` takes the body as JSON bytes and the endpoint as its
HTTP path, as the C API (``lse.capi``) passes them.

Every function takes an engine or a set of models (``lse_open`` with
``models``): an engine's calls are lse.runtime.engine_api's, a set's are
lse.runtime.model_runtime's, which drive each model's engine through
engine_api in turn.
"""

from __future__ import annotations

from typing import Any

from lse.compiler.iree_compile import VersionAction, version_text
from lse.runtime import engine_api as one
from lse.runtime.engine import AUTO_KV_BUDGET, AUTO_SLOTS, Engine, LseConfig, LseStartupError
from lse.runtime.engine_api import ENDPOINT_PATHS, RequestHandle
from lse.runtime.errors import LseError, error_body
from lse.runtime.model_files import alias_pairs  # noqa: F401 (lse.capi.bridge parses lse_config.aliases with it)
from lse.runtime.model_runtime import SET_RUNTIME, open_models
from lse.runtime.models import ModelSet
from lse.runtime.openai.body import dumps
from lse.runtime.responses.service import ResponseHandle
from lse.runtime.speculative import MODES as SPECULATIVE_MODES
from lse.runtime.telemetry import Observer, RequestRecord

__all__ = ["AUTO_KV_BUDGET", "AUTO_SLOTS", "ENDPOINT_PATHS", "LseConfig", "LseError", "LseStartupError", "RequestHandle",
           "RequestRecord", "VersionAction", "dumps", "error_body", "lse_open", "lse_request", "lse_request_json",
           "lse_model_info", "lse_models", "lse_status", "lse_observe", "lse_shutdown", "lse_close", "version_text", "lse_tokenize",
           "lse_detokenize", "lse_tokenizer_info", "SPECULATIVE_MODES", "lse_embed"]


def lse_open(config: LseConfig | dict[str, Any] | None = None) -> Engine:
    """Open an engine, or raise LseStartupError saying why. A dict with
    ``models`` opens a set of models instead (lse.runtime.model_runtime.open_models):
    every function here takes it where it takes an engine, the body's ``model`` choosing."""
    if isinstance(config, dict) and "models" in config:
        return open_models(config)
    return one.lse_open(config)


def lse_request(engine: Engine, body: Any, endpoint: str = "chat.completions") -> RequestHandle | ResponseHandle:
    """Submit a request. Request errors (400s, 503 when the queue is full)
    come back as the handle's single error event, never as an exception.
    ``"messages"`` and ``"messages.count_tokens"`` take and answer Anthropic's
    Messages JSON (lse.runtime.anthropic), errors in its envelope; ``"embeddings"``
    answers one ``done`` event with ``lse_embed``'s reply."""
    if isinstance(engine, ModelSet):
        return SET_RUNTIME.lse_request(engine, body, endpoint)
    return one.lse_request(engine, body, endpoint)


def lse_request_json(engine: Engine, data: bytes | str, path: str) -> RequestHandle:
    """``lse_request`` with the body as JSON bytes and the endpoint as its HTTP
    path. A body that is not a JSON object gets the HTTP server's 400, and an
    unknown path its 404, each as the handle's error event."""
    if isinstance(engine, ModelSet):
        return SET_RUNTIME.lse_request_json(engine, data, path)
    return one.lse_request_json(engine, data, path)


def lse_model_info(engine: Engine, name: str | None = None) -> dict:
    """The model's info (GET /v1/lse/model_info). ``name`` None: the model's
    (a set's default model's); else the model that name (or alias) names, a set's
    model loaded first if it never was (blocking). A name the engine does not
    serve raises 404 ``model_not_found``, as GET /v1/models/{id} answers it."""
    if isinstance(engine, ModelSet):
        return SET_RUNTIME.lse_model_info_of(engine, name)
    return one.lse_model_info(engine, name)


def lse_models(engine: Engine, created: int = 0) -> list[dict]:
    """GET /v1/models' entries: a set's every model with its ``status`` (and
    ``status_reason``, ``aliases``), or the one model's entry."""
    if isinstance(engine, ModelSet):
        return SET_RUNTIME.lse_model_list(engine, created)
    return one.lse_models(engine, created)


def lse_status(engine: Engine) -> dict:
    if isinstance(engine, ModelSet):
        return SET_RUNTIME.lse_status(engine)
    return one.lse_status(engine)


def lse_observe(engine: Engine, observer: Observer) -> None:
    """Call ``observer`` with a ``RequestRecord`` as each request ends (on
    the scheduler thread: keep it quick; see lse.runtime.telemetry)."""
    if isinstance(engine, ModelSet):
        return SET_RUNTIME.lse_observe(engine, observer)
    one.lse_observe(engine, observer)


def lse_tokenize(engine: Engine, body: dict) -> dict:
    """/tokenize's reply for ``body``; a bad body raises the 400 LseError."""
    if isinstance(engine, ModelSet):
        return SET_RUNTIME.lse_tokenize(engine, body)
    return one.lse_tokenize(engine, body)


def lse_detokenize(engine: Engine, body: dict) -> dict:
    """/detokenize's reply for ``body``; a bad body raises the 400 LseError."""
    if isinstance(engine, ModelSet):
        return SET_RUNTIME.lse_detokenize(engine, body)
    return one.lse_detokenize(engine, body)


def lse_embed(engine: Engine, body: Any, timeout: float | None = None) -> dict:
    """POST /v1/embeddings' reply for ``body`` (blocking until the prompts are embedded);
    a refused body raises its LseError (501 ``embeddings_disabled`` unless the engine was
    opened with ``embeddings: true``), and 408 after ``timeout`` seconds."""
    if isinstance(engine, ModelSet):
        return SET_RUNTIME.lse_embed(engine, body, timeout)
    return one.lse_embed(engine, body, timeout)


def lse_tokenizer_info(engine: Engine) -> dict:
    if isinstance(engine, ModelSet):
        return SET_RUNTIME.lse_tokenizer_info(engine)
    return one.lse_tokenizer_info(engine)


def lse_shutdown(engine: Engine, timeout: float) -> None:
    """Stop taking requests and drain (blocking; see Engine.shutdown)."""
    if isinstance(engine, ModelSet):
        return SET_RUNTIME.lse_shutdown(engine, timeout)
    one.lse_shutdown(engine, timeout)


def lse_close(engine: Engine) -> None:
    if isinstance(engine, ModelSet):
        return SET_RUNTIME.lse_close(engine)
    one.lse_close(engine)
