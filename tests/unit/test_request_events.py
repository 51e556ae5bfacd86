"""JSON off the scheduler thread (#43): the scheduler's side puts typed events
(lse.runtime.request_events) on a request's channel, never a dict, and the
reader's ReplyStream turns them into the chunks, the fold and the error."""

from __future__ import annotations

import threading

import pytest
from speculative_fake import ContextBackend, sequence, text_of

from lse.runtime.channel import Channel
from lse.runtime.engine_api import RequestHandle
from lse.runtime.fallback import FallbackAccounting
from lse.runtime.request_events import EVENT_TYPES, Deltas, Failed, Finished, Started
from lse.runtime.request_state import RequestState
from lse.runtime.scheduler import Scheduler

pytestmark = pytest.mark.unit


class WatchedChannel(Channel):
    """A channel that writes down each item put on it and the thread that put it."""

    def __init__(self) -> None:
        super().__init__()
        self.puts: list[tuple[str, object]] = []

    def put(self, item) -> None:
        self.puts.append((threading.current_thread().name, item))
        super().put(item)


class FailingBackend(ContextBackend):
    def decode_one(self, token, position, slot, on_fallback):
        raise RuntimeError("device lost")


def _request(seq, endpoint: str = "chat.completions", include_usage: bool = False) -> RequestState:
    request = RequestState(endpoint, "m", [seq], 256, include_usage, FallbackAccounting(True), str, None)
    request.channel = WatchedChannel()  # the Started put by __init__ went on the plain channel: put it again
    request.channel.put(Started((seq.index,), None))
    return request


def _serve(request: RequestState, seq, backend_cls=ContextBackend) -> list[dict]:
    scheduler = Scheduler(backend_cls(1, 256), 1, 256)
    try:
        scheduler.submit(request, [seq])
        return list(RequestHandle(request).events())
    finally:
        scheduler.stop()


def _scheduler_puts(request: RequestState) -> list[object]:
    here = threading.current_thread().name
    return [item for thread, item in request.channel.puts if thread != here]


def test_the_scheduler_thread_puts_only_typed_events_and_the_reader_builds_the_reply() -> None:
    seq = sequence([1, 2, 3], max_new=4, logprobs=0)
    request = _request(seq, include_usage=True)
    events = _serve(request, seq)
    puts = _scheduler_puts(request)
    assert puts and all(isinstance(e, EVENT_TYPES) and not isinstance(e, dict) for e in puts)
    assert [type(e) for e in puts] == [Deltas] * 4 + [Finished]
    assert [len(e.logprobs) for e in puts[:4]] == [1, 1, 1, 1]  # the sequence's entries, not yet formatted
    assert puts[-1].totals is not None and puts[-1].totals.completion_tokens == 4
    # the reader's JSON: role chunk, 4 content chunks (with logprobs), final chunk, usage chunk, done
    assert [e["type"] for e in events] == ["chunk"] * 7 + ["done"]
    chunks = [e["data"] for e in events[:-1]]
    assert chunks[0]["choices"][0]["delta"] == {"role": "assistant", "content": ""}
    assert "".join(c["choices"][0]["delta"]["content"] for c in chunks[1:5]) == text_of(seq.generated)
    assert [c["choices"][0]["logprobs"]["content"][0]["token"] for c in chunks[1:5]] == [str(t) for t in seq.generated]
    assert chunks[5]["choices"][0]["finish_reason"] == "length" and chunks[5]["usage"] is None
    assert chunks[6]["choices"] == [] and chunks[6]["usage"]["prompt_tokens"] == 3
    assert chunks[6]["usage"]["completion_tokens"] == 4
    reply = events[-1]["data"]
    assert reply["choices"][0]["message"]["content"] == text_of(seq.generated)
    assert reply["usage"]["completion_tokens"] == 4


def test_a_failure_is_a_typed_event_and_the_reader_builds_the_error() -> None:
    seq = sequence([1, 2, 3], max_new=4)
    request = _request(seq)
    events = _serve(request, seq, FailingBackend)
    puts = _scheduler_puts(request)
    assert [type(e) for e in puts if not isinstance(e, Deltas)][0] is Failed
    assert all(isinstance(e, EVENT_TYPES) for e in puts)
    assert events[-1]["type"] == "error" and events[-1]["status"] == 500
    assert events[-1]["data"]["error"]["code"] == "generation_failed"
    assert events[-1]["data"]["error"]["message"] == "generation failed: device lost"
