"""GET /openapi.json (OpenAPI 3.1) and GET /docs (Swagger UI over it).

The document is built from what the server itself uses: the paths and
methods from the router's own table (``Routes.table``), the request and
reply shapes from ``lse.runtime.openai.schema`` (bounds from the validator's
constants, errors from the one error table), auth from the server's
settings. Nothing here is a hand-kept list of routes or fields.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from blacksheep import Content, Request, Response

from lse.runtime.openai import schema
from lse.runtime.api import version_text

from .replies import json_response

if TYPE_CHECKING:
    from .app import Routes

JSON = "application/json"
ERROR_DESCRIPTIONS = {400: "Invalid request", 401: "Missing or wrong API key", 404: "No such model",
                      405: "Method not allowed",
                      408: "The request ran past --request-timeout-secs", 413: "Body over --max-body-bytes",
                      500: "Generation or server failure", 503: "Model loading, queue full or shutting down"}
# path -> (summary, 200 schema name, error statuses beyond 401); the paths themselves come from Routes.table.
DESCRIBED: dict[str, tuple[str, str | None, tuple[int, ...]]] = {
    "/v1/chat/completions": ("Create a chat completion (OpenAI)", "ChatCompletion", (400, 408, 413, 500, 503)),
    "/v1/completions": ("Create a text completion (OpenAI)", "Completion", (400, 408, 413, 500, 503)),
    "/v1/models": ("The served model (OpenAI), with LSE's extensions", "ModelList", (500, 503)),
    "/v1/models/{model_id}": ("One model by id (OpenAI): the list's entry", "Model", (404, 500, 503)),
    "/tokenize": ("Text to token ids (llama-server's shape; vLLM's spellings too)", "Tokens", (400, 503)),
    "/detokenize": ("Token ids to text (llama-server's shape)", "Text", (400, 503)),
    "/tokenizer_info": ("What a remote tokenizer client needs (lm-evaluation-harness)", "TokenizerInfo", (503,)),
    "/v1/lse/model_info": ("The served model in detail (LSE)", "ModelInfo", (500, 503)),
    "/v1/lse/status": ("The engine's state (LSE)", "Status", (500, 503)),
    "/health": ("200 once the model is ready, 503 while it loads", "Health", (503,)),
    "/metrics": ("Prometheus metrics (text format 0.0.4)", None, ()),
    "/openapi.json": ("This document", None, ()),
    "/docs": ("Swagger UI over this document", None, ()),
}
REQUESTS = {"/v1/chat/completions": "ChatCompletionRequest", "/v1/completions": "CompletionRequest",
            "/tokenize": "TokenizeRequest", "/detokenize": "DetokenizeRequest"}
STREAMS = {"/v1/chat/completions": "ChatCompletionChunk", "/v1/completions": "CompletionChunk"}
COMPONENTS = {
    "ChatCompletionRequest": schema.CHAT_REQUEST, "CompletionRequest": schema.COMPLETION_REQUEST,
    "ChatCompletion": schema.CHAT_RESPONSE, "ChatCompletionChunk": schema.CHAT_CHUNK,
    "Completion": schema.COMPLETION_RESPONSE, "CompletionChunk": schema.COMPLETION_CHUNK,
    "ModelList": schema.MODELS, "ModelInfo": schema.MODEL_INFO, "Status": schema.STATUS, "Health": schema.HEALTH,
    "Model": schema.MODEL, "TokenizeRequest": schema.TOKENIZE_REQUEST, "Tokens": schema.TOKENS,
    "DetokenizeRequest": schema.DETOKENIZE_REQUEST, "Text": schema.TEXT, "TokenizerInfo": schema.OBJ,
}
DOCS_HTML = """<!doctype html><html><head><meta charset="utf-8"><title>LSE API</title>
<link rel="stylesheet" href="https://unpkg.com/swagger-ui-dist@5/swagger-ui.css"></head>
<body><div id="ui"></div><script src="https://unpkg.com/swagger-ui-dist@5/swagger-ui-bundle.js"></script>
<script>SwaggerUIBundle({url: "openapi.json", dom_id: "#ui"});</script></body></html>"""


class OpenApi:
    def __init__(self, routes: Routes) -> None:
        self._routes = routes
        self._document: dict[str, Any] | None = None

    async def document(self, request: Request) -> Response:
        if self._document is None:  # the table is complete once the app is built
            self._document = build_document(self._routes)
        return json_response(200, self._document)

    async def docs(self, request: Request) -> Response:
        return Response(200, None, Content(b"text/html; charset=utf-8", DOCS_HTML.encode()))


def build_document(routes: Routes) -> dict[str, Any]:
    keyed = bool(routes.settings.api_key)
    paths: dict[str, dict[str, Any]] = {}
    for method, route, handler in routes.table:
        secured = keyed and not routes.is_open(handler)
        path = openapi_path(route)
        if routes.web is not None and routes.web.serves(handler):  # the chat page's files: not API, never keyed
            paths.setdefault(path, {})[method.lower()] = routes.web.operation(path)
            continue
        paths.setdefault(path, {})[method.lower()] = _operation(method, path, secured)
    components: dict[str, Any] = {"schemas": {**COMPONENTS, **{f"Error{s}": schema.error_schema(s)
                                                               for s in schema.ERROR_STATUSES}}}
    if keyed:
        components["securitySchemes"] = {"bearer": {"type": "http", "scheme": "bearer"}}
    return {
        "openapi": "3.1.0",
        "info": {"title": "LSE", "version": version_text("lse-server").splitlines()[0].split()[-1],
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
        op["security"] = [{"bearer": []}]
        errors = (401, *errors)
    for status in sorted(errors):
        if status == 503 and path == "/health":
            op["responses"]["503"] = {"description": "The model is loading or failed to load",
                                      "content": {JSON: {"schema": _ref("Health")}}}
            continue
        op["responses"][str(status)] = {"description": ERROR_DESCRIPTIONS[status],
                                        "content": {JSON: {"schema": _ref(f"Error{status}")}}}
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
