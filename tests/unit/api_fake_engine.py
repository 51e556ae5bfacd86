"""A fake engine for the HTTP layer's unit tests (test_api_app, test_api_stream).

It follows ARCHITECTURE.md's in-process contract (lse_request -> handle with
aevents()/cancel(); chunk, done and error events) and nothing more; the real
engine is exercised by tests/e2e. ``run`` drives a fresh app in-process.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import Any

import httpx

from lse.api.app import ServerSettings, create_app
from lse.runtime.errors import LseError

HANG = {"type": "hang"}  # script step: block until cancelled
BOOM = {"type": "boom"}  # script step: the engine raises


class FakeStartupError(Exception):
    pass


class FakeHandle:
    def __init__(self, script: list[dict[str, Any]]) -> None:
        self.script = script
        self.cancelled = threading.Event()

    def cancel(self) -> None:
        self.cancelled.set()

    def rejection(self) -> dict[str, Any] | None:
        """An error as the script's first step stands for a refusal before admission."""
        first = self.script[0] if self.script else None
        return first if isinstance(first, dict) and first.get("type") == "error" else None

    async def aevents(self):
        for step in self.script:
            if step is HANG:
                while not self.cancelled.is_set():
                    await asyncio.sleep(0.005)
                # What an engine is likely to send after a cancel: the last chunk, then done.
                yield chunk_event({}, finish="stop", stop_reason="cancelled")
                yield {"type": "done", "data": {"object": "chat.completion", "cancelled": True}}
                return
            if step is BOOM:
                raise RuntimeError("engine bug")
            yield step

    def events(self):  # the blocking form, for completeness: the HTTP layer uses aevents()
        return iter([s for s in self.script if s is not HANG and s is not BOOM])


class FakeEngine:
    def __init__(self) -> None:
        self.closed = False


class FakeRuntime:
    """``lse.runtime.api``'s functions over FakeEngine; ``script`` decides each reply."""

    MODEL_INFO = {"id": "fake-model", "context_length": 512,
                  "thinking": {"supported": False, "levels": [], "default_level": None},
                  "generation_defaults": {"temperature": 1.0, "sources": {"temperature": "lse_default"}},
                  "served": {"id": "fake-model"}}

    def __init__(self, script: Callable[[dict[str, Any], str], list[dict[str, Any]]] | None = None) -> None:
        self.script = script or (lambda body, endpoint: reply_events(["Hel", "lo"]))
        self.requests: list[tuple[dict[str, Any], str]] = []
        self.handles: list[FakeHandle] = []
        self.shutdowns: list[float] = []
        self.observers: list[Callable[[Any], None]] = []
        self.handle_type = FakeHandle

    def lse_request(self, engine: FakeEngine, body: dict[str, Any], endpoint: str) -> FakeHandle:
        self.requests.append((body, endpoint))
        handle = self.handle_type(self.script(body, endpoint))
        self.handles.append(handle)
        return handle

    def lse_model_info(self, engine: FakeEngine) -> dict[str, Any]:
        return dict(self.MODEL_INFO)

    def lse_status(self, engine: FakeEngine) -> dict[str, Any]:
        return {"engine": {"device": "fake:0", "slots": 2, "active": 1, "queued": 0, "context_length": 512,
                           "kv_tokens": 40, "kv_capacity": 1024,
                           "cpu_fallback": {"allowed": True, "total": 3, "events": [{"cause": "silu", "count": 3}]}}}

    def lse_observe(self, engine: FakeEngine, observer: Callable[[Any], None]) -> None:
        self.observers.append(observer)

    def lse_tokenize(self, engine: FakeEngine, body: dict[str, Any]) -> dict[str, Any]:
        if not isinstance(body.get("content"), str):
            raise LseError("invalid_request", "content must be a string", param="content")
        return {"tokens": [ord(c) for c in body["content"]]}

    def lse_detokenize(self, engine: FakeEngine, body: dict[str, Any]) -> dict[str, Any]:
        text = "".join(chr(t) for t in body["tokens"])
        return {"content": text, "prompt": text}

    def lse_tokenizer_info(self, engine: FakeEngine) -> dict[str, Any]:
        return {"eos_token": "<|im_end|>", "eos_token_id": 2}

    def lse_shutdown(self, engine: FakeEngine, timeout: float) -> None:
        self.shutdowns.append(timeout)

    def lse_close(self, engine: FakeEngine) -> None:
        engine.closed = True


def chunk_event(delta: dict[str, Any], finish: str | None = None, stop_reason: str | None = None) -> dict[str, Any]:
    choice: dict[str, Any] = {"index": 0, "delta": delta, "finish_reason": finish}
    data: dict[str, Any] = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1,
                            "model": "fake-model", "choices": [choice]}
    if finish is not None:
        choice["stop_reason"] = stop_reason
        data["usage"] = {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}
        data["lse_context"] = {"tokens_used": 5, "context_length": 512, "tokens_remaining": 507}
    return {"type": "chunk", "data": data}


def reply_events(pieces: list[str]) -> list[dict[str, Any]]:
    chunks = [chunk_event({"role": "assistant"})] + [chunk_event({"content": p}) for p in pieces]
    chunks.append(chunk_event({}, finish="stop", stop_reason="stop_token"))
    done = {"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "fake-model",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": "".join(pieces)},
                         "finish_reason": "stop", "stop_reason": "stop_token", "logprobs": None}],
            "usage": chunks[-1]["data"]["usage"], "lse_context": chunks[-1]["data"]["lse_context"]}
    return chunks + [{"type": "done", "data": done}]


def error_event(kind: str, message: str, **kw: Any) -> dict[str, Any]:
    err = LseError(kind, message, **kw)
    return {"type": "error", "status": err.status, "data": err.body()}


CHAT = {"model": "fake-model", "messages": [{"role": "user", "content": "hi"}]}


def run(scenario: Callable[..., Any], runtime: FakeRuntime | None = None, *, wait_ready: bool = True,
        open_engine: Callable[[], Any] = FakeEngine, on_failed: Callable[[BaseException], None] | None = None,
        **settings: Any) -> Any:
    """Run ``scenario(client, runtime, app)`` against a fresh app."""
    runtime = runtime or FakeRuntime()
    app = create_app(open_engine, ServerSettings(**settings), runtime, startup_error=FakeStartupError,
                     on_failed=on_failed)

    async def main() -> Any:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://lse.test") as client:
            if wait_ready:
                await until_health(client, 200)
            return await scenario(client, runtime, app)

    return asyncio.run(main())


async def until_health(client: httpx.AsyncClient, status: int) -> httpx.Response:
    for _ in range(400):
        response = await client.get("/health")
        if response.status_code == status:
            return response
        await asyncio.sleep(0.005)
    raise AssertionError(f"/health never answered {status}; last: {response.status_code} {response.text}")


def assert_error(response: httpx.Response, status: int, etype: str, code: str | None, param: str | None = None) -> dict:
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/json"
    err = response.json()["error"]
    assert (err["type"], err["code"], err["param"]) == (etype, code, param), err
    assert isinstance(err["message"], str) and err["message"]
    return err


def sse_frames(response: httpx.Response) -> list[str]:
    """The stream's data payloads; asserts the framing is exactly 'data: X\\n\\n' throughout."""
    text = response.text
    assert text.endswith("\n\n"), text
    blocks = text[:-2].split("\n\n")
    assert all(b.startswith("data: ") and "\n" not in b for b in blocks), text
    return [b.removeprefix("data: ") for b in blocks]
