"""lse-server's command line: flags to LseConfig and ServerSettings."""

from __future__ import annotations

import pytest

from lse.api.cli import build_parser, engine_config, server_settings
from lse.runtime.api import LseConfig


def parse(*argv: str):
    return build_parser().parse_args(list(argv))


def test_defaults_are_the_default_model_and_documented_limits(monkeypatch):
    monkeypatch.delenv("LSE_API_KEY", raising=False)
    args = parse()
    assert (args.host, args.port) == ("127.0.0.1", 8080)
    assert engine_config(args) == LseConfig(model=None, max_tokens=0, kv_len=None, disable_cpu_fallback=False,
                                            temperature=None, pool=None, parallel=0, served_model_name=None,
                                            queue_size=64)  # parallel 0: auto (the engine picks the slots)
    settings = server_settings(args)
    assert (settings.api_key, settings.max_body_bytes, settings.request_timeout_secs) == (None, 8 << 20, 600.0)


def test_every_engine_flag_reaches_lse_config():
    args = parse("/models/m", "--max-tokens", "100", "--kv-len", "512", "--temperature", "0.2",
                 "--no-cpu-fallback", "--pool", "local:0, local:1", "--pool", "local:2", "--parallel", "2",
                 "--served-model-name", "m-served", "--queue-size", "3", "--threads", "3")
    assert engine_config(args) == LseConfig(
        model="/models/m", max_tokens=100, kv_len=512, disable_cpu_fallback=True, temperature=0.2,
        pool=["local:0", "local:1", "local:2"], parallel=2, served_model_name="m-served", queue_size=3, threads=3)


def test_api_key_flag_wins_over_the_environment(monkeypatch):
    monkeypatch.setenv("LSE_API_KEY", "from-env")
    assert server_settings(parse()).api_key == "from-env"
    assert server_settings(parse("--api-key", "from-flag")).api_key == "from-flag"
    monkeypatch.setenv("LSE_API_KEY", "")
    assert server_settings(parse()).api_key is None  # an empty key is no key, not a key ""


def test_http_flags_reach_server_settings():
    settings = server_settings(parse("--max-body-bytes", "1024", "--request-timeout-secs", "0"))
    assert (settings.max_body_bytes, settings.request_timeout_secs) == (1024, 0.0)


@pytest.mark.parametrize("argv", [
    ("--max-tokens", "-1"), ("--parallel", "0"), ("--parallel", "automatic"), ("--queue-size", "0"), ("--kv-len", "0"),
    ("--request-timeout-secs", "-5"), ("--request-timeout-secs", "nan"), ("--max-body-bytes", "0"),
    ("--port", "http"), ("--threads", "-1"), ("--threads", "two"),
])
def test_bad_values_are_refused_with_usage(argv, capsys):
    with pytest.raises(SystemExit) as info:
        parse(*argv)
    assert info.value.code == 2
    assert "usage: lse-server" in capsys.readouterr().err


def test_startup_lines_name_every_option_its_value_and_source(monkeypatch) -> None:
    from lse.api.cli import build_parser, option_lines

    monkeypatch.setenv("LSE_API_KEY", "secret-key")
    argv = ["--port", "9000", "--metrics-public"]
    lines = option_lines(argv, build_parser().parse_args(argv))
    assert "lse-server: option --port = 9000 (flag)" in lines
    assert "lse-server: option --host = 127.0.0.1 (default)" in lines
    assert "lse-server: option --metrics-public = True (flag)" in lines
    assert "lse-server: option --api-key = set (environment LSE_API_KEY)" in lines
    assert not any("secret-key" in line for line in lines)
    options = {a.option_strings[-1] for a in build_parser()._actions if a.option_strings} - {"--help", "--version"}
    assert {line.split()[2] for line in lines} == options | {"model"}


def test_responses_store_flags_reach_server_settings():
    from lse.runtime.responses.store import StoreOptions

    assert server_settings(parse()).responses_store == StoreOptions(1000, 64 * 2**20, 3600.0)
    settings = server_settings(parse("--responses-store-entries", "5", "--responses-store-bytes", "4096",
                                     "--responses-store-ttl-secs", "0"))
    assert settings.responses_store == StoreOptions(max_entries=5, max_bytes=4096, ttl_secs=0.0)


@pytest.mark.parametrize("flag,value", [("--responses-store-entries", "-1"), ("--responses-store-bytes", "x"),
                                        ("--responses-store-ttl-secs", "-0.5"),
                                        ("--responses-store-ttl-secs", "nan")])
def test_bad_store_values_are_refused_with_usage(flag, value, capsys):
    with pytest.raises(SystemExit) as e:
        parse(flag, value)
    assert e.value.code == 2
    assert flag in capsys.readouterr().err


def test_several_models_and_their_options_parse():
    from lse.api.models import find_specs, is_model_set, served_name

    args = build_parser().parse_intermixed_args(["/m/a.Q4_0.gguf", "--port", "1", "/m/b", "--served-model-name",
                                                 "bee=/m/b", "--alias", "bee=b2", "--models-max", "1",
                                                 "--memory-budget", "1.5G", "--keep-alive", "30"])
    assert is_model_set(args) and not is_model_set(parse("/m/a"))
    assert [(s.name, s.path, s.aliases) for s in find_specs(args)()] == [("a", "/m/a.Q4_0.gguf", ()),
                                                                        ("bee", "/m/b", ("b2",))]
    assert (args.models_max, args.memory_budget, args.keep_alive) == (1, 3 * 2**29, 30.0)
    assert served_name(parse("/m/b", "--served-model-name", "bee=/m/b")) == "bee"  # one model: its NAME=PATH
    assert engine_config(parse("/m/b", "--served-model-name", "plain")).served_model_name == "plain"


@pytest.mark.parametrize("extra,message", [
    (("--served-model-name", "plain"), "--served-model-name plain names a lone model"),
    (("--preload", "nope"), "--preload nope: no such model"),
    (("--default-model", "nope"), "--default-model 'nope' is not one of the models"),
    (("--served-model-name", "a=/m/a", "--served-model-name", "a=/m/b"), "the model name 'a' is given twice"),
])
def test_a_model_set_refuses_to_start_on_bad_names(extra, message):
    from lse.api.models import open_model_set
    from lse.runtime.api import LseStartupError

    args = build_parser().parse_intermixed_args(["/m/a", "/m/b", *extra])
    with pytest.raises(LseStartupError, match=message):
        open_model_set(args, engine_config(args))()


@pytest.mark.parametrize("argv,message", [
    (("/m/a", "--models-dir", "/no/such/dir"), "--models-dir /no/such/dir: not a directory"),
    (("/m/a", "/m/b", "--served-model-name", "x"), "--served-model-name x names a lone model"),
])
def test_lse_cluster_checks_a_model_set_before_starting_ray(argv, message, capsys):
    """lse-cluster serves several models (docs/cluster.md); a set it can't serve
    is refused before any Ray starts, in lse-server's words."""
    from lse.cluster.cli import main

    assert main(list(argv)) == 1
    assert message in capsys.readouterr().err


def test_a_model_set_as_a_replicas_lse_open_config():
    from lse.api.cli import set_config

    args = build_parser().parse_intermixed_args(["/m/a.gguf", "/m/b", "--served-model-name", "bee=/m/b",
                                                 "--alias", "bee=b2", "--models-max", "1", "--preload", "a",
                                                 "--kv-len", "128"])
    config = set_config(args, engine_config(args))
    assert config["models"] == [{"name": "a", "path": "/m/a.gguf", "aliases": []},
                                {"name": "bee", "path": "/m/b", "aliases": ["b2"]}]
    assert (config["models_max"], config["preload"], config["kv_len"], "model" in config) == (1, ["a"], 128, False)
