"""The BlackSheep app: routes, auth, error envelopes, and the engine's lifecycle.

The app answers as soon as it is created; the engine loads in a background
thread. Until it is ready /health answers 503 ``{"status": "loading"}`` and
every /v1 route 503 ``model_loading``; then /health answers 200
``{"status": "ok"}`` (llama-server's body, so its supervisors work unchanged).
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote

from blacksheep import Application, Request, Response, Router
from blacksheep.exceptions import HTTPException

from lse.runtime.errors import LseError
from lse.runtime.openai import replies

from .auth import Handler, require_key
from .embeddings import EmbeddingsRoutes
from .completions import Runtime, prepare_pool, read_body, serve_completion
from .messages import MESSAGES_PATHS, MessagesRoutes, anthropic_errors, messages_fallback
from .metrics import Metrics
from .models import ModelRoutes
from .openapi import OpenApi
from .prepare_pools import tokenizer_reply
from .replies import error_response, json_bytes_response, json_response
from .responses import ResponsesRoutes, StoreOptions
from .webui import WebUi

log = logging.getLogger("lse.api")


@dataclass(frozen=True)
class ServerSettings:
    """HTTP-side options; the engine's own live in LseConfig."""

    api_key: str | None = None
    max_body_bytes: int = 8 * 1024 * 1024
    request_timeout_secs: float = 600.0  # 0 = no limit
    read_timeout_secs: float = 60.0  # a request's headers, then its body, each within this; 0 = no limit
    shutdown_timeout_secs: float = 5.0  # running replies' time to finish on SIGTERM
    metrics_public: bool = False  # /metrics without the API key
    allowed_origins: tuple[str, ...] = ()  # CORS; empty: no CORS headers, as before
    responses_store: StoreOptions = StoreOptions()  # /v1/responses' store (--responses-store-*)
    web_ui: bool = True  # the chat page at / (api/webui.py); --no-web-ui: 404 there
    embeddings: bool = False  # --embeddings: /openapi.json lists POST /v1/embeddings (it answers 501 without)


class EngineHolder:
    """The engine as the routes see it: loading, ready, or failed to start."""

    def __init__(self, open_engine: Callable[[], Any], startup_error: type[BaseException],
                 on_failed: Callable[[BaseException], None] | None) -> None:
        self.state = "loading"
        self.engine: Any = None
        self.created = 0
        self._open = open_engine
        self._startup_error = startup_error
        self._on_failed = on_failed
        self.on_ready: list[Callable[[Any], None]] = []  # told the engine once it is open
        self.draining = False  # SIGTERM came: /health answers 503 from then on

    def load(self) -> None:
        """Open the engine (blocking; a thread runs this). The engine logs its
        own startup lines (model, devices and why others declined, sampling
        defaults and sources, thinking levels) to the "lse" logger as it opens."""
        try:
            engine = self._open()
        except Exception as exc:  # whatever went wrong, the server can't serve: report and stop
            self.state = "failed"
            if isinstance(exc, self._startup_error):
                log.error("lse-server: the engine failed to start: %s", exc)
            else:  # not the engine's own refusal: a bug, so keep the traceback
                log.exception("lse-server: the engine failed to start")
            if self._on_failed is not None:
                self._on_failed(exc)
            return
        self.created = int(time.time())
        self.engine = engine
        self.state = "ready"
        for ready in self.on_ready:
            ready(engine)
        log.info("lse-server: model ready")

    def require(self) -> Any:
        """The engine, or 503 model_loading while there is none."""
        if self.engine is not None:
            return self.engine
        if self.state == "failed":
            raise LseError("model_loading", "the model failed to load; the server is shutting down")
        raise LseError("model_loading", "the model is still loading; retry when /health answers 200")


class Routes:
    """The route handlers; each /v1 handler needs the engine."""

    def __init__(self, holder: EngineHolder, runtime: Runtime, settings: ServerSettings) -> None:
        self.holder = holder
        self.runtime = runtime
        self.settings = settings
        self.pool = prepare_pool()
        self.metrics = Metrics(self._engine_status, self._engine_info)
        holder.on_ready.append(lambda engine: runtime.lse_observe(engine, self.metrics.observe))
        self.openapi = OpenApi(self)
        self.responses = ResponsesRoutes(holder.require, runtime, settings, self.pool)
        self.messages = MessagesRoutes(self)
        # Several models (api/models.py): the set's list and the operator routes.
        self.model_set = ModelRoutes(holder.require, runtime) if hasattr(runtime, "lse_model_list") else None
        self.table: list[tuple[str, str, Callable[[Request], Awaitable[Response]]]] = [
            ("POST", "/v1/chat/completions", self.chat_completions),
            ("POST", "/v1/completions", self.completions),
            ("POST", "/v1/messages", self.messages.create),
            ("POST", "/v1/messages/count_tokens", self.messages.count_tokens),
            ("GET", "/v1/models", self.models),
            ("GET", "/v1/models/{path:model_id}", self.model),
            ("POST", "/tokenize", self.tokenize),
            ("POST", "/detokenize", self.detokenize),
            ("GET", "/tokenizer_info", self.tokenizer_info),
            ("GET", "/v1/lse/model_info", self.model_info),
            ("GET", "/v1/lse/status", self.status),
            ("GET", "/health", self.health),
            ("HEAD", "/health", self.health),  # load balancers probe with HEAD; the server drops the body
            ("GET", "/metrics", self.metrics.handler),
            ("GET", "/openapi.json", self.openapi.document),
            ("GET", "/docs", self.openapi.docs),
            *self.responses.table,
            *(self.model_set.table if self.model_set is not None else ()),
            *EmbeddingsRoutes(self).table,
        ]
        self.web = WebUi() if settings.web_ui else None
        self.table += self.web.routes() if self.web is not None else []
        # A known path with the wrong method gets 405 with Allow, not 404.
        self.allowed: dict[str, list[str]] = {}
        for method, path, _ in self.table:
            self.allowed.setdefault(path, []).append(method)

    async def chat_completions(self, request: Request) -> Response:
        return await self._complete(request, "chat.completions")

    async def completions(self, request: Request) -> Response:
        return await self._complete(request, "completions")

    async def _complete(self, request: Request, endpoint: str) -> Response:
        engine = self.holder.require()
        return await serve_completion(request, self.runtime, engine, endpoint,
                                      self.settings.max_body_bytes, self.settings.request_timeout_secs, self.pool,
                                      self.settings.read_timeout_secs)

    async def models(self, request: Request) -> Response:
        if self.model_set is not None:
            return self.model_set.list_reply(self.holder.created)
        return json_response(200, replies.model_list(self._model_entry()))

    async def model(self, request: Request) -> Response:
        """GET /v1/models/{id}: the list's entry, or 404 model_not_found for another id."""
        wanted = unquote(request.route_values.get("model_id") or "")
        if self.model_set is not None:
            return self.model_set.entry_reply(wanted, self.holder.created)
        entry = self._model_entry()
        if wanted != entry["id"]:
            raise LseError("model_not_found", f"the model {wanted!r} does not exist; this server serves "
                           f"{entry['id']!r}", param="model")
        return json_response(200, entry)

    def _model_entry(self) -> dict[str, Any]:
        return replies.model_entry_of(self.runtime.lse_model_info(self.holder.require()), self.holder.created)

    async def tokenize(self, request: Request) -> Response:
        return await self._tokenizer_call(request, self.runtime.lse_tokenize)

    async def detokenize(self, request: Request) -> Response:
        return await self._tokenizer_call(request, self.runtime.lse_detokenize)

    async def _tokenizer_call(self, request: Request, call: Callable[[Any, dict[str, Any]], dict[str, Any]]) -> Response:
        engine = self.holder.require()
        data = await read_body(request, request.content.receive, self.settings.max_body_bytes,
                                self.settings.read_timeout_secs)
        # On a prepare pool: the body's JSON, the call and the reply's JSON (a long text must not stall the loop).
        pool = self.pool.for_size(len(data))
        reply = await asyncio.get_running_loop().run_in_executor(pool, tokenizer_reply, call, engine, data)
        return json_bytes_response(200, reply)

    async def tokenizer_info(self, request: Request) -> Response:
        return json_response(200, self.runtime.lse_tokenizer_info(self.holder.require()))

    async def model_info(self, request: Request) -> Response:
        if self.model_set is not None:  # ?model=NAME picks one of several
            return await self.model_set.model_info_reply(request)
        return json_response(200, self.runtime.lse_model_info(self.holder.require()))

    async def status(self, request: Request) -> Response:
        return json_response(200, {**self.runtime.lse_status(self.holder.require()),
                                   "responses_store": self.responses.status()})

    async def health(self, request: Request) -> Response:
        """200 ok once ready; 503 while loading, after a failed start, and
        while draining at SIGTERM (so load balancers stop sending work)."""
        if self.holder.draining:
            return json_response(503, {"status": "shutting_down"})
        if self.holder.state == "ready":
            return json_response(200, {"status": "ok"})
        return json_response(503, {"status": "loading" if self.holder.state == "loading" else "error"})

    def _engine_status(self) -> dict[str, Any] | None:
        return self.runtime.lse_status(self.holder.engine) if self.holder.engine is not None else None

    def _engine_info(self) -> dict[str, Any] | None:
        return self.runtime.lse_model_info(self.holder.engine) if self.holder.engine is not None else None

    def is_open(self, handler: Handler) -> bool:
        """Routes served without the API key: /health, /docs (a page naming the
        routes), the chat page's files (they hold no data; the page asks for the
        key), and /metrics under --metrics-public."""
        return handler in (self.health, self.openapi.docs) or (
            self.settings.metrics_public and handler == self.metrics.handler) or (
            self.web is not None and self.web.serves(handler))

    async def fallback(self, request: Request) -> Response:
        """Unknown path: 404; known path, other method: 405 with Allow."""
        allowed = self.allowed.get(request.path)
        if allowed is None and request.path.startswith("/v1/models/") and request.path != "/v1/models/":
            allowed = self.allowed["/v1/models/{path:model_id}"]
        allowed = allowed or self.responses.allowed(request.path)
        if allowed is None:
            raise LseError("not_found", f"no route {request.method} {request.path}")
        response = error_response(LseError(
            "method_not_allowed", f"{request.method} is not allowed on {request.path}; use {', '.join(allowed)}"))
        response.add_header(b"allow", ", ".join(allowed).encode())
        return response


def create_app(open_engine: Callable[[], Any], settings: ServerSettings, runtime: Runtime, *,
               startup_error: type[BaseException] = Exception,
               on_failed: Callable[[BaseException], None] | None = None) -> Application:
    """The app over ``runtime``; ``open_engine`` runs in a thread when the app starts.

    ``startup_error`` is the engine's own refusal (logged as one line, no
    traceback); ``on_failed`` is told when opening fails (the CLI stops the
    server and exits 1).
    """
    holder = EngineHolder(open_engine, startup_error, on_failed)
    routes = Routes(holder, runtime, settings)
    router = Router()  # never BlackSheep's process-wide default router

    def guarded(handler: Handler, route: str, open_route: bool = False) -> Handler:
        # Auth rides on the route the router chose (see auth.py), not on the path;
        # the count wraps it, so refused requests are counted too.
        if settings.api_key and not open_route:
            handler = require_key(settings.api_key, handler)
        if route in MESSAGES_PATHS:  # Anthropic's routes answer errors in its envelope, auth's 401 too
            handler = anthropic_errors(handler)
        return _as_function(counted(routes.metrics, route, handler))

    for method, path, handler in routes.table:
        router.add(method, path, guarded(handler, path, open_route=routes.is_open(handler)))
    router.fallback = messages_fallback(guarded(routes.fallback, "other"))

    app = Application(router=router, show_error_details=False)
    _install_error_handlers(app)
    if settings.allowed_origins:
        # BlackSheep answers preflights itself, before any route's auth check:
        # browsers send no credentials on a preflight (Fetch standard, CORS protocol).
        # allow_headers "*": the preflight's Access-Control-Request-Headers are
        # answered as asked, so the SDKs' own headers (the openai JS SDK's
        # x-stainless-*, api-key, x-api-key) pass; the origin list is the gate.
        app.use_cors(allow_origins=settings.allowed_origins, allow_methods=("GET", "HEAD", "POST", "OPTIONS"),
                     allow_headers="*", expose_headers=("retry-after",), max_age=600)

    async def start_loading(_: Application) -> None:
        threading.Thread(target=holder.load, name="lse-engine-open", daemon=True).start()

    async def close_engine(_: Application) -> None:
        routes.pool.shutdown(wait=False, cancel_futures=True)
        if holder.engine is not None:
            runtime.lse_close(holder.engine)

    async def drain() -> None:
        """SIGTERM (api/cli.py): queued requests get 503, running replies get
        --shutdown-timeout seconds, then end with the shutdown error."""
        holder.draining = True
        if holder.engine is not None:
            await asyncio.to_thread(runtime.lse_shutdown, holder.engine, settings.shutdown_timeout_secs)

    app.on_start += start_loading
    app.on_stop += close_engine
    app.lse_drain = drain  # read by api/cli.py's server on shutdown
    return app


def counted(metrics: Metrics, route: str, handler: Handler) -> Handler:
    """``handler`` with its reply counted in lse_http_requests_total by route and status."""
    async def count(request: Request) -> Response:
        status = 500
        try:
            response = await handler(request)
            status = response.status
            return response
        except (LseError, HTTPException) as exc:
            status = exc.status
            raise
        finally:
            metrics.count(route, request.method, status)

    return count


def _as_function(method: Callable[[Request], Awaitable[Response]]) -> Callable[[Request], Awaitable[Response]]:
    # BlackSheep marks route handlers with an attribute, which a bound method can't take.
    async def handler(request: Request) -> Response:
        return await method(request)

    return handler


def _install_error_handlers(app: Application) -> None:
    async def on_lse_error(_app: Application, _request: Request, exc: LseError) -> Response:
        return error_response(exc)

    async def on_not_found(_app: Application, request: Request, _exc: HTTPException) -> Response:
        return error_response(LseError("not_found", f"no route {request.method} {request.path}"))

    async def on_server_error(_app: Application, _request: Request, _exc: Exception) -> Response:
        # BlackSheep has already logged the traceback ("Unhandled exception").
        return error_response(LseError("internal_error", "internal server error; see the server log"))

    app.exceptions_handlers[LseError] = on_lse_error
    app.exceptions_handlers[404] = on_not_found
    app.exceptions_handlers[500] = on_server_error
