"""Run profiles: ``dev`` (a few examples, for a laptop and the e2e tests) and
``ci`` (more examples). Chosen by ``--profile`` or ``LSE_SPEC_PROFILE``."""

from __future__ import annotations

import os
from dataclasses import dataclass

from hypothesis import HealthCheck, Phase, settings

ENV = "LSE_SPEC_PROFILE"


@dataclass(frozen=True)
class Profile:
    name: str
    max_examples: int  # Hypothesis examples per generated-request scenario
    tries: int  # seeds or prompts a scenario tries before calling a property unobservable
    concurrency: int  # simultaneous requests in the concurrency scenario

    def hypothesis(self) -> settings:
        # Each example is an HTTP round trip: no deadline, and no example
        # database written into the operator's working directory. Shrinking
        # costs requests only once something failed, and it narrows the rows
        # a failure is reported against to the fields that cause it.
        return settings(max_examples=self.max_examples, deadline=None, database=None,
                        phases=[Phase.explicit, Phase.generate, Phase.shrink],
                        suppress_health_check=list(HealthCheck), print_blob=False)


PROFILES = {
    "dev": Profile("dev", max_examples=4, tries=4, concurrency=3),
    "ci": Profile("ci", max_examples=30, tries=8, concurrency=6),
}

def chosen(name: str | None = None) -> Profile:
    """The profile named, else $LSE_SPEC_PROFILE, else dev."""
    key = name or os.environ.get(ENV) or "dev"
    if key not in PROFILES:
        raise ValueError(f"unknown profile {key!r}; choose one of {', '.join(PROFILES)}")
    return PROFILES[key]
