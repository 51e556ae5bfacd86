"""The in-process API over one engine (lse.runtime.api's functions where they
are given an engine rather than a model set; lse.runtime.model_runtime drives
each model of a set through this module).

``lse_open`` opens an engine; ``lse_request`` takes a request body and gives a
handle whose events are the chunks, then ``done`` with the whole reply (the
fold of the chunks), or ``error`` with the HTTP status and the error body.
``lse_request_json`` takes the body as JSON bytes and the endpoint as its
HTTP path, as the C API (``lse.capi``) passes them.
"""

from __future__ import annotations

from dataclasses import fields
from typing import Any, AsyncIterator, Iterator
from weakref import WeakKeyDictionary

from lse.runtime.anthropic import handle as messages
from lse.runtime.embeddings.handle import EmbeddingHandle
from lse.runtime.embeddings.job import ENDPOINT as EMBEDDINGS
from lse.runtime.embeddings.service import embed
from lse.runtime.openai.body import parse_json_object
from lse.runtime.openai.replies import model_entry_of
from lse.runtime.openai.reply_stream import ReplyStream
from lse.runtime.engine import Engine, LseConfig, LseStartupError, open_engine
from lse.runtime.errors import LseError
from lse.runtime.request_state import RequestState
from lse.runtime.responses.service import ResponseHandle, ResponsesService
from lse.runtime.responses.store import ResponseStore
from lse.runtime.telemetry import Observer
from lse.runtime.tokens import detokenize, tokenize, tokenizer_info
from lse.runtime.channel import terminal_result

# HTTP path -> endpoint name, for callers that name endpoints as the server does.
ENDPOINT_PATHS = {"/v1/chat/completions": "chat.completions", "/v1/completions": "completions",
                  "/v1/responses": "responses", "/v1/embeddings": EMBEDDINGS,
                  "/v1/messages": messages.MESSAGES, "/v1/messages/count_tokens": messages.COUNT_TOKENS}
# Each engine's Responses store for in-process callers (lse-server keeps its own, bounded by its options).
_RESPONSES: WeakKeyDictionary[Engine, ResponsesService] = WeakKeyDictionary()


class RequestHandle:
    """Events of one request. Exactly one terminal event (done or error).
    The request's typed events become these JSON events here, on the
    reader's thread (openai.reply_stream.ReplyStream), never on the scheduler's."""

    def __init__(self, request: RequestState | None = None, error: LseError | None = None, engine: Engine | None = None,
                 stream: bool = False):
        self._request, self._error, self._engine = request, error, engine
        self.stream = stream  # the body asked for "stream": true
        self._reply = None if request is None else ReplyStream(
            request.endpoint, request.id, request.created, request.model, request.include_usage, request.token_text)

    def events(self) -> Iterator[dict]:
        if self._error is not None:
            yield {"type": "error", "status": self._error.status, "data": self._error.body()}
            return
        while True:
            for ev in self._reply.events(self._request.channel.get()):
                yield ev
                if ev["type"] != "chunk":
                    return

    async def aevents(self) -> AsyncIterator[dict]:
        if self._error is not None:
            yield {"type": "error", "status": self._error.status, "data": self._error.body()}
            return
        while True:
            for ev in self._reply.events(await self._request.channel.aget()):
                yield ev
                if ev["type"] != "chunk":
                    return

    def rejection(self) -> dict | None:
        """The error event of a request refused before admission, else None."""
        if self._error is None:
            return None
        return {"type": "error", "status": self._error.status, "data": self._error.body()}

    def cancel(self) -> None:
        """Cancel at once: the request's queue places are freed now, its slot
        before the scheduler's next admission."""
        if self._request is not None and not self._request.cancelled:
            self._request.cancelled = True
            self._engine.scheduler.withdraw(self._request)

    def result(self) -> tuple[int, dict]:
        """Block until the end: (HTTP status, body)."""
        return terminal_result(self.events())


def lse_open(config: LseConfig | dict[str, Any] | None = None) -> Engine:
    """Open an engine, or raise LseStartupError saying why."""
    return open_engine(_config(config))


def _config(config: LseConfig | dict[str, Any] | None) -> LseConfig:
    if config is None:
        return LseConfig()
    if isinstance(config, dict):
        known = {f.name for f in fields(LseConfig)}
        unknown = set(config) - known
        if unknown:
            raise LseStartupError(f"unknown lse_open config field(s): {', '.join(sorted(unknown))}")
        return LseConfig(**config)
    return config


def lse_request(engine: Engine, body: Any, endpoint: str = "chat.completions") -> RequestHandle | ResponseHandle:
    """Submit a request. Request errors (400s, 503 when the queue is full)
    come back as the handle's single error event, never as an exception.
    ``"messages"`` and ``"messages.count_tokens"`` take and answer Anthropic's
    Messages JSON (lse.runtime.anthropic), errors in its envelope; ``"embeddings"``
    answers one ``done`` event with ``lse_embed``'s reply."""
    if endpoint == messages.MESSAGES:
        return messages.submit(engine, body, RequestHandle)
    if endpoint == messages.COUNT_TOKENS:
        return messages.count_tokens(engine, body)
    if endpoint == EMBEDDINGS:  # one done event: the reply of lse_embed
        return EmbeddingHandle(engine, body)
    if endpoint not in ("chat.completions", "completions", "responses"):
        raise ValueError(f"unknown endpoint {endpoint!r}")
    if endpoint == "responses":  # the Responses wire layer over this engine's chat path
        service = _RESPONSES.setdefault(engine, ResponsesService(ResponseStore()))
        return service.create(body, lambda chat: lse_request(engine, chat, "chat.completions"))
    stream = isinstance(body, dict) and body.get("stream") is True
    try:
        return RequestHandle(engine.submit(body, endpoint), engine=engine, stream=stream)
    except LseError as e:
        return RequestHandle(error=e, stream=stream)


def lse_request_json(engine: Engine, data: bytes | str, path: str) -> RequestHandle:
    """``lse_request`` with the body as JSON bytes and the endpoint as its HTTP
    path. A body that is not a JSON object gets the HTTP server's 400, and an
    unknown path its 404, each as the handle's error event."""
    try:
        if path not in ENDPOINT_PATHS:
            raise LseError("not_found", f"no route POST {path}")  # the HTTP server's 404
        body = parse_json_object(data)
    except LseError as e:
        if ENDPOINT_PATHS.get(path) in (messages.MESSAGES, messages.COUNT_TOKENS):  # Anthropic's envelope
            return messages.error_handle(e)
        return RequestHandle(error=e)
    return lse_request(engine, body, ENDPOINT_PATHS[path])


def lse_model_info(engine: Engine, name: str | None = None) -> dict:
    """The model's info (GET /v1/lse/model_info). ``name`` None: the model's
    (a set's default model's); else the model that name (or alias) names, a set's
    model loaded first if it never was (blocking). A name the engine does not
    serve raises 404 ``model_not_found``, as GET /v1/models/{id} answers it."""
    info = engine.model_info()
    if name is not None and name != info["id"]:
        raise LseError("model_not_found", f"the model {name!r} does not exist; this server serves "
                       f"{info['id']!r}", param="model")
    return info


def lse_models(engine: Engine, created: int = 0) -> list[dict]:
    """GET /v1/models' entries: a set's every model with its ``status`` (and
    ``status_reason``, ``aliases``), or the one model's entry."""
    return [model_entry_of(engine.model_info(), created)]


def lse_status(engine: Engine) -> dict:
    return engine.status()


def lse_observe(engine: Engine, observer: Observer) -> None:
    """Call ``observer`` with a ``RequestRecord`` as each request ends (on
    the scheduler thread: keep it quick; see lse.runtime.telemetry)."""
    engine.observers.add(observer)


def lse_tokenize(engine: Engine, body: dict) -> dict:
    """/tokenize's reply for ``body``; a bad body raises the 400 LseError."""
    return tokenize(engine, body)


def lse_detokenize(engine: Engine, body: dict) -> dict:
    """/detokenize's reply for ``body``; a bad body raises the 400 LseError."""
    return detokenize(engine, body)


def lse_embed(engine: Engine, body: Any, timeout: float | None = None) -> dict:
    """POST /v1/embeddings' reply for ``body`` (blocking until the prompts are embedded);
    a refused body raises its LseError (501 ``embeddings_disabled`` unless the engine was
    opened with ``embeddings: true``), and 408 after ``timeout`` seconds."""
    return embed(engine, body, timeout)


def lse_tokenizer_info(engine: Engine) -> dict:
    return tokenizer_info(engine)


def lse_shutdown(engine: Engine, timeout: float) -> None:
    """Stop taking requests and drain (blocking; see Engine.shutdown)."""
    engine.shutdown(timeout)


def lse_close(engine: Engine) -> None:
    engine.close()
