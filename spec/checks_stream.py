"""Checks of a server-sent event stream, the fold of a stream into one body,
and the properties that relate replies: same seed, same reply; the
non-streamed reply is the fold of the stream; n choices are independent."""

from __future__ import annotations

from typing import Any

from lse.spec.checks import CHUNK_OBJECTS, OBJECTS, choices_of, expect, is_int, named, output_of, positive
from lse.spec.client import DONE, Stream
from lse.spec.rows import CHAT

EXTRAS = ("usage", "lse_context", "timings")


@named("stream.content_type")
def event_stream_content_type(stream: Stream) -> None:
    ctype = stream.headers.get("content-type", "")
    expect(stream.status == 200 and ctype.startswith("text/event-stream"), f"HTTP {stream.status} {ctype}",
           "HTTP 200 text/event-stream")


@named("stream.done")
def done_last(stream: Stream) -> None:
    """data: [DONE] ends the stream, once."""
    expect(stream.events[-1:] == [DONE] and stream.events.count(DONE) == 1, stream.events[-3:],
           "[DONE] last, once")


@named("resp.object", "resp.id", "resp.created", "resp.model")
def chunk_objects(stream: Stream, endpoint: str) -> None:
    """Every chunk is a JSON chunk object (no error in the stream), one id throughout."""
    for chunk in stream.chunks:
        expect("__unparsed__" not in chunk and "error" not in chunk, chunk, "a JSON chunk object")
        expect(chunk.get("object") == CHUNK_OBJECTS[endpoint], chunk.get("object"), CHUNK_OBJECTS[endpoint],
               "resp.object")
        expect(isinstance(chunk.get("id"), str) and is_int(chunk.get("created"))
               and isinstance(chunk.get("model"), str), chunk, "id, created and model", "resp.id")
    ids = {chunk.get("id") for chunk in stream.chunks}
    expect(len(ids) == 1, sorted(map(str, ids)), "one id for the whole stream", "resp.id")


def _by_index(stream: Stream) -> dict[int, list[dict[str, Any]]]:
    per: dict[int, list[dict[str, Any]]] = {}
    for chunk in stream.chunks:
        for choice in choices_of(chunk):
            per.setdefault(choice.get("index"), []).append(choice)
    return per


@named("stream.first_chunk_role")
def first_chunk_role(stream: Stream) -> None:
    """Each choice's first chunk carries role assistant."""
    per = _by_index(stream)
    expect(bool(per), stream.events[:2], "chunks with choices")
    for index, choices in per.items():
        delta = choices[0].get("delta") or {}
        expect(delta.get("role") == "assistant", delta, f"choice {index}'s first delta has role assistant")


@named("stream.finish_once")
def finish_once(stream: Stream, n: int) -> None:
    """finish_reason is null on every chunk but each choice's last."""
    per = _by_index(stream)
    expect(sorted(per) == list(range(n)), sorted(map(str, per)), f"choices 0..{n - 1}")
    for index, choices in per.items():
        finishes = [c.get("finish_reason") for c in choices]
        expect(finishes[-1] is not None and all(f is None for f in finishes[:-1]), finishes,
               f"choice {index}: null until its last chunk")


def final_chunk(stream: Stream) -> tuple[int, dict[str, Any]]:
    """The last chunk with a finish_reason, and its position."""
    for i in range(len(stream.chunks) - 1, -1, -1):
        if any(c.get("finish_reason") for c in choices_of(stream.chunks[i])):
            return i, stream.chunks[i]
    return -1, {}


@named("stream.final_chunk", "context.every_response", "resp.stop_reason")
def final_chunk_extras(stream: Stream, include_usage: bool = False) -> None:
    """The final chunk (the last with a finish_reason) has stop_reason,
    lse_context, timings and usage; with stream_options.include_usage its
    usage is null and OpenAI's usage-only chunk follows it, alone."""
    position, final = final_chunk(stream)
    expect(position >= 0, stream.events[-3:], "a final chunk with finish_reason")
    for after in stream.chunks[position + 1:]:
        expect(choices_of(after) == [] and set(after) - {"id", "object", "created", "model", "choices"} <= {"usage"},
               after, "only a usage chunk (choices []) after the final chunk")
    wanted = [k for k in EXTRAS if k != "usage" or not include_usage]
    missing = [k for k in wanted if not isinstance(final.get(k), dict)]
    expect(not missing, sorted(final), f"{', '.join(wanted)} on the final chunk")
    if include_usage:
        expect(final.get("usage", "absent") is None, final.get("usage", "absent"),
               "usage null on the final chunk (the usage-only chunk carries it)")
    for chunk in stream.chunks:
        for choice in choices_of(chunk):
            if choice.get("finish_reason") is not None:
                expect(isinstance(choice.get("stop_reason"), str), choice, "stop_reason beside finish_reason",
                       "resp.stop_reason")


def fold_stream(stream: Stream, endpoint: str) -> dict[str, Any]:
    """The body the chunks add up to: deltas joined per choice, the final
    chunk's extras, the chunk object mapped to the body's."""
    chunks = stream.chunks
    first = chunks[0] if chunks else {}
    body: dict[str, Any] = {k: first.get(k) for k in ("id", "created", "model")}
    body["object"] = OBJECTS[endpoint]
    choices = []
    for index, parts in sorted(_by_index(stream).items(), key=lambda kv: str(kv[0])):
        choices.append(_fold_choice(index, parts, endpoint))
    body["choices"] = choices
    for chunk in chunks:
        for key in (*EXTRAS, "lse_warnings"):
            if chunk.get(key) is not None:
                body[key] = chunk[key]
    return body


def _fold_choice(index: Any, parts: list[dict[str, Any]], endpoint: str) -> dict[str, Any]:
    last = parts[-1]
    folded: dict[str, Any] = {"index": index, "finish_reason": last.get("finish_reason"),
                              "stop_reason": last.get("stop_reason")}
    logprobs = [p.get("logprobs") for p in parts if p.get("logprobs")]
    if endpoint == CHAT:
        deltas = [p.get("delta") or {} for p in parts]
        message: dict[str, Any] = {"role": deltas[0].get("role")}
        message["content"] = "".join(d.get("content") or "" for d in deltas)
        if any("reasoning_content" in d for d in deltas):
            message["reasoning_content"] = "".join(d.get("reasoning_content") or "" for d in deltas)
        calls = _join_tool_calls([c for d in deltas for c in d.get("tool_calls") or []])
        if calls:
            message["tool_calls"] = calls
            message["content"] = message["content"] or None
        folded["message"] = message
        folded["logprobs"] = {"content": [e for lp in logprobs for e in lp.get("content") or []]} if logprobs else None
    else:
        folded["text"] = "".join(p.get("text") or "" for p in parts)
        if any("reasoning_content" in p for p in parts):
            folded["reasoning_content"] = "".join(p.get("reasoning_content") or "" for p in parts)
        folded["logprobs"] = _join_completion_logprobs(logprobs) if logprobs else None
    return folded


def _join_tool_calls(deltas: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """OpenAI's streamed tool calls: fragments by index, name and arguments concatenated."""
    calls: dict[Any, dict[str, Any]] = {}
    for delta in deltas:
        call = calls.setdefault(delta.get("index"), {"id": None, "type": "function",
                                                     "function": {"name": "", "arguments": ""}})
        call["id"] = delta.get("id") or call["id"]
        function = delta.get("function") or {}
        call["function"]["name"] += function.get("name") or ""
        call["function"]["arguments"] += function.get("arguments") or ""
    return [calls[k] for k in sorted(calls, key=str)]


def _join_completion_logprobs(parts: list[dict[str, Any]]) -> dict[str, Any]:
    keys = ("tokens", "token_logprobs", "top_logprobs", "text_offset")
    return {k: [v for part in parts for v in part.get(k) or []] for k in keys}


def reply_outputs(body: dict[str, Any]) -> list[tuple]:
    """What two replies to the same request must share: per choice the text,
    reasoning, finish_reason and stop_reason."""
    rows = []
    for choice in sorted(choices_of(body), key=lambda c: str(c.get("index"))):
        holder = choice.get("message") or choice
        calls = [(c.get("function") or {}).get("name", "") + (c.get("function") or {}).get("arguments", "")
                 for c in holder.get("tool_calls") or [] if isinstance(c, dict)]
        rows.append((choice.get("index"), output_of(choice), holder.get("reasoning_content"), tuple(calls),
                     choice.get("finish_reason"), choice.get("stop_reason")))
    return rows


def _counts(body: dict[str, Any]) -> tuple:
    usage = body.get("usage") or {}
    ctx = body.get("lse_context") or {}
    return (usage.get("prompt_tokens"), usage.get("completion_tokens"), ctx.get("tokens_used"))


@named("stream.deltas", "stream.text_deltas", "gaps.streaming_tools")
def fold_equals_body(folded: dict[str, Any], body: dict[str, Any], endpoint: str) -> tuple[str, ...]:
    """The non-streamed reply is the fold of the stream with the same seed."""
    row = "stream.deltas" if endpoint == CHAT else "stream.text_deltas"
    expect(reply_outputs(folded) == reply_outputs(body), reply_outputs(folded),
           f"the non-streamed reply {reply_outputs(body)}", row)
    expect(_counts(folded) == _counts(body), _counts(folded), f"the non-streamed counts {_counts(body)}", row)
    return (row,)


@named("sampling.seed", "req.seed")
def seed_reproducible(first: dict[str, Any], second: dict[str, Any]) -> None:
    """The same request with the same seed gives the same reply."""
    expect(reply_outputs(first) == reply_outputs(second), reply_outputs(second),
           f"the first reply {reply_outputs(first)}")


@named("resp.choices", "req.n")
def greedy_choices_independent(several: dict[str, Any], single: dict[str, Any], n: int) -> None:
    """Greedy choices are generated independently: each equals the n=1 reply."""
    want = reply_outputs(single)[0][1:]
    got = [row[1:] for row in reply_outputs(several)]
    expect(len(got) == n and all(g == want for g in got), got, f"{n} copies of the n=1 reply {want}")


def stream_n(request: dict[str, Any]) -> int:
    return request["n"] if positive(request.get("n")) else 1
