"""CPU fallback accounting and refusal, and the device table of
docs/spec/lse-api.md's --no-cpu-fallback section, word for word."""

from __future__ import annotations

import logging

import pytest

from lse.runtime.api import LseStartupError, lse_close, lse_open, lse_request, lse_status
from lse.fixtures.make_fixtures import fixture_dir

CAUSES = ["fused group 11 (3 nodes: matmul, silu, mul); llvm-cpu: no kernel for silu",
          "fused group 23 (3 nodes: matmul, silu, mul); llvm-cpu: no kernel for silu"]


def ask(engine, max_tokens=3, **fields):
    return lse_request(engine, {"messages": [{"role": "user", "content": "hi"}], "temperature": 0,
                                "max_tokens": max_tokens, **fields}).result()


def test_fallback_is_counted_logged_and_reported(caplog):
    engine = lse_open({"model": str(fixture_dir("llama")), "kv_len": 64, "no_kernel": ["llvm-cpu:silu"]})
    try:
        with caplog.at_level(logging.WARNING, logger="lse"):
            status, body = ask(engine, max_tokens=3)  # 1 prefill + 2 decode steps = 3 runs per cause
            ask(engine, max_tokens=3)  # 3 more: counts 4..6
        status_body = lse_status(engine)
    finally:
        lse_close(engine)
    assert status == 200
    assert body["lse_warnings"] == [{"type": "cpu_fallback", "cause": c, "count": 3} for c in CAUSES]
    lines = [r.getMessage() for r in caplog.records if "CPU FALLBACK" in r.getMessage()]
    assert lines == [f"lse: CPU FALLBACK ({n} so far for this cause): {c}" for n in (1, 2) for c in CAUSES] + \
        [f"lse: CPU FALLBACK (4 so far for this cause): {c}" for c in CAUSES]
    assert status_body["engine"]["cpu_fallback"] == {
        "allowed": True, "total": 12, "events": [{"cause": c, "count": 6} for c in CAUSES]}


def test_refused_fallback_fails_the_request_and_the_engine_serves_on():
    engine = lse_open({"model": str(fixture_dir("llama")), "kv_len": 64, "no_kernel": ["llvm-cpu:silu"],
                       "disable_cpu_fallback": True})
    try:
        first = ask(engine)
        second = ask(engine, stream=True)
        fallback = lse_status(engine)["engine"]["cpu_fallback"]
    finally:
        lse_close(engine)
    for status, body in (first, second):
        assert status == 500
        assert body["error"]["type"] == "server_error"
        assert body["error"]["message"] == f"CPU fallback disabled: {CAUSES[0]}"
    assert fallback == {"allowed": False, "total": 0, "events": []}


def test_env_switch_refuses_like_the_option(monkeypatch):
    monkeypatch.setenv("LSE_REQUIRE_DEVICE_KERNELS", "1")
    engine = lse_open({"model": str(fixture_dir("llama")), "kv_len": 64, "no_kernel": ["llvm-cpu:silu"]})
    try:
        status, body = ask(engine)
    finally:
        lse_close(engine)
    assert status == 500 and body["error"]["message"].startswith("CPU fallback disabled: fused group 11")


def test_pool_cpu_runs_the_host_interpreter_with_the_same_reply():
    on_device = lse_open({"model": str(fixture_dir("llama")), "kv_len": 64})
    on_host = lse_open({"model": str(fixture_dir("llama")), "kv_len": 64, "pool": ["cpu:0"]})
    try:
        a, b = ask(on_device, max_tokens=8), ask(on_host, max_tokens=8)
        assert lse_status(on_host)["engine"]["device"] == "cpu:0"
    finally:
        lse_close(on_device)
        lse_close(on_host)
    assert a[1]["choices"] == b[1]["choices"]


@pytest.mark.parametrize("config, message", [
    ({"pool": ["cpu:0"], "disable_cpu_fallback": True},
     "device cpu:0 is refused: it has no device code generator (it is the CPU interpreter) and CPU fallback "
     "is disabled (--no-cpu-fallback)"),
    ({"pool": ["hrx:0"]}, "device hrx:0 did not come up: unknown device; devices are local:N, cuda:N, hip:N, "
                          "vulkan:N and cpu:0"),
    ({"pool": ["hrx:0"], "disable_cpu_fallback": True}, "device hrx:0 did not come up: unknown device; devices "
                                                        "are local:N, cuda:N, hip:N, vulkan:N and cpu:0"),
])
def test_startup_failures(config, message):
    with pytest.raises(LseStartupError) as e:
        lse_open({"model": str(fixture_dir("llama")), **config})
    assert str(e.value) == message


def test_no_backend_comes_up(monkeypatch, caplog):
    monkeypatch.setenv("LSE_BACKENDS", "")
    reasons = "cuda:0: not in LSE_BACKENDS; hip:0: not in LSE_BACKENDS; vulkan:0: not in LSE_BACKENDS; " \
              "local:0: not in LSE_BACKENDS"
    with pytest.raises(LseStartupError) as e:
        lse_open({"model": str(fixture_dir("llama")), "disable_cpu_fallback": True})
    assert str(e.value) == f"no device backend came up and CPU fallback is disabled (--no-cpu-fallback): {reasons}"
    with caplog.at_level(logging.WARNING, logger="lse"):
        engine = lse_open({"model": str(fixture_dir("llama")), "kv_len": 64})
    try:
        assert lse_status(engine)["engine"]["device"] == "cpu:0"
        assert ask(engine)[0] == 200
    finally:
        lse_close(engine)
    assert f"lse: WARNING: no device backend came up; the CPU interpreter runs the model ({reasons})" in \
        [r.getMessage() for r in caplog.records]
