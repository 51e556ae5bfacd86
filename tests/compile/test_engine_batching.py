"""Continuous batching over slots, cancellation, and the lse command."""

from __future__ import annotations

import threading

from lse.runtime.api import lse_close, lse_open, lse_request, lse_status
from lse.runtime.cli import main as lse_main
from lse.fixtures.make_fixtures import fixture_dir


def body(content: str, **fields) -> dict:
    return {"messages": [{"role": "user", "content": content}], "temperature": 0, "max_tokens": 12, **fields}


def test_concurrent_requests_in_two_slots_equal_sequential_ones():
    prompts = ["first prompt", "a second, longer prompt here", "third"]
    sequential = lse_open({"model": str(fixture_dir("llama")), "kv_len": 96, "parallel": 1})
    try:
        want = [lse_request(sequential, body(p)).result()[1]["choices"] for p in prompts]
    finally:
        lse_close(sequential)
    batched = lse_open({"model": str(fixture_dir("llama")), "kv_len": 96, "parallel": 2})
    results: dict[int, list] = {}
    try:
        assert lse_status(batched)["engine"]["slots"] == 2
        handles = [lse_request(batched, body(p)) for p in prompts]
        threads = [threading.Thread(target=lambda i=i, h=h: results.__setitem__(i, h.result()[1]["choices"]))
                   for i, h in enumerate(handles)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=120)
    finally:
        lse_close(batched)
    assert [results[i] for i in range(3)] == want


def test_cancel_frees_the_slot_at_once():
    engine = lse_open({"model": str(fixture_dir("llama")), "kv_len": 512})
    try:
        handle = lse_request(engine, body("cancel me", max_tokens=400, stream=True))
        events = handle.events()
        assert next(events)["type"] == "chunk"
        handle.cancel()
        rest = list(events)
        final = [c for e in rest if e["type"] == "chunk" for c in e["data"]["choices"] if c.get("stop_reason")]
        assert final and final[-1]["stop_reason"] == "cancelled"
        assert rest[-1]["type"] == "done"
        assert lse_status(engine)["engine"]["active"] == 0
        status, _ = lse_request(engine, body("next one")).result()
        assert status == 200
    finally:
        lse_close(engine)


def test_lse_command_one_shot(capsys):
    assert lse_main([str(fixture_dir("llama")), "-p", "hello", "--temperature", "0", "--max-tokens", "5",
                     "--kv-len", "64"]) == 0
    out = capsys.readouterr().out
    engine = lse_open({"model": str(fixture_dir("llama")), "kv_len": 64})
    try:
        _, reply = lse_request(engine, body("hello", max_tokens=5)).result()
    finally:
        lse_close(engine)
    assert out == reply["choices"][0]["message"]["content"] + "\n"


def test_lse_command_startup_failure_exits_1(capsys):
    assert lse_main(["/nonexistent/model", "-p", "hi"]) == 1
    assert "startup failed" in capsys.readouterr().err


def test_long_prompt_prefilled_in_chunks_while_another_stream_decodes():
    """A 300-token prompt joins while a stream decodes: it is prefilled in
    chunks between decode steps, and both replies equal their sequential ones."""
    long_prompt = " ".join(f"w{i % 37}" for i in range(75))
    bodies = [body("short one", max_tokens=40), body(long_prompt, max_tokens=6)]
    sequential = lse_open({"model": str(fixture_dir("llama")), "kv_len": 512, "parallel": 1})
    try:
        want = [lse_request(sequential, b).result()[1]["choices"] for b in bodies]
        assert lse_request(sequential, bodies[1]).result()[1]["usage"]["prompt_tokens"] > 256
    finally:
        lse_close(sequential)
    batched = lse_open({"model": str(fixture_dir("llama")), "kv_len": 512, "parallel": 2})
    try:
        first = lse_request(batched, bodies[0])
        events = first.events()
        next(events), next(events)  # the first stream is generating
        second = lse_request(batched, bodies[1])
        got_second = second.result()[1]["choices"]
        rest = [e for e in events]
        got_first = rest[-1]["data"]["choices"]
    finally:
        lse_close(batched)
    assert [got_first, got_second] == want
