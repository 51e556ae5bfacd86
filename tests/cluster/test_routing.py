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
from lse.cluster.router import PrefixMemory, prefix_chain, prompt_text, rank

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
