"""What liblse.so calls: lse.runtime.api, with C's types.

The C shim (lse.c) only converts: lse_config's fields arrive as a dict,
events leave as (type, status, JSON bytes) tuples. Everything the HTTP
server would say, this says the same way, because both go through
``lse.runtime.api``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from lse.runtime import api

# lse_event_type in lse.h
CHUNK, DONE, ERROR = 1, 2, 3


def open_engine(model: str | None, max_tokens: int, kv_len: int, parallel: int, disable_cpu_fallback: int,
                pool: str | None, threads: int = 0, models: list[str] | None = None, aliases: list[str] | None = None,
                default_model: str | None = None, models_max: int = 0, memory_budget: int = 0,
                keep_alive: float = 0.0) -> Any:
    """lse_open: the engine (a set of models with ``models``), or LseStartupError in the spec's words."""
    for name, value in (("max_tokens", max_tokens), ("kv_len", kv_len), ("parallel", parallel), ("threads", threads),
                        ("models_max", models_max), ("memory_budget", memory_budget), ("keep_alive", keep_alive)):
        if value < 0:
            raise api.LseStartupError(f"lse_config.{name} must be 0 or more, got {value}")
    devices = [d.strip() for d in pool.split(",") if d.strip()] if pool else None
    config: dict[str, Any] = {"model": model, "max_tokens": max_tokens, "kv_len": kv_len or None,
                              "disable_cpu_fallback": bool(disable_cpu_fallback), "pool": devices, "threads": threads}
    if parallel:
        config["parallel"] = parallel
    if models is None:
        for name, value in (("aliases", aliases), ("default_model", default_model), ("models_max", models_max),
                            ("memory_budget", memory_budget), ("keep_alive", keep_alive)):
            if value:
                raise api.LseStartupError(f"lse_config.{name} is for several models: set lse_config.models too")
        return api.lse_open(config)
    if model is not None:
        raise api.LseStartupError("set lse_config.model or lse_config.models, not both")
    if not models:
        raise api.LseStartupError("lse_config.models is empty: list at least one model before its NULL")
    del config["model"]
    config.update(models=[_model_item(item) for item in models],
                  aliases=api.alias_pairs(aliases or [], "lse_config.aliases"),
                  default_model=default_model, models_max=models_max, memory_budget=memory_budget,
                  keep_alive=keep_alive)
    return api.lse_open(config)


def _model_item(item: str) -> str | dict[str, Any]:
    """``"PATH"`` (named as lse-server names it) or ``"NAME=PATH"`` (--served-model-name NAME=PATH)."""
    name, sep, path = item.partition("=")
    if not sep:
        return item
    if not name or not path:
        raise api.LseStartupError(f"lse_config.models {item!r}: NAME=PATH wants both")
    return {"name": name, "path": path}


def startup_reason(exc: BaseException) -> str:
    """lse_last_error's text for an exception out of open_engine."""
    if isinstance(exc, api.LseStartupError):
        return str(exc)
    return f"{type(exc).__name__}: {exc}"


class Call:
    """One lse_request: its events in C's shape, chunks only when streamed."""

    def __init__(self, engine: Any, path: str, body: bytes):
        self.handle = api.lse_request_json(engine, body, path)
        self._events = self._shaped()

    def next(self) -> tuple[int, int, bytes] | None:
        """The next event, blocking (the GIL is released while it waits); None after the last."""
        return next(self._events, None)

    def cancel(self) -> int:
        """Cancel, wait until the engine has let go (its terminal event), and return that event's status."""
        self.handle.cancel()
        status = 200
        for event in self._events:
            status = event[1]
        return status

    def _shaped(self) -> Iterator[tuple[int, int, bytes]]:
        try:
            for event in self.handle.events():
                if event["type"] == "chunk":
                    if self.handle.stream:
                        yield CHUNK, 200, api.dumps(event["data"])
                elif event["type"] == "done":
                    yield DONE, 200, api.dumps(event["data"])
                else:
                    yield ERROR, event["status"], api.dumps(event["data"])
        except Exception as exc:  # a bug, not a request error: still exactly one terminal event
            body = api.error_body("internal_error", f"internal error: {type(exc).__name__}: {exc}")
            yield ERROR, 500, api.dumps(body)


def model_info(engine: Any, name: str | None = None) -> tuple[int, bytes]:
    """lse_model_info_named: (200, the info) or, for a refusal (404
    model_not_found, 500 model_load_failed), the HTTP status and error body."""
    try:
        return 200, api.dumps(api.lse_model_info(engine, name))
    except api.LseError as e:
        return e.status, api.dumps(e.body())


def status(engine: Any) -> bytes:
    return api.dumps(api.lse_status(engine))


def close(engine: Any) -> None:
    api.lse_close(engine)
