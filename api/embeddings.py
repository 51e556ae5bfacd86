"""POST /v1/embeddings: the body read as the other routes read it (413, 408,
auth and metrics come from api/app.py's common path), its JSON parsed on the
prepare pool, the request run through ``lse_request(engine, body,
"embeddings")`` (lse.runtime.embeddings: the scheduler embeds; no thread
waits here) and the reply serialized on the pool (2048 vectors are large).
Past --request-timeout-secs the request is withdrawn and answered 408.
"""

from __future__ import annotations

import asyncio
from typing import Any

from blacksheep import Request, Response

from lse.runtime.embeddings.job import ENDPOINT
from lse.runtime.errors import LseError
from lse.runtime.openai.body import parse_json_object

from .completions import read_body
from .replies import dumps, json_bytes_response, json_response

PATH = "/v1/embeddings"


class EmbeddingsRoutes:
    def __init__(self, routes: Any) -> None:
        self.routes = routes
        self.table = [("POST", PATH, self.create)]

    async def create(self, request: Request) -> Response:
        routes = self.routes
        engine = routes.holder.require()
        settings = routes.settings
        data = await read_body(request, request.content.receive, settings.max_body_bytes, settings.read_timeout_secs)
        loop = asyncio.get_running_loop()
        pool = routes.pool.for_size(len(data))
        body = await loop.run_in_executor(pool, parse_json_object, data)  # the other routes' 400s
        handle = routes.runtime.lse_request(engine, body, ENDPOINT)
        timeout = settings.request_timeout_secs or None
        try:
            event = await asyncio.wait_for(_first(handle), timeout)
        except asyncio.TimeoutError:
            handle.cancel()
            raise LseError("request_timeout", f"the embeddings took longer than --request-timeout-secs "
                           f"{timeout:g}") from None
        except asyncio.CancelledError:  # the client went away: the prompts not yet embedded leave the queue
            handle.cancel()
            raise
        if event["type"] == "error":
            return json_response(event["status"], event["data"])
        return json_bytes_response(200, await loop.run_in_executor(pool, dumps, event["data"]))


async def _first(handle: Any) -> dict[str, Any]:
    async for event in handle.aevents():
        return event
    raise RuntimeError("the embeddings handle ended without an event")

