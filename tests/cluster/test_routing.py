"""The router's choice and lse-cluster's options, without a cluster."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("ray.serve", reason="the cluster tier needs Ray Serve: pip install -e '.[cluster]' "
                    "(the test extra includes it)")
import yaml
from ray import serve

from lse.cluster.app import build
from lse.cluster.options import build_parser, options_argv
from lse.cluster.remote import merge_model_lists
from lse.cluster.router import PrefixMemory, holds, model_of, model_slots, prefix_chain, prompt_text, rank

SYSTEM = {"role": "system", "content": "You are a careful assistant who answers in full sentences."}


def chain(*messages: dict) -> list[bytes]:
    return prefix_chain(prompt_text({"messages": list(messages)}), block_chars=8)


def test_a_later_turn_extends_the_earlier_prompt_chain() -> None:
    first = chain(SYSTEM, {"role": "user", "content": "Where do rivers begin?"})
    later = chain(SYSTEM, {"role": "user", "content": "Where do rivers begin?"},
                  {"role": "assistant", "content": "In the hills."}, {"role": "user", "content": "And end?"})
    assert later[:len(first)] == first
    memory = PrefixMemory()
    memory.remember(first, slots=1)
    assert memory.match(later) == len(first)
    memory.remember(chain({"role": "user", "content": "Something else entirely, at length."}), slots=1)
    assert memory.match(later) == 0  # one slot: the last prompt replaced it


def test_completion_prompts_and_content_parts_are_text() -> None:
    assert prompt_text({"prompt": "abc"}) == "abc"
    assert prompt_text({"prompt": [1, 2]}) == "1\x022"
    parts = {"messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]}
    assert prompt_text(parts) == "user\x00hi\x01"
    assert prompt_text(None) == ""


@pytest.mark.parametrize(("loads", "matches", "first"), [
    ({"a": 0, "b": 0}, {"a": 0, "b": 5}, "b"),  # balanced: the cache wins
    ({"a": 0, "b": 2}, {"a": 0, "b": 5}, "b"),  # within the threshold (2): still the cache
    ({"a": 0, "b": 3}, {"a": 0, "b": 5}, "a"),  # past it: the idle replica wins
    ({"a": 1, "b": 0}, {"a": 0, "b": 0}, "b"),  # no match: the least loaded
])
def test_rank(loads: dict, matches: dict, first: str) -> None:
    assert rank(["a", "b"], loads, matches, {}, imbalance=2)[0] == first


def test_a_new_conversation_goes_to_the_replica_least_recently_used() -> None:
    assert rank(["a", "b"], {"a": 0, "b": 0}, {"a": 0, "b": 0}, {"a": 2.0, "b": 1.0}, imbalance=2)[0] == "b"


def test_a_serve_config_args_mapping_is_the_command_line() -> None:
    argv = options_argv({"model": "m", "replicas": 3, "parallel": 2, "no_cpu_fallback": True, "metrics_public": False,
                         "pool": ["local:0"], "api_key": None})
    assert argv == ["m", "--replicas", "3", "--parallel", "2", "--no-cpu-fallback", "--pool", "local:0"]
    args = build_parser().parse_args(argv)
    assert (args.model, args.replicas, args.parallel, args.no_cpu_fallback, args.port) == (["m"], 3, 2, True, 8080)


def test_the_checked_in_serve_config_builds() -> None:
    config = yaml.safe_load((Path(__file__).parents[2] / "examples" / "serve_config.yaml").read_text())
    (app,) = config["applications"]
    assert app["import_path"] == "lse.cluster.app:build"
    assert isinstance(build(app["args"]), serve.Application)


def test_lse_cluster_command_refuses_detach_without_a_cluster() -> None:
    command = Path(sys.executable).with_name("lse-cluster")
    done = subprocess.run([command, "--detach"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    assert "--detach needs --address" in done.stderr


# ---- several models ----------------------------------------------------------

def entry(name: str, status: str, aliases=(), context_length=None, slots=None) -> dict:
    return {"id": name, "object": "model", "created": 0, "owned_by": "lse", "context_length": context_length,
            "status": status, "aliases": list(aliases), "slots": slots, "memory_bytes": 1}


SET_STATS = {"models": [entry("small", "loaded", ("s",), 64, slots=2), entry("big", "unloaded")],
             "default_model": "small", "slots": 2}


@pytest.mark.parametrize(("body", "model"), [
    ({"model": "big"}, "big"), ({"model": "s"}, "small"), ({}, "small"), ({"model": ""}, "small"),
    ({"model": "nope"}, None),  # refused wherever it goes
])
def test_the_router_resolves_a_requests_model_as_the_replicas_do(body, model) -> None:
    assert model_of(body, [{}, SET_STATS]) == model  # a replica yet to report is skipped


def test_one_model_is_not_keyed() -> None:
    assert model_of({"model": "anything"}, [{"slots": 2, "engine": {}}]) is None
    one = {"models": [entry("only", "loaded")], "default_model": "only"}
    assert model_of({"model": "anything"}, [one]) == "only"  # echoed, never checked, as lse-server


def test_where_a_model_is_held_and_its_slots() -> None:
    assert holds(SET_STATS, "small") and not holds(SET_STATS, "big")
    assert (model_slots(SET_STATS, "small"), model_slots(SET_STATS, "big"), model_slots({}, None)) == (2, 2, 1)


@pytest.mark.parametrize(("loads", "matches", "holding", "first"), [
    ({"a": 0, "b": 0}, {"a": 0, "b": 0}, {"b"}, "b"),  # the model is loaded on b
    ({"a": 0, "b": 2}, {"a": 5, "b": 0}, {"b"}, "b"),  # loaded beats another replica's prefix
    ({"a": 0, "b": 3}, {"a": 0, "b": 0}, {"b"}, "a"),  # b too busy: the model loads on a too
    ({"a": 0, "b": 0, "c": 0}, {"a": 0, "b": 0, "c": 4}, {"b", "c"}, "c"),  # among holders, the prefix
    ({"a": 1, "b": 0}, {"a": 0, "b": 0}, set(), "b"),  # held nowhere: the least loaded
])
def test_rank_keeps_a_model_where_it_is_loaded(loads, matches, holding, first) -> None:
    ranked = rank(list(loads), loads, matches, {}, imbalance=2, holding=holding)
    assert ranked[0] == first and sorted(ranked) == sorted(loads)


def test_the_same_prompt_is_a_different_prefix_for_another_model() -> None:
    text = prompt_text({"messages": [SYSTEM]})
    small, big = (prefix_chain(f"{m}\x03{text}", block_chars=8) for m in ("small", "big"))
    memory = PrefixMemory()
    memory.remember(small, slots=1)
    assert memory.match(small) == len(small) and memory.match(big) == 0


def test_the_model_list_merges_every_replicas() -> None:
    one = [entry("small", "loaded", ("s",), 64, slots=2), entry("big", "unloaded"),
           {**entry("bad", "failed"), "status_reason": "not a GGUF file"}]
    two = [entry("small", "unloaded", ("s",), 64), entry("big", "loading"),
           {**entry("bad", "failed"), "status_reason": "not a GGUF file"}]
    three = [entry("small", "loaded", ("s",), 64, slots=2), entry("big", "unloaded"), entry("bad", "unloaded")]
    merged = {e["id"]: e for e in merge_model_lists([one, two, three])}
    assert [(e["status"], e["replicas_loaded"]) for e in merged.values()] == [("loaded", 2), ("loading", 0),
                                                                              ("unloaded", 0)]
    assert merged["small"]["context_length"] == 64 and merged["small"]["aliases"] == ["s"]
    assert "slots" not in merged["small"] and "memory_bytes" not in merged["small"]
    assert "status_reason" not in merged["bad"]  # it failed on two replicas, and may load on the third
    assert merge_model_lists([[one[2]]])[0]["status_reason"] == "not a GGUF file"
