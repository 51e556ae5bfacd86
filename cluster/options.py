"""lse-cluster's options: lse-server's own (api/cli.py's parser), plus where and how many.

The same parser reads a Serve config file's ``args`` (``options_argv``), so a
config file and the command line cannot mean different things.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from typing import Any

from lse.api.cli import build_parser as server_parser
from lse.api.cli import nonnegative_int, positive_int

DEFAULT_PORT = 8080


def _positive_float(text: str) -> float:
    value = float(text)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be more than 0, got {text}")
    return value


def build_parser() -> argparse.ArgumentParser:
    p = server_parser()
    p.prog = "lse-cluster"
    p.description = ("Serve a model (or, as lse-server does, several) from N LSE replicas on a Ray cluster, behind "
                     "one OpenAI-compatible endpoint (Ray Serve). Every lse-server option applies to each replica; "
                     "--host/--port are Serve's HTTP proxy's.")
    g = p.add_argument_group("cluster")
    g.add_argument("--address", default=None,
                   help="the Ray cluster to run on: auto (the one this machine belongs to), ray://HEAD:10001, or "
                        "HEAD:6379 (default: start a local one for this machine)")
    g.add_argument("--replicas", type=positive_int, default=1, help="engines to run (default 1)")
    g.add_argument("--min-replicas", type=nonnegative_int, default=None,
                   help="autoscale: at least this many replicas (with --max-replicas)")
    g.add_argument("--max-replicas", type=positive_int, default=None, help="autoscale: at most this many replicas")
    g.add_argument("--target-ongoing-requests", type=_positive_float, default=None,
                   help="autoscale: ongoing requests per replica Serve aims at (default: --parallel)")
    g.add_argument("--replica-cpus", type=_positive_float, default=1.0,
                   help="CPUs Ray reserves for each replica (default 1; a machine's core count puts one replica "
                        "on each machine)")
    g.add_argument("--replica-gpus", type=float, default=0.0, help="GPUs Ray reserves for each replica (default 0)")
    g.add_argument("--ingress-replicas", type=positive_int, default=1,
                   help="HTTP ingress replicas (default 1; each relays every token of its streams, and each "
                        "router learns prefixes from its own traffic only)")
    g.add_argument("--imbalance", type=nonnegative_int, default=2,
                   help="routing: a replica with more than this many ongoing requests above the idlest one's "
                        "loses its prefix-cache preference (default 2)")
    g.add_argument("--detach", action="store_true",
                   help="deploy and exit, leaving the application on the cluster (needs --address); "
                        "default: run until Ctrl-C or SIGTERM, then delete it")
    p.set_defaults(port=DEFAULT_PORT)
    return p


def options_argv(args: Mapping[str, Any]) -> list[str]:
    """A mapping of options (a Serve config file's ``args``) as a command line:
    ``{"model": "m", "parallel": 2, "no_cpu_fallback": true}`` ->
    ``["m", "--parallel", "2", "--no-cpu-fallback"]``."""
    argv: list[str] = []
    for key, value in args.items():
        if key == "model":
            if value is not None:
                argv.insert(0, str(value))
            continue
        flag = "--" + key.replace("_", "-")
        if value is True:
            argv.append(flag)
        elif isinstance(value, list):
            for item in value:
                argv += [flag, str(item)]
        elif value is not None and value is not False:
            argv += [flag, str(value)]
    return argv
