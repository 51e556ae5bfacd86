"""A request's reply on the reader's side: the one place typed request events
(lse.runtime.request_events) become the JSON events readers get.

``{"type": "chunk", "data": chunk}`` for each chunk, then ``{"type": "done",
"data": reply}`` (the fold of the chunks) or ``{"type": "error", "status",
"data"}``. When the last choice finishes, the final chunk carries usage,
lse_context, timings and any lse_warnings; with stream_options.include_usage,
usage comes instead in one more chunk whose choices are [], and every other
chunk says "usage": null (openai-compatible-api.md, Streaming).
"""

from __future__ import annotations

from typing import Any, Callable

from lse.runtime.fallback import warnings_for
from lse.runtime.openai import replies
from lse.runtime.request_events import Deltas, Event, Failed, Finished, Started, Totals


class ReplyStream:
    """Chunks, the fold and the error body of one request, built as its reader takes its events."""

    def __init__(self, endpoint: str, rid: str, created: int, model: str, include_usage: bool,
                 token_text: Callable[[int], str]) -> None:
        self.endpoint, self.id, self.created, self.model = endpoint, rid, created, model
        self.include_usage = include_usage
        self.token_text = token_text
        self.chunks: list[dict] = []
        self._offsets: dict[int, int] = {}  # completions text_offset, per choice

    def events(self, event: Event) -> list[dict]:
        """The JSON events one typed event becomes, in order."""
        if isinstance(event, Deltas):
            return self._deltas(event)
        if isinstance(event, Finished):
            return self._finished(event)
        if isinstance(event, Started):
            return self._started(event)
        if isinstance(event, Failed):
            return [{"type": "error", "status": event.error.status, "data": event.error.body()}]
        raise TypeError(f"not a request event: {event!r}")

    def _chunk(self, choices: list[dict], **extra: Any) -> dict:
        if self.include_usage:  # OpenAI's shape: "usage": null on every chunk but the usage chunk
            extra.setdefault("usage", None)
        c = replies.chunk(self.endpoint, self.id, self.created, self.model, choices, **extra)
        self.chunks.append(c)
        return {"type": "chunk", "data": c}

    def _started(self, event: Started) -> list[dict]:
        if self.endpoint == replies.CHAT:
            return [self._chunk([replies.choice_delta(self.endpoint, i, {"role": "assistant", "content": ""})
                                 for i in event.indexes])]
        if event.echo_texts is not None:
            return [self._chunk([replies.choice_delta(self.endpoint, i, {"content": event.echo_texts[k]})
                                 for k, i in enumerate(event.indexes)])]
        return []

    def _deltas(self, event: Deltas) -> list[dict]:
        deltas = event.deltas or ({"content": ""},)
        logprobs = self._format_logprobs(event.index, list(event.logprobs))
        return [self._chunk([replies.choice_delta(self.endpoint, event.index, d, logprobs if i == 0 else None)])
                for i, d in enumerate(deltas)]

    def _finished(self, event: Finished) -> list[dict]:
        extra = _final_extras(event.totals) if event.totals is not None else {}
        # With stream_options.include_usage the usage moves to a chunk of its
        # own (choices [], after the final chunk), as OpenAI sends it; without
        # it, the final chunk carries it (openai-compatible-api.md, Streaming).
        usage = extra.pop("usage", None) if self.include_usage else None
        out = [self._chunk([replies.choice_final(self.endpoint, event.index, event.finish_reason,
                                                 event.stop_reason)], **extra)]
        if event.totals is not None:
            if self.include_usage:
                out.append(self._chunk([], usage=usage))
            out.append({"type": "done", "data": replies.fold(self.endpoint, self.chunks)})
        return out

    def _format_logprobs(self, index: int, entries: list[dict]) -> Any:
        if not entries:
            return None
        if self.endpoint == replies.CHAT:
            return replies.chat_logprobs(entries, self.token_text)
        out, self._offsets[index] = replies.completion_logprobs(entries, self.token_text, self._offsets.get(index, 0))
        return out


def _final_extras(t: Totals) -> dict:
    extra: dict[str, Any] = {
        "usage": replies.usage(t.prompt_tokens, t.completion_tokens, t.cached_tokens, t.reasoning_tokens),
        "lse_context": replies.lse_context(t.tokens_used, t.context_length),
        "timings": replies.timings(t.prompt_n, t.cached_n, t.predicted_n, t.t_start, t.t_first, t.t_end),
    }
    if t.draft is not None:  # speculative decoding saw it: proposed and accepted tokens
        extra["timings"].update(t.draft)
    if t.fallbacks:
        extra["lse_warnings"] = warnings_for(t.fallbacks)
    return extra
