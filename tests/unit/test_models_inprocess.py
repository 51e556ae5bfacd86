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


def test_model_info_checks_the_name(models):
    """A name is checked, never echoed: an unknown one is 404 model_not_found,
    on a set (the names listed) and on one engine (GET /v1/models/{id}'s)."""
    with pytest.raises(api.LseError) as raised:
        api.lse_model_info(models, "nope")
    assert (raised.value.status, raised.value.kind, raised.value.extra) == (404, "model_not_found",
                                                                            {"models": ["smol", "qwen"]})
    assert api.lse_model_info(models, "q")["id"] == "qwen"  # an alias
    single = api.lse_open({"model": str(fixture_dir("smollm_like")), "served_model_name": "one", **OPTIONS})
    try:
        assert api.lse_model_info(single, "one")["id"] == "one"
        with pytest.raises(api.LseError, match="does not exist; this server serves 'one'") as raised:
            api.lse_model_info(single, "two")
        assert raised.value.body()["error"]["code"] == "model_not_found"
    finally:
        api.lse_close(single)


def test_aliases_option():
    opened = api.lse_open({"models": [{"name": "smol", "path": str(fixture_dir("smollm_like"))}],
                           "aliases": {"smol": ["s", "tiny"]}, **OPTIONS})
    try:
        assert opened.entry("tiny").name == "smol" and opened.entries["smol"].spec.aliases == ("s", "tiny")
    finally:
        api.lse_close(opened)
    with pytest.raises(api.LseStartupError, match="aliases name no model: big"):
        api.lse_open({"models": ["/x/smol"], "aliases": {"big": ["b"]}})
