"""The PrefixRouters of this process, so the ingress can report every replica
(``remote.cluster_status``); weak, so a closed handle's router goes away."""

from __future__ import annotations

import weakref
from typing import Any

ROUTERS: weakref.WeakSet[Any] = weakref.WeakSet()
