"""The chat page's routes (api/webui.py) over the fake engine: / and /ui/<file>
with their content types and headers, open without the API key while every
other route keeps it, and --no-web-ui turning them off."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from api_fake_engine import assert_error, run

from lse.api.cli import build_parser, server_settings
from lse.api.webui import CONTENT_TYPES, shipped_files

WEB = Path(__file__).resolve().parents[2] / "api" / "web"
ASSETS = sorted(p.name for p in WEB.iterdir() if p.name != "index.html")
TYPES = {".js": "text/javascript; charset=utf-8", ".css": "text/css; charset=utf-8", ".svg": "image/svg+xml"}


def test_the_page_is_index_html_with_a_policy_that_keeps_it_on_this_server():
    async def scenario(client, runtime, app):
        return await client.get("/")

    response = run(scenario)
    assert response.status_code == 200
    assert response.headers["content-type"] == "text/html; charset=utf-8"
    assert response.content == (WEB / "index.html").read_bytes()
    csp = response.headers["content-security-policy"]
    for directive in ("default-src 'none'", "script-src 'self'", "connect-src 'self'", "style-src 'self'"):
        assert directive in csp
    assert response.headers["x-content-type-options"] == "nosniff"


@pytest.mark.parametrize("name", ASSETS)
def test_each_asset_is_served_with_its_content_type(name):
    async def scenario(client, runtime, app):
        return await client.get("/ui/" + name)

    response = run(scenario)
    assert response.status_code == 200
    assert response.headers["content-type"] == TYPES[Path(name).suffix]
    assert response.content == (WEB / name).read_bytes()


def test_an_unchanged_asset_revalidates_to_304():
    async def scenario(client, runtime, app):
        first = await client.get("/ui/app.js")
        again = await client.get("/ui/app.js", headers={"if-none-match": first.headers["etag"]})
        stale = await client.get("/ui/app.js", headers={"if-none-match": '"other"'})
        return first, again, stale

    first, again, stale = run(scenario)
    assert first.headers["cache-control"] == "no-cache"
    assert (again.status_code, again.content, stale.status_code) == (304, b"", 200)


def test_a_name_not_shipped_is_the_fallback_404_not_a_file_read():
    async def scenario(client, runtime, app):
        return [await client.get(p) for p in ("/ui/nope.js", "/ui/", "/ui/..%2fapp.py", "/index.html")]

    for response in run(scenario):
        assert_error(response, 404, "not_found_error", "not_found")


def test_every_file_the_page_references_is_shipped_and_local():
    files = shipped_files()
    assert set(files) == {"index.html", *ASSETS}
    assert all(Path(n).suffix in CONTENT_TYPES for n in files)
    html = files["index.html"].decode()
    refs = re.findall(r'(?:src|href)="([^"#]+)"', html)
    assert refs and all(r.startswith("ui/") and r[3:] in files for r in refs), refs
    for name in ASSETS:
        if name.endswith(".js"):
            for spec in re.findall(r'^import .* from "([^"]+)";$', files[name].decode(), re.M):
                assert spec.startswith("./") and spec[2:] in files, (name, spec)
    # No asset loads anything from another host: no @import, url() or absolute src in CSS/HTML.
    assert "@import" not in files["style.css"].decode() and "url(" not in files["style.css"].decode()


@pytest.mark.parametrize("path,authorization,status", [
    ("/", None, 200),
    ("/ui/app.js", None, 200),
    ("/ui/style.css", "Bearer wrong", 200),
    ("/ui/nope.js", None, 401),
    ("/ui/nope.js", "Bearer s3cret", 404),
    ("/v1/models", None, 401),
    ("/v1/models", "Bearer s3cret", 200),
])
def test_the_page_is_open_without_the_key_and_nothing_else_is(path, authorization, status):
    headers = {"authorization": authorization} if authorization else {}

    async def scenario(client, runtime, app):
        return await client.get(path, headers=headers)

    response = run(scenario, api_key="s3cret")
    assert response.status_code == status, response.text
    if status == 401:
        assert_error(response, 401, "authentication_error", "invalid_api_key")


def test_no_web_ui_answers_404_there():
    async def scenario(client, runtime, app):
        return [await client.get(p) for p in ("/", "/ui/app.js")], await client.get("/v1/models")

    pages, models = run(scenario, web_ui=False)
    for response in pages:
        assert_error(response, 404, "not_found_error", "not_found")
    assert models.status_code == 200


def test_the_flag_reaches_the_settings():
    assert server_settings(build_parser().parse_args([])).web_ui is True
    assert server_settings(build_parser().parse_args(["--no-web-ui"])).web_ui is False


def test_another_method_on_the_page_is_405_with_allow_get():
    async def scenario(client, runtime, app):
        return await client.post("/", content=b"x"), await client.delete("/ui/app.js")

    for response in run(scenario):
        assert_error(response, 405, "invalid_request_error", "method_not_allowed")
        assert response.headers["allow"] == "GET"
