"""The kernels' C objects compiled once per sources, flags and C compiler into
a shared store and linked into each artifact (kernel_objects.build_object)."""

from __future__ import annotations

import pytest

from lse.compiler import cpu_kernel_build as cpu_kernels, kernel_objects

pytestmark = pytest.mark.skipif(cpu_kernels.kernels_available() is not None,
                                reason=f"kernels not built here: {cpu_kernels.kernels_available()}")


def test_a_second_artifact_links_the_stored_objects(tmp_path, monkeypatch):
    store, one, two = tmp_path / "kernels", tmp_path / "one", tmp_path / "two"
    one.mkdir(), two.mkdir()
    first = kernel_objects.build_object(one, store)
    assert [p.name for p in first] == list(cpu_kernels.OBJECTS)
    [entry] = [p for p in store.iterdir()]  # one build, no leftover temporary folder
    compiled = []
    monkeypatch.setattr(cpu_kernels, "compile_objects", lambda out: compiled.append(out))
    second = kernel_objects.build_object(two, store)
    assert compiled == []  # nothing compiled the second time
    for a, b in zip(first, second):
        assert a.read_bytes() == b.read_bytes() == (entry / a.name).read_bytes()
        assert b.stat().st_ino == (entry / b.name).stat().st_ino  # a link, not a copy


def test_other_flags_are_another_entry(tmp_path, monkeypatch):
    key = kernel_objects._objects_key()
    other = "denormal" if cpu_kernels.lanes() == "convert" else "convert"
    monkeypatch.setattr(cpu_kernels, "lanes", lambda: other)
    assert kernel_objects._objects_key() != key
