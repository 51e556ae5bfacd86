"""lse_open with a list of models (lse.runtime.model_runtime.open_models): the
in-process API's functions take the set where they take an engine, the body's
model choosing; two fixtures on the host interpreter (no compile)."""

from __future__ import annotations

import pytest

from lse.runtime import api
from lse.fixtures.make_fixtures import fixture_dir

OPTIONS = {"pool": ["cpu:0"], "kv_len": 128, "parallel": 1}
BODY = {"prompt": "Once upon a time", "max_tokens": 4, "temperature": 0, "logprobs": 1}


def tokens(engine, **extra) -> list[str]:
    status, reply = api.lse_request(engine, {**BODY, **extra}, "completions").result()
    assert status == 200, reply
    return reply["choices"][0]["logprobs"]["tokens"]


@pytest.fixture(scope="module")
def models():
    opened = api.lse_open({"models": [{"name": "smol", "path": str(fixture_dir("smollm_like"))},
                                      {"name": "qwen", "path": str(fixture_dir("qwen38_like")), "aliases": ["q"]}],
                           "models_max": 1, **OPTIONS})
    yield opened
    api.lse_close(opened)


def test_each_model_answers_as_its_own_engine(models):
    from_set = {name: tokens(models, model=name) for name in ("smol", "q")}
    for name, fixture in (("smol", "smollm_like"), ("q", "qwen38_like")):
        single = api.lse_open({"model": str(fixture_dir(fixture)), **OPTIONS})
        try:
            assert tokens(single) == from_set[name]
        finally:
            api.lse_close(single)
    assert from_set["smol"] != from_set["q"]
    rows = {row["name"]: row["status"] for row in api.lse_status(models)["models"]}
    assert rows == {"smol": "unloaded", "qwen": "loaded"}  # models_max 1: smol made room


def test_unknown_names_model_info_and_tokenize(models):
    status, body = api.lse_request(models, {**BODY, "model": "nope"}, "completions").result()
    assert (status, body["error"]["code"], body["error"]["models"]) == (404, "model_not_found", ["smol", "qwen"])
    assert api.lse_model_info(models, "smol")["id"] == "smol"
    assert api.lse_model_info(models)["id"] == "smol"  # no name: the default, the first
    assert api.lse_tokenize(models, {"model": "qwen", "content": "hi"})["tokens"]
    with pytest.raises(api.LseStartupError, match="given twice"):
        api.lse_open({"models": [{"name": "a", "path": "/x"}, {"name": "a", "path": "/y"}]})
