"""lse-cluster end to end: the openai SDK against the ingress of 2 replicas.

One module-scoped cluster (conftest.py); the tests run in file order, the
replica kill last.
"""

from __future__ import annotations

import json
import threading
from concurrent.futures import ThreadPoolExecutor

import httpx
import openai
import pytest

pytest.importorskip("ray.serve", reason="the cluster tier needs Ray Serve: pip install -e '.[cluster]' "
                    "(the test extra includes it)")
import ray

REPLICAS = 2  # conftest.REPLICAS
EOS = 2  # smollm_like's <|im_end|>: biased away where a reply must run to max_tokens
NO_EOS = {str(EOS): -100}


def client(base_url: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{base_url}/v1", api_key="unused", max_retries=0, timeout=120)


def test_chat_and_its_stream_through_the_ingress(lse_cluster: str) -> None:
    c = client(lse_cluster)
    model = c.models.list().data[0].id
    messages = [{"role": "user", "content": "Say something about rivers and the sea."}]
    reply = c.chat.completions.create(model=model, messages=messages, max_tokens=12, temperature=0)
    chunks = list(c.chat.completions.create(model=model, messages=messages, max_tokens=12, temperature=0,
                                            stream=True, stream_options={"include_usage": True}))
    streamed = "".join(ch.choices[0].delta.content or "" for ch in chunks if ch.choices)
    assert reply.usage.completion_tokens > 0
    assert streamed == reply.choices[0].message.content  # the same model on either replica: same greedy reply
    assert chunks[-1].usage.completion_tokens == reply.usage.completion_tokens


def test_conversations_keep_their_replica(lse_cluster: str) -> None:
    """Two conversations, turns interleaved: each later turn finds its prefix cached."""
    c = client(lse_cluster)
    model = c.models.list().data[0].id
    openers = ["Tell me about the mountains in the north and their old stone villages.",
               "What do you know about ships, harbours and the people who sail them?"]
    conversations = [[{"role": "user", "content": text}] for text in openers]
    cached: list[list[int]] = [[], []]
    for turn in range(3):
        for i, messages in enumerate(conversations):
            reply = c.chat.completions.create(model=model, messages=messages, max_tokens=6, temperature=0)
            cached[i].append(reply.usage.prompt_tokens_details.cached_tokens)
            messages += [{"role": "assistant", "content": reply.choices[0].message.content},
                         {"role": "user", "content": f"And then, part {turn + 2}?"}]
    for turns in cached:
        assert all(n > 0 for n in turns[1:]), f"cached_tokens per turn: {cached}"


def test_status_reports_every_replica(lse_cluster: str, cluster_status) -> None:
    body = cluster_status(lse_cluster)
    assert len(body["replicas"]) == REPLICAS
    assert all(r["engine"]["slots"] == 1 for r in body["replicas"])
    assert body["engine"]["slots"] == REPLICAS
    metrics = httpx.get(f"{lse_cluster}/metrics", timeout=10).text
    assert f"lse_slots {float(REPLICAS)}" in metrics


def test_full_queues_everywhere_answer_503_with_retry_after(lse_cluster: str) -> None:
    capacity = REPLICAS * (1 + 2)  # --parallel 1, --queue-size 2 on each
    body = {"messages": [{"role": "user", "content": "Count the stars."}], "max_tokens": 400,
            "logit_bias": NO_EOS}

    def send(_: int) -> httpx.Response:
        return httpx.post(f"{lse_cluster}/v1/chat/completions", json=body, timeout=300)

    with ThreadPoolExecutor(capacity + 4) as pool:
        replies = list(pool.map(send, range(capacity + 4)))
    refused = [r for r in replies if r.status_code == 503]
    assert sorted({r.status_code for r in replies}) == [200, 503], [r.status_code for r in replies]
    assert len(refused) >= 2
    for r in refused:
        # the refusing replica's estimate (error.retry_after), or 1 where the ingress refused
        assert r.headers["retry-after"] == str(r.json()["error"].get("retry_after", 1))
        assert r.json()["error"]["code"] == "server_overloaded"


def test_replica_killed_mid_stream(lse_cluster: str, cluster_status, cluster_replicas) -> None:
    """Its stream ends with the documented in-stream error and [DONE]; the next
    requests succeed on the other replica; Serve replaces the killed one."""
    before = {r["replica"] for r in cluster_replicas(lse_cluster, REPLICAS, 60)}
    lines: list[str] = []
    started = threading.Event()
    body = {"messages": [{"role": "user", "content": "Tell a very long tale."}], "max_tokens": 1900,
            "stream": True, "logit_bias": NO_EOS}

    def read_stream() -> None:
        with httpx.stream("POST", f"{lse_cluster}/v1/chat/completions", json=body, timeout=120) as response:
            for line in response.iter_lines():
                if line.startswith("data: "):
                    lines.append(line[len("data: "):])
                    started.set()

    reader = threading.Thread(target=read_stream)
    reader.start()
    assert started.wait(60)
    victim = busy_replica(lse_cluster, cluster_status)
    ray.kill(replica_actor(victim), no_restart=True)
    reader.join(120)
    assert not reader.is_alive()
    assert len(lines) < 1900, "the stream ended before the kill; nothing was tested"
    assert lines[-1] == "[DONE]"
    error = json.loads(lines[-2])["error"]
    assert (error["code"], error["type"]) == ("replica_unavailable", "unavailable_error")
    c = client(lse_cluster)
    model = c.models.list().data[0].id
    for i in range(4):
        reply = c.chat.completions.create(model=model, messages=[{"role": "user", "content": f"Hello {i}"}],
                                          max_tokens=4)
        assert reply.choices[0].finish_reason in ("length", "stop")
    # Serve starts a replacement; it rejoins the routing once its engine is open.
    replaced = cluster_replicas(lse_cluster, REPLICAS, 300, exclude=frozenset({victim}))
    assert len({r["replica"] for r in replaced} - before) == 1


def busy_replica(base_url: str, cluster_status) -> str:
    """The replica running the one request: the router counts it at once
    (``ongoing_requests``); the engine's own count comes each second."""
    for _ in range(60):
        replicas = cluster_status(base_url)["replicas"]
        for busy in ([r["replica"] for r in replicas if r["ongoing_requests"]],
                     [r["replica"] for r in replicas if r["engine"] and r["engine"]["active"]]):
            if len(busy) == 1:
                return busy[0]
        threading.Event().wait(0.25)
    pytest.fail("no replica reported the running stream")


def replica_actor(replica: str):
    for actor in ray.util.list_named_actors(all_namespaces=True):
        if actor["name"].startswith("SERVE_REPLICA::") and actor["name"].endswith(f"#{replica}"):
            return ray.get_actor(actor["name"], namespace=actor["namespace"])
    raise AssertionError(f"no actor for replica {replica}")
