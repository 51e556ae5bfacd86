"""The auth matrix against a live server with --api-key: every method × path
spelling × credential. Without the key only the health route answers (and
only with its own body) and the chat page's own files (byte for byte what
the package ships, api/webui.py); with it, nothing is 401."""

from __future__ import annotations

import itertools

import httpx
import pytest

from lse.api.webui import shipped_files

from conftest import start_server

KEY = "s3cret"
PATHS = ["/v1/models", "/V1/models", "//v1/models", "/v1/models/", "/v1//models", "/v1/./models",
         "/v1/lse/../models", "/v1/%6Dodels", "/v1/models%2F", "/v1/lse/status", "/v1/lse/model_info",
         "/v1/chat/completions", "/v1/CHAT/completions", "/v1/completions/", "/health", "/HEALTH", "/health/",
         "//health", "/nope", "/", "/v1", "/v1/models?x=1", "/v1/models#f", "/.%2e/v1/models",
         "/v1/responses", "/v1/responses/resp_x", "/v1/responses/resp_x/cancel", "/v1/Responses",
         "/ui/app.js", "/UI/app.js", "/ui/app.js/", "/ui/nope.js", "/ui/../v1/models", "/ui/%2e%2e/v1/models",
         "/ui//v1/models", "/ui/..%2fapi%2fapp.py", "/index.html"]
METHODS = ["GET", "POST", "PUT", "DELETE", "HEAD", "OPTIONS"]
AUTHS = {"none": {}, "wrong": {"authorization": "Bearer nope"}, "basic": {"authorization": f"Basic {KEY}"},
         "right": {"authorization": f"Bearer {KEY}"}, "lower": {"authorization": f"bearer {KEY}"}}


@pytest.fixture(scope="module")
def keyed_server():
    from lse.fixtures.make_fixtures import fixture_dir

    with start_server(fixture_dir("smollm_like"), "--api-key", KEY) as running:
        yield running


def test_no_path_spelling_or_method_gets_past_the_key(keyed_server, figures):
    base_url, _ = keyed_server
    page = set(shipped_files().values())
    failures, sent = [], 0
    with httpx.Client(base_url=base_url, timeout=30) as http:
        for path, method, (auth, headers) in itertools.product(PATHS, METHODS, AUTHS.items()):
            body = b'{"messages": [{"role": "user", "content": "a"}], "prompt": "a", "max_tokens": 1}'
            r = http.request(method, base_url + path, headers={**headers, "content-type": "application/json"},
                             content=body if method in ("POST", "PUT") else None)
            sent += 1
            authorized = auth in ("right", "lower")
            page_file = method in ("GET", "HEAD") and r.status_code == 200 and (
                method == "HEAD" or r.content in page)
            health = not page_file and method in ("GET", "HEAD") and r.status_code == 200 and (
                method == "HEAD" or r.json() == {"status": "ok"})
            if r.status_code >= 500:
                failures.append((method, path, auth, r.status_code))
            elif authorized and r.status_code == 401:
                failures.append((method, path, auth, r.status_code))
            elif not authorized and r.status_code != 401 and not health and not page_file:
                failures.append((method, path, auth, r.status_code, r.text[:200]))
    figures["auth_requests"] = sent
    assert failures == []
