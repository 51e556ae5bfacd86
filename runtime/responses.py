"""OpenAI-shaped chunks, and the fold that turns a stream into one reply.

The in-process API yields chunks; the whole reply is always the fold of those
chunks, so the streamed and non-streamed replies cannot disagree.
"""

from __future__ import annotations

import time
import uuid
from typing import Any

CHAT = "chat.completions"


def new_id(endpoint: str) -> str:
    return ("chatcmpl-" if endpoint == CHAT else "cmpl-") + uuid.uuid4().hex[:24]


def chunk(endpoint: str, rid: str, created: int, model: str, choices: list[dict], **extra: Any) -> dict:
    obj = "chat.completion.chunk" if endpoint == CHAT else "text_completion"
    out = {"id": rid, "object": obj, "created": created, "model": model, "choices": choices}
    out.update(extra)
    return out


def choice_delta(endpoint: str, index: int, delta: dict, logprobs: Any = None) -> dict:
    """One streamed choice fragment; ``delta`` uses chat's keys
    (role, content, reasoning_content, tool_calls)."""
    if endpoint == CHAT:
        return {"index": index, "delta": delta, "logprobs": logprobs, "finish_reason": None}
    out = {"index": index, "text": delta.get("content", ""), "logprobs": logprobs, "finish_reason": None}
    if "reasoning_content" in delta:
        out["reasoning_content"] = delta["reasoning_content"]
    return out


def choice_final(endpoint: str, index: int, finish_reason: str, stop_reason: str) -> dict:
    base = {"index": index, "finish_reason": finish_reason, "stop_reason": stop_reason}
    if endpoint == CHAT:
        return {"index": index, "delta": {}, "logprobs": None, **base}
    return {"text": "", "logprobs": None, **base}


def _merge_logprobs(acc: Any, new: Any) -> Any:
    if new is None:
        return acc
    if acc is None:
        return {k: list(v) for k, v in new.items()}
    for k, v in new.items():
        acc.setdefault(k, []).extend(v)
    return acc


def _merge_tool_calls(acc: list[dict], deltas: list[dict]) -> None:
    for d in deltas:
        i = d.get("index", len(acc))
        while len(acc) <= i:
            acc.append({"id": None, "type": "function", "function": {"name": "", "arguments": ""}})
        call = acc[i]
        call["id"] = d.get("id") or call["id"]
        fn = d.get("function", {})
        call["function"]["name"] += fn.get("name") or ""
        call["function"]["arguments"] += fn.get("arguments") or ""


def fold(endpoint: str, chunks: list[dict]) -> dict:
    """The non-streamed reply: every chunk's choices merged by index; the
    LSE extras and usage from the chunks that carry them."""
    if not chunks:
        raise ValueError("nothing to fold")
    first = chunks[0]
    choices: dict[int, dict] = {}
    extras: dict[str, Any] = {}
    for c in chunks:
        for key in ("usage", "lse_context", "timings", "lse_warnings"):
            if c.get(key) is not None:
                extras[key] = c[key]
        for ch in c["choices"]:
            _fold_choice(endpoint, choices.setdefault(ch["index"], {}), ch)
    out = {"id": first["id"], "object": "chat.completion" if endpoint == CHAT else "text_completion",
           "created": first["created"], "model": first["model"],
           "choices": [_finish_choice(endpoint, i, choices[i]) for i in sorted(choices)]}
    out.update(extras)
    return out


def _fold_choice(endpoint: str, acc: dict, ch: dict) -> None:
    if endpoint == CHAT:
        delta = ch.get("delta", {})
        for key in ("content", "reasoning_content"):
            if delta.get(key):
                acc[key] = acc.get(key, "") + delta[key]
        if delta.get("tool_calls"):
            _merge_tool_calls(acc.setdefault("tool_calls", []), delta["tool_calls"])
    else:
        acc["text"] = acc.get("text", "") + ch.get("text", "")
        if ch.get("reasoning_content"):
            acc["reasoning_content"] = acc.get("reasoning_content", "") + ch["reasoning_content"]
    acc["logprobs"] = _merge_logprobs(acc.get("logprobs"), ch.get("logprobs"))
    for key in ("finish_reason", "stop_reason"):
        if ch.get(key) is not None:
            acc[key] = ch[key]


def _finish_choice(endpoint: str, index: int, acc: dict) -> dict:
    if endpoint == CHAT:
        message: dict[str, Any] = {"role": "assistant", "content": acc.get("content", "")}
        if acc.get("reasoning_content"):
            message["reasoning_content"] = acc["reasoning_content"]
        if acc.get("tool_calls"):
            message["tool_calls"] = acc["tool_calls"]
            message["content"] = acc.get("content") or None
        out = {"index": index, "message": message, "logprobs": acc.get("logprobs")}
    else:
        out = {"index": index, "text": acc.get("text", ""), "logprobs": acc.get("logprobs")}
        if acc.get("reasoning_content"):
            out["reasoning_content"] = acc["reasoning_content"]
    out["finish_reason"] = acc.get("finish_reason")
    out["stop_reason"] = acc.get("stop_reason")
    return out


def now() -> int:
    return int(time.time())
