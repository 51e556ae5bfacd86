"""The in-process API over a ``ModelSet``: the request's ``model`` picks the engine.

``ModelSetRuntime`` has the shape of ``lse.runtime.api`` (the server's
``Runtime``), with a ``ModelSet`` where that module takes an engine, so
lse-server's routes serve a set unchanged. ``lse_request`` runs on the
server's prepare pool, as it always has: a loaded model's request is
submitted there and then (its 400s and a full queue's 503 come back as the
handle's rejection, as before); an unloaded model's handle waits for the
load inside ``aevents`` (a stream sends its keep-alive comments meanwhile,
and the request's timeout and disconnect watch cover the wait), then submits.

``select`` is the one function every route's selection goes through: the
body's ``model`` to (entry, engine), loading and waiting (blocking), held
until ``release``; the tokenizer routes call it, and other body-carrying
routes (embeddings) hook in the same way.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Iterator
from concurrent.futures import Future
from dataclasses import replace
from typing import Any

from lse.runtime import engine_api as base
from lse.runtime.anthropic import handle as messages
from lse.runtime.anthropic.errors import error_event
from lse.runtime.errors import LseError
from lse.runtime.models import LOADED, ModelEntry, ModelSet
from lse.runtime.openai import replies
from lse.runtime.channel import terminal_result

Event = dict[str, Any]
_ANTHROPIC = (messages.MESSAGES, messages.COUNT_TOKENS)


class Held:
    """A model held for one request: released once (terminal event, cancel, rejection)."""

    def __init__(self, models: ModelSet, entry: ModelEntry) -> None:
        self.models, self.entry, self._released = models, entry, False

    def release(self) -> None:
        if not self._released:
            self._released = True
            self.models.release(self.entry)

    def __del__(self) -> None:  # a handle dropped unread still lets its model go
        self.release()


class HeldHandle:
    """An engine's handle that releases its model when the request ends."""

    def __init__(self, inner: Any, held: Held) -> None:
        self._inner, self._held = inner, held
        self.stream = getattr(inner, "stream", False)

    def events(self) -> Iterator[Event]:
        try:
            for event in self._inner.events():
                if event["type"] != "chunk":
                    self._held.release()
                yield event
        finally:
            self._held.release()

    async def aevents(self) -> AsyncIterator[Event]:
        try:
            async for event in self._inner.aevents():
                if event["type"] != "chunk":
                    self._held.release()
                yield event
        finally:
            self._held.release()

    def rejection(self) -> Event | None:
        rejected = self._inner.rejection()
        if rejected is not None:
            self._held.release()
        return rejected

    def cancel(self) -> None:
        self._inner.cancel()
        self._held.release()

    def result(self) -> tuple[int, dict]:
        try:
            return self._inner.result()
        finally:
            self._held.release()


class PendingHandle:
    """A request for a model still loading: its events start once the load
    ends (then the engine's own), or are the load's 500 model_load_failed."""

    def __init__(self, future: Future[Any], submit: Callable[[Any], Any], held: Held, failed: Callable[[LseError],
                 Event], stream: bool) -> None:
        self._future, self._submit, self._held, self._failed = future, submit, held, failed
        self._inner: Any = None
        self._cancelled = False
        self.stream = stream

    async def aevents(self) -> AsyncIterator[Event]:
        try:
            try:
                engine = await asyncio.wrap_future(self._future)
            except LseError as err:
                self._held.release()
                yield self._failed(err)
                return
            if self._cancelled:
                return
            self._inner = await asyncio.to_thread(self._submit, engine)  # prepares off the event loop
            if self._cancelled:
                self._inner.cancel()
                return
            async for event in self._inner.aevents():
                if event["type"] != "chunk":  # the reader may stop here without closing the generator
                    self._held.release()
                yield event
        finally:
            self._held.release()

    def events(self) -> Iterator[Event]:
        try:
            try:
                engine = self._future.result()
            except LseError as err:
                self._held.release()
                yield self._failed(err)
                return
            self._inner = self._submit(engine)
            for event in self._inner.events():
                if event["type"] != "chunk":  # the reader may stop here without closing the generator
                    self._held.release()
                yield event
        finally:
            self._held.release()

    def rejection(self) -> Event | None:
        return None  # refusals come once the model is loaded, as events

    def cancel(self) -> None:
        self._cancelled = True
        if not self._future.done():
            self._future.cancel()  # this request's own waiter; the shared load goes on
        if self._inner is not None:
            self._inner.cancel()
        self._held.release()

    def result(self) -> tuple[int, dict]:
        return terminal_result(self.events())


def _error_event(endpoint: str) -> Callable[[LseError], Event]:
    def event(err: LseError) -> Event:
        plain = {"type": "error", "status": err.status, "data": err.body()}
        return error_event(plain) if endpoint in _ANTHROPIC else plain

    return event


def _refused(endpoint: str, err: LseError) -> Any:
    return messages.error_handle(err) if endpoint in _ANTHROPIC else base.RequestHandle(error=err)


def select(models: ModelSet, body: Any) -> tuple[ModelEntry, Any]:
    """The entry and loaded engine the body's ``model`` names (blocking while
    it loads); hold it until ``models.release(entry)``. Raises 404
    model_not_found or 500 model_load_failed."""
    return models.engine_for(body.get("model") if isinstance(body, dict) else None)


class ModelSetRuntime:
    """``lse.runtime.api``'s functions over a ModelSet (see the module's doc);
    each model's engine is driven through ``engines`` (``lse.runtime.engine_api``
    itself, or a stand-in with its functions)."""

    def __init__(self, engines: Any = base) -> None:
        self.base = engines

    def lse_request(self, models: ModelSet, body: Any, endpoint: str = "chat.completions") -> Any:
        try:
            entry = models.resolve(body.get("model") if isinstance(body, dict) else None)
        except LseError as err:
            return _refused(endpoint, err)
        future = models.use(entry)
        held = Held(models, entry)
        if future.done():
            try:
                engine = future.result()
            except LseError as err:
                held.release()
                return _refused(endpoint, err)
            return HeldHandle(self.base.lse_request(engine, body, endpoint), held)
        stream = isinstance(body, dict) and body.get("stream") is True
        return PendingHandle(future, lambda engine: self.base.lse_request(engine, body, endpoint), held,
                             _error_event(endpoint), stream)

    def lse_request_json(self, models: ModelSet, data: bytes | str, path: str) -> Any:
        try:
            if path not in base.ENDPOINT_PATHS:
                raise LseError("not_found", f"no route POST {path}")
            body = base.parse_json_object(data)
        except LseError as err:
            return _refused(base.ENDPOINT_PATHS.get(path, ""), err)
        return self.lse_request(models, body, base.ENDPOINT_PATHS[path])

    def _with(self, models: ModelSet, body: Any, call: Callable[[Any], Any]) -> Any:
        entry, engine = select(models, body)
        try:
            return call(engine)
        finally:
            models.release(entry)

    def lse_tokenize(self, models: ModelSet, body: dict[str, Any]) -> dict[str, Any]:
        return self._with(models, body, lambda engine: self.base.lse_tokenize(engine, body))

    def lse_detokenize(self, models: ModelSet, body: dict[str, Any]) -> dict[str, Any]:
        return self._with(models, body, lambda engine: self.base.lse_detokenize(engine, body))

    def lse_embed(self, models: ModelSet, body: Any, timeout: float | None = None) -> dict[str, Any]:
        return self._with(models, body, lambda engine: self.base.lse_embed(engine, body, timeout))

    def lse_tokenizer_info(self, models: ModelSet) -> dict[str, Any]:
        return self.base.lse_tokenizer_info(_loaded_default(models))

    def lse_model_info(self, models: ModelSet) -> dict[str, Any]:
        """The default model's info (loaded once, else 503 model_loading while it loads)."""
        return self.base.lse_model_info(_loaded_default(models))

    def lse_model_info_of(self, models: ModelSet, name: str | None) -> dict[str, Any]:
        """``lse_model_info(models, name)`` and GET /v1/lse/model_info?model=NAME:
        the model ``name`` names (a name or an alias; None: the default model),
        as its last load read it; a model never loaded is loaded first (blocking),
        500 model_load_failed if that fails. Another name is 404 model_not_found
        listing the names, even with one model (a name here is never just echoed)."""
        entry = models.named(name) if name is not None else models.default_entry()
        if entry.info is None:
            future = models.use(entry)
            try:
                future.result()  # raises model_load_failed
            finally:
                models.release(entry)
        return entry.info

    def lse_model_list(self, models: ModelSet, created: int) -> list[dict[str, Any]]:
        """/v1/models' entries: every model, with its status (and its reason when failed)."""
        return [model_list_entry(entry, created) for entry in models.entries.values()]

    def lse_models_refresh(self, models: ModelSet) -> dict[str, Any]:
        """POST /v1/lse/models/refresh: find the models again (``ModelSet.refresh``)."""
        return models.refresh()

    def lse_model_load(self, models: ModelSet, name: str) -> dict[str, Any]:
        """POST /v1/lse/models/{name}/load: load now and wait (a failed model tried
        again); the model's row, or 404 model_not_found / 500 model_load_failed."""
        entry = models.named(name)
        models.load(entry.name).result()
        return entry.describe()

    def lse_model_unload(self, models: ModelSet, name: str) -> dict[str, Any]:
        """POST /v1/lse/models/{name}/unload: the model's row (503 model_busy while it serves)."""
        entry = models.named(name)
        models.unload(entry.name)
        return entry.describe()

    def lse_status(self, models: ModelSet) -> dict[str, Any]:
        """The default model's ``engine`` object when it is loaded (null else), and
        ``models``: every model's figures, a loaded one's ``engine`` object too."""
        default = models.default_entry()
        out: dict[str, Any] = {"engine": None, "models": []}
        for entry in list(models.entries.values()):
            engine = entry.engine
            row = entry.describe()
            row["engine"] = self.base.lse_status(engine)["engine"] if engine is not None else None
            out["models"].append(row)
            if entry is default:
                out["engine"] = row["engine"]
        return out

    def lse_observe(self, models: ModelSet, observer: Callable[[Any], None]) -> None:
        """``observer`` on every model's engine, those loaded later too."""
        def named(name: str) -> Callable[[Any], None]:
            return lambda record: observer(replace(record, model=name))

        for name, engine in models.loaded_engines():
            self.base.lse_observe(engine, named(name))
        models.observers.append(lambda name, engine: self.base.lse_observe(engine, named(name)))

    def lse_shutdown(self, models: ModelSet, timeout: float) -> None:
        for _, engine in models.loaded_engines():
            self.base.lse_shutdown(engine, timeout)

    def lse_close(self, models: ModelSet) -> None:
        models.close()


def _loaded_default(models: ModelSet) -> Any:
    entry = models.default_entry()
    engine = entry.engine
    if engine is not None:
        return engine
    if entry.status != LOADED:
        models.load(entry.name)
    raise LseError("model_loading", f"the model {entry.name!r} is loading; retry in a moment")


def model_list_entry(entry: ModelEntry, created: int) -> dict[str, Any]:
    """One /v1/models entry: OpenAI's fields and LSE's (context_length,
    thinking, generation_defaults: null until the model has been loaded once),
    then ``status`` and, for a failed model, ``status_reason``."""
    info = entry.info
    if info is not None:
        out = dict(replies.model_entry_of(info, created))
    else:
        out = {"id": entry.name, "object": "model", "created": created, "owned_by": "lse",
               "context_length": None, "thinking": None, "generation_defaults": None}
    out["status"] = entry.status
    if entry.reason is not None:
        out["status_reason"] = entry.reason
    if entry.spec.aliases:
        out["aliases"] = list(entry.spec.aliases)
    return out


SET_OPTIONS = ("models", "aliases", "default_model", "models_max", "memory_budget", "keep_alive")


def open_models(config: dict[str, Any]) -> ModelSet:
    """``lse_open({"models": [...], ...})``: a ModelSet the in-process API's
    functions take where they take an engine. ``models`` holds paths (named as
    lse-server names them) or ``{"name", "path", "aliases"}`` objects;
    ``aliases`` (``{name: [alias, ...]}``, as ``--alias NAME=ALIAS``),
    ``default_model``, ``models_max``, ``memory_budget`` (bytes) and
    ``keep_alive`` (seconds) are lse-server's options; every other field is
    LseConfig's, for each model's engine. Models load on first use."""
    from pathlib import Path

    from lse.runtime.model_files import model_name
    from lse.runtime.model_files import ModelSpec, check_spec

    rest = {k: v for k, v in config.items() if k not in SET_OPTIONS}
    engine_config = base._config(rest)
    specs = []
    for item in config["models"]:
        if isinstance(item, dict):
            specs.append(ModelSpec(item["name"], item.get("path"), tuple(item.get("aliases", ()))))
        else:
            specs.append(ModelSpec(model_name(Path(item)), str(item)))
    aliases = dict(config.get("aliases") or {})
    unknown = sorted(set(aliases) - {spec.name for spec in specs})
    if unknown:
        raise base.LseStartupError(f"aliases name no model: {', '.join(unknown)}; the models are "
                                   f"{', '.join(spec.name for spec in specs)}")
    specs = [replace(spec, aliases=(*spec.aliases, *aliases.get(spec.name, ()))) for spec in specs]

    def open_engine(spec: ModelSpec) -> Any:
        return base.lse_open(replace(engine_config, model=spec.path, served_model_name=spec.name))

    try:
        models = ModelSet(specs, open_engine, base.lse_close, default=config.get("default_model"),
                          max_loaded=config.get("models_max", 0), memory_budget=config.get("memory_budget", 0),
                          keep_alive=config.get("keep_alive", 0.0), check=check_spec)
    except ValueError as exc:
        raise base.LseStartupError(str(exc)) from exc
    models.start_sweeper()
    return models


SET_RUNTIME = ModelSetRuntime()
