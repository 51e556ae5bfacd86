"""The C API (lse.h, liblse.so): C programs built with ``cc`` and
``lse-config --cflags --libs``, run with no Python environment at all (no
PYTHONPATH, no LD_LIBRARY_PATH, no venv on PATH), against fixture models.

``capi/driver.c`` opens one engine and runs the commands it is given,
printing one line per event; each test runs it once and reads the lines.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest

HERE = Path(__file__).parent
REPO = HERE.parents[1]
CHAT, COMPLETIONS = "/v1/chat/completions", "/v1/completions"
HELLO = [{"role": "user", "content": "Say hello."}]
CHUNK, DONE, ERROR = 1, 2, 3
KV_LEN, CAP = 64, 16  # the smollm_like chat prompt is 56 tokens: a reply fills the context at 8
LONG = [{"role": "user", "content": "the quick brown fox " * 40}]


def bare_env(**extra: str) -> dict[str, str]:
    """What a C program gets from a plain shell: HOME and a system PATH, and
    the test run's own cache location so compiled fixtures are reused."""
    env = {"HOME": os.environ.get("HOME", "/"), "PATH": "/usr/bin:/bin"}
    env.update({k: os.environ[k] for k in ("LSE_CACHE_DIR", "XDG_CACHE_HOME") if k in os.environ})
    return env | extra


def build(source: Path, out: Path) -> Path:
    """``cc SOURCE -o OUT $(lse-config --cflags --libs)``, as the README says."""
    lse_config = str(Path(sys.executable).with_name("lse-config"))
    flags = subprocess.run([lse_config, "--cflags", "--libs"], check=True, capture_output=True, text=True)
    subprocess.run(["cc", "-Wall", "-Werror", str(source), "-o", str(out), *flags.stdout.split(), "-pthread"],
                   check=True)
    return out


@pytest.fixture(scope="module")
def driver(tmp_path_factory):
    return build(HERE / "capi" / "driver.c", tmp_path_factory.mktemp("capi") / "driver")


@dataclass
class Reply:
    events: list[tuple[int, int, dict]] = field(default_factory=list)
    status: int | None = None

    @property
    def last(self) -> tuple[int, int, dict]:
        return self.events[-1]


@dataclass
class Run:
    """What one driver run printed, line by line."""

    replies: list[Reply] = field(default_factory=list)
    info: list[dict] = field(default_factory=list)
    refused: list[dict] = field(default_factory=list)  # lse_model_info_named's NULL: lse_last_error()'s JSON
    status: list[dict] = field(default_factory=list)
    active: list[int] = field(default_factory=list)
    open_failed: str | None = None
    returncode: int = 0


def run_driver(driver: Path, model, *settings: str, commands: list[list[str]] = (), env=None,
               timeout: float = 600) -> Run:
    argv = [str(driver), str(model) if model is not None else "-", *settings]
    for c in commands:
        argv += ["--", *c]
    proc = subprocess.run(argv, env=env or bare_env(), capture_output=True, text=True, timeout=timeout)
    run, current = Run(returncode=proc.returncode), Reply()
    for line in proc.stdout.splitlines():
        tag, _, rest = line.partition(" ")
        if tag == "EVENT":
            kind, status, text = rest.split(" ", 2)
            current.events.append((int(kind), int(status), json.loads(text)))
        elif tag == "RETURN":
            current.status = int(rest)
            run.replies.append(current)
            current = Reply()
        elif tag in ("INFO", "STATUS", "REFUSED"):
            {"INFO": run.info, "STATUS": run.status, "REFUSED": run.refused}[tag].append(json.loads(rest))
        elif tag == "ACTIVE":
            run.active.append(int(rest))
        elif tag == "OPEN_FAILED":
            run.open_failed = rest
        else:
            pytest.fail(f"unexpected driver line {line!r}\n--- stderr ---\n{proc.stderr[-5000:]}")
    if proc.returncode not in (0, 2):
        pytest.fail(f"driver exited {proc.returncode}\n--- stderr ---\n{proc.stderr[-5000:]}")
    return run


def req(path: str, body) -> list[str]:
    return ["req", path, body if isinstance(body, str) else json.dumps(body)]


# ---- lse_open ---------------------------------------------------------------

@pytest.mark.parametrize("model,settings,env,reason", [
    ("/no/such/model", [], {}, "/no/such/model is neither a model directory (config.json), an artifact"),
    ("broken_template", [], {}, "chat_template.jinja: line 5: Encountered unknown tag 'endfo'"),
    ("smollm_like", ["no_cpu_fallback=1"], {"LSE_BACKENDS": ""},
     "no device backend came up and CPU fallback is disabled (--no-cpu-fallback): "),
    ("smollm_like", ["pool=cpu:0", "no_cpu_fallback=1"], {},
     "device cpu:0 is refused: it has no device code generator"),
    ("smollm_like", ["kv_len=-1"], {}, "lse_config.kv_len must be 0 or more, got -1"),
    ("smollm_like", ["threads=-2"], {}, "lse_config.threads must be 0 or more, got -2"),
])
def test_open_fails_with_the_reason(driver, fixture_model, model, settings, env, reason):
    model_dir = fixture_model(model) if "/" not in model else model
    run = run_driver(driver, model_dir, *settings, commands=[["status"]], env=bare_env(**env))
    assert run.returncode == 2 and run.status == []  # NULL, and the process went on to report it
    assert reason in run.open_failed


def test_open_fails_on_a_file_that_is_not_gguf(driver, tmp_path):
    bogus = tmp_path / "bogus.gguf"
    bogus.write_bytes(b"not a gguf file at all")
    run = run_driver(driver, bogus)
    assert run.returncode == 2 and run.open_failed.startswith(f"{bogus}: ")


def test_a_gguf_file_is_imported_and_served(driver):
    """The default model's GGUF by path: imported into the cache as the default
    model is (the same directory, so a warm cache makes this quick)."""
    from lse.compiler.gguf.importer import DEFAULT_MODEL_NAME, default_gguf_path

    run = run_driver(driver, default_gguf_path(), "kv_len=256",
                     commands=[["info"], req(CHAT, {"messages": HELLO, "max_tokens": 3})])
    assert run.info[0]["id"] == DEFAULT_MODEL_NAME
    assert run.replies[0].status == 200 and run.replies[0].last[2]["usage"]["completion_tokens"] == 3


# ---- replies -----------------------------------------------------------------

def test_the_example_streams_a_chat_reply(fixture_model, tmp_path):
    example = build(REPO / "examples" / "stream_chat.c", tmp_path / "stream_chat")
    proc = subprocess.run([str(example), str(fixture_model("smollm_like"))], env=bare_env(),
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert len(lines) > 2 and all(line.startswith("chunk: ") for line in lines[:-1])
    assert lines[-1].startswith('done: "stop_reason":')


def test_streamed_and_whole_replies(driver, fixture_model):
    body = {"messages": HELLO, "max_tokens": 6, "temperature": 0}
    run = run_driver(driver, fixture_model("smollm_like"), commands=[
        req(CHAT, {**body, "stream": True}), req(CHAT, body),
        req(COMPLETIONS, {"prompt": "Once upon a time", "max_tokens": 5, "stream": True})])
    streamed, whole, completion = run.replies
    assert streamed.status == 200 and [e[:2] for e in streamed.events[:-1]] == [(CHUNK, 200)] * (
        len(streamed.events) - 1)
    kind, status, done = streamed.last
    assert (kind, status, done["object"]) == (DONE, 200, "chat.completion")
    text = "".join(c["choices"][0]["delta"].get("content") or "" for _, _, c in streamed.events[:-1]
                   if c["choices"])
    assert done["choices"][0]["message"]["content"] == text  # DONE is the fold of the chunks
    assert done["choices"][0]["stop_reason"] == "max_tokens" and done["choices"][0]["finish_reason"] == "length"
    used = done["usage"]["total_tokens"]
    assert done["lse_context"] == {"tokens_used": used, "context_length": 2048, "tokens_remaining": 2048 - used}
    assert [e[:2] for e in whole.events] == [(DONE, 200)]  # not streamed: the one reply
    assert whole.last[2]["choices"][0]["message"]["content"] == text  # greedy: the same reply
    assert completion.status == 200 and completion.last[2]["object"] == "text_completion"
    assert completion.events[0][2]["object"] == "text_completion"


def test_a_reply_that_fills_the_context(driver, fixture_model):
    run = run_driver(driver, fixture_model("smollm_like"), f"kv_len={KV_LEN}", f"max_tokens={CAP}",
                     commands=[req(CHAT, {"messages": HELLO, "temperature": 0})])
    kind, status, done = run.replies[0].last
    assert (kind, status) == (DONE, 200)
    assert (done["choices"][0]["finish_reason"], done["choices"][0]["stop_reason"]) == ("length", "context_full")
    assert done["lse_context"] == {"tokens_used": KV_LEN, "context_length": KV_LEN, "tokens_remaining": 0}


# ---- errors: the HTTP server's, byte for byte --------------------------------

ERROR_ROWS = [  # (endpoint, body, status, error.code, error.param)
    (CHAT, "{bad", 400, "invalid_json", None),
    (CHAT, '{"messages": [], "temperature": NaN}', 400, "invalid_json", None),
    (COMPLETIONS, "[1]", 400, None, None),
    (CHAT, {"messages": HELLO, "max_tokens": CAP + 1}, 400, None, "max_tokens"),
    (CHAT, {"messages": HELLO, "temperature": "hot"}, 400, None, "temperature"),
    (CHAT, {"messages": LONG}, 400, "context_full", "messages"),
    (COMPLETIONS, {"prompt": "the quick brown fox " * 40}, 400, "context_full", "prompt"),
    (CHAT, {"messages": HELLO, "enable_thinking": True}, 400, "thinking_unsupported", "enable_thinking"),
    (CHAT, {"messages": HELLO, "thinking": "yes"}, 400, "invalid_thinking", "thinking"),
    ("/v1/embeddings", {"input": "x"}, 501, "embeddings_disabled", None),  # served without --embeddings
    ("/v1/images/generations", {"prompt": "x"}, 404, "not_found", None),
]


@pytest.fixture(scope="module")
def c_and_http_errors(driver, fixture_model, lse_server):
    """Each ERROR_ROWS request through lse_request and through lse-server, both
    with --kv-len 64 --max-tokens 16: [(C's (status, body), HTTP's (status, body))]."""
    model = fixture_model("smollm_like")
    bodies = [(path, body if isinstance(body, str) else json.dumps(body)) for path, body, *_ in ERROR_ROWS]
    run = run_driver(driver, model, f"kv_len={KV_LEN}", f"max_tokens={CAP}",
                     commands=[["req", path, body] for path, body in bodies])
    with lse_server(model, "--kv-len", str(KV_LEN), "--max-tokens", str(CAP)) as (base_url, _):
        with httpx.Client(base_url=base_url, timeout=120) as http:
            answers = [http.post(path, content=body.encode(), headers={"content-type": "application/json"})
                       for path, body in bodies]
    return [((r.last[1], r.last[2]), (a.status_code, a.json())) for r, a in zip(run.replies, answers)]


@pytest.mark.parametrize("row", range(len(ERROR_ROWS)), ids=[f"{r[0]}-{r[3] or r[4]}" for r in ERROR_ROWS])
def test_errors_match_the_http_server(c_and_http_errors, row):
    _, _, status, code, param = ERROR_ROWS[row]
    (c_status, c_body), http = c_and_http_errors[row]
    assert (c_status, c_body) == http, f"received over C {(c_status, c_body)} / over HTTP {http}"
    assert (c_status, c_body["error"]["code"], c_body["error"]["param"]) == (status, code, param)
    if code == "context_full":
        assert c_body["error"]["lse_context"]["context_length"] == KV_LEN


# ---- cancellation, threads, model info and status -----------------------------

def test_the_callback_cancels_and_the_next_request_is_served(driver, fixture_model):
    body = {"messages": HELLO, "temperature": 0, "stream": True}  # greedy, ~2000 tokens to context_full
    run = run_driver(driver, fixture_model("smollm_like"), commands=[
        ["cancel", "3", CHAT, json.dumps(body)], ["status"],
        # greedy: at the fixture's default temperature 1 the end-of-turn token is a
        # ~0.2% draw at each step, which once ended this reply after one token in CI
        req(CHAT, {"messages": HELLO, "max_tokens": 2, "temperature": 0})])
    cancelled, served = run.replies
    assert [e[0] for e in cancelled.events] == [CHUNK] * 3  # nothing after the callback said stop
    assert cancelled.status == 200
    assert (run.status[0]["engine"]["active"], run.status[0]["engine"]["queued"]) == (0, 0)  # slot freed
    assert served.status == 200 and served.last[2]["choices"][0]["finish_reason"] == "length"


def test_two_threads_are_batched(driver, fixture_model):
    """Each thread waits at a barrier on its first generated token: both got
    there, and both sequences held a slot at once (engine.active 2)."""
    body = {"messages": HELLO, "max_tokens": 200, "temperature": 0, "stream": True}
    run = run_driver(driver, fixture_model("smollm_like"), "parallel=2", "threads=1",
                     commands=[["threads", "2", CHAT, json.dumps(body)]])
    assert [r.status for r in run.replies] == [200, 200]
    events = [e for r in run.replies for e in r.events]
    assert sum(1 for e in events if e[0] == DONE) == 2
    assert run.active == [2, 2]


def test_model_info_and_status(driver, fixture_model):
    run = run_driver(driver, fixture_model("qwen38_like"), f"kv_len={KV_LEN}", f"max_tokens={CAP}",
                     commands=[["info"], ["status"]])
    info, status = run.info[0], run.status[0]
    assert info["context_length"] == KV_LEN and info["served"]["max_tokens_cap"] == CAP
    assert info["thinking"]["default_level"] == "xhigh"
    assert [lv["id"] for lv in info["thinking"]["levels"]] == ["none", "xhigh", "medium", "low"]
    assert info["generation_defaults"]["sources"]["top_k"] == "generation_config.json"
    engine = status["engine"]
    assert (engine["context_length"], engine["active"], engine["queued"]) == (KV_LEN, 0, 0)
    assert engine["cpu_fallback"] == {"allowed": True, "total": 0, "events": []}


# ---- several models: lse_config.models, lse_model_info_named -------------------

def test_model_info_named_on_one_model(driver, fixture_model):
    """One model: no name is lse_model_info; its own id answers; another name
    is the 404 model_not_found GET /v1/models/{id} gives, as lse_last_error()."""
    model = fixture_model("smollm_like")
    run = run_driver(driver, model, f"kv_len={KV_LEN}", "pool=cpu:0",
                     commands=[["named", "-"], ["named", model.name], ["named", "nope"]])
    assert [i["id"] for i in run.info] == [model.name, model.name]
    error = run.refused[0]["error"]
    assert (error["code"], error["type"], error["param"]) == ("model_not_found", "invalid_request_error", "model")


def test_several_models_by_name(driver, fixture_model, tmp_path):
    """lse_config.models: each request's "model" picks one (aliases too), an
    unknown name is the HTTP server's 404 model_not_found, a broken model fails
    its own requests (500 model_load_failed) and leaves the others serving;
    lse_model_info_named answers per model; models_max 1 keeps one loaded."""
    broken = tmp_path / "broken.gguf"
    broken.write_bytes(b"not a gguf file at all")
    body = {"prompt": "Once upon a time", "max_tokens": 3, "temperature": 0}
    run = run_driver(driver, "-", f"kv_len={KV_LEN}", "pool=cpu:0", "models_max=1",
                     f"model+=smol={fixture_model('smollm_like')}", f"model+=qwen={fixture_model('qwen38_like')}",
                     f"model+={broken}", "alias+=qwen=q", "default_model=qwen",
                     commands=[req(COMPLETIONS, {**body, "model": "smol"}), req(COMPLETIONS, {**body, "model": "q"}),
                               req(COMPLETIONS, body), req(COMPLETIONS, {**body, "model": "nope"}),
                               req(COMPLETIONS, {**body, "model": "broken"}),
                               ["named", "smol"], ["named", "-"], ["named", "q"], ["named", "nope"],
                               ["named", "broken"], ["status"]])
    assert run.open_failed is None, run.open_failed
    smol, qwen, default, unknown, failed = run.replies
    assert [r.status for r in run.replies] == [200, 200, 200, 404, 500]
    assert [r.last[2]["model"] for r in (smol, qwen, default)] == ["smol", "q", "qwen"]
    assert qwen.last[2]["choices"][0]["text"] == default.last[2]["choices"][0]["text"] != \
        smol.last[2]["choices"][0]["text"]
    error = unknown.last[2]["error"]
    assert (error["code"], error["param"], error["models"]) == ("model_not_found", "model",
                                                                ["smol", "qwen", "broken"])
    assert failed.last[2]["error"]["code"] == "model_load_failed"
    assert [i["id"] for i in run.info] == ["smol", "qwen", "qwen"]
    assert [r["error"]["code"] for r in run.refused] == ["model_not_found", "model_load_failed"]
    assert run.refused[0]["error"]["models"] == ["smol", "qwen", "broken"]
    rows = {row["name"]: row["status"] for row in run.status[0]["models"]}
    # models_max 1: loading q unloaded smol; the broken model is refused before anything is
    # unloaded for it (model_files.check_spec), so q stays loaded
    assert rows == {"smol": "unloaded", "qwen": "loaded", "broken": "failed"}


@pytest.mark.parametrize("settings,reason", [
    (["model+=/x/a", "model+=/x/b", "default_model=c"], "--default-model 'c' is not one of the models: a, b"),
    (["model+=/x/a", "alias+=b=z"], "aliases name no model: b; the models are a"),
    (["models_max=2"], "lse_config.models_max is for several models: set lse_config.models too"),
    (["model+==/x/a"], "lse_config.models '=/x/a': NAME=PATH wants both"),
])
def test_several_models_refused_at_open(driver, settings, reason):
    run = run_driver(driver, "-", *settings, commands=[["status"]])
    assert run.returncode == 2 and reason in run.open_failed
