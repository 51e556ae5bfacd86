"""Several models behind one lse-server: its options, the set, the operator routes.

``lse-server A.gguf B_DIR ...`` or ``--models-dir DIR`` serves a
``lse.runtime.models.ModelSet`` through ``ModelSetRuntime``; one model with
no ``--models-dir`` is served as it always was (``is_model_set``). The
operator routes, behind the API key:

- ``POST /v1/lse/models/refresh``: scan ``--models-dir`` again;
- ``POST /v1/lse/models/{name}/load``: load now (and wait), a failed model tried again;
- ``POST /v1/lse/models/{name}/unload``: unload an idle model (503 model_busy while it serves).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
from collections.abc import Callable
from dataclasses import fields, replace
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from blacksheep import Request, Response

from lse.runtime import api as runtime_api
from lse.runtime.errors import LseError
from lse.runtime.model_runtime import ModelSetRuntime
from lse.runtime.model_files import alias_pairs, check_spec, model_name, model_specs, scan_dir
from lse.runtime.models import ModelSet, ModelSpec

from .replies import json_response

log = logging.getLogger("lse.api")

SWEEP_SECS = 1.0  # how often --keep-alive looks for idle models


class ServedName(argparse.Action):
    """--served-model-name NAME (the one model's id, as before) or NAME=PATH (a set's model's name)."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, value: Any,
                 option_string: str | None = None) -> None:
        if "=" in value:
            name, path = value.split("=", 1)
            if not name or not path:
                parser.error(f"--served-model-name {value!r}: NAME=PATH wants both")
            namespace.served_model_paths = [*(getattr(namespace, "served_model_paths", None) or []), (name, path)]
        else:
            namespace.served_model_name = value


def byte_size(text: str) -> int:
    """BYTES with an optional K, M, G or T suffix (powers of 1024)."""
    units = {"k": 2**10, "m": 2**20, "g": 2**30, "t": 2**40}
    scale = units.get(text[-1:].lower(), 1)
    try:
        value = int(float(text[:-1] if scale > 1 else text) * scale)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a size in bytes: {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, got {text}")
    return value


def add_model_arguments(p: argparse.ArgumentParser, nonnegative_int: Callable[[str], int],
                        nonnegative_float: Callable[[str], float]) -> None:
    p.add_argument("--models-dir", action="append", default=[], metavar="DIR",
                   help="serve every GGUF file and model directory in DIR (found at start and on POST "
                        "/v1/lse/models/refresh), by name; repeatable")
    p.add_argument("--alias", action="append", default=[], metavar="NAME=ALIAS",
                   help="another name the model NAME answers to; repeatable")
    p.add_argument("--default-model", default=None, metavar="NAME",
                   help="with several models, the one a request without `model` gets (default: the first)")
    p.add_argument("--preload", action="append", default=[], metavar="NAME",
                   help="with several models, load NAME at start (default: each loads on its first request)")
    p.add_argument("--models-max", type=nonnegative_int, default=0, metavar="N",
                   help="with several models, keep at most N loaded; the least recently used idle one is "
                        "unloaded to admit another (default 0: no limit)")
    p.add_argument("--memory-budget", type=byte_size, default=0, metavar="BYTES",
                   help="with several models, keep the loaded models' weights and KV caches within BYTES "
                        "(suffix K, M, G; default 0: no limit)")
    p.add_argument("--keep-alive", type=nonnegative_float, default=0.0, metavar="SECONDS",
                   help="with several models, unload a model idle for SECONDS (default 0: never)")


def is_model_set(args: argparse.Namespace) -> bool:
    return len(args.model) > 1 or bool(args.models_dir)


def served_name(args: argparse.Namespace) -> str | None:
    """One model's id: --served-model-name NAME, or the NAME of a NAME=PATH naming its path."""
    if args.served_model_name is not None or len(args.model) != 1:
        return args.served_model_name
    specs = model_specs(args.model, dict(getattr(args, "served_model_paths", None) or []), {})
    named = specs[0].name != model_name(Path(args.model[0]))
    return specs[0].name if named else None


def find_specs(args: argparse.Namespace) -> Callable[[], list[ModelSpec]]:
    """The set's models: the command line's, then each --models-dir's, by name."""
    named = dict(getattr(args, "served_model_paths", None) or [])
    aliases = alias_pairs(args.alias, "--alias")

    def scan() -> list[ModelSpec]:
        paths = list(args.model)
        for directory in args.models_dir:
            if not Path(directory).expanduser().is_dir():
                raise runtime_api.LseStartupError(f"--models-dir {directory}: not a directory")
            paths += [str(p) for p in scan_dir(Path(directory))]
        return model_specs(paths, named, aliases)

    return scan


def open_model_set(args: argparse.Namespace, config: runtime_api.LseConfig) -> Callable[[], ModelSet]:
    """What the app opens at start (on its loading thread): the set, its
    preloads done, the keep-alive sweep running."""
    scan = find_specs(args)

    def open_engine(spec: ModelSpec) -> Any:
        return runtime_api.lse_open(replace(config, model=spec.path, served_model_name=spec.name))

    def open_set() -> ModelSet:
        try:
            models = ModelSet(scan(), open_engine, runtime_api.lse_close, default=args.default_model,
                              max_loaded=args.models_max, memory_budget=args.memory_budget,
                              keep_alive=args.keep_alive, scan=scan, check=check_spec)
        except ValueError as exc:
            raise runtime_api.LseStartupError(str(exc)) from exc
        if not models.entries:
            raise runtime_api.LseStartupError("no models: the --models-dir directories hold no GGUF file or "
                                              "model directory")
        if args.served_model_name is not None:
            raise runtime_api.LseStartupError(f"--served-model-name {args.served_model_name} names a lone model; "
                                              "with several, name each as NAME=PATH")
        unknown = [name for name in args.preload if models.entry(name) is None]
        if unknown:
            raise runtime_api.LseStartupError(f"--preload {', '.join(unknown)}: no such model; the models are "
                                              f"{', '.join(models.names())}")
        for entry in models.entries.values():
            aliases = f" (aliases {', '.join(entry.spec.aliases)})" if entry.spec.aliases else ""
            log.info("lse-server: model %s%s: %s", entry.name, aliases, entry.spec.path)
        log.info("lse-server: default model %s; bounds: --models-max %s, --memory-budget %s, --keep-alive %s",
                 models.default_entry().name, args.models_max or "none", args.memory_budget or "none",
                 f"{args.keep_alive:g}s" if args.keep_alive else "never")
        preloads = [models.load(name) for name in args.preload]
        for future in preloads:
            try:
                future.result()
            except LseError as exc:  # the model stays failed; the others serve
                log.error("lse-server: --preload: %s", exc.message)
        models.start_sweeper(SWEEP_SECS)
        return models

    return open_set


def set_config(args: argparse.Namespace, config: runtime_api.LseConfig) -> dict[str, Any]:
    """The set as ``lse_open``'s dict (``lse.runtime.model_runtime.open_models``),
    its models found now, plus ``preload``: what an lse-cluster replica opens."""
    specs = find_specs(args)()
    if not specs:
        raise runtime_api.LseStartupError("no models: the --models-dir directories hold no GGUF file or model "
                                          "directory")
    if args.served_model_name is not None:
        raise runtime_api.LseStartupError(f"--served-model-name {args.served_model_name} names a lone model; "
                                          "with several, name each as NAME=PATH")
    engine = {f.name: getattr(config, f.name) for f in fields(config) if f.name != "model"}
    return {**engine, "models": [{"name": s.name, "path": s.path, "aliases": list(s.aliases)} for s in specs],
            "default_model": args.default_model, "models_max": args.models_max,
            "memory_budget": args.memory_budget, "keep_alive": args.keep_alive, "preload": list(args.preload)}


class ModelRoutes:
    """The set's routes over the app's engine holder (which holds the set), each
    through the runtime (``ModelSetRuntime``, or lse-cluster's); the operator
    routes where the runtime has them (``lse_model_load``)."""

    def __init__(self, require: Callable[[], Any], runtime: Any) -> None:
        self.require, self.runtime = require, runtime
        self.table = [
            ("POST", "/v1/lse/models/refresh", self.refresh),
            ("POST", "/v1/lse/models/{name}/load", self.load),
            ("POST", "/v1/lse/models/{name}/unload", self.unload),
        ] if hasattr(runtime, "lse_model_load") else []

    def list_reply(self, created: int) -> Response:
        """/v1/models: every model of the set, with its status."""
        return json_response(200, {"object": "list", "data": self.runtime.lse_model_list(self.require(), created)})

    def entry_reply(self, wanted: str, created: int) -> Response:
        """/v1/models/{id}: the model (by name or alias), else 404 model_not_found listing the names."""
        entries = self.runtime.lse_model_list(self.require(), created)
        for entry in entries:
            if wanted == entry["id"] or wanted in entry.get("aliases", ()):
                return json_response(200, entry)
        names = [e["id"] for e in entries]
        raise LseError("model_not_found", f"the model {wanted!r} does not exist; this server serves "
                       f"{', '.join(repr(n) for n in names)}", param="model", extra={"models": names})

    async def model_info_reply(self, request: Request) -> Response:
        """/v1/lse/model_info[?model=NAME]: the named model's info (default: the
        default model's), as its last load read it; a model never loaded is
        loaded first (off the event loop), 500 model_load_failed if it fails."""
        models = self.require()
        wanted = request.query.get("model")
        name = wanted[0] if wanted else None
        return json_response(200, await asyncio.to_thread(self.runtime.lse_model_info_of, models, name))

    async def refresh(self, request: Request) -> Response:
        return json_response(200, await asyncio.to_thread(self.runtime.lse_models_refresh, self.require()))

    async def load(self, request: Request) -> Response:
        models = self.require()
        return json_response(200, await asyncio.to_thread(self.runtime.lse_model_load, models, _name(request)))

    async def unload(self, request: Request) -> Response:
        models = self.require()
        return json_response(200, await asyncio.to_thread(self.runtime.lse_model_unload, models, _name(request)))


def _name(request: Request) -> str:
    return unquote(request.route_values.get("name") or "")


def set_runtime() -> ModelSetRuntime:
    return ModelSetRuntime()
