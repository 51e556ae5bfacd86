"""Start ``lse-server`` as a real process on a free loopback port.

``start_server(model_dir, *extra_args)`` (fixture ``lse_server``) is a context manager yielding
``(base_url, process)`` once /health answers 200; it stops the process on the
way out. The server's log goes to a file; a failing test gets it attached to
its report (section "lse-server log"), and a server that never becomes healthy
fails with the log's tail in the message.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

# The first start of a model imports and compiles it, which takes minutes on a
# small machine; later starts hit the compile cache.
START_TIMEOUT_SECS = float(os.environ.get("LSE_E2E_START_TIMEOUT", "1800"))
STOP_TIMEOUT_SECS = 20.0
LOG_TAIL_CHARS = 20_000

# pid -> log file of every server running now, so a failing test's report can
# carry the logs of the servers it talked to.
_RUNNING_LOGS: dict[int, Path] = {}


def lse_server_command() -> list[str]:
    """The installed console script beside this interpreter: what users run."""
    return [str(Path(sys.executable).with_name("lse-server"))]


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def server_env(**overrides: str) -> dict[str, str]:
    """This environment without a stray LSE_API_KEY, plus ``overrides``."""
    env = {k: v for k, v in os.environ.items() if k != "LSE_API_KEY"}
    env.update(overrides)
    return env


def read_log(path: Path, tail: int = LOG_TAIL_CHARS) -> str:
    text = path.read_text(errors="replace") if path.exists() else "(no log)"
    return text[-tail:]


@contextmanager
def start_server(model_dir: str | os.PathLike[str] | None, *extra_args: str,
                 env: dict[str, str] | None = None,
                 timeout: float = START_TIMEOUT_SECS) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """Run ``lse-server [model_dir] --port N *extra_args`` until the block ends.

    ``model_dir=None`` starts the default model. The server is up (health 200)
    when the block starts, and terminated (then killed) when it ends.
    """
    port = free_port()
    base_url = f"http://127.0.0.1:{port}"
    model = [str(model_dir)] if model_dir is not None else []
    cmd = lse_server_command() + model + ["--host", "127.0.0.1", "--port", str(port), *extra_args]
    log_fd, log_name = tempfile.mkstemp(prefix="lse-server-", suffix=".log")
    log_path = Path(log_name)
    with os.fdopen(log_fd, "wb") as log_file:
        process = subprocess.Popen(cmd, stdout=log_file, stderr=subprocess.STDOUT,
                                   env=env if env is not None else server_env())
    _RUNNING_LOGS[process.pid] = log_path
    try:
        wait_healthy(base_url, process, log_path, timeout)
        yield base_url, process
    finally:
        _RUNNING_LOGS.pop(process.pid, None)
        stop_server(process)
        log_path.unlink(missing_ok=True)


def wait_healthy(base_url: str, process: subprocess.Popen[bytes], log_path: Path, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    last = "no answer yet"
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"lse-server exited with status {process.returncode} before /health answered 200\n"
                        f"--- lse-server log ---\n{read_log(log_path)}", pytrace=False)
        try:
            response = httpx.get(f"{base_url}/health", timeout=5)
            if response.status_code == 200:
                return
            last = f"{response.status_code} {response.text}"
        except httpx.TransportError as exc:
            last = repr(exc)
        time.sleep(0.25)
    stop_server(process)
    pytest.fail(f"lse-server did not become healthy in {timeout:.0f}s (last /health: {last})\n"
                f"--- lse-server log ---\n{read_log(log_path)}", pytrace=False)


def stop_server(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is not None:
        return
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(STOP_TIMEOUT_SECS)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> pytest.TestReport:
    report = yield
    if report.failed:
        for pid, log_path in list(_RUNNING_LOGS.items()):
            report.sections.append((f"lse-server log (pid {pid})", read_log(log_path)))
    return report


@pytest.fixture(scope="session")
def lse_server():
    """``with lse_server(model_dir, *extra_args, env=None) as (base_url, process):``
    (``start_server`` as a fixture; test modules can't import conftest)."""
    return start_server


@pytest.fixture(scope="session")
def lse_server_log():
    """``lse_server_log(process)``: what a running server has logged so far."""
    def read(process: subprocess.Popen[bytes]) -> str:
        return read_log(_RUNNING_LOGS[process.pid], tail=10**9)

    return read


@pytest.fixture(scope="session")
def lse_server_log_path():
    """``lse_server_log_path(process)``: the file a running server logs to."""
    def path(process: subprocess.Popen[bytes]) -> Path:
        return _RUNNING_LOGS[process.pid]

    return path


@pytest.fixture(scope="session")
def lse_server_exit():
    """``lse_server_exit(*args)``: run lse-server to its exit (for startup
    failures); returns the CompletedProcess with text stdout/stderr."""
    def run(*args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
        return subprocess.run(lse_server_command() + list(args), env=server_env(),
                              capture_output=True, text=True, timeout=timeout)

    return run


@pytest.fixture(scope="session")
def fixture_model():
    """``fixture_model(name)``: the directory of a generated fixture model."""
    from lse.fixtures.make_fixtures import fixture_dir

    return fixture_dir
