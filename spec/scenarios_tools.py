"""Scenarios of structured replies, run where the discovery probe saw one:
tool calls broken out (and streamed), malformed calls kept as content, and
reasoning split from content."""

from __future__ import annotations

from lse.spec.checks_behaviour import malformed_call_kept, reasoning_split, tool_call_shape
from lse.spec.checks_stream import fold_equals_body
from lse.spec.context import Context, scenario
from lse.spec.facts import probe_request
from lse.spec.rows import CHAT


@scenario("probe_tool_call")
def tool_calls(ctx: Context) -> None:
    """A turn that calls a tool has tool_calls, finish_reason tool_calls and null content, streamed the same."""
    request = probe_request()
    body = ctx.complete(CHAT, request)
    ctx.verify(tool_call_shape, body)
    _, folded = ctx.complete_stream(CHAT, request)
    ctx.verify(fold_equals_body, folded, body, CHAT, rows=("gaps.streaming_tools", "stream.deltas"))


@scenario("probe_tool_text")
def malformed_tool_calls(ctx: Context) -> None:
    """A malformed call is returned as content, delimiters and all."""
    ctx.verify(malformed_call_kept, ctx.complete(CHAT, probe_request()))


@scenario("probe_reasoning")
def reasoning_is_split(ctx: Context) -> None:
    """The <think> block comes back as reasoning_content, out of content, streamed the same."""
    request = probe_request()
    body = ctx.complete(CHAT, request)
    ctx.verify(reasoning_split, body)
    _, folded = ctx.complete_stream(CHAT, request)
    ctx.verify(fold_equals_body, folded, body, CHAT)
