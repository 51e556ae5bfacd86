"""LSE on a Ray Serve cluster (``lse-cluster``): many engines behind one OpenAI endpoint.

Two deployments (see ARCHITECTURE.md):

- ``LseReplica`` (``replica.py``): one engine each, opened through
  ``lse.runtime.api``; it answers calls, not HTTP.
- ``LseIngress`` (``ingress.py``): the HTTP side, ``lse.api.app.create_app``
  itself over ``ClusterRuntime`` (``remote.py``), a ``Runtime`` whose engine
  is the set of replicas, reached through a Serve handle.

Requests reach a replica through ``PrefixRouter`` (``router.py``): a
conversation's next turn goes to the replica whose KV cache holds its prefix,
unless that replica's queue is longer than the idlest one's by more than a
threshold. ``app.py`` builds the Serve application from ``lse-cluster``'s
options (``cli.py``) or a Serve config file's ``args``.

Ray is an optional extra (``pip install 'lse[cluster]'``); nothing else in LSE
imports this package.
"""
