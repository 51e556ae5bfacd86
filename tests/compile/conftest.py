"""Shared helpers for the compile tier: compiled fixtures (cached by content
hash) opened as device backends on local:0."""

from __future__ import annotations

import iree.runtime as rt
import pytest

from lse.compiler.cache import compiled_artifact
from lse.compiler.pipeline import CompileOptions
from lse.runtime.backend import DeviceBackend


def _open_backend(model_dir, kv_len: int = 128, **options) -> DeviceBackend:
    artifact, manifest = compiled_artifact(model_dir, CompileOptions(**options), report=lambda m: None)
    return DeviceBackend(manifest, artifact, manifest.targets["llvm-cpu"], rt.get_device("local-task"),
                         "local:0", kv_len)


@pytest.fixture
def open_backend():
    """``open_backend(model_dir, kv_len=128, **CompileOptions)`` -> DeviceBackend."""
    return _open_backend


@pytest.fixture
def no_fallback():
    """An on_fallback callback that fails the test if a host group runs."""
    def record(cause: str) -> None:
        raise AssertionError(f"unexpected host group: {cause}")
    return record
