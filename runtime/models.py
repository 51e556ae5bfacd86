"""A set of models behind one server: names, status, lazy loads, LRU unloads.

Each ``ModelEntry`` is one model the server can serve: its name (a GGUF
file's stem, a directory's name, or ``--served-model-name NAME=PATH``), its
aliases, its path, its status (``unloaded``, ``loading``, ``loaded``,
``failed`` with the reason) and, while loaded, its engine. ``ModelSet.use``
hands a request a future of the engine: a loaded model's is done at once; an
unloaded one starts loading on a thread of its own, and every request that
asks meanwhile shares that one load. A request holds its model (``release``
when it ends), and a held model is never unloaded.

Bounds: at most ``max_loaded`` models stay loaded, and the loaded models'
memory (``engine_memory``: weights plus KV cache, as the engine holds them)
stays within ``memory_budget`` where one is set. To admit another model the
least recently used idle model is unloaded; when every loaded model is busy,
the load waits until one is released (the request waits with it, its timeout
running). ``keep_alive`` unloads a model idle that long (``sweep``).

A model that fails to load stays ``failed``, its requests answered 500
``model_load_failed`` with the reason, until ``refresh`` (or an operator's
load) tries again; the other models are not touched.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import Future
from typing import Any

from lse.runtime.errors import LseError
from lse.runtime.model_files import ModelSpec, engine_memory, release_memory

log = logging.getLogger("lse")

UNLOADED, LOADING, LOADED, FAILED = "unloaded", "loading", "loaded", "failed"


class ModelEntry:
    """One model of the set and its state (changed under the set's lock)."""

    def __init__(self, spec: ModelSpec) -> None:
        self.spec = spec
        self.status = UNLOADED
        self.reason: str | None = None
        self.engine: Any = None
        self.info: dict[str, Any] | None = None  # lse_model_info of its last load, kept after an unload
        self.memory: int | None = None  # engine_memory of its last load
        self.load_seconds: float | None = None
        self.users = 0  # requests holding it (waiting for its load or running on it)
        self.last_used = 0.0
        self.loads = 0
        self._load: Future[Any] | None = None

    @property
    def name(self) -> str:
        return self.spec.name

    def describe(self) -> dict[str, Any]:
        """The entry's figures, for /v1/lse/status and the list."""
        return {"name": self.name, "aliases": list(self.spec.aliases), "path": self.spec.path,
                "status": self.status, "reason": self.reason, "memory_bytes": self.memory,
                "load_seconds": self.load_seconds, "requests": self.users, "loads": self.loads}


class ModelSet:
    """The models one server serves; thread-safe."""

    def __init__(self, specs: Iterable[ModelSpec], open_engine: Callable[[ModelSpec], Any],
                 close_engine: Callable[[Any], None], *, default: str | None = None, max_loaded: int = 0,
                 memory_budget: int = 0, keep_alive: float = 0.0, measure: Callable[[Any], int] = engine_memory,
                 describe: Callable[[Any], dict[str, Any]] = lambda engine: engine.model_info(),
                 scan: Callable[[], list[ModelSpec]] | None = None, clock: Callable[[], float] = time.monotonic,
                 check: Callable[[ModelSpec], None] = lambda spec: None) -> None:
        self._open, self._close, self._measure, self._describe, self._scan, self._clock = \
            open_engine, close_engine, measure, describe, scan, clock
        self._check = check  # raises before anything is unloaded for a model that can't be served
        self.max_loaded, self.memory_budget, self.keep_alive = max_loaded, memory_budget, keep_alive
        self._lock = threading.Condition()
        self._closed = threading.Event()
        self.entries: dict[str, ModelEntry] = {}
        self._aliases: dict[str, str] = {}
        self._add(specs)
        if default is not None and self._find(default) is None:
            raise ValueError(f"--default-model {default!r} is not one of the models: {', '.join(self.names())}")
        self.default = default
        self.observers: list[Callable[[str, Any], None]] = []  # told (name, engine) at each load

    # ---- names ------------------------------------------------------------
    def _add(self, specs: Iterable[ModelSpec]) -> None:
        for spec in specs:
            for name in (spec.name, *spec.aliases):
                if name in self.entries or name in self._aliases:
                    raise ValueError(f"the model name {name!r} is given twice")
            self.entries[spec.name] = ModelEntry(spec)
            self._aliases.update({alias: spec.name for alias in spec.aliases})

    def names(self) -> list[str]:
        return list(self.entries)

    def _find(self, name: str) -> ModelEntry | None:
        return self.entries.get(self._aliases.get(name, name))

    def entry(self, name: str) -> ModelEntry | None:
        """The entry called ``name`` (or an alias), or None."""
        return self._find(name)

    def default_entry(self) -> ModelEntry:
        """--default-model's entry, else the first (the default gone after a refresh: the first)."""
        entry = self._find(self.default) if self.default is not None else None
        if entry is None and not self.entries:
            raise LseError("model_not_found", "this server serves no models now; add some to --models-dir and "
                           "POST /v1/lse/models/refresh", param="model", extra={"models": []})
        return entry or next(iter(self.entries.values()))

    def resolve(self, name: Any) -> ModelEntry:
        """The entry a request's ``model`` names: none (or not a string) is the
        default; with one model every name is that model (as a one-model server
        has always answered); else an unknown name is 404 model_not_found."""
        if not isinstance(name, str) or not name or len(self.entries) == 1:
            return self.default_entry()
        return self.named(name)

    def named(self, name: str) -> ModelEntry:
        """The entry called ``name`` (or an alias), else 404 model_not_found listing the names."""
        entry = self._find(name)
        if entry is None:
            names = self.names()
            raise LseError("model_not_found", f"the model {name!r} does not exist; this server serves "
                           f"{', '.join(repr(n) for n in names)}", param="model", extra={"models": names})
        return entry

    # ---- use --------------------------------------------------------------
    def use(self, entry: ModelEntry) -> Future[Any]:
        """Hold ``entry`` for one request (``release`` when it ends) and give
        its engine's future: done now when loaded, else when its load (shared
        by every request that asks meanwhile) ends; a failed load's future
        raises 500 model_load_failed."""
        waiter: Future[Any] = Future()
        with self._lock:
            entry.users += 1
            entry.last_used = self._clock()
            load = self._start_load(entry)
        _chain(load, waiter)
        return waiter

    def release(self, entry: ModelEntry) -> None:
        with self._lock:
            entry.users = max(0, entry.users - 1)
            entry.last_used = self._clock()
            self._lock.notify_all()

    def engine_for(self, name: Any) -> tuple[ModelEntry, Any]:
        """The entry and its engine for ``name``, loading it and waiting
        (blocking); the caller holds the entry until ``release``. Raises
        model_not_found or model_load_failed."""
        entry = self.resolve(name)
        future = self.use(entry)
        try:
            return entry, future.result()
        except BaseException:
            self.release(entry)
            raise

    def load(self, name: str) -> Future[Any]:
        """An operator's load: a failed model is tried again."""
        entry = self.named(name)
        with self._lock:
            if entry.status == FAILED:
                entry.status, entry.reason = UNLOADED, None
            entry.last_used = self._clock()
            load = self._start_load(entry)
        waiter: Future[Any] = Future()  # cancelling it leaves the shared load alone
        _chain(load, waiter)
        return waiter

    def _start_load(self, entry: ModelEntry) -> Future[Any]:
        # Under the lock.
        if entry.status == LOADED:
            done: Future[Any] = Future()
            done.set_result(entry.engine)
            return done
        if entry.status == FAILED:
            failed: Future[Any] = Future()
            failed.set_exception(load_failed(entry))
            return failed
        if entry._load is None:
            entry.status, entry._load = LOADING, Future()
            threading.Thread(target=self._load_thread, args=(entry, entry._load), name=f"lse-load-{entry.name}",
                             daemon=True).start()
        return entry._load

    def _load_thread(self, entry: ModelEntry, future: Future[Any]) -> None:
        started = time.monotonic()
        try:
            self._check(entry.spec)  # a model that can't load unloads no other (model_files.check_spec)
            self._make_room(entry, entry.memory or 0)
            log.info("lse-server: loading model %s (%s)", entry.name, entry.spec.path or "the default model")
            engine = self._open(entry.spec)
            try:
                memory, info = self._measure(engine), self._describe(engine)
            except Exception:
                self._close(engine)
                raise
        except Exception as exc:  # noqa: BLE001 - any failure is this model's, reported on its requests
            reason = str(exc) if isinstance(exc, RuntimeError) else f"{type(exc).__name__}: {exc}"
            with self._lock:
                entry.status, entry.reason, entry._load = FAILED, reason, None
                self._lock.notify_all()
            log.error("lse-server: model %s failed to load: %s", entry.name, entry.reason)
            future.set_exception(load_failed(entry))
            return
        with self._lock:
            entry.engine, entry.memory, entry.info, entry.status, entry._load = engine, memory, info, LOADED, None
            entry.load_seconds, entry.loads = round(time.monotonic() - started, 3), entry.loads + 1
            self._lock.notify_all()
        for observe in self.observers:
            observe(entry.name, engine)
        log.info("lse-server: model %s loaded in %.1f s (%.1f MiB: weights and KV cache)", entry.name,
                 entry.load_seconds, memory / 2**20)
        self._evict_over_budget(keep=entry)
        future.set_result(engine)

    # ---- bounds -----------------------------------------------------------
    def _loaded(self, but: ModelEntry | None = None) -> list[ModelEntry]:
        return [e for e in self.entries.values() if e.status in (LOADED, LOADING) and e is not but]

    def _over(self, entry: ModelEntry, extra: int) -> bool:
        # Under the lock: would loading ``entry`` (``extra`` bytes, as known) break a bound?
        others = self._loaded(but=entry)
        if self.max_loaded and len(others) >= self.max_loaded:
            return True
        used = sum(e.memory or 0 for e in others)
        return bool(self.memory_budget) and bool(others) and used + extra > self.memory_budget

    def _make_room(self, entry: ModelEntry, extra: int) -> None:
        """Unload least recently used idle models until ``entry`` fits; wait
        while every loaded model is busy."""
        evicted: list[tuple[ModelEntry, Any]] = []
        with self._lock:
            while self._over(entry, extra):
                idle = [e for e in self._loaded(but=entry) if e.status == LOADED and e.users == 0]
                if not idle:
                    self._lock.wait(timeout=1.0)
                    continue
                victim = min(idle, key=lambda e: e.last_used)
                evicted.append((victim, self._take_engine(victim)))
        for victim, engine in evicted:
            self._close_engine(victim, engine, "to make room for " + entry.name)

    def _evict_over_budget(self, keep: ModelEntry) -> None:
        """After a load measured more than foreseen: unload LRU idle others until the budget holds."""
        if not self.memory_budget:
            return
        evicted = []
        with self._lock:
            while sum(e.memory or 0 for e in self._loaded()) > self.memory_budget:
                idle = [e for e in self._loaded(but=keep) if e.status == LOADED and e.users == 0]
                if not idle:
                    break
                victim = min(idle, key=lambda e: e.last_used)
                evicted.append((victim, self._take_engine(victim)))
        for victim, engine in evicted:
            self._close_engine(victim, engine, "over --memory-budget")

    def _take_engine(self, entry: ModelEntry) -> Any:
        # Under the lock: the entry is unloaded from now on; its engine closes outside the lock.
        engine, entry.engine, entry.status = entry.engine, None, UNLOADED
        return engine

    def _close_engine(self, entry: ModelEntry, engine: Any, why: str) -> None:
        log.info("lse-server: unloading model %s (%s)", entry.name, why)
        self._close(engine)
        del engine
        release_memory()

    def unload(self, name: str) -> bool:
        """An operator's unload: False when it is not loaded; 503 model_busy while requests hold it."""
        entry = self.named(name)
        with self._lock:
            if entry.status != LOADED:
                return False
            if entry.users:
                raise LseError("model_busy", f"the model {entry.name!r} is serving {entry.users} request(s); "
                               "unload it when they end")
            engine = self._take_engine(entry)
        self._close_engine(entry, engine, "asked")
        return True

    def sweep(self) -> None:
        """Unload models idle for ``keep_alive`` seconds (0: never)."""
        if not self.keep_alive:
            return
        now = self._clock()
        with self._lock:
            idle = [e for e in self.entries.values()
                    if e.status == LOADED and e.users == 0 and now - e.last_used >= self.keep_alive]
            taken = [(e, self._take_engine(e)) for e in idle]
        for entry, engine in taken:
            self._close_engine(entry, engine, f"idle for --keep-alive {self.keep_alive:g}s")

    def start_sweeper(self, every: float = 1.0) -> None:
        """Run ``sweep`` on a daemon thread while ``keep_alive`` is set."""
        if not self.keep_alive:
            return

        def loop() -> None:
            while not self._closed.wait(min(every, self.keep_alive / 2)):
                self.sweep()

        threading.Thread(target=loop, name="lse-keep-alive", daemon=True).start()

    # ---- refresh, close -----------------------------------------------------
    def refresh(self) -> dict[str, list[str]]:
        """Find the models again (``scan``: the command line's models and every
        one in the models directories): new ones are added, failed ones may be
        tried again, idle ones that are gone are dropped."""
        found = self._scan() if self._scan is not None else [e.spec for e in self.entries.values()]
        closing = []
        with self._lock:
            known = {s.name for s in found}
            added = [s for s in found if s.name not in self.entries]
            removed = [e for e in self.entries.values() if e.name not in known and e.users == 0
                       and e.status != LOADING]
            for entry in removed:
                closing.append((entry, self._take_engine(entry)))
                del self.entries[entry.name]
                self._aliases = {a: n for a, n in self._aliases.items() if n != entry.name}
            self._add(added)
            for entry in self.entries.values():
                if entry.status == FAILED:
                    entry.status, entry.reason = UNLOADED, None
        for entry, engine in closing:
            if engine is not None:
                self._close_engine(entry, engine, "gone from the models directory")
        return {"added": [s.name for s in added], "removed": [e.name for e in removed], "models": self.names()}

    def loaded_engines(self) -> list[tuple[str, Any]]:
        with self._lock:
            return [(e.name, e.engine) for e in self.entries.values() if e.status == LOADED]

    def close(self) -> None:
        self._closed.set()
        with self._lock:
            taken = [(e, self._take_engine(e)) for e in self.entries.values() if e.status == LOADED]
        for _, engine in taken:
            self._close(engine)


def _chain(source: Future[Any], waiter: Future[Any]) -> None:
    def copy(done: Future[Any]) -> None:
        if waiter.cancelled():
            return
        exc = done.exception()
        waiter.set_exception(exc) if exc is not None else waiter.set_result(done.result())

    source.add_done_callback(copy)


def load_failed(entry: ModelEntry) -> LseError:
    return LseError("model_load_failed", f"the model {entry.name!r} failed to load: {entry.reason}",
                    param="model", extra={"model": entry.name})
