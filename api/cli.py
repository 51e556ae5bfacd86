"""``lse-server [MODEL.gguf | MODEL_DIR | ARTIFACT_DIR]``: the OpenAI-compatible HTTP server.

It binds its port first (a port in use is one line naming it, and exit status
3), then listens at once and loads the engine in the background (/health
answers 503 until the model is ready). If the engine cannot start, the reason
is logged and the process exits with status 1.

SIGTERM (or Ctrl-C) drains: the listening socket closes, queued requests get
503 server_shutting_down, running replies get --shutdown-timeout seconds to
finish and are then ended with that error (in the stream, then
``data: [DONE]``), and the process exits 0.
"""

from __future__ import annotations

import argparse
import functools
import logging
import os
import socket
from collections.abc import Awaitable, Callable, Sequence
from types import FrameType

import uvicorn

from lse.runtime import api as runtime_api
from lse.runtime.logs import LOG_LEVELS, configure, lse_log_level

from .app import ServerSettings, create_app
from .listen import BindError, bind, http_protocol
from .models import (ServedName, add_model_arguments, is_model_set, open_model_set, served_name, set_config,  # noqa: F401 (set_config: lse-cluster's)
                     set_runtime)
from .responses import add_store_arguments, store_options

log = logging.getLogger("lse.api")

# Seconds that connections get to close once the engine has drained (their
# replies have ended by then); after that uvicorn cancels their tasks.
GRACEFUL_SHUTDOWN_SECS = 3
BIND_FAILED = 3  # the exit status of a port that cannot be bound (uvicorn's startup-failure status)


class DrainingServer(uvicorn.Server):
    """uvicorn's server, draining the engine between closing the listening
    socket and waiting for the connections to close."""

    def __init__(self, config: uvicorn.Config, drain: Callable[[], Awaitable[None]]) -> None:
        super().__init__(config)
        self._drain = drain

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        for server in self.servers:
            server.close()  # stop accepting before the drain, not after it
        await self._drain()
        await super().shutdown(sockets)

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        super().handle_exit(sig, frame)
        # uvicorn re-raises a captured signal after a graceful exit, so the
        # process would die of SIGTERM; a drained server exits 0 instead.
        self._captured_signals.clear()


def nonnegative_int(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, got {value}")
    return value


def positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be 1 or more, got {value}")
    return value


def parallel_arg(text: str) -> int | str:
    """--parallel: "auto" or a slot count."""
    return "auto" if text == "auto" else positive_int(text)


def nonnegative_float(text: str) -> float:
    value = float(text)
    if not value >= 0:  # also refuses nan
        raise argparse.ArgumentTypeError(f"must be 0 or more, got {text}")
    return value


def add_engine_arguments(p: argparse.ArgumentParser) -> None:
    """The options that shape the engine a model runs on: limits, context,
    KV dtype, devices, slots, threads, speculation."""
    p.add_argument("--max-tokens", type=nonnegative_int, default=0,
                   help="cap on a request's max_tokens; a request above it gets 400 (default 0: no cap)")
    p.add_argument("--kv-len", type=positive_int, default=None, help="context length the engine holds")
    p.add_argument("--kv-dtype", choices=("auto", "f16", "f32"), default="auto",
                   help="KV cache element type; auto: f16 for GGUF block weights, f32 for float checkpoints")
    p.add_argument("--temperature", type=float, default=None, help="override the model's default temperature")
    p.add_argument("--no-cpu-fallback", action="store_true",
                   help="refuse the CPU interpreter: fail startup or the request instead")
    p.add_argument("--pool", action="append", default=None, metavar="DEVICES",
                   help="devices to run on, e.g. local:0,local:1 (comma-separated or repeated)")
    p.add_argument("--parallel", type=parallel_arg, default="auto",
                   help="requests generated at once, each slot holding a full-context KV cache (default auto: "
                        f"up to {runtime_api.AUTO_SLOTS} slots whose caches fit "
                        f"{runtime_api.AUTO_KV_BUDGET // 2**20} MiB, at least 1)")
    p.add_argument("--threads", type=nonnegative_int, default=0,
                   help="CPU worker threads for a local device, unpinned, as llama-server's -t (default 0: IREE's "
                        "choice, one per physical core the process may use, each pinned to it)")
    p.add_argument("--speculative", choices=runtime_api.SPECULATIVE_MODES, default="off",
                   help="ngram: draft tokens from the request's own prompt and reply and verify them in one step, "
                        "a lone stream's output unchanged (docs/api.md, Speculative decoding; default off)")
    p.add_argument("--embeddings", action="store_true",
                   help="serve POST /v1/embeddings (without it: 501 embeddings_disabled, as llama-server)")
    p.add_argument("--pooling", choices=("last", "mean", "cls"), default=None,
                   help="embeddings' pooling (default: the model's files, else last); needs --embeddings")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="lse-server", description="Serve models over an OpenAI-compatible HTTP API.")
    p.add_argument("--version", action=runtime_api.VersionAction)
    p.add_argument("model", nargs="*", default=[], metavar="MODEL.gguf | MODEL_DIR | ARTIFACT_DIR",
                   help="a GGUF file (imported once into the cache), a Hugging Face model directory or a "
                        "compiled artifact directory (default: LSE's default model); several: `model` picks")
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1, loopback only)")
    p.add_argument("--port", type=int, default=8080, help="port to listen on (default 8080)")
    p.add_argument("--api-key", default=None,
                   help="require 'Authorization: Bearer KEY' on every /v1 route (default: $LSE_API_KEY, else open)")
    add_engine_arguments(p)
    p.add_argument("--queue-size", type=positive_int, default=64,
                   help="requests waiting beyond --parallel before 503 server_overloaded (default 64)")
    p.add_argument("--request-timeout-secs", type=nonnegative_float, default=600.0,
                   help="408 when a request runs longer (default 600; 0: no limit)")
    p.add_argument("--read-timeout", type=nonnegative_float, default=60.0, metavar="SECONDS",
                   help="a request's headers must arrive within SECONDS of the connection opening (or of the "
                        "previous reply ending), else the connection is closed; its body within SECONDS of the "
                        "headers, else 408 (default 60; 0: no limit)")
    p.add_argument("--served-model-name", default=None, action=ServedName, metavar="NAME | NAME=PATH",
                   help="the model id in /v1/models and replies; NAME=PATH names one of several (repeatable)")
    p.add_argument("--no-kernel", action="append", default=[], metavar="[TARGET:]OP",
                   help="declare that TARGET (default: every target) has no kernel for OP; its group runs on "
                        "the CPU interpreter (reported as CPU fallback)")
    p.add_argument("--max-body-bytes", type=positive_int, default=8 * 1024 * 1024,
                   help="413 for a larger request body (default 8 MiB)")
    p.add_argument("--shutdown-timeout", type=nonnegative_float, default=5.0,
                   help="on SIGTERM, seconds running replies get to finish before they end with a 503 "
                        "error (default 5); queued requests get 503 at once")
    p.add_argument("--metrics-public", action="store_true",
                   help="serve /metrics without the API key (default: it needs the key, as /v1 does)")
    p.add_argument("--allowed-origins", action="append", default=[], metavar="ORIGINS",
                   help="answer CORS requests from these origins, e.g. https://app.example (comma-separated or "
                        "repeated; * for any); default none: no CORS headers")
    p.add_argument("--log-level", choices=LOG_LEVELS, default=None,
                   help="how much LSE logs (default: $LSE_LOG_LEVEL, else info); debug adds the detail behind "
                        "one-line summaries, such as why each absent device backend did not come up")
    add_store_arguments(p)
    add_model_arguments(p, nonnegative_int, nonnegative_float)
    p.add_argument("--no-web-ui", action="store_true",
                   help="do not serve the chat page at / and /ui/ (default: served, without the API key; "
                        "it holds no data and asks for the key itself)")
    return p


def _origins(args: argparse.Namespace) -> tuple[str, ...]:
    return tuple(o.strip() for item in args.allowed_origins for o in item.split(",") if o.strip())


def option_lines(argv: Sequence[str] | None, args: argparse.Namespace) -> list[str]:
    """One startup line per option: its effective value and where it came
    from (flag, environment or default). The API key shows only as set or unset."""
    given = build_parser()
    for action in given._actions:
        action.default = argparse.SUPPRESS
    flagged = vars(given.parse_intermixed_args(argv))
    lines = []
    for action in build_parser()._actions:
        if action.dest in ("help", "version"):
            continue
        value = getattr(args, action.dest)
        if action.dest == "model":  # one model reads as it always has: its path, or None for the default
            value = value[0] if len(value) == 1 else value or None
        source = ("flag" if action.option_strings else "argument") if action.dest in flagged else "default"
        if action.dest == "api_key":
            source = "environment LSE_API_KEY" if source == "default" and os.environ.get("LSE_API_KEY") else source
            value = "set" if args.api_key or os.environ.get("LSE_API_KEY") else "unset"
        name = action.option_strings[-1] if action.option_strings else action.dest
        lines.append(f"lse-server: option {name} = {value} ({source})")
    return lines


def engine_config(args: argparse.Namespace) -> runtime_api.LseConfig:
    pool = [d.strip() for item in args.pool for d in item.split(",") if d.strip()] if args.pool else None
    return runtime_api.LseConfig(
        model=args.model[0] if args.model else None, max_tokens=args.max_tokens, kv_len=args.kv_len,
        disable_cpu_fallback=args.no_cpu_fallback, temperature=args.temperature, pool=pool,
        parallel=0 if args.parallel == "auto" else args.parallel, served_model_name=served_name(args),
        queue_size=args.queue_size, threads=args.threads,
        kv_dtype=args.kv_dtype, speculative=args.speculative, embeddings=args.embeddings, pooling=args.pooling,
        no_kernel=list(args.no_kernel))


def server_settings(args: argparse.Namespace) -> ServerSettings:
    return ServerSettings(
        api_key=args.api_key or os.environ.get("LSE_API_KEY") or None,
        max_body_bytes=args.max_body_bytes,
        request_timeout_secs=args.request_timeout_secs,
        read_timeout_secs=args.read_timeout,
        shutdown_timeout_secs=args.shutdown_timeout,
        metrics_public=args.metrics_public,
        allowed_origins=_origins(args),
        responses_store=store_options(args), embeddings=args.embeddings,
        web_ui=not args.no_web_ui,
    )


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_intermixed_args(argv)  # models may come between the options
    # Bare messages: the engine's lines carry their own "lse:" prefix, and the
    # spec quotes them whole (docs/spec/lse-api.md, CPU fallback).
    configure(lse_log_level(args.log_level, "info"))
    for line in option_lines(argv, args):
        log.info("%s", line)
    try:
        sock = bind(args.host, args.port)  # before any line says the server listens
    except BindError as exc:
        log.error("%s", exc)
        return BIND_FAILED
    failures: list[BaseException] = []
    server: DrainingServer | None = None

    def on_failed(exc: BaseException) -> None:
        failures.append(exc)
        if server is not None:
            server.should_exit = True  # read by uvicorn's main loop every tick

    if is_model_set(args):  # several models: the request's `model` picks one (api/models.py)
        app = create_app(open_model_set(args, engine_config(args)), server_settings(args), set_runtime(),
                         startup_error=runtime_api.LseStartupError, on_failed=on_failed)
    else:
        app = create_app(functools.partial(runtime_api.lse_open, engine_config(args)), server_settings(args),
                         runtime_api, startup_error=runtime_api.LseStartupError, on_failed=on_failed)
    server = DrainingServer(uvicorn.Config(app, host=args.host, port=args.port, lifespan="on",
                                           http=http_protocol(args.read_timeout),
                                           timeout_graceful_shutdown=GRACEFUL_SHUTDOWN_SECS), app.lse_drain)
    host = f"[{args.host}]" if ":" in args.host else args.host
    log.info("lse-server: listening on http://%s:%d/v1 (the model loads in the background; /health says when)",
             host, sock.getsockname()[1])
    if not args.no_web_ui:
        log.info("lse-server: chat page at http://%s:%d/ (--no-web-ui turns it off)", host, sock.getsockname()[1])
    server.run(sockets=[sock])  # the engine starts loading inside, at lifespan startup
    return 1 if failures else 0
