"""What a request's reader is told: typed events on the request's channel.

``RequestState`` (request_state.py) puts them on the scheduler thread as the
scheduler tells it what happened; they carry plain values (the sequence's
deltas and logprob entries, token counts, times), never a reply's JSON. The
reader's side turns them into the chunks, the fold and the error body
(lse.runtime.openai.reply_stream.ReplyStream), off the scheduler thread.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Union

from lse.runtime.errors import LseError


@dataclass(frozen=True)
class Started:
    """The request is queued: its choices, and a completions echo's prompt texts (None: no echo)."""

    indexes: tuple[int, ...]
    echo_texts: tuple[str, ...] | None


@dataclass(frozen=True)
class Deltas:
    """Choice ``index`` produced ``deltas`` (content, reasoning_content, tool_calls) and
    the logprob entries of its tokens since the last Deltas (sequence.take_logprobs)."""

    index: int
    deltas: tuple[dict[str, Any], ...]
    logprobs: tuple[dict[str, Any], ...]


@dataclass(frozen=True)
class Totals:
    """A finished request's numbers: the final chunk's usage, lse_context, timings
    (the first choice's, as llama-server reports them) and lse_warnings."""

    prompt_tokens: int  # each distinct prompt once (n choices of one prompt count it once)
    completion_tokens: int
    cached_tokens: int
    reasoning_tokens: int
    tokens_used: int  # the fullest choice's prompt and reply
    context_length: int
    prompt_n: int  # the first choice's prompt tokens computed (not cached)
    cached_n: int
    predicted_n: int
    t_start: float
    t_first: float | None
    t_end: float | None
    draft: dict[str, int] | None  # speculative decoding's counts (Draft.timings), where it ran
    fallbacks: dict[str, int]  # host-group runs by cause


@dataclass(frozen=True)
class Finished:
    """Choice ``index`` ended. ``totals`` is set on the request's end (its last choice,
    no failure before): the final chunk's extras, then the ``done`` event."""

    index: int
    finish_reason: str | None
    stop_reason: str
    totals: Totals | None


@dataclass(frozen=True)
class Failed:
    """The request failed; the reader's terminal event is its error."""

    error: LseError


Event = Union[Started, Deltas, Finished, Failed]
EVENT_TYPES = (Started, Deltas, Finished, Failed)
