"""Several models behind one lse-server (#40), driven with the openai SDK:
two fixture models and a broken one, on the host interpreter (no compile).

Both models listed with their status; each answering by name with the token
ids a single-model server of it gives; LRU unload under --models-max 1; a
stream and a plain request arriving while their model loads share one load;
the broken model's 500 model_load_failed beside the good ones; unknown names
404 model_not_found; the key on the operator routes.
"""

from __future__ import annotations

import concurrent.futures
import time

import httpx
import openai
import pytest

KEY = "sk-models"
ARGS = ("--pool", "cpu:0", "--kv-len", "256", "--parallel", "1")
PROMPT = "Once upon a time"


@pytest.fixture(scope="module")
def dirs(fixture_model):
    return {"smol": fixture_model("smollm_like"), "qwen": fixture_model("qwen38_like"),
            "broken": fixture_model("broken_template")}


@pytest.fixture(scope="module")
def server(lse_server, dirs):
    named = [a for name, path in dirs.items() for a in ("--served-model-name", f"{name}={path}")]
    with lse_server(dirs["smol"], dirs["qwen"], dirs["broken"], *ARGS, *named, "--models-max", "1",
                    "--api-key", KEY) as (base_url, process):
        yield base_url, process


def client(base_url: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{base_url}/v1", api_key=KEY, max_retries=0)


def token_ids(base_url: str, model: str) -> list[int]:
    """A greedy completion's tokens, as ids (through the same server's /tokenize of each token's text)."""
    reply = client(base_url).completions.create(model=model, prompt=PROMPT, max_tokens=6, temperature=0,
                                                logprobs=1)
    auth = {"authorization": f"Bearer {KEY}"}
    return [httpx.post(f"{base_url}/tokenize", json={"model": model, "content": t, "add_special": False},
                       headers=auth, timeout=60).json()["tokens"][0] for t in reply.choices[0].logprobs.tokens]


def status(base_url: str) -> dict[str, dict]:
    rows = httpx.get(f"{base_url}/v1/lse/status", headers={"authorization": f"Bearer {KEY}"}, timeout=30).json()
    return {row["name"]: row for row in rows["models"]}


def test_every_model_is_listed_with_its_status(server, lse_server_log):
    base_url, process = server
    listed = client(base_url).models.list().data
    assert [m.id for m in listed] == ["smol", "qwen", "broken"]
    assert {m.model_extra["status"] for m in listed} <= {"unloaded", "loaded", "loading", "failed"}
    log = lse_server_log(process)
    assert "lse-server: model smol: " in log and "lse-server: model broken: " in log


def test_each_model_answers_by_name_as_its_single_model_server_does(server, lse_server, dirs):
    base_url, _ = server
    from_set = {name: token_ids(base_url, name) for name in ("smol", "qwen")}
    assert from_set["smol"] != from_set["qwen"]
    for name in ("smol", "qwen"):
        with lse_server(dirs[name], *ARGS, "--api-key", KEY) as (single_url, _):
            assert token_ids(single_url, "anything") == from_set[name]


def test_models_max_1_unloads_the_least_recently_used(server):
    base_url, _ = server
    client(base_url).completions.create(model="smol", prompt=PROMPT, max_tokens=2)
    assert (status(base_url)["smol"]["status"], status(base_url)["qwen"]["status"]) == ("loaded", "unloaded")
    client(base_url).completions.create(model="qwen", prompt=PROMPT, max_tokens=2)
    rows = status(base_url)
    assert (rows["smol"]["status"], rows["qwen"]["status"]) == ("unloaded", "loaded")
    assert rows["qwen"]["memory_bytes"] > 0 and rows["qwen"]["engine"]["slots"] == 1
    listed = {m.id: m.model_extra for m in client(base_url).models.list().data}
    assert listed["qwen"]["context_length"] == 256 and listed["smol"]["status"] == "unloaded"


def test_requests_during_a_load_share_it(server):
    base_url, _ = server
    auth = {"authorization": f"Bearer {KEY}"}
    httpx.post(f"{base_url}/v1/lse/models/smol/unload", headers=auth, timeout=60)
    loads = status(base_url)["smol"]["loads"]
    sdk = client(base_url)

    def plain() -> str:
        return sdk.chat.completions.create(model="smol", messages=[{"role": "user", "content": "hi"}],
                                           max_tokens=3, temperature=0).choices[0].message.content

    def streamed() -> str:
        chunks = sdk.chat.completions.create(model="smol", messages=[{"role": "user", "content": "hi"}],
                                             max_tokens=3, temperature=0, stream=True)
        return "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)

    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        a, b = pool.submit(plain), pool.submit(streamed)
        assert a.result(120) == b.result(120)
    assert status(base_url)["smol"]["loads"] == loads + 1


def test_a_broken_model_fails_alone(server):
    base_url, _ = server
    with pytest.raises(openai.InternalServerError) as info:
        client(base_url).chat.completions.create(model="broken", messages=[{"role": "user", "content": "hi"}])
    err = info.value.body
    assert (info.value.status_code, err["code"], err["model"]) == (500, "model_load_failed", "broken")
    assert "endfo" in err["message"] or "template" in err["message"]
    assert status(base_url)["broken"]["status"] == "failed"
    reply = client(base_url).completions.create(model="smol", prompt=PROMPT, max_tokens=2)
    assert reply.model == "smol"


def test_unknown_names_are_404_model_not_found(server):
    base_url, _ = server
    with pytest.raises(openai.NotFoundError) as info:
        client(base_url).chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "hi"}])
    assert (info.value.body["code"], info.value.body["models"]) == ("model_not_found", ["smol", "qwen", "broken"])
    with pytest.raises(openai.NotFoundError):
        client(base_url).models.retrieve("gpt-4o")


def test_operator_routes_need_the_key(server):
    base_url, _ = server
    for path in ("/v1/lse/models/qwen/load", "/v1/lse/models/qwen/unload", "/v1/lse/models/refresh"):
        refused = httpx.post(f"{base_url}{path}", timeout=60)
        assert (refused.status_code, refused.json()["error"]["code"]) == (401, "invalid_api_key")
    auth = {"authorization": f"Bearer {KEY}"}
    loaded = httpx.post(f"{base_url}/v1/lse/models/qwen/load", headers=auth, timeout=120)
    assert (loaded.status_code, loaded.json()["status"]) == (200, "loaded")
    unloaded = httpx.post(f"{base_url}/v1/lse/models/qwen/unload", headers=auth, timeout=60)
    assert (unloaded.status_code, unloaded.json()["status"]) == (200, "unloaded")


def test_models_dir_is_scanned_at_start_and_on_refresh(lse_server, dirs, tmp_path):
    (tmp_path / "first").symlink_to(dirs["smol"])
    (tmp_path / "notes.txt").write_text("not a model")
    auth = {"authorization": f"Bearer {KEY}"}
    with lse_server(None, "--models-dir", str(tmp_path), *ARGS, "--api-key", KEY, "--preload", "first",
                    "--keep-alive", "1") as (base_url, _):
        assert [m.id for m in client(base_url).models.list().data] == ["first"]
        assert status(base_url)["first"]["status"] == "loaded"  # --preload: loaded before /health said 200
        deadline = time.monotonic() + 30
        while status(base_url)["first"]["status"] == "loaded" and time.monotonic() < deadline:
            time.sleep(0.2)
        assert status(base_url)["first"]["status"] == "unloaded"  # --keep-alive 1: unloaded once idle
        assert client(base_url).completions.create(model="whatever", prompt=PROMPT, max_tokens=2).model == "whatever"
        (tmp_path / "second").symlink_to(dirs["qwen"])
        refreshed = httpx.post(f"{base_url}/v1/lse/models/refresh", headers=auth, timeout=60).json()
        assert refreshed == {"added": ["second"], "removed": [], "models": ["first", "second"]}
        assert client(base_url).completions.create(model="second", prompt=PROMPT, max_tokens=2).model == "second"
        assert status(base_url)["second"]["status"] == "loaded"
        with pytest.raises(openai.NotFoundError):  # two models now: names must match
            client(base_url).completions.create(model="whatever", prompt=PROMPT, max_tokens=2)
        (tmp_path / "first").unlink()
        refreshed = httpx.post(f"{base_url}/v1/lse/models/refresh", headers=auth, timeout=60).json()
        assert refreshed == {"added": [], "removed": ["first"], "models": ["second"]}
