"""What the commands say at startup and in --help (issue #44): the device
backends not present on one line (each reason at debug), the compile cache's
final path rather than its temporary one, and GGUF named in every --help."""

from __future__ import annotations

import logging

import pytest

from lse.runtime.devices import DeviceChoice, declined_lines

ABSENT = [("cuda:0", "Error creating driver: no CUDA driver found (long text)"),
          ("hip:0", "Error creating driver: HIP not available"),
          ("vulkan:0", "Error creating driver: no Vulkan ICD")]


def test_a_device_came_up_the_others_are_one_line_and_their_reasons_are_debug():
    lines = declined_lines(DeviceChoice("local:0", "llvm-cpu", object(), list(ABSENT)))
    assert lines == [
        (logging.INFO, "lse: device backends not present: cuda:0, hip:0, vulkan:0 (LSE_LOG_LEVEL=debug gives each "
                       "reason)"),
        (logging.DEBUG, "lse: device cuda:0 declined: Error creating driver: no CUDA driver found (long text)"),
        (logging.DEBUG, "lse: device hip:0 declined: Error creating driver: HIP not available"),
        (logging.DEBUG, "lse: device vulkan:0 declined: Error creating driver: no Vulkan ICD")]


def test_nothing_declined_says_nothing():
    assert declined_lines(DeviceChoice("cpu:0", None, None)) == []


def test_no_device_at_all_the_warning_names_each_backend_and_its_reason(monkeypatch, caplog):
    """lse-api.md, CPU fallback: "a startup warning naming each backend that declined"."""
    from lse.runtime.api import lse_close, lse_open
    from lse.fixtures.make_fixtures import fixture_dir

    monkeypatch.setenv("LSE_BACKENDS", "")  # every backend declines: not in LSE_BACKENDS
    with caplog.at_level(logging.DEBUG, logger="lse"):
        engine = lse_open({"model": str(fixture_dir("llama")), "kv_len": 96})
    lse_close(engine)
    info = [r.getMessage() for r in caplog.records if r.levelno >= logging.INFO]
    warnings = [m for m in info if m.startswith("lse: WARNING:")]
    assert warnings == ["lse: WARNING: no device backend came up; the CPU interpreter runs the model (cuda:0: not in "
                        "LSE_BACKENDS; hip:0: not in LSE_BACKENDS; vulkan:0: not in LSE_BACKENDS; local:0: not in "
                        "LSE_BACKENDS)"]
    assert not any("declined" in m or "not present" in m for m in info)
    debug = [r.getMessage() for r in caplog.records if r.levelno == logging.DEBUG]
    assert "lse: device local:0 declined: not in LSE_BACKENDS" in debug


@pytest.mark.parametrize("env,flag,default,level", [
    (None, None, "info", logging.INFO),
    ("debug", None, "info", logging.DEBUG),
    ("DEBUG ", None, "warning", logging.DEBUG),
    ("debug", "warning", "info", logging.WARNING),  # the flag wins
    ("loud", None, "info", logging.INFO),  # an unknown value is ignored
])
def test_lse_log_level(monkeypatch, env, flag, default, level):
    from lse.runtime.logs import lse_log_level

    if env is None:
        monkeypatch.delenv("LSE_LOG_LEVEL", raising=False)
    else:
        monkeypatch.setenv("LSE_LOG_LEVEL", env)
    assert lse_log_level(flag, default) == level


def test_the_compile_log_names_the_cache_entry_not_its_temporary_directory(monkeypatch, tmp_path):
    from cache_fake import fake_compiles

    from lse.compiler import cache
    from lse.compiler.manifest import MANIFEST_NAME
    from lse.compiler.pipeline import CompileOptions

    def say(out_dir, report):
        report(f"artifact: {out_dir}")
        report(f"kernel layout: {out_dir / 'cpu-kernel-weights.safetensors'}")

    monkeypatch.setenv("LSE_CACHE_DIR", str(tmp_path))
    fake_compiles(monkeypatch, also=say)
    said: list[str] = []
    final, _ = cache.compiled_artifact(tmp_path / "model", CompileOptions(), report=said.append)
    assert final == tmp_path / "artifacts" / "k123" and (final / MANIFEST_NAME).is_file()
    assert said == [f"artifact: {final}", f"kernel layout: {final / 'cpu-kernel-weights.safetensors'}"]
    assert sorted(p.name for p in (tmp_path / "artifacts").iterdir()) == ["k123"]  # the temporary one is gone


@pytest.mark.parametrize("parser", ["lse.api.cli", "lse.runtime.cli", "lse.compiler.cli"])
def test_every_help_says_a_gguf_file_is_accepted(parser):
    import importlib

    text = importlib.import_module(parser).build_parser().format_help()
    assert "MODEL.gguf" in text and "a GGUF file" in text, text


NO_RAY = "import sys; sys.modules['ray'] = None; from lse.cluster.cli import main; sys.exit(main(sys.argv[1:]))"


@pytest.mark.parametrize("argv,status,out,err", [
    (["--help"], 0, "usage: lse-cluster", ""),
    (["--version"], 0, "lse-cluster", ""),
    (["some-model"], 2, "", "lse-cluster needs Ray Serve, LSE's cluster extra: pip install 'lse[cluster]'"),
])
def test_lse_cluster_without_ray(argv, status, out, err):
    """Without the cluster extra (Ray blocked from import): --help and
    --version answer, a run says what to install and exits 2, no traceback."""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", NO_RAY, *argv], capture_output=True, text=True, timeout=120)
    assert done.returncode == status, done.stderr
    assert out in done.stdout and err in done.stderr
    assert "Traceback" not in done.stderr
    if argv == ["--help"]:
        assert "pip install 'lse[cluster]'" in done.stdout
