"""Submitting a Messages request, and reading its events in Anthropic's shapes.

``submit`` translates the body (``request.to_chat``), hands the chat body to
the engine with the thinking budget, and wraps the engine's handle: its
chunk events become Anthropic stream events (``{"type": "chunk", "data":
event}``), its done event the fold of those (the Message), its error event
Anthropic's envelope. ``count_tokens`` renders the prompt as the request
would run it and answers at once.

The handles are given the in-process API's ``RequestHandle`` class (``make``)
rather than importing it: ``lse.runtime.engine_api`` imports this module.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import replace
from typing import Any

from lse.runtime.anthropic.errors import error_event, lse_error_body
from lse.runtime.anthropic.events import MessageEvents, fold
from lse.runtime.anthropic.request import to_chat
from lse.runtime.errors import LseError
from lse.runtime.openai.request import CHAT, parse_request
from lse.runtime.prepare import chat_prompt_ids
from lse.runtime.channel import terminal_result

MESSAGES = "messages"
COUNT_TOKENS = "messages.count_tokens"
Event = dict[str, Any]


class MessagesHandle:
    """The events of one Messages request (the in-process API's handle shape)."""

    def __init__(self, inner: Any, stream: bool, translate: MessageEvents | None) -> None:
        self._inner = inner
        self.stream = stream  # the body asked for "stream": true
        self._translate = translate

    def _shaped(self, event: Event) -> list[Event]:
        if event["type"] == "error":
            return [error_event(event)]
        if event["type"] == "done":
            assert self._translate is not None
            return [{"type": "done", "data": fold(self._translate.events)}]
        assert self._translate is not None
        return [{"type": "chunk", "data": e} for e in self._translate.feed(event["data"])]

    def events(self) -> Iterator[Event]:
        for event in self._inner.events():
            yield from self._shaped(event)

    async def aevents(self) -> AsyncIterator[Event]:
        async for event in self._inner.aevents():
            for out in self._shaped(event):
                yield out

    def rejection(self) -> Event | None:
        rejected = self._inner.rejection()
        return None if rejected is None else error_event(rejected)

    def cancel(self) -> None:
        self._inner.cancel()

    def result(self) -> tuple[int, dict]:
        """Block until the end: (HTTP status, body)."""
        return terminal_result(self.events())


class AnswerHandle:
    """A request answered at once: one done or error event."""

    def __init__(self, status: int, data: dict[str, Any]) -> None:
        self.stream = False
        self._event: Event = {"type": "done", "data": data} if status == 200 else \
            {"type": "error", "status": status, "data": data}

    def events(self) -> Iterator[Event]:
        yield self._event

    async def aevents(self) -> AsyncIterator[Event]:
        yield self._event

    def rejection(self) -> Event | None:
        return self._event if self._event["type"] == "error" else None

    def cancel(self) -> None:
        pass

    def result(self) -> tuple[int, dict]:
        return (200, self._event["data"]) if self._event["type"] == "done" else \
            (self._event["status"], self._event["data"])


def error_handle(err: LseError) -> AnswerHandle:
    """A request refused before it was read (a body that is not JSON), in Anthropic's envelope."""
    return AnswerHandle(err.status, lse_error_body(err))


def submit(engine: Any, body: Any, make: Callable[..., Any]) -> Any:
    """A Messages request on ``engine``: request errors come back as the
    handle's error event, never as an exception."""
    stream = isinstance(body, dict) and body.get("stream") is True
    try:
        request = to_chat(body)
        running = engine.submit(request.chat, CHAT, reasoning_budget=request.thinking_budget)
    except LseError as e:
        return AnswerHandle(e.status, lse_error_body(anthropic_param(e)))
    seq = running.seqs[0]
    translate = MessageEvents(request.model, len(seq.prompt_ids), lambda: seq.stops.matched)
    return MessagesHandle(make(running, engine=engine, stream=stream), request.stream, translate)


def count_tokens(engine: Any, body: Any) -> AnswerHandle:
    """count_tokens' answer: ``{"input_tokens": N}``, the prompt as it would run."""
    try:
        request = to_chat(body, count_only=True)
        model = engine.context
        parsed = parse_request(request.chat, CHAT, operator_cap=0, thinking=model.thinking)
        return AnswerHandle(200, {"input_tokens": len(chat_prompt_ids(model, parsed))})
    except LseError as e:
        return AnswerHandle(e.status, lse_error_body(anthropic_param(e)))


# The chat fields the engine names in an error, as the Messages body spells them.
_PARAMS = {"reasoning_effort": "output_config.effort", "response_format": "output_config.format"}
_TOOL_PARAMETERS = re.compile(r"^tools\[(\d+)\]\.function\.parameters")


def anthropic_param(err: LseError) -> LseError:
    """``err`` with its ``param`` (and the same words in its message) in the
    Messages body's spelling, where the chat body's differs."""
    param = err.param
    spelled = None if param is None else \
        _PARAMS.get(param) or _TOOL_PARAMETERS.sub(r"tools[\1].input_schema", param)
    message = err.message.replace(param, spelled) if param and spelled != param else err.message
    message = message.replace("reasoning_effort", _PARAMS["reasoning_effort"])
    if (spelled, message) == (param, err.message):
        return err
    return replace(err, param=spelled, message=message)
