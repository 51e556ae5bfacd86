"""HTTP to a live LSE server: JSON requests, and server-sent event streams
read into chunks. Only httpx; nothing of LSE is imported, so any operator can
point lse-spec at any LSE server."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import httpx

DONE = "[DONE]"


@dataclass
class Reply:
    status: int
    headers: dict[str, str]
    text: str
    json: Any = None

    @property
    def error(self) -> dict[str, Any]:
        body = self.json if isinstance(self.json, dict) else {}
        err = body.get("error")
        return err if isinstance(err, dict) else {}


@dataclass
class Stream:
    """A streamed reply: ``events`` are the data payloads in order (``[DONE]``
    included as the literal string); ``chunks`` the JSON ones. A non-200
    answer has no events and carries the error body in ``reply``."""

    status: int
    headers: dict[str, str]
    events: list[str] = field(default_factory=list)
    chunks: list[dict[str, Any]] = field(default_factory=list)
    closed_early: bool = False
    reply: Reply | None = None

    @property
    def done(self) -> bool:
        return DONE in self.events


class Client:
    def __init__(self, url: str, api_key: str | None = None, timeout: float = 300.0) -> None:
        self.url = url.rstrip("/")
        self.api_key = api_key
        self._http = httpx.Client(base_url=self.url, timeout=timeout)

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def headers(self, key: str | None | bool = True) -> dict[str, str]:
        """``key=True`` sends the configured key, ``False`` none, a string that key."""
        chosen = self.api_key if key is True else (key or None)
        return {"Authorization": f"Bearer {chosen}"} if chosen else {}

    def request(self, method: str, path: str, body: Any = None, *, raw: bytes | None = None,
                key: str | None | bool = True, headers: dict[str, str] | None = None) -> Reply:
        headers = self.headers(key) | (headers or {})
        content = raw
        if body is not None:
            content = json.dumps(body).encode()
        if content is not None:
            headers["Content-Type"] = "application/json"
        resp = self._http.request(method, path, content=content, headers=headers)
        return _reply(resp.status_code, resp.headers, resp.text)

    def get(self, path: str, *, key: str | None | bool = True) -> Reply:
        return self.request("GET", path, key=key)

    def post(self, path: str, body: Any, *, key: str | None | bool = True) -> Reply:
        return self.request("POST", path, body, key=key)

    def stream(self, path: str, body: dict[str, Any],
               stop_when: Callable[[list[dict[str, Any]]], bool] | None = None) -> Stream:
        """POST with stream: true and read the events; ``stop_when(chunks)``
        true closes the connection early (the client cancels)."""
        headers = self.headers() | {"Content-Type": "application/json"}
        with self._http.stream("POST", path, content=json.dumps(body).encode(), headers=headers) as resp:
            out = Stream(resp.status_code, {k.lower(): v for k, v in resp.headers.items()})
            if resp.status_code != 200 or "text/event-stream" not in out.headers.get("content-type", ""):
                resp.read()
                out.reply = _reply(resp.status_code, resp.headers, resp.text)
                return out
            for payload in _data_payloads(resp.iter_lines()):
                out.events.append(payload)
                if payload != DONE:
                    out.chunks.append(_json_or_raw(payload))
                if stop_when is not None and stop_when(out.chunks) and payload != DONE:
                    out.closed_early = True
                    break
        return out


def _reply(status: int, headers: httpx.Headers, text: str) -> Reply:
    return Reply(status, {k.lower(): v for k, v in headers.items()}, text, _json_or_none(text))


def _json_or_none(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return None


def _json_or_raw(payload: str) -> dict[str, Any]:
    parsed = _json_or_none(payload)
    # A payload that is not a JSON object is kept so the stream checks can name it.
    return parsed if isinstance(parsed, dict) else {"__unparsed__": payload}


def _data_payloads(lines) -> Any:
    """The data of each server-sent event (multi-line data joined by \\n);
    comments and other fields are skipped, as the SSE spec says."""
    data: list[str] = []
    for line in lines:
        if line == "":
            if data:
                yield "\n".join(data)
                data = []
            continue
        if line.startswith(":"):
            continue
        name, _, value = line.partition(":")
        if name == "data":
            data.append(value[1:] if value.startswith(" ") else value)
    if data:
        yield "\n".join(data)
