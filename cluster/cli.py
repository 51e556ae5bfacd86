"""``lse-cluster [MODEL ...] [--address ADDR] [--replicas N | --min-replicas A --max-replicas B] [lse-server options]``.

A command of its own rather than ``lse-server --ray``: lse-server is one
process that binds its port and owns its engine, while lse-cluster binds
nothing itself (Serve's proxy does, on every node), owns no engine (the
replicas do) and takes placement options lse-server has no use for. Keeping
them apart keeps Ray out of lse-server's imports and startup.

Without ``--address`` it starts a local Ray cluster for this machine. It waits
until every replica has opened its engine (a first start compiles the model),
prints the URL, and runs until Ctrl-C or SIGTERM, then deletes the
application (``--detach`` leaves it running on the cluster instead).
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading
from collections.abc import Sequence

from lse.api.cli import engine_config, is_model_set, set_config
from lse.runtime.api import LseStartupError

from .options import build_parser
from .process import RAY_NICENESS_ENV, REPLICA_NICENESS, stop_cluster

log = logging.getLogger("lse.cluster")
APP_NAME = "lse"
NO_RAY = 2  # the exit status without the cluster extra, as for a usage error: the command can't run here
INSTALL = "lse-cluster needs Ray Serve, LSE's cluster extra: pip install 'lse[cluster]'"


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()  # lse-server's options and the cluster's: no Ray needed for --help or --version
    parser.epilog = INSTALL.replace("lse-cluster needs", "Needs") + "."
    args = parser.parse_args(argv)
    if args.detach and args.address is None:
        parser.error("--detach needs --address: a local cluster ends with this process")
    if is_model_set(args):  # several models: every replica serves the set (docs/cluster.md)
        try:
            set_config(args, engine_config(args))  # found and named right, before any Ray starts
        except LseStartupError as exc:
            print(f"lse-cluster: {exc}", file=sys.stderr)
            return 1
    try:
        import ray
        from ray import serve

        from .app import application
    except ModuleNotFoundError as exc:
        if exc.name is None or exc.name.partition(".")[0] != "ray":
            raise
        print(f"{INSTALL} ({exc})", file=sys.stderr)
        return NO_RAY
    logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stderr)
    if args.address is None:  # our own cluster: its raylet starts the replicas at lse-server's niceness
        os.environ.setdefault(RAY_NICENESS_ENV, str(REPLICA_NICENESS))
    # "local": without --address, a cluster of our own, even where `ray start` runs one here.
    ray.init(address=args.address or "local", namespace="lse", logging_level=logging.WARNING)
    started_serve = not _serve_running(serve)
    serve.start(http_options={"host": args.host, "port": args.port})
    log.info("lse-cluster: deploying %s on %s; waiting for the replicas to open their engines",
             _replica_text(args), args.address or "a local Ray cluster")
    serve.run(application(args), name=APP_NAME, route_prefix="/")
    host = f"[{args.host}]" if ":" in args.host else args.host
    log.info("lse-cluster: serving at http://%s:%d/v1", host, args.port)
    if args.detach:
        return 0
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    stop.wait()
    log.info("lse-cluster: stopping: deleting the application")
    stop_cluster(serve, ray, APP_NAME, local=args.address is None, started_serve=started_serve)
    return 0


def _serve_running(serve) -> bool:
    """Whether Serve already runs on the cluster (then lse-cluster leaves it
    running at exit): serve.status() is empty where no controller runs."""
    status = serve.status()
    return bool(status.proxies or status.applications)


def _replica_text(args) -> str:
    if args.min_replicas is None and args.max_replicas is None:
        return f"{args.replicas} replica(s)"
    return f"{args.min_replicas or 1}..{args.max_replicas or args.replicas} replicas (autoscaled)"
