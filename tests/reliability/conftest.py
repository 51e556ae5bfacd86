"""The reliability tier: a live lse-server (tests/e2e/conftest.py's helpers)
under bad input, fuzzing, disconnect storms and the auth matrix.

``LSE_RELIABILITY_PROFILE`` picks the Hypothesis profile: "ci" (default, a
short run that keeps the tier under ~3 minutes on 2 cores) or "long".
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

_spec = importlib.util.spec_from_file_location("lse_e2e_server", Path(__file__).parents[1] / "e2e" / "conftest.py")
_e2e = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_e2e)

start_server = _e2e.start_server
lse_server_log = _e2e.lse_server_log
pytest_runtest_makereport = _e2e.pytest_runtest_makereport

settings.register_profile("ci", max_examples=100, deadline=None, derandomize=True,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
settings.register_profile("long", max_examples=1000, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
settings.load_profile(os.environ.get("LSE_RELIABILITY_PROFILE", "ci"))

QUEUE = 8  # --queue-size of the shared server


@pytest.fixture(scope="session")
def server():
    """(base_url, process) of one smollm_like server shared by the tier."""
    from lse.fixtures.make_fixtures import fixture_dir

    with start_server(fixture_dir("smollm_like"), "--queue-size", str(QUEUE)) as running:
        yield running


@pytest.fixture(scope="session")
def figures():
    """Figures the tier reports (docs/operating.md, "Reliability"); printed at the end."""
    found: dict[str, object] = {}
    yield found
    print("\nreliability figures:", found)
