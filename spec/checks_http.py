"""Checks of the HTTP surface around the API: HEAD /health, the key in the
api-key and x-api-key headers, and the offline /docs page (spec/rows_http.py)."""

from __future__ import annotations

from typing import Any

from lse.spec.checks import expect, named


@named("health.head", "auth.health")
def health_head(reply: Any) -> None:
    """HEAD /health: 200 as GET answers once ready, with no body, without a key."""
    expect(reply.status == 200 and reply.text == "", f"HTTP {reply.status} {reply.text[:80]!r}",
           "HTTP 200 and no body")


@named("auth.key_headers")
def key_header_accepted(reply: Any, header: str) -> None:
    """The key, bare, in ``header`` (api-key or x-api-key) opens a /v1 route."""
    expect(reply.status == 200, f"HTTP {reply.status} {reply.text[:120]}", f"HTTP 200 with the key in {header}")


@named("surface.docs")
def docs_offline(reply: Any) -> None:
    """GET /docs without a key: 200 text/html naming /openapi.json and no other host."""
    ctype = reply.headers.get("content-type", "")
    expect(reply.status == 200 and ctype.startswith("text/html"), f"HTTP {reply.status} {ctype}",
           "HTTP 200 text/html without a key")
    expect("openapi.json" in reply.text, reply.text[:200], "a link to /openapi.json")
    expect("://" not in reply.text, reply.text[:200], "nothing loaded from another host (no URL with a scheme)")
