"""The servers the kit runs against in CI, as data: one per fixture the rows
need, one per generation-defaults case, the scripted replies, and each
operator option a row needs (``Row.needs`` names the capability; the table
below names the server that has it). ``tests/e2e/test_spec_conformance.py``
and ``python -m lse.tools.mutants`` both read it.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

API_KEY = "lse-spec-key"


@dataclass(frozen=True)
class Server:
    name: str
    fixture: str
    options: tuple[str, ...] = ()
    # JSON files of the model directory replaced or merged (config.json) for
    # this server: a fixture variant without a fixture of its own.
    files: tuple[tuple[str, Any], ...] = ()
    # Not a server but the startup rows: lse-server and lse run as processes
    # on the fixture (and on broken_template), each to its exit or its /health.
    startup: bool = False

    @property
    def api_key(self) -> str | None:
        return API_KEY if "--api-key" in self.options else None


SERVERS = (
    # --embeddings: the embeddings rows (prefill's own rows: the artifact is the same, no compile)
    Server("smollm_like", "smollm_like", ("--kv-len", "512", "--api-key", API_KEY, "--max-tokens", "64",
                                          "--embeddings")),
    # The configuration a newcomer runs: a 4096 context, no key, no cap. Rows
    # must not be skipped here for want of a small context (issue 14).
    Server("smollm_like-default", "smollm_like", ("--kv-len", "4096"),
           # A trained length far below the context: it must not act as an output limit.
           files=(("tokenizer_config.json", {"model_max_length": 32}),)),
    Server("qwen38_like", "qwen38_like", ("--kv-len", "1024")),
    Server("qwen36_like", "qwen36_like", ("--kv-len", "1024", "--parallel", "2")),
    Server("effort_levels", "effort_levels", ("--kv-len", "1024")),
    Server("no_template", "no_template", ("--kv-len", "512")),
    Server("gen_max_new", "gen_max_new", ("--kv-len", "512")),
    Server("gen_max_length", "gen_max_length", ("--kv-len", "512")),
    Server("gen_greedy", "gen_greedy", ("--kv-len", "512")),
    Server("gen_embedded", "gen_embedded", ("--kv-len", "512", "--temperature", "0.5")),
    # Every level of the defaults' order on one model: generation_config.json
    # (top_k, min_p) over config.json's embedded block (temperature, top_p) over
    # its top level (temperature 0.9 and top_k 5 lose; repetition_penalty wins).
    Server("defaults_precedence", "gen_embedded", ("--kv-len", "512"), files=(
        ("generation_config.json", {"top_k": 3, "min_p": 0.05}),
        ("config.json", {"repetition_penalty": 1.1}))),
    # 1024: the forced-call scenario's tools, at a byte per token, need more than 512
    Server("scripted_tool_call", "scripted_tool_call", ("--kv-len", "1024")),
    Server("scripted_bad_tool_call", "scripted_bad_tool_call", ("--kv-len", "512")),
    Server("scripted_reasoning", "scripted_reasoning", ("--kv-len", "512")),
    # silu declared kernel-less: its groups run on the CPU interpreter, so the
    # fallback rows (lse_warnings, lse_status counts, the log lines) apply.
    Server("llama-fallback", "llama", ("--kv-len", "512", "--no-kernel", "llvm-cpu:silu")),
    # The same group refused: every generation is a 500 cpu_fallback_disabled
    # (in the stream when streamed), allowed false, and the server keeps serving.
    Server("llama-no-fallback", "llama", ("--kv-len", "512", "--no-kernel", "llvm-cpu:silu", "--no-cpu-fallback")),
    # Every generation runs past a 1 ms timeout: 408 request_timeout, in the stream when streamed.
    Server("smollm_like-timeout", "smollm_like", ("--kv-len", "512", "--request-timeout-secs", "0.001")),
    Server("startup", "llama", startup=True),
)
BROKEN_TEMPLATE = "broken_template"
BY_NAME = {s.name: s for s in SERVERS}


def model_dir(server: Server, fixture_dir: Callable[[str], Any], scratch: Path) -> Path:
    """The model directory ``server`` serves: the fixture's own, or a copy
    under ``scratch`` with ``server.files`` merged into its JSON files (or
    written, where the fixture has none); weights linked, not copied."""
    source = Path(fixture_dir(server.fixture))
    if not server.files:
        return source
    dest = scratch / f"model-{server.name}"
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    for item in source.iterdir():
        (dest / item.name).symlink_to(item) if item.suffix == ".safetensors" else shutil.copy(item, dest / item.name)
    for name, content in server.files:
        path = dest / name
        if path.exists():  # an existing file is merged into, a new one written
            content = {**json.loads(path.read_text()), **content}
        path.unlink(missing_ok=True)
        path.write_text(json.dumps(content, indent=2))
    return dest


# The server of the matrix that shows each capability a row, a value or a
# scenario needs (facts.py): the CI matrix covers every one, and the e2e test
# checks that the named server did show it.
SHOWN_BY = {
    "open": "smollm_like-default", "auth": "smollm_like", "template": "smollm_like", "no_template": "no_template",
    "thinking": "qwen38_like", "no_thinking": "smollm_like", "toggle": "qwen38_like", "effort": "qwen38_like",
    "effort_without_toggle": "effort_levels", "instruction_levels": "qwen38_like", "small_context": "smollm_like",
    "cap": "smollm_like", "max_new_tokens": "gen_max_new", "max_length": "gen_max_length",
    "no_limit": "smollm_like-default", "greedy_default": "gen_greedy", "files_defaults": "gen_embedded",
    "server_temperature": "gen_embedded", "log": "llama-fallback", "tool_markers": "scripted_tool_call",
    "no_tool_markers": "smollm_like", "probe_tool_call": "scripted_tool_call",
    "probe_tool_text": "scripted_bad_tool_call", "probe_reasoning": "scripted_reasoning",
    "serves": "smollm_like-default", "fallback_refused": "llama-no-fallback",
    "times_out": "smollm_like-timeout", "model_files": "defaults_precedence",
    "process": "startup", "levels:none,xhigh,medium,low": "qwen38_like", "levels:none,on": "qwen36_like",
    "levels:": "smollm_like", "embeddings": "smollm_like", "no_embeddings": "smollm_like-default",
}
