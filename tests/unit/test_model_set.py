"""lse.runtime.models.ModelSet over fake engines: names, shared loads, LRU and
budget unloads, busy models kept, failures isolated, keep-alive, refresh."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from lse.runtime.errors import LseError
from lse.runtime.model_files import check_spec, model_name, model_specs, scan_dir
from lse.runtime.models import ModelSet, ModelSpec


class Engine:
    def __init__(self, name: str) -> None:
        self.name, self.closed = name, False

    def model_info(self) -> dict:
        return {"id": self.name, "context_length": 64, "thinking": {"supported": False},
                "generation_defaults": {"temperature": 1.0}}


class Opener:
    """open_engine for the set: counts opens, fails "broken", can hold a load until released."""

    def __init__(self) -> None:
        self.opened: list[str] = []
        self.closed: list[str] = []
        self.gate: dict[str, threading.Event] = {}

    def open(self, spec: ModelSpec) -> Engine:
        if spec.name in self.gate:
            assert self.gate[spec.name].wait(10)
        self.opened.append(spec.name)
        if spec.path == "broken":
            raise RuntimeError("config.json: no such file")
        return Engine(spec.name)

    def close(self, engine: Engine) -> None:
        engine.closed = True
        self.closed.append(engine.name)


def make(names=("a", "b", "c"), clock=None, **kw) -> tuple[ModelSet, Opener]:
    opener = Opener()
    specs = [ModelSpec(n, "broken" if n == "broken" else f"/m/{n}", ("alias-" + n,)) for n in names]
    sizes = kw.pop("sizes", {})
    extra = {"clock": clock} if clock else {}
    models = ModelSet(specs, opener.open, opener.close, measure=lambda e: sizes.get(e.name, 100), **kw, **extra)
    return models, opener


def run(models: ModelSet, name: str) -> Engine:
    """One request: resolve, load, use, release."""
    entry, engine = models.engine_for(name)
    models.release(entry)
    return engine


def status(models: ModelSet) -> dict[str, str]:
    return {e.name: e.status for e in models.entries.values()}


def test_names_aliases_default_and_unknown():
    models, _ = make(default="b")
    assert models.names() == ["a", "b", "c"]
    assert models.resolve(None).name == "b" and models.resolve("").name == "b"
    assert models.resolve("alias-c").name == "c"
    with pytest.raises(LseError) as info:
        models.resolve("zzz")
    body = info.value.body()["error"]
    assert (info.value.status, body["code"], body["param"], body["models"]) == (404, "model_not_found", "model",
                                                                                ["a", "b", "c"])
    assert make()[0].resolve(None).name == "a"  # no --default-model: the first


def test_one_model_answers_every_name_as_a_single_model_server_does():
    models, _ = make(names=("only",))
    assert models.resolve("gpt-4o").name == "only"
    with pytest.raises(LseError):  # the operator routes still name models exactly
        models.named("gpt-4o")


def test_duplicate_names_and_unknown_default_are_refused():
    with pytest.raises(ValueError, match="given twice"):
        ModelSet([ModelSpec("a", "/x"), ModelSpec("a", "/y")], Engine, lambda e: None)
    with pytest.raises(ValueError, match="--default-model 'z'"):
        make(default="z")


def test_lazy_load_on_first_use_and_concurrent_requests_share_one_load():
    models, opener = make()
    assert status(models) == {"a": "unloaded", "b": "unloaded", "c": "unloaded"}
    opener.gate["a"] = threading.Event()
    entry = models.resolve("a")
    futures = [models.use(entry) for _ in range(3)]
    assert status(models)["a"] == "loading" and not any(f.done() for f in futures)
    opener.gate["a"].set()
    engines = {id(f.result(10)) for f in futures}
    assert len(engines) == 1 and opener.opened == ["a"]
    assert entry.users == 3 and entry.info["id"] == "a" and entry.memory == 100
    for _ in futures:
        models.release(entry)
    assert run(models, "a") is futures[0].result() and opener.opened == ["a"]


def test_models_max_unloads_the_least_recently_used_idle_model():
    now = [0.0]
    models, opener = make(max_loaded=2, clock=lambda: now[0])
    for name in ("a", "b"):
        now[0] += 1
        run(models, name)
    now[0] += 1
    run(models, "a")  # a is now the most recently used
    now[0] += 1
    run(models, "c")
    assert status(models) == {"a": "loaded", "b": "unloaded", "c": "loaded"}
    assert opener.closed == ["b"]


def test_a_busy_model_is_never_unloaded_the_load_waits_for_a_release():
    models, opener = make(max_loaded=1)
    held, _ = models.engine_for("a")
    future = models.use(models.resolve("b"))
    with pytest.raises(TimeoutError):
        future.result(0.3)  # every loaded model is busy: b waits
    assert status(models)["a"] == "loaded" and opener.closed == []
    models.release(held)
    future.result(10)
    assert status(models) == {"a": "unloaded", "b": "loaded", "c": "unloaded"} and opener.closed == ["a"]


def test_memory_budget_counts_measured_sizes():
    models, opener = make(memory_budget=250, sizes={"a": 100, "b": 100, "c": 120})
    run(models, "a")
    run(models, "b")
    assert status(models) == {"a": "loaded", "b": "loaded", "c": "unloaded"}  # 200 of 250
    run(models, "c")  # 320 > 250: the LRU idle one (a) goes
    assert status(models) == {"a": "unloaded", "b": "loaded", "c": "loaded"} and opener.closed == ["a"]
    run(models, "a")  # a's size is known now: room is made before it loads
    assert opener.closed == ["a", "b"] and status(models)["a"] == "loaded"


def test_a_failed_model_fails_its_requests_and_leaves_the_others_serving():
    models, opener = make(names=("good", "broken"))
    with pytest.raises(LseError) as info:
        models.engine_for("broken")
    body = info.value.body()["error"]
    assert (info.value.status, body["code"], body["model"]) == (500, "model_load_failed", "broken")
    assert "config.json: no such file" in body["message"]
    assert models.entries["broken"].reason == "config.json: no such file"
    assert run(models, "good").name == "good"
    with pytest.raises(LseError):  # it stays failed: no second load
        models.engine_for("broken")
    assert opener.opened == ["broken", "good"] and models.entries["broken"].users == 0
    models.refresh()  # tried again after a refresh
    assert status(models)["broken"] == "unloaded"


def test_unload_and_keep_alive():
    now = [0.0]
    models, opener = make(keep_alive=30, clock=lambda: now[0])
    run(models, "a")
    held, _ = models.engine_for("b")
    now[0] = 31
    models.sweep()
    assert status(models) == {"a": "unloaded", "b": "loaded", "c": "unloaded"}  # b is busy
    with pytest.raises(LseError) as info:
        models.unload("b")
    assert (info.value.status, info.value.body()["error"]["code"]) == (503, "model_busy")
    models.release(held)
    assert models.unload("b") is True and models.unload("b") is False
    assert opener.closed == ["a", "b"]


def test_refresh_adds_and_drops_scanned_models():
    found = [ModelSpec("a", "/m/a"), ModelSpec("b", "/m/b")]
    opener = Opener()
    models = ModelSet(found, opener.open, opener.close, measure=lambda e: 1, scan=lambda: list(found))
    run(models, "b")
    found[:] = [ModelSpec("a", "/m/a"), ModelSpec("new", "/m/new")]
    assert models.refresh() == {"added": ["new"], "removed": ["b"], "models": ["a", "new"]}
    assert opener.closed == ["b"]


def test_names_from_paths_and_scan(tmp_path: Path):
    assert model_name(Path("/x/SmolLM2-135M-Instruct.Q4_1.gguf")) == "SmolLM2-135M-Instruct"
    # dots inside a name stay: two sizes of one family are two ids
    assert model_name(Path("/x/Qwen2.5-1.5B-Instruct-Q4_K_M.gguf")) == "Qwen2.5-1.5B-Instruct-Q4_K_M"
    assert model_name(Path("/x/Qwen2.5-0.5B-Instruct-Q4_K_M.gguf")) == "Qwen2.5-0.5B-Instruct-Q4_K_M"
    assert model_name(Path("/x/Llama-3.2-1B-Instruct.Q4_K_M.gguf")) == "Llama-3.2-1B-Instruct"
    assert model_name(Path("/x/llama-2-7b-chat.IQ4_XS.gguf")) == "llama-2-7b-chat"
    assert model_name(Path("/x/phi-3-mini.BF16.GGUF")) == "phi-3-mini"
    assert model_name(Path("/x/gemma-3-270m-q4_k_m.gguf")) == "gemma-3-270m-q4_k_m"
    assert model_name(Path("/x/my-model")) == "my-model"
    (tmp_path / "b.gguf").write_bytes(b"")
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "config.json").write_text("{}")
    (tmp_path / "notes").mkdir()
    (tmp_path / "readme.txt").write_text("")
    assert [p.name for p in scan_dir(tmp_path)] == ["a", "b.gguf"]
    specs = model_specs([str(tmp_path / "a"), str(tmp_path / "b.gguf")], {"chosen": str(tmp_path / "a")},
                        {"b": ["bee"]})
    assert specs == [ModelSpec("chosen", str(tmp_path / "a")), ModelSpec("b", str(tmp_path / "b.gguf"), ("bee",))]


def test_a_refresh_that_drops_the_default_or_every_model():
    found = [ModelSpec("a", "/m/a"), ModelSpec("b", "/m/b")]
    opener = Opener()
    models = ModelSet(found, opener.open, opener.close, default="b", scan=lambda: list(found))
    found[:] = [ModelSpec("a", "/m/a")]
    models.refresh()
    assert models.resolve(None).name == "a"  # the default is gone: the first
    found[:] = []
    models.refresh()
    with pytest.raises(LseError) as info:
        models.resolve(None)
    assert (info.value.status, info.value.body()["error"]["models"]) == (404, [])


def test_a_model_that_cannot_load_unloads_no_other(tmp_path):
    """--models-max 1: a model whose file is no model (here: not a GGUF) is
    refused by model_files.check_spec before the loaded one is unloaded for
    it; the loaded one keeps serving without a reload."""
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(b"not a gguf file")
    opener = Opener()
    specs = [ModelSpec("good", "/m/good"), ModelSpec("bad", str(bad)), ModelSpec("gone", str(tmp_path / "gone"))]

    def check(spec: ModelSpec) -> None:
        if spec.name != "good":
            check_spec(spec)
    models = ModelSet(specs, opener.open, opener.close, measure=lambda e: 100, max_loaded=1, check=check)
    run(models, "good")
    for name, reason in (("bad", "not a GGUF file"), ("gone", "no such file or directory")):
        with pytest.raises(LseError) as info:
            models.engine_for(name)
        assert info.value.body()["error"]["code"] == "model_load_failed" and reason in models.entries[name].reason
    assert status(models) == {"good": "loaded", "bad": "failed", "gone": "failed"}
    assert opener.closed == [] and opener.opened == ["good"]
    assert run(models, "good").name == "good" and opener.opened == ["good"]
