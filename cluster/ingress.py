"""LseIngress: the HTTP side of the cluster, ``create_app`` over ``ClusterRuntime``.

Serve's proxy passes each HTTP request to this deployment as ASGI; the app is
``lse.api.app.create_app`` itself, so every route, its auth, limits and error
envelopes are ``lse-server``'s. Its engine is the ``LseReplica`` deployment
(``remote.py``). It needs no CPU reservation of its own: it only relays.
"""

from __future__ import annotations

import asyncio

from ray import serve
from ray.serve.handle import DeploymentHandle

from lse.api.app import ServerSettings, create_app

from .process import Asgi, access_logged, replica_log
from .remote import ClusterRuntime, ClusterSetRuntime


@serve.ingress()
class LseIngress:
    def __init__(self, replicas: DeploymentHandle, settings: ServerSettings, model_set: bool = False) -> None:
        self.replicas, self.settings, self.model_set = replicas, settings, model_set

    async def __serve_build_asgi_app__(self) -> Asgi:
        # Called on the loop that serves requests: Serve handles are used there.
        replica_log()
        kind = ClusterSetRuntime if self.model_set else ClusterRuntime  # several models: the set's routes
        runtime = kind(self.replicas, asyncio.get_running_loop())
        return access_logged(create_app(runtime.open, self.settings, runtime))
