"""The browser tier: the chat page at / in headless chromium, driven by
Playwright's Python package, against live lse-servers on fixtures
(tests/e2e/conftest.py's helpers).

It drives the system's chromium (Debian: ``apt-get install -y chromium``);
Playwright never downloads a browser here. Without playwright or chromium
every test is skipped, saying which is missing.

Each test gets a fresh browser context (empty localStorage) and a page
whose console and network are recorded; at the end of the test the page
must have logged no error or warning, thrown nothing, and asked no host
but the server for anything.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlsplit

import pytest

_spec = importlib.util.spec_from_file_location("lse_e2e_server", Path(__file__).parents[1] / "e2e" / "conftest.py")
_e2e = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_e2e)

start_server = _e2e.start_server
pytest_runtest_makereport = _e2e.pytest_runtest_makereport

CHROMIUM = os.environ.get("LSE_CHROMIUM", "/usr/bin/chromium")
# No sandbox: CI runs as root in a container. The rest keeps chromium from
# reaching any host on its own (updates, sync, field trials, QUIC probes).
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
KEY = "s3cret"
DOCS = Path(__file__).resolve().parents[2] / "docs" / "web-ui"


def _missing() -> str | None:
    if importlib.util.find_spec("playwright") is None:
        return "playwright is not installed (pip install -e '.[test]')"
    if not (shutil.which(CHROMIUM) or Path(CHROMIUM).is_file()):
        return f"no chromium at {CHROMIUM} (apt-get install -y chromium, or set LSE_CHROMIUM)"
    return None


@pytest.fixture(scope="session")
def browser():
    reason = _missing()
    if reason:
        pytest.skip(reason)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield launched
        launched.close()


class Watched:
    """A page and what it did: console messages, page errors, requests."""

    def __init__(self, context, base_url: str) -> None:
        self.context = context
        self.base_url = base_url
        self.page = context.new_page()
        self.console: list[tuple[str, str]] = []
        self.errors: list[str] = []
        self.requests: list[str] = []
        self.allowed: set[int] = set()  # HTTP statuses the test expects the page to get
        self.page.on("console", lambda m: self.console.append((m.type, m.text)))
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.on("request", lambda r: self.requests.append(r.url))

    def open(self, path: str = "/") -> None:
        self.page.goto(self.base_url + path)
        self.page.wait_for_selector("html[data-ready=true]", timeout=30_000)

    def allow_status(self, status: int) -> None:
        """Chromium logs each 4xx/5xx reply as a console error ("Failed to load
        resource"); a test that provokes one on purpose says which."""
        self.allowed.add(status)

    def problems(self) -> list[str]:
        own = urlsplit(self.base_url).netloc
        expected = tuple(f"Failed to load resource: the server responded with a status of {s} "
                         for s in self.allowed)
        bad = [f"console {kind}: {text}" for kind, text in self.console
               if kind in ("error", "warning") and not (expected and text.startswith(expected))]
        bad += [f"page error: {e}" for e in self.errors]
        bad += [f"request to another host: {u}" for u in self.requests
                if urlsplit(u).scheme in ("http", "https", "ws", "wss") and urlsplit(u).netloc != own]
        return bad


@pytest.fixture
def open_page(browser):
    """``open_page(base_url, **context_options)``: a Watched page in a fresh context."""
    opened: list[Watched] = []

    def make(base_url: str, **options) -> Watched:
        watched = Watched(browser.new_context(**options), base_url)
        opened.append(watched)
        return watched

    yield make
    problems = [p for w in opened for p in w.problems()]
    for w in opened:
        w.context.close()
    assert problems == []


PROCESSES: dict[str, object] = {}  # base_url -> the lse-server process, for its log


@contextmanager
def _server(name: str, *args: str):
    from lse.fixtures.make_fixtures import fixture_dir

    with start_server(fixture_dir(name), *args) as (base_url, process):
        PROCESSES[base_url] = process
        yield base_url, process
        PROCESSES.pop(base_url)


@pytest.fixture(scope="session")
def server_log():
    """``server_log(base_url)``: what that server has logged so far."""
    return lambda base_url: _e2e.read_log(_e2e._RUNNING_LOGS[PROCESSES[base_url].pid], tail=10**9)


@pytest.fixture(scope="session")
def chat_server():
    """smollm_like with a 256-token context: a random reply fills it."""
    with _server("smollm_like", "--kv-len", "256") as (base_url, _):
        yield base_url


@pytest.fixture(scope="session")
def keyed_server():
    with _server("smollm_like", "--kv-len", "256", "--api-key", KEY) as (base_url, _):
        yield base_url


@pytest.fixture(scope="session")
def fallback_server():
    """smollm_like with --no-kernel silu: every reply reports CPU fallback in lse_warnings."""
    with _server("smollm_like", "--no-kernel", "silu", "--kv-len", "64") as (base_url, _):
        yield base_url


@pytest.fixture(scope="session")
def long_server():
    """smollm_like with an 8192-token context: a greedy reply runs for seconds, long enough to stop."""
    with _server("smollm_like", "--kv-len", "8192") as (base_url, _):
        yield base_url


@pytest.fixture(scope="session")
def thinking_server():
    """qwen38_like: thinking levels none, xhigh (default), medium, low."""
    with _server("qwen38_like") as (base_url, _):
        yield base_url


@pytest.fixture(scope="session")
def scripted_server():
    """scripted_reasoning: replies reasoning "abc", then "Done", whatever the prompt."""
    with _server("scripted_reasoning") as (base_url, _):
        yield base_url


@pytest.fixture(scope="session")
def docs_dir(tmp_path_factory) -> Path:
    """Where the screenshots and figures go: a temporary folder, so a test run
    leaves the checkout as it was; docs/web-ui/ with LSE_UPDATE_DOCS=1."""
    if os.environ.get("LSE_UPDATE_DOCS") == "1":
        DOCS.mkdir(parents=True, exist_ok=True)
        return DOCS
    return tmp_path_factory.mktemp("web-ui")
