"""A disconnect storm: many clients fill the queue and hang up (before the
first byte, after the first chunk, mid non-streamed reply). Afterwards no slot
or queue place is held, the next request is admitted at once, and the
server's memory has not grown by much."""

from __future__ import annotations

import asyncio
import time

import httpx

from conftest import QUEUE

BODY = {"messages": [{"role": "user", "content": "Tell me a long story."}], "temperature": 0}
ROUNDS = 6
RSS_GROWTH_LIMIT_KB = 64 * 1024


def rss_kb(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))


async def _hang_up(client: httpx.AsyncClient, i: int) -> None:
    stream = i % 3 != 2
    try:
        async with client.stream("POST", "/v1/chat/completions", json={**BODY, "stream": stream},
                                 timeout=0.3 if i % 3 == 0 else 5) as r:
            if stream and i % 3 == 1:
                async for _ in r.aiter_lines():
                    break  # one line, then hang up
    except httpx.TimeoutException:
        pass  # hang up while waiting


async def _storm(base_url: str) -> int:
    sent = 0
    for _ in range(ROUNDS):
        async with httpx.AsyncClient(base_url=base_url) as client:
            await asyncio.gather(*(_hang_up(client, i) for i in range(QUEUE + 1)))
            sent += QUEUE + 1
    return sent


def test_disconnect_storm_frees_every_place_and_keeps_memory_flat(server, figures):
    base_url, process = server
    with httpx.Client(base_url=base_url, timeout=60) as http:
        http.post("/v1/chat/completions", json={**BODY, "max_tokens": 2})  # warm: first-request allocations
        before = rss_kb(process.pid)
        sent = asyncio.run(_storm(base_url))
        deadline = time.monotonic() + 10
        while (engine := http.get("/v1/lse/status").json()["engine"])["active"] or engine["queued"]:
            assert time.monotonic() < deadline, engine
            time.sleep(0.05)
        # Nothing left behind: a request the size of the whole queue is admitted at once.
        full = http.post("/v1/completions", json={"prompt": ["a"] * QUEUE, "max_tokens": 1})
        assert full.status_code == 200, full.text
        growth = rss_kb(process.pid) - before
    figures.update(storm_requests=sent, storm_slots_leaked=engine["active"] + engine["queued"],
                   storm_rss_growth_kb=growth)
    assert growth < RSS_GROWTH_LIMIT_KB, growth
