"""The Serve application: ``LseIngress`` over N ``LseReplica``s, from lse-cluster's options.

``application(args)`` takes the parsed options (``cli.py``); ``build(args)``
is the ``import_path`` of a Serve config file (``serve run config.yaml``,
``serve deploy``), whose ``args`` are the same options as a mapping
(``{"parallel": 2, "replicas": 4}``; see examples/serve_config.yaml).
"""

from __future__ import annotations

import argparse
from typing import Any

from ray import serve
from ray.serve.config import RequestRouterConfig

from lse.api.cli import engine_config, is_model_set, server_settings, set_config
from lse.runtime.api import AUTO_SLOTS

from .ingress import LseIngress
from .options import build_parser, options_argv
from .replica import ROUTING_STATS_PERIOD_S, LseReplica

# Requests the ingress holds at once (streams included); it only relays, so this is generous.
INGRESS_MAX_ONGOING = 4096
HEALTH_CHECK_PERIOD_S = 5.0


def application(args: argparse.Namespace) -> serve.Application:
    """The bound application for ``serve.run`` (see the module docstring)."""
    replica = serve.deployment(
        LseReplica, name="LseReplica",
        ray_actor_options={"num_cpus": args.replica_cpus, "num_gpus": args.replica_gpus},
        # The engine's own queue (--queue-size) bounds a replica, as it bounds
        # lse-server: a full one refuses at once (503), and the ingress offers
        # the request to another (remote.py). Serve's bound is twice that, so
        # Serve never holds a request back itself while refusals come and go.
        max_ongoing_requests=2 * (slots(args) + args.queue_size),
        health_check_period_s=HEALTH_CHECK_PERIOD_S,
        # Stopping (lse-cluster's Ctrl-C, a scale-down): running replies get
        # --shutdown-timeout seconds, as on lse-server's SIGTERM, then end
        # with the in-stream replica_unavailable error.
        graceful_shutdown_timeout_s=max(args.shutdown_timeout, 0.1),
        request_router_config=RequestRouterConfig(
            request_router_class="lse.cluster.router:PrefixRouter",
            request_router_kwargs={"imbalance": args.imbalance},
            request_routing_stats_period_s=ROUTING_STATS_PERIOD_S),
        **scaling(args))
    # Serve's access log names the route prefix ("POST / 200"); the ingress logs each path itself.
    ingress = serve.deployment(LseIngress, name="LseIngress", ray_actor_options={"num_cpus": 0},
                               num_replicas=args.ingress_replicas, max_ongoing_requests=INGRESS_MAX_ONGOING,
                               logging_config={"enable_access_log": False})
    several = is_model_set(args)  # every replica serves the whole set, as lse-server does (docs/cluster.md)
    config = set_config(args, engine_config(args)) if several else engine_config(args)
    return ingress.bind(replica.bind(config), server_settings(args), several)


def slots(args: argparse.Namespace) -> int:
    """A replica's slots: --parallel, or what auto takes at most."""
    return AUTO_SLOTS if args.parallel == "auto" else args.parallel


def scaling(args: argparse.Namespace) -> dict[str, Any]:
    """A fixed ``--replicas N``, or Serve's autoscaling between the bounds on
    ongoing requests per replica (default: ``--parallel``, a full batch)."""
    if args.min_replicas is None and args.max_replicas is None:
        return {"num_replicas": args.replicas}
    low = args.min_replicas if args.min_replicas is not None else 1
    high = args.max_replicas if args.max_replicas is not None else max(low, args.replicas)
    target = args.target_ongoing_requests or float(slots(args))
    return {"autoscaling_config": {"min_replicas": low, "max_replicas": high, "initial_replicas": max(low, 1),
                                   "target_ongoing_requests": target}}


def build(args: dict[str, Any]) -> serve.Application:
    """A Serve config file's entry point: its ``args`` are lse-cluster's options."""
    return application(build_parser().parse_args(options_argv(args)))
