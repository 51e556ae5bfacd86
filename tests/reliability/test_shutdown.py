"""SIGTERM drains: the running stream gets --shutdown-timeout to finish, then
ends with the 503 server_shutting_down error in the stream and [DONE]; a
queued request gets 503; the listener closes; the process exits 0."""

from __future__ import annotations

import json
import signal
import threading
import time

import httpx

from conftest import start_server

LONG = {"messages": [{"role": "user", "content": "Tell me a long story."}], "temperature": 0}


def test_sigterm_drains_and_exits_0():
    from lse.fixtures.make_fixtures import fixture_dir

    replies: dict[str, httpx.Response] = {}

    def post(name: str, base_url: str, body: dict) -> None:
        replies[name] = httpx.post(f"{base_url}/v1/chat/completions", json=body, timeout=60)

    # A context of 16k tokens keeps the running reply going past the SIGTERM
    # (the fixture fills 512 in well under a second on a quiet machine).
    with start_server(fixture_dir("smollm_like"), "--shutdown-timeout", "1", "--kv-len", "16384") as (base_url, process):
        running = threading.Thread(target=post, args=("running", base_url, {**LONG, "stream": True}))
        running.start()
        time.sleep(0.5)
        queued = threading.Thread(target=post, args=("queued", base_url, LONG))
        queued.start()
        time.sleep(0.5)
        t0 = time.monotonic()
        process.send_signal(signal.SIGTERM)
        assert process.wait(30) == 0
        took = time.monotonic() - t0
        running.join(10)
        queued.join(10)
    assert replies["queued"].status_code == 503, replies["queued"].text
    assert replies["queued"].json()["error"]["code"] == "server_shutting_down"
    frames = [line[6:] for line in replies["running"].text.splitlines() if line.startswith("data: ")]
    assert frames[-1] == "[DONE]"
    assert json.loads(frames[-2])["error"]["code"] == "server_shutting_down"
    assert len(frames) > 3  # it ran until the timeout, then ended
    assert 1 <= took < 10
