"""The chat page: ``GET /`` and its assets under ``/ui/``, from the package's own ``web/`` folder.

The page is plain ES modules and CSS, read from ``lse.api.web`` (package data)
once when the app is built and served from memory: no build step, no bundle,
nothing fetched from another host. Each shipped file is a route of its own, so
a name that is not shipped falls through to the router's fallback (behind the
API key like every other unknown path) and no path reaches the filesystem.

The page and its assets are served without the API key: they hold no data.
The page asks the user for the key and sends it on its own /v1 requests.
A Content-Security-Policy limits the page to this server (``'self'``) for
scripts, styles and fetches, so a reply's text can never load anything from
elsewhere.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Awaitable, Callable
from importlib import resources
from typing import Any

from blacksheep import Content, Request, Response

Handler = Callable[[Request], Awaitable[Response]]

PREFIX = "/ui/"
INDEX = "index.html"
CONTENT_TYPES = {
    ".html": b"text/html; charset=utf-8",
    ".js": b"text/javascript; charset=utf-8",
    ".css": b"text/css; charset=utf-8",
    ".svg": b"image/svg+xml",
}
CSP = (b"default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; "
       b"base-uri 'none'; form-action 'none'; frame-ancestors 'none'")


def shipped_files() -> dict[str, bytes]:
    """Every asset of the page by file name (one flat folder), index.html included."""
    folder = resources.files("lse.api").joinpath("web")
    return {entry.name: entry.read_bytes() for entry in folder.iterdir()
            if entry.is_file() and _suffix(entry.name) in CONTENT_TYPES}


def _suffix(name: str) -> str:
    dot = name.rfind(".")
    return name[dot:] if dot > 0 else ""


class WebUi:
    """The page's routes: ``/`` (index.html) and ``/ui/<name>`` for each other shipped file."""

    def __init__(self, files: dict[str, bytes] | None = None) -> None:
        self.files = files if files is not None else shipped_files()
        if INDEX not in self.files:
            raise RuntimeError(f"the web UI's {INDEX} is missing from the lse.api package (lse/api/web/)")
        self.handlers: dict[str, Handler] = {"/": self._serve(INDEX)}
        for name in sorted(self.files):
            if name != INDEX:
                self.handlers[PREFIX + name] = self._serve(name)

    def routes(self) -> list[tuple[str, str, Handler]]:
        return [("GET", path, handler) for path, handler in self.handlers.items()]

    def serves(self, handler: Handler) -> bool:
        return any(handler is h for h in self.handlers.values())

    def operation(self, path: str) -> dict[str, Any]:
        """The route's entry in /openapi.json: a file of the page, served without the key."""
        name = INDEX if path == "/" else path.removeprefix(PREFIX)
        media = CONTENT_TYPES[_suffix(name)].split(b";")[0].decode()
        slug = "index" if path == "/" else re.sub(r"[^a-z0-9]+", "_", name.lower())
        return {"operationId": f"get_web_ui_{slug}",
                "summary": "The chat page" if path == "/" else f"The chat page's {name}",
                "responses": {"200": {"description": "A file of the chat page (api/web/)",
                                      "content": {media: {"schema": {"type": "string"}}}},
                              "304": {"description": "Unchanged since the ETag sent in If-None-Match"}}}

    def _serve(self, name: str) -> Handler:
        body = self.files[name]
        content_type = CONTENT_TYPES[_suffix(name)]
        etag = b'"' + hashlib.sha256(body).hexdigest()[:20].encode() + b'"'
        headers = [(b"cache-control", b"no-cache"), (b"etag", etag), (b"x-content-type-options", b"nosniff")]
        if name == INDEX:
            headers += [(b"content-security-policy", CSP), (b"referrer-policy", b"no-referrer")]

        async def serve(request: Request) -> Response:
            # no-cache plus the ETag: the browser revalidates each load and gets
            # 304 while the installed package's file is unchanged.
            if request.get_first_header(b"if-none-match") == etag:
                return Response(304, list(headers))
            return Response(200, list(headers), Content(content_type, body))

        return serve
