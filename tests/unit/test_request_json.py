"""lse_request_json: JSON bytes and an HTTP path in, the HTTP server's 400s and 404 out
(the C API's lse_request is this). No engine is needed: these fail before it."""

from __future__ import annotations

import pytest

from lse.runtime.api import lse_request_json
from lse.runtime.openai.body import dumps, parse_json_object


@pytest.mark.parametrize("data,path,status,code,fragment", [
    (b"{nope", "/v1/chat/completions", 400, "invalid_json", "not valid JSON"),
    (b"", "/v1/completions", 400, "invalid_json", "not valid JSON"),
    (b'{"temperature": NaN}', "/v1/chat/completions", 400, "invalid_json", "NaN is not a JSON value"),
    (b"\xff{}", "/v1/chat/completions", 400, "invalid_json", "not valid JSON"),
    (b"[1]", "/v1/completions", 400, None, "must be a JSON object, not an array"),
    (b"{}", "/v1/audio/speech", 404, "not_found", "no route POST /v1/audio/speech"),
])
def test_refused_before_the_engine(data, path, status, code, fragment):
    got_status, body = lse_request_json(None, data, path).result()
    assert (got_status, body["error"]["code"]) == (status, code)
    assert fragment in body["error"]["message"]


def test_dumps_is_compact_utf8():
    assert dumps({"a": "é", "b": [1, None]}) == '{"a":"é","b":[1,null]}'.encode()
    assert parse_json_object(dumps({"x": 1})) == {"x": 1}
