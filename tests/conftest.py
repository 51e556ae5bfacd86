"""Test tiers by directory: tests/unit, tests/compile, tests/e2e, tests/reliability, tests/cluster, tests/browser,
tests/device.

Each test is marked with its tier from the folder it lives in, so
``pytest -m unit`` (or ``-m "not e2e"``) selects by cost. Device tests need a
GPU and run only with LSE_DEVICE_TESTS=1.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

# dev/ (the mutation tool, the kernel study) is no package: its tests import its modules by name
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "dev"))

TIERS = ("unit", "compile", "e2e", "reliability", "cluster", "browser", "device")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    root = Path(__file__).parent
    skip_device = pytest.mark.skip(reason="device tier: set LSE_DEVICE_TESTS=1 on a machine with a GPU")
    for item in items:
        tier = Path(item.fspath).relative_to(root).parts[0]
        if tier in TIERS:
            item.add_marker(getattr(pytest.mark, tier))
        if tier == "device" and os.environ.get("LSE_DEVICE_TESTS") != "1":
            item.add_marker(skip_device)
    # The browser tier last: Playwright's sync API keeps an event loop running
    # in the main thread while its session-wide browser lives, and the tiers
    # after it call asyncio.run().
    items.sort(key=lambda item: Path(item.fspath).relative_to(root).parts[0] == "browser")
