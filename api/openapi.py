"""GET /openapi.json (OpenAPI 3.1) and GET /docs (a page listing the routes).

The document is built from what the server itself uses: the paths and
methods from the router's own table (``Routes.table``), the request and
reply shapes from ``lse.runtime.openai.schema`` (bounds from the validator's
constants, errors from the one error table), auth from the server's
settings. Nothing here is a hand-kept list of routes or fields.

/docs is one static HTML page built from the same table: each route, what it
answers, and a link to /openapi.json. It loads nothing from elsewhere (no
Swagger UI from a CDN, which leaves the page blank on a machine offline) and
is served without the API key: it shows only the routes (the document itself
still needs the key when one is set).
"""

from __future__ import annotations

import html
import re
from typing import Any, Protocol

from blacksheep import Content, Request, Response

from lse.runtime.anthropic import schema as anthropic_schema
from lse.runtime.embeddings import schema as embeddings_schema
from lse.runtime.openai import schema
from lse.runtime.responses import schema as responses_schema
from lse.runtime.api import version_text

from .replies import json_response
from .webui import WebUi


class Routes(Protocol):
    """What the document and the page read of the server's routes (app.Routes)."""

    table: list[tuple[str, str, Any]]  # (method, route, handler)
    settings: Any  # app.ServerSettings: api_key, embeddings
    web: WebUi | None

    def is_open(self, handler: Any) -> bool: ...

JSON = "application/json"
ERROR_DESCRIPTIONS = {400: "Invalid request", 401: "Missing or wrong API key", 404: "No such model",
                      405: "Method not allowed",
                      408: "The request ran past --request-timeout-secs", 413: "Body over --max-body-bytes",
                      500: "Generation or server failure",
                      501: "Embeddings are off: start the server with --embeddings", 503: "Model loading, queue full or shutting down"}
# path -> (summary, 200 schema name, error statuses beyond 401); the paths themselves come from Routes.table.
DESCRIBED: dict[str, tuple[str, str | None, tuple[int, ...]]] = {
    "/v1/chat/completions": ("Create a chat completion (OpenAI)", "ChatCompletion", (400, 408, 413, 500, 503)),
    "/v1/completions": ("Create a text completion (OpenAI)", "Completion", (400, 408, 413, 500, 503)),
    "/v1/messages": ("Create a message (Anthropic's Messages API)", "AnthropicMessage", (400, 408, 413, 500, 503)),
    "/v1/messages/count_tokens": ("Count a message's input tokens (Anthropic)", "AnthropicTokenCount",
                                  (400, 413, 503)),
    "/v1/models": ("The served model (OpenAI), with LSE's extensions", "ModelList", (500, 503)),
    "/v1/models/{model_id}": ("One model by id (OpenAI): the list's entry", "Model", (404, 500, 503)),
    "/tokenize": ("Text to token ids (llama-server's shape; vLLM's spellings too)", "Tokens", (400, 503)),
    "/detokenize": ("Token ids to text (llama-server's shape)", "Text", (400, 503)),
    "/tokenizer_info": ("What a remote tokenizer client needs (lm-evaluation-harness)", "TokenizerInfo", (503,)),
    "/v1/lse/model_info": ("The served model in detail (LSE)", "ModelInfo", (500, 503)),
    "/v1/lse/status": ("The engine's state (LSE)", "Status", (500, 503)),
    "/health": ("200 once the model is ready; 503 while it loads, after a failed start and while shutting down",
                "Health", (503,)),
    "/metrics": ("Prometheus metrics (text format 0.0.4)", None, ()),
    "/openapi.json": ("This document", None, ()),
    "/docs": ("This page: the routes, and a link to /openapi.json", None, ()),
    "/v1/responses": ("Create a response (OpenAI Responses API)", "Response", (400, 404, 408, 413, 500, 503)),
    "/v1/responses/{response_id}": ("A stored or running response (GET), or delete it (DELETE)", "Response",
                                    (404, 503)),
    "/v1/responses/{response_id}/cancel": ("Cancel a running response", "Response", (404, 503)),
    # Several models (api/models.py): the operator routes.
    "/v1/lse/models/refresh": ("Find the --models-dir models again (LSE, several models)", "ModelState", (503,)),
    "/v1/lse/models/{name}/load": ("Load a model now (LSE, several models)", "ModelState", (404, 500, 503)),
    "/v1/lse/models/{name}/unload": ("Unload an idle model (LSE, several models)", "ModelState", (404, 503)),
    "/v1/embeddings": ("Create embeddings (OpenAI); 501 unless the server runs with --embeddings", "Embeddings",
                       (400, 408, 413, 500, 501, 503)),
}
# The headers the key may come in (api/auth.py): OpenAI's bearer, AzureOpenAI's and Anthropic's.
SECURITY_SCHEMES = {"bearer": {"type": "http", "scheme": "bearer"},
                    "api_key": {"type": "apiKey", "in": "header", "name": "api-key"},
                    "x_api_key": {"type": "apiKey", "in": "header", "name": "x-api-key"}}
REQUESTS = {"/v1/chat/completions": "ChatCompletionRequest", "/v1/completions": "CompletionRequest",
            "/tokenize": "TokenizeRequest", "/detokenize": "DetokenizeRequest", "/v1/responses": "ResponseRequest",
            "/v1/messages": "AnthropicMessageRequest", "/v1/messages/count_tokens": "AnthropicTokenCountRequest",
            "/v1/embeddings": "EmbeddingsRequest"}
STREAMS = {"/v1/chat/completions": "ChatCompletionChunk", "/v1/completions": "CompletionChunk"}
COMPONENTS = {
    "ChatCompletionRequest": schema.CHAT_REQUEST, "CompletionRequest": schema.COMPLETION_REQUEST,
    "ChatCompletion": schema.CHAT_RESPONSE, "ChatCompletionChunk": schema.CHAT_CHUNK,
    "Completion": schema.COMPLETION_RESPONSE, "CompletionChunk": schema.COMPLETION_CHUNK,
    "ModelState": schema.OBJ, "ModelList": schema.MODELS, "ModelInfo": schema.MODEL_INFO, "Status": schema.STATUS, "Health": schema.HEALTH,
    "Model": schema.MODEL, "TokenizeRequest": schema.TOKENIZE_REQUEST, "Tokens": schema.TOKENS,
    "DetokenizeRequest": schema.DETOKENIZE_REQUEST, "Text": schema.TEXT, "TokenizerInfo": schema.OBJ,
    "Response": responses_schema.RESPONSE, "ResponseRequest": responses_schema.REQUEST,
    "AnthropicMessageRequest": anthropic_schema.MESSAGES_REQUEST, "AnthropicMessage": anthropic_schema.MESSAGE,
    "AnthropicTokenCountRequest": anthropic_schema.COUNT_TOKENS_REQUEST,
    "AnthropicTokenCount": anthropic_schema.TOKEN_COUNT, "AnthropicError": anthropic_schema.ERROR,
    "EmbeddingsRequest": embeddings_schema.REQUEST, "Embeddings": embeddings_schema.REPLY,
}
DOCS_PAGE = """<!doctype html><html><head><meta charset="utf-8"><title>LSE API</title>
<style>body{{font-family:sans-serif;max-width:60em;margin:2em auto}}td{{padding:.2em 1em .2em 0}}</style></head>
<body><h1>LSE {version}</h1><p>An OpenAI-compatible API. The OpenAPI 3.1 document is
<a href="openapi.json">/openapi.json</a>{keyed}.</p>
<table>{rows}</table></body></html>"""


class OpenApi:
    def __init__(self, routes: Routes) -> None:
        self._routes = routes
        self._document: dict[str, Any] | None = None
        self._page: bytes | None = None

    async def document(self, request: Request) -> Response:
        if self._document is None:  # the table is complete once the app is built
            self._document = build_document(self._routes)
        return json_response(200, self._document)

    async def docs(self, request: Request) -> Response:
        if self._page is None:
            self._page = docs_page(self._routes)
        return Response(200, None, Content(b"text/html; charset=utf-8", self._page))


def docs_page(routes: Routes) -> bytes:
    """/docs: one row per route of the router's table, with its summary."""
    rows = "".join(f"<tr><td><code>{method} {html.escape(openapi_path(route))}</code></td>"
                   f"<td>{html.escape(_summary(routes, route, handler))}</td></tr>"
                   for method, route, handler in routes.table)
    keyed = " (send the API key for it)" if routes.settings.api_key else ""
    return DOCS_PAGE.format(version=html.escape(_version()), keyed=keyed, rows=rows).encode()


def _summary(routes: Routes, route: str, handler: Any) -> str:
    if routes.web is not None and routes.web.serves(handler):
        return "The chat page (docs/web-ui.md)" if route == "/" else "A file of the chat page"
    return DESCRIBED[openapi_path(route)][0]


def _version() -> str:
    return version_text("lse-server").splitlines()[0].split()[-1]


def build_document(routes: Routes) -> dict[str, Any]:
    keyed = bool(routes.settings.api_key)
    paths: dict[str, dict[str, Any]] = {}
    for method, route, handler in routes.table:
        secured = keyed and not routes.is_open(handler)
        path = openapi_path(route)
        if path == "/v1/embeddings" and not routes.settings.embeddings:  # 501 there: not served, not listed
            continue
        if routes.web is not None and routes.web.serves(handler):  # the chat page's files: not API, never keyed
            paths.setdefault(path, {})[method.lower()] = routes.web.operation(path)
            continue
        paths.setdefault(path, {})[method.lower()] = _operation(method, path, secured)
    components: dict[str, Any] = {"schemas": {**COMPONENTS, **{f"Error{s}": schema.error_schema(s)
                                                               for s in schema.ERROR_STATUSES}}}
    if keyed:
        components["securitySchemes"] = SECURITY_SCHEMES
    return {
        "openapi": "3.1.0",
        "info": {"title": "LSE", "version": _version(),
                 "description": "An OpenAI-compatible server for IREE-compiled models; LSE's extensions are "
                                "documented in lse-api.md."},
        "paths": paths,
        "components": components,
    }


def openapi_path(route: str) -> str:
    """BlackSheep's ``{path:model_id}`` as OpenAPI's ``{model_id}``."""
    return re.sub(r"\{(?:\w+:)?(\w+)\}", r"{\1}", route)


def _operation(method: str, path: str, secured: bool) -> dict[str, Any]:
    summary, reply, errors = DESCRIBED[path]
    name = re.sub(r"[^a-z0-9]+", "_", path.lower()).strip("_")
    op: dict[str, Any] = {"operationId": f"{method.lower()}_{name}", "summary": summary,
                          "responses": {"200": _ok(path, reply)}}
    params = re.findall(r"\{(\w+)\}", path)
    if params:
        op["parameters"] = [{"name": p, "in": "path", "required": True, "schema": schema.STR} for p in params]
    if path in REQUESTS:
        op["requestBody"] = {"required": True, "content": {JSON: {"schema": _ref(REQUESTS[path])}}}
    if secured:
        op["security"] = [{name: []} for name in SECURITY_SCHEMES]  # any one of them
        errors = (401, *errors)
    for status in sorted(errors):
        if status == 503 and path == "/health":
            op["responses"]["503"] = {"description": "The model is loading or failed to load, or the server is "
                                                     "shutting down",
                                      "content": {JSON: {"schema": _ref("Health")}}}
            continue
        envelope = "AnthropicError" if path.startswith("/v1/messages") else f"Error{status}"
        op["responses"][str(status)] = {"description": ERROR_DESCRIPTIONS[status],
                                        "content": {JSON: {"schema": _ref(envelope)}}}
    return op


def _ok(path: str, reply: str | None) -> dict[str, Any]:
    if path == "/metrics":
        return {"description": "Prometheus text exposition", "content": {"text/plain": {"schema": schema.STR}}}
    if path == "/docs":
        return {"description": "An HTML page", "content": {"text/html": {"schema": schema.STR}}}
    if path == "/openapi.json":
        return {"description": "This document", "content": {JSON: {"schema": schema.OBJ}}}
    content: dict[str, Any] = {JSON: {"schema": _ref(reply)}}
    if path in STREAMS:  # "stream": true: server-sent events, each data line one chunk, then [DONE]
        content["text/event-stream"] = {"schema": _event(STREAMS[path])}
    if path == "/v1/messages":  # "stream": true: Anthropic's events, no [DONE]
        content["text/event-stream"] = {"schema": anthropic_schema.EVENT}
    if path == "/v1/responses":  # "stream": true: the Responses events (each data one event object), no [DONE]
        content["text/event-stream"] = {"schema": {"type": "object", "properties": {"event": schema.STR,
                                                                                    "data": schema.STR},
                                                   "required": ["data"]}}
    return {"description": "OK", "content": content}


def _event(chunk: str) -> dict[str, Any]:
    """One server-sent event ({data, event, id, retry}, as OpenAPI 3.2's
    itemSchema describes a stream): each data is a chunk as JSON, the last
    is the literal [DONE]."""
    data = {"type": "string", "anyOf": [{"const": "[DONE]"},
                                        {"contentMediaType": JSON, "contentSchema": _ref(chunk)}]}
    return {"type": "object", "properties": {"data": data, "event": schema.STR}, "required": ["data"],
            "description": f"data: {{{chunk}}} events, then data: [DONE]"}


def _ref(name: str | None) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{name}"}
