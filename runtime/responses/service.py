"""One /v1/responses request over the chat engine: translate, submit, and
turn the chat handle's events into Responses events.

``ResponsesService.create(body, submit)`` checks and translates the body
(``request.translate``, which reads ``previous_response_id``'s conversation
from the store), submits the chat body through ``submit`` (``lse_request``
with the chat endpoint, in-process or over a cluster) and returns a
``ResponseHandle``. Its events follow the in-process API's contract:
``{"type": "chunk", "data": <Responses stream event>}``..., then
``{"type": "done", "data": <response>}`` or ``{"type": "error", "status",
"data"}`` (after a ``response.failed`` chunk once the stream has begun).
A finished response with ``store: true`` goes into the store with its
conversation; while its events are being read, the store's ``running``
table can show it and cancel it.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

from lse.runtime.errors import LseError
from lse.runtime.responses.items import ResponseBuilder, conversation_turn, new_id
from lse.runtime.responses.request import Translated, rename_error, translate
from lse.runtime.responses.store import ResponseStore, Running
from lse.runtime.channel import terminal_result

Event = dict[str, Any]


def not_found(rid: str, param: str | None) -> LseError:
    return LseError("response_not_found", f"no response with id {rid!r}: it was not stored (store: false), "
                    "was deleted, expired or was evicted from the store", param=param)


class ResponseHandle:
    """The Responses side of one chat handle (see the module docstring)."""

    def __init__(self, service: ResponsesService, translated: Translated | None, chat: Any,
                 error: LseError | None = None) -> None:
        self._service, self._t, self._chat, self._error = service, translated, chat, error
        self.stream = translated.stream if translated is not None else False
        self.id = new_id("resp")
        self.builder = ResponseBuilder(self.id, int(time.time()), translated.echo) if translated else None
        self._failure: dict[str, Any] | None = None  # fail_with's error and status
        self._failure_status = 500
        self._rejected = self._first_rejection()

    def _first_rejection(self) -> Event | None:
        if self._error is not None:
            return {"type": "error", "status": self._error.status, "data": self._error.body()}
        refused = self._chat.rejection()
        if refused is not None:
            return {**refused, "data": rename_error(refused["data"])}
        return None

    def rejection(self) -> Event | None:
        return self._rejected

    def cancel(self) -> None:
        if self._chat is not None:
            self._chat.cancel()

    def fail_with(self, error: dict[str, Any], status: int) -> None:
        """End with ``response.failed`` carrying ``error`` (an envelope) when the engine's end comes: the
        reader stopped the request (a timeout) and the engine ends it as cancelled."""
        if self._failure is None:
            self._failure, self._failure_status = error, status

    def close(self) -> None:
        """The reader is done with this handle (finished, or gone): it is no longer running."""
        self._service.store.end(self.id)

    def failed_events(self, error: dict[str, Any]) -> list[Event]:
        """The events that end the stream on an error the reader met (a timeout): the open item closed,
        ``response.failed`` (after ``response.created`` if none went out yet)."""
        self._service.store.end(self.id)
        return self.builder.fail(error.get("error", error))

    def _begin(self) -> None:
        """Listed as running (GET, cancel) from the first read to the last: a handle nobody reads holds
        no place in the store."""
        self._service.store.begin(self.id, Running(self.builder.response, self.cancel))

    def events(self) -> Iterator[Event]:
        if self._rejected is not None:
            yield self._rejected
            return
        self._begin()
        try:
            for event in self._chat.events():
                yield from self._map(event)
                if event["type"] != "chunk":
                    return
        finally:
            self.close()

    async def aevents(self) -> AsyncIterator[Event]:
        if self._rejected is not None:
            yield self._rejected
            return
        self._begin()
        try:
            async for event in self._chat.aevents():
                for out in self._map(event):
                    yield out
                if event["type"] != "chunk":
                    return
        finally:
            self.close()

    def result(self) -> tuple[int, dict[str, Any]]:
        return terminal_result(self.events())

    def _map(self, event: Event) -> list[Event]:
        b = self.builder
        if event["type"] == "chunk":
            return [{"type": "chunk", "data": e} for e in b.feed(event["data"])]
        self._service.store.end(self.id)
        if event["type"] == "error" or self._failure is not None:
            data = rename_error(event["data"]) if event["type"] == "error" else self._failure
            failed = b.fail(data.get("error", {}))
            status = event["status"] if event["type"] == "error" else self._failure_status
            return [{"type": "chunk", "data": e} for e in failed] + [{"type": "error", "status": status, "data": data}]
        events = b.end()
        response = b.response()
        if self._t.store:
            self._service.store.put(self.id, response, self._t.conversation + conversation_turn(response["output"]))
        return [{"type": "chunk", "data": e} for e in events] + [{"type": "done", "data": response}]


class ResponsesService:
    def __init__(self, store: ResponseStore) -> None:
        self.store = store

    def create(self, body: Any, submit: Callable[[dict[str, Any]], Any]) -> ResponseHandle:
        """Translate ``body`` and submit it; refusals come back as the handle's error event."""
        try:
            translated = translate(body, self._previous)
        except LseError as e:
            return ResponseHandle(self, None, None, e)
        return ResponseHandle(self, translated, submit(translated.chat))

    def _previous(self, rid: str) -> list[dict[str, Any]]:
        entry = self.store.get(rid)
        if entry is None:
            raise not_found(rid, "previous_response_id")
        return entry.conversation

    def get(self, rid: str) -> dict[str, Any]:
        """A stored response, or one still running (status in_progress); else the 404."""
        running = self.store.running(rid)
        if running is not None:
            return running.snapshot()
        entry = self.store.get(rid)
        if entry is None:
            raise not_found(rid, None)
        return entry.response

    def delete(self, rid: str) -> dict[str, Any]:
        if not self.store.delete(rid):
            raise not_found(rid, None)
        return {"id": rid, "object": "response.deleted", "deleted": True}

    def cancel(self, rid: str) -> dict[str, Any]:
        """Stop a running response; it ends with status cancelled. A finished
        one is answered as it is (cancelling it changes nothing), an unknown one 404."""
        running = self.store.running(rid)
        if running is None:
            return self.get(rid)
        running.cancel()
        return {**running.snapshot(), "status": "cancelled"}
