"""Every OpenAI reply LSE sends, built here: chunks, the fold that turns a
stream into one reply, usage, lse_context, timings, logprobs and the
/v1/models entry. The shapes are ``lse.runtime.openai.protocol``'s.

The engine streams chunks; the whole reply is always the fold of those
chunks, so the streamed and non-streamed replies cannot disagree.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from typing import Any

from lse.runtime.openai.protocol import (
    ChatLogprobs,
    CompletionLogprobs,
    LseContext,
    ModelEntry,
    ModelList,
    Timings,
    Usage,
)

CHAT = "chat.completions"
COMPLETIONS = "completions"

# A logprob entry as the engine records it: {"token": id, "logprob": float
# or None (an echoed prompt's first token), "top": [(id, logprob), ...]}.
Entry = dict[str, Any]
TokenText = Callable[[int], str]


def new_id(endpoint: str) -> str:
    return ("chatcmpl-" if endpoint == CHAT else "cmpl-") + uuid.uuid4().hex[:24]


def now() -> int:
    return int(time.time())


# ---- chunks ----------------------------------------------------------------------

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


def choice_final(endpoint: str, index: int, finish_reason: str | None, stop_reason: str) -> dict:
    base = {"index": index, "finish_reason": finish_reason, "stop_reason": stop_reason}
    if endpoint == CHAT:
        return {"index": index, "delta": {}, "logprobs": None, **base}
    return {"text": "", "logprobs": None, **base}


# ---- the final chunk's accounting ------------------------------------------------

def usage(prompt: int, completion: int, cached: int, reasoning: int = 0) -> Usage:
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion,
            "prompt_tokens_details": {"cached_tokens": cached},
            "completion_tokens_details": {"reasoning_tokens": reasoning}}


def lse_context(used: int, context_length: int) -> LseContext:
    return {"tokens_used": used, "context_length": context_length,
            "tokens_remaining": max(0, context_length - used)}


def timings(prompt_n: int, cached_n: int, predicted_n: int, t_start: float, t_first: float | None,
            t_end: float | None) -> Timings:
    """llama-server's timings from a choice's clock readings (time.perf_counter)."""
    end = t_end or time.perf_counter()
    first = t_first or end
    prompt_ms = (first - t_start) * 1000.0
    gen_n = max(0, predicted_n - 1)
    gen_ms = (end - first) * 1000.0
    return {
        "prompt_n": prompt_n, "prompt_ms": round(prompt_ms, 3),
        "prompt_per_second": round(prompt_n / prompt_ms * 1000.0, 3) if prompt_ms > 0 else None,
        "predicted_n": predicted_n, "predicted_ms": round(gen_ms, 3),
        "predicted_per_second": round(gen_n / gen_ms * 1000.0, 3) if gen_ms > 0 and gen_n else None,
        "cached_n": cached_n,
    }


# ---- logprobs --------------------------------------------------------------------

def chat_logprobs(entries: list[Entry], token_text: TokenText) -> ChatLogprobs:
    def one(t: int, lp: float) -> dict:
        text = token_text(t)
        return {"token": text, "logprob": lp, "bytes": list(text.encode("utf-8"))}

    return {"content": [{**one(e["token"], e["logprob"]), "top_logprobs": [one(t, lp) for t, lp in e["top"]]}
                        for e in entries],
            "refusal": None}


def completion_logprobs(entries: list[Entry], token_text: TokenText, offset: int) -> tuple[CompletionLogprobs, int]:
    """The legacy logprobs object, and the text offset after its tokens."""
    tokens = [token_text(e["token"]) for e in entries]
    offsets = []
    for text in tokens:  # where each token starts in the choice's text
        offsets.append(offset)
        offset += len(text)
    return {"tokens": tokens, "token_logprobs": [e["logprob"] for e in entries],
            "top_logprobs": [{token_text(t): lp for t, lp in e["top"]} if e["logprob"] is not None else None
                             for e in entries],
            "text_offset": offsets}, offset


# ---- /v1/models ------------------------------------------------------------------

def model_entry(model_id: str, created: int, context_length: int, thinking: dict,
                generation_defaults: dict) -> ModelEntry:
    return {"id": model_id, "object": "model", "created": created, "owned_by": "lse",
            "context_length": context_length, "thinking": thinking, "generation_defaults": generation_defaults}


def model_entry_of(info: dict, created: int) -> ModelEntry:
    """The /v1/models entry out of ``lse_model_info``'s object (which starts
    with it); ``created`` stands in when the info has none."""
    return model_entry(info["id"], info.get("created", created), info["context_length"], info["thinking"],
                       info["generation_defaults"])


def model_list(entry: ModelEntry) -> ModelList:
    return {"object": "list", "data": [entry]}


# ---- the fold: a stream's chunks as one reply ------------------------------------

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


def _merge_logprobs(acc: Any, new: Any) -> Any:
    """Lists concatenate (content, tokens, ...); other members (chat's
    ``refusal``) keep their value."""
    if new is None:
        return acc
    if acc is None:
        return {k: list(v) if isinstance(v, list) else v for k, v in new.items()}
    for k, v in new.items():
        if isinstance(v, list):
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
        message: dict[str, Any] = {"role": "assistant", "content": acc.get("content", ""), "refusal": None}
        if acc.get("tool_calls"):
            message["tool_calls"] = acc["tool_calls"]
            message["content"] = acc.get("content") or None
        if acc.get("reasoning_content"):
            message["reasoning_content"] = acc["reasoning_content"]
        out = {"index": index, "message": message, "logprobs": acc.get("logprobs")}
    else:
        out = {"index": index, "text": acc.get("text", ""), "logprobs": acc.get("logprobs")}
        if acc.get("reasoning_content"):
            out["reasoning_content"] = acc["reasoning_content"]
    out["finish_reason"] = acc.get("finish_reason")
    out["stop_reason"] = acc.get("stop_reason")
    return out
