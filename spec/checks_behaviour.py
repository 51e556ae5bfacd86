"""Checks that compare replies: sampling equivalences, defaults applied,
thinking level resolution, stop strings, limits, context full, and the CPU
fallback reports. Each takes replies the scenarios fetched and says which
documented relation between them failed."""

from __future__ import annotations

import json
import re
from typing import Any

from lse.spec.checks import choices_of, expect, is_int, named, output_of
from lse.spec.checks_stream import reply_outputs
from lse.spec.rows import LogLine
from lse.spec.table import all_rows

LOG_PATTERN = next(r.pattern for r in all_rows() if isinstance(r, LogLine))


def _texts(body: dict[str, Any]) -> list[tuple]:
    return [row[1:] for row in reply_outputs(body)]


SAME_REPLY_ROWS = (
    "thinking.aliases", "thinking.resolve.effort", "thinking.resolve.switch", "thinking.resolve.neither",
    "thinking.resolve.no_controls", "thinking.default", "thinking.completions", "req.reasoning_effort",
    "req.thinking_level", "req.chat_template_kwargs", "req.reasoning", "req.enable_thinking", "req.thinking",
    "limit.request", "sampling.greedy", "defaults.greedy", "req.temperature", "sampling.off_values",
    "req.top_k", "sampling.truncation", "req.top_p", "req.min_p", "sampling.frequency",
    "req.frequency_penalty", "req.repetition_penalty", "override.penalties", "override.completions_penalties",
    "defaults.order", "defaults.from_files", "defaults.server_option", "override.defaults",
)


@named(*SAME_REPLY_ROWS, dynamic=True)
def same_reply(got: dict[str, Any], want: dict[str, Any], as_: str) -> None:
    """Two requests the spec makes equivalent get the same reply (same seed)."""
    expect(_texts(got) == _texts(want), _texts(got), f"the same reply as {as_}: {_texts(want)}")


@named("sampling.penalties_applied", "req.presence_penalty", "req.repetition_penalty", "override.penalties",
       "override.completions_penalties")
def penalty_changes_repeat(plain: dict[str, Any], penalised: dict[str, Any], penalty: str) -> None:
    """A greedy reply that repeats a token changes when repeats are penalised."""
    expect(_texts(plain) != _texts(penalised), _texts(penalised),
           f"a reply other than the unpenalised {_texts(plain)} under {penalty}")


@named("thinking.instruction")
def instruction_lengthens_prompt(with_: dict[str, Any], without: dict[str, Any], levels: tuple[str, str]) -> None:
    """A level's instruction is placed in the prompt: more prompt tokens than a level without one."""
    a = (with_.get("usage") or {}).get("prompt_tokens") or 0
    b = (without.get("usage") or {}).get("prompt_tokens") or 0
    expect(a > b, f"<prompt_tokens {a} ({levels[0]}) vs {b} ({levels[1]})>",
           f"{levels[0]}'s instruction adds prompt tokens over {levels[1]}")


@named("thinking.room", "thinking.generation_prompt")
def budget_spent_thinking(body: dict[str, Any], level: str) -> None:
    """max_tokens spent inside <think>: content "" and finish_reason length."""
    for choice in choices_of(body):
        got = ((choice.get("message") or {}).get("content"), choice.get("finish_reason"))
        expect(got == ("", "length"), got, f"('', 'length'): level {level} opens reasoning")


@named("thinking.room", "thinking.resolve.switch", "resp.message.reasoning_content")
def no_reasoning(body: dict[str, Any], level: str) -> None:
    """A level that does not open reasoning gives its whole budget to the answer."""
    for choice in choices_of(body):
        message = choice.get("message") or {}
        expect("reasoning_content" not in message, message, f"no reasoning_content at level {level}")


@named("stop.stop_sequence", "req.stop")
def stop_trims_reply(stopped: dict[str, Any], unstopped: dict[str, Any], stop: str) -> None:
    """With a stop string the reply is the unstopped reply cut before it."""
    full = output_of(choices_of(unstopped)[0]) or ""
    want = (full[: full.find(stop)], "stop", "stop_sequence")
    choice = choices_of(stopped)[0]
    got = (output_of(choice), choice.get("finish_reason"), choice.get("stop_reason"))
    expect(got == want, got, f"{want}: cut at the first {stop!r}")


@named("limit.none", "override.completions_default", "limit.model_max_length", dynamic=True)
def longer_than(tokens: int, floor: int, endpoint: str) -> None:
    """No output limit of LSE's own: a reply may run past ``floor`` tokens."""
    expect(tokens > floor, f"<{tokens} tokens then max_tokens>", f"more than {floor} tokens on {endpoint}")


@named("context.reply_fills", "stop.context_full", "override.max_tokens_context")
def reply_fills_context(body: dict[str, Any], context_length: int) -> None:
    """A reply that fills the context: 200, finish length, stop_reason context_full, remaining 0."""
    choice = choices_of(body)[0] if choices_of(body) else {}
    ctx = body.get("lse_context") or {}
    got = (choice.get("finish_reason"), choice.get("stop_reason"), ctx.get("tokens_used"), ctx.get("tokens_remaining"))
    want = ("length", "context_full", context_length, 0)
    expect(got == want, got, f"{want}")
    completion = (body.get("usage") or {}).get("completion_tokens")
    expect(is_int(completion) and completion >= 1, completion, "the text generated so far is kept")


@named("override.max_tokens_context")
def accepted_stream(status: int, first_chunk: dict[str, Any] | None) -> None:
    """max_tokens above the context is accepted: the reply starts."""
    expect(status == 200 and bool(first_chunk), f"HTTP {status}", "HTTP 200 and a first chunk")


@named("fallback.warnings", "resp.lse_warnings")
def warnings_match_status(body: dict[str, Any], before: dict[str, int], after: dict[str, int]) -> tuple[str, ...]:
    """A request that caused a fallback carries lse_warnings naming the causes; one that didn't, none."""
    grew = sorted(cause for cause, count in after.items() if count > before.get(cause, 0))
    named_causes = sorted(w.get("cause") for w in body.get("lse_warnings") or [] if isinstance(w, dict))
    expect(named_causes == grew, named_causes, f"lse_warnings for the causes lse_status counted: {grew}")
    return ("fallback.warnings", "resp.lse_warnings") if grew else ("fallback.warnings",)


@named("log.cpu_fallback")
def log_lines_match(log_text: str, events: list[dict[str, Any]]) -> None:
    """The log line comes the first time a cause occurs and again at each power of two."""
    seen: dict[str, list[int]] = {}
    for match in re.finditer(LOG_PATTERN, log_text):
        seen.setdefault(match.group(2).strip(), []).append(int(match.group(1)))
    for event in events:
        cause, count = event["cause"], event["count"]
        want = [2**i for i in range(count.bit_length()) if 2**i <= count]
        got = seen.get(cause.strip(), [])
        expect(got == want, f"<lines at {got} for {cause!r}>", f"lines at {want} (count {count})")


@named("tools.finish", "stop.stop_token")
def tool_call_shape(body: dict[str, Any]) -> None:
    """A turn that calls a tool: finish_reason tool_calls, content null, OpenAI's tool_calls."""
    choice = choices_of(body)[0]
    message = choice.get("message") or {}
    got = (choice.get("finish_reason"), choice.get("stop_reason"), message.get("content"))
    expect(got == ("tool_calls", "stop_token", None), got, "('tool_calls', 'stop_token', None)")
    for call in message.get("tool_calls") or []:
        function = call.get("function") if isinstance(call, dict) else None
        ok = (isinstance(call.get("id"), str) and call.get("type") == "function" and isinstance(function, dict)
              and isinstance(function.get("name"), str) and _json_object(function.get("arguments")))
        expect(ok, call, "{id, type: function, function: {name, arguments: a JSON object as a string}}")


def _json_object(text: Any) -> bool:
    try:
        return isinstance(text, str) and isinstance(json.loads(text), dict)
    except ValueError:
        return False


@named("tools.malformed")
def malformed_call_kept(body: dict[str, Any]) -> None:
    """A <tool_call> block left in content is one that does not parse as a call, kept whole."""
    message = choices_of(body)[0].get("message") or {}
    content = message.get("content") or ""
    inner = content.split("<tool_call>", 1)[1].split("</tool_call>", 1)[0] if "<tool_call>" in content else ""
    parsed = _json_object(inner.strip()) and "name" in json.loads(inner.strip())
    expect("</tool_call>" in content and not parsed and not message.get("tool_calls"), content,
           "the malformed call as content, delimiters and all, and no tool_calls")


@named("reasoning.split", "resp.message.reasoning_content")
def reasoning_split(body: dict[str, Any], markers: tuple[str, str] = ("<think>", "</think>")) -> None:
    """The <think> block is split out: reasoning_content and content keep no think markers."""
    message = choices_of(body)[0].get("message") or {}
    texts = (message.get("reasoning_content") or "", message.get("content") or "")
    expect(texts[0] != "" and not any(m in t for m in markers for t in texts), texts,
           "reasoning_content and content without the think markers")
