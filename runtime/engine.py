"""The engine: a model (artifact or model directory) opened on a device,
with its tokenizer, chat semantics and scheduler. ``submit`` turns one
request body into sequences for the scheduler, or raises the documented
LseError before any work starts."""

from __future__ import annotations

import json
import logging
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

from tokenizers import Tokenizer

from lse.compiler.cache import compiled_artifact
from lse.compiler.config import ModelConfigError, load_config
from lse.compiler.emit_verify import VERIFY
from lse.compiler.kv_layout import DEFAULT_SLACK, full_layout, layout_for_target
from lse.compiler.manifest import MANIFEST_NAME, read_manifest
from lse.compiler.pipeline import CompileOptions
from lse.compiler.targets import cpu_features, parse_no_kernel
from lse.compiler.weights import default_kv_dtype, read_tensors
from lse.runtime.backend import DeviceBackend, HostBackend, cache_bytes
from lse.runtime.chat.defaults import generation_defaults
from lse.runtime.chat.output import tool_call_markers
from lse.runtime.chat.special import PromptEncoder
from lse.runtime.chat.template import TemplateError, load_chat_template
from lse.runtime.chat.thinking import probe_thinking
from lse.runtime.context import ModelContext
from lse.runtime.embeddings.pooling import embedding_pooling
from lse.runtime.devices import DeviceError, choose_device, declined_lines, local_workers
from lse.runtime.errors import LseError
from lse.runtime.fallback import FallbackAccounting
from lse.runtime.kv_ring import kv_layer_bytes, ring_note
from lse.runtime.openai.replies import model_entry
from lse.runtime.prepare import prepare_request
from lse.runtime.request_state import RequestState
from lse.runtime.scheduler import Scheduler
from lse.runtime.speculative import make_speculator
from lse.runtime.telemetry import Observers
from lse.runtime.structured import Grammars

log = logging.getLogger("lse")
DEFAULT_KV_LEN = 4096  # like llama-server's default context; --kv-len raises it


class LseStartupError(RuntimeError):
    """lse_open failed; the message says why."""


@dataclass
class LseConfig:
    model: str | None = None  # model directory, artifact directory or GGUF file; None = the default model
    max_tokens: int = 0  # operator cap, 0 = none
    kv_len: int | None = None  # context length; default min(max_position_embeddings, 4096)
    disable_cpu_fallback: bool = False
    temperature: float | None = None  # server override of the temperature default
    pool: list[str] | None = None
    parallel: int = 1  # sequence slots; 0: auto (AUTO_SLOTS whose full-context caches fit AUTO_KV_BUDGET)
    served_model_name: str | None = None
    queue_size: int = 64  # requests waiting beyond the slots before 503
    no_kernel: list[str] = field(default_factory=list)  # [TARGET:]OP declared kernel-less
    # KV cache element type: "auto" is f16 for block-format (GGUF) weights, as
    # llama.cpp's default cache, and f32 for float checkpoints; or "f16", "f32".
    kv_dtype: str = "auto"
    # IREE's CPU worker threads (local devices), unpinned; 0: IREE's default,
    # one per physical core, each pinned to it. One pool a process: a later
    # engine must ask for the first one's count (or 0).
    threads: int = 0
    speculative: str = "off"  # "ngram": drafts from the request's own tokens (runtime/speculative.py)
    # rows a sliding layer's ring holds beyond its window, and a prefill chunk's rows less one
    # (compiler/kv_layout.py; None: its DEFAULT_SLACK)
    kv_slack: int | None = None
    # POST /v1/embeddings (runtime/embeddings): off unless asked (lse-server --embeddings), and the
    # pooling (last, mean, cls; None: the model's files say, else last).
    embeddings: bool = False
    pooling: str | None = None


# --parallel auto (lse-server's default): as many slots, up to AUTO_SLOTS, as
# fit AUTO_KV_BUDGET with a full-context KV cache each, at least one. Up to 8
# users are served at once rather than queued, and a shared system prompt is
# copied between slots. On the CPU a slot's cache becomes resident as its
# tokens are written (backend._zero_cache), so an idle slot costs address
# space, not memory, and a lone stream on 8 slots decodes as fast as on 1
# (docs/performance.md, "Slots").
AUTO_SLOTS = 8
AUTO_KV_BUDGET = 1024 * 2**20


class Engine:
    def __init__(self, config: LseConfig):
        self.config = config
        speculator = _speculator(config.speculative)  # checked before the model loads
        self.log_lines: list[str] = []
        disable = config.disable_cpu_fallback or os.environ.get("LSE_REQUIRE_DEVICE_KERNELS") == "1"
        self.fallback = FallbackAccounting(allowed=not disable)
        self.observers = Observers()  # told of each finished request (lse_observe)
        self.model_dir, artifact, name = _resolve_model(config.model)
        self.cfg = load_config(self.model_dir)
        self.kv_len = config.kv_len or min(self.cfg.max_position_embeddings, DEFAULT_KV_LEN)
        if config.threads < 0:
            raise LseStartupError(f"threads must be 0 (IREE's default) or more, got {config.threads}")
        self.device = choose_device(config.pool, disable, config.threads)
        # The KV cache's element type where LSE compiles here; the host
        # interpreter's is f32, and an artifact brings its own (and its slots).
        compiling = artifact is None and self.device.target is not None
        kv_dtype = _kv_dtype(config.kv_dtype, self.model_dir) if compiling else None
        self.parallel = config.parallel or (self._auto_slots(kv_dtype or "f32") if artifact is None else 1)
        self.backend = self._open_backend(artifact, kv_dtype)
        self.tokenizer = Tokenizer.from_file(str(self.model_dir / "tokenizer.json"))
        self.prompts = PromptEncoder(self.tokenizer)
        try:
            self.template = load_chat_template(self.model_dir)
            self.thinking = probe_thinking(self.template)
        except TemplateError as e:
            raise LseStartupError(str(e)) from e
        self.tool_markers = tool_call_markers(self.template.text) if self.template else None
        self.defaults = generation_defaults(self.model_dir, config.temperature)
        self.eos_ids = _eos_ids(self.model_dir, self.cfg, self.tokenizer)
        self.grammars = Grammars(self.tokenizer, self.eos_ids, self.cfg.vocab_size)
        self.model_id = config.served_model_name or name
        self.created = int(time.time())
        self.context = ModelContext(  # what planning a request reads (prepare.py), frozen
            tokenizer=self.tokenizer, prompts=self.prompts, template=self.template, thinking=self.thinking,
            tool_markers=self.tool_markers, defaults=self.defaults, eos_ids=self.eos_ids,
            vocab_size=self.cfg.vocab_size, context_length=self.kv_len, max_tokens_cap=config.max_tokens,
            queue_size=config.queue_size, grammars=self.grammars, token_text=self.token_text)
        try:
            self.pooling = embedding_pooling(config.embeddings, config.pooling, self.model_dir, self._say)
        except ValueError as e:
            raise LseStartupError(str(e)) from e
        self.scheduler = Scheduler(self.backend, self.slots, self.kv_len)
        self.scheduler.speculator = speculator
        self._log_startup()

    def _auto_slots(self, kv_dtype: str) -> int:
        # the slabs the compile lays out (sliding layers' rings on llvm-cpu)
        try:
            slabs = layout_for_target(self.cfg, self.kv_len, self.config.kv_slack or DEFAULT_SLACK,
                                      self.device.target).slabs
        except ValueError:  # a slack under the minimum: the compile refuses it, saying why
            slabs = None
        per_slot = cache_bytes(self.cfg, 1, self.kv_len, kv_dtype, slabs)
        slots = max(1, min(AUTO_SLOTS, AUTO_KV_BUDGET // per_slot))
        self._say(f"lse: --parallel auto: {slots} slot(s), a {kv_dtype} KV cache of {per_slot / 2**20:.1f} MiB each "
                  f"at {self.kv_len} tokens (up to {AUTO_SLOTS} within {AUTO_KV_BUDGET // 2**20} MiB)")
        return slots

    def _open_backend(self, artifact: Path | None, kv_dtype: str | None):
        dev = self.device
        for level, line in declined_lines(dev):
            self._say(line, level)
        if dev.warning:
            self._say(f"lse: WARNING: {dev.warning}", logging.WARNING)
        if dev.target is None:
            self.slots = self.parallel
            return HostBackend(self.model_dir, self.cfg, self.slots, self.kv_len)
        if artifact is None:
            options = CompileOptions(targets=(dev.target,), slots=self.parallel,
                                     no_kernel=parse_no_kernel(self.config.no_kernel),
                                     kv_dtype=kv_dtype, kv_len=self.kv_len,
                                     kv_slack=self.config.kv_slack or DEFAULT_SLACK,
                                     speculative=self.config.speculative != "off")
            artifact, manifest = compiled_artifact(self.model_dir, options, report=self._say)
        else:
            manifest = read_manifest(artifact)
            self.kv_len = _artifact_kv_len(manifest, self.config.kv_len, self.kv_len, artifact)
            if self.config.speculative != "off" and not _has_verify(manifest, dev.target):
                self._say(f"lse: WARNING: {artifact} has no verify entry: --speculative checks its drafts through "
                          "prefill, which costs more a step; recompile with lse-compile --speculative ngram",
                          logging.WARNING)
        if dev.target not in manifest.targets:
            raise LseStartupError(f"{artifact} has no module for {dev.target} (device {dev.name}); "
                                  f"it was compiled for {', '.join(manifest.targets)}; recompile with lse-compile")
        if dev.target == "llvm-cpu" and manifest.cpu_features != cpu_features():
            # its modules target this host's CPU (target-cpu=host, the AVX2 kernels): elsewhere they can fault
            raise LseStartupError(f"{artifact} was compiled on a CPU with other features ({manifest.cpu_features}, "
                                  f"this one: {cpu_features()}); recompile with lse-compile")
        self.slots = manifest.slots
        target = manifest.targets[dev.target]
        for step in target.host_groups:
            self._say(f"lse: plan: host group: {step.cause}")
        return DeviceBackend(manifest, artifact, target, dev.device, dev.name, self.kv_len)

    def _say(self, line: str, level: int = logging.INFO) -> None:
        self.log_lines.append(line)
        log.log(level, "%s", line)

    def _log_startup(self) -> None:
        self._say(f"lse: model {self.model_id} ({self.model_dir}), {self.cfg.model_type}, "
                  f"{self.cfg.num_hidden_layers} layers, context {self.kv_len}, {self.slots} slot(s)")
        workers = local_workers() if self.backend.name.startswith("local") else None
        self._say(f"lse: device {self.backend.name}" + (f", {workers} worker thread(s)" if workers else ""))
        self._say(_memory_line(self.model_dir, self.cfg, self.slots, self.kv_len, self.backend.kv_dtype,
                               self.backend.layout))
        self._say(self.defaults.log_line())
        note = self.defaults.neutral_note(self.config.max_tokens)
        if note is not None:
            self._say(note, logging.WARNING)
        if self.thinking.supported:
            self._say(f"lse: thinking levels: {', '.join(self.thinking.level_ids)}; "
                      f"default {self.thinking.default_level} (from {self.thinking.source})")
        else:
            self._say("lse: thinking levels: none (the chat template has no thinking controls)")

    # ---- requests -------------------------------------------------------
    def submit(self, body, endpoint: str, reasoning_budget: int | None = None) -> RequestState:
        seqs, include_usage, echo, model = prepare_request(self.context, body, endpoint, self.scheduler.check_room,
                                                           reasoning_budget)
        # One model per server: the request's `model` is accepted and echoed back.
        request = RequestState(endpoint, model or self.model_id, seqs, self.kv_len, include_usage, self.fallback,
                               self.token_text, echo, self.observers)
        self.scheduler.submit(request, seqs, self.config.queue_size)
        return request

    def token_text(self, token_id: int) -> str:
        return self.tokenizer.decode([token_id], skip_special_tokens=False)

    def model_info(self) -> dict:
        info = {**model_entry(self.model_id, self.created, self.kv_len, self.thinking.to_json(),
                              self.defaults.to_json()),
                # The template's tool-call markers, if it writes any.
                "tool_call_markers": list(self.tool_markers) if self.tool_markers else None,
                # How a forced tool call is written: between the template's markers, or, without any,
                # as one JSON object the prompt asks for (runtime/chat/generic_tools.py).
                "tool_call_form": "markers" if self.tool_markers else "generic" if self.template else None}
        served = {**info, "model_dir": str(self.model_dir), "model_type": self.cfg.model_type,
                  "device": self.backend.name, "slots": self.slots, "max_tokens_cap": self.config.max_tokens}
        return {**info, "served": served}

    def status(self) -> dict:
        return {"engine": {"device": self.backend.name, "slots": self.slots, "active": self.scheduler.active(),
                           "queued": self.scheduler.queued(), "context_length": self.kv_len,
                           "kv_tokens": self.scheduler.kv_tokens(), "kv_capacity": self.slots * self.kv_len,
                           "cpu_fallback": self.fallback.status(),
                           **({"speculative": s.status()} if (s := self.scheduler.speculator) else {})}}

    def shutdown(self, timeout: float) -> None:
        """Drain (blocking): waiting requests get 503 now, running ones up to
        ``timeout`` seconds to finish; those still running then end with the
        same 503 error (in the stream when headers went out)."""
        self.scheduler.close_queue(LseError("shutting_down", "the server is shutting down; retry after it restarts"))
        if not self.scheduler.wait_idle(timeout):
            self.scheduler.fail_running(LseError(
                "shutting_down", f"the server shut down before this reply finished (--shutdown-timeout {timeout:g}s)"))

    def close(self) -> None:
        self.scheduler.stop()


def _speculator(mode: str):
    try:
        return make_speculator(mode)
    except ValueError as e:
        raise LseStartupError(str(e)) from None


def _resolve_model(model: str | None) -> tuple[Path, Path | None, str]:
    """(model directory, artifact directory or None to compile through the
    cache, the model's name: its directory's, the GGUF file's, or the default
    model's own). A GGUF file is imported once into the cache, its block
    formats kept (lse.compiler.gguf.importer)."""
    if model is None:
        from lse.compiler.gguf.importer import DEFAULT_MODEL_NAME, ensure_default_model

        return ensure_default_model(), None, DEFAULT_MODEL_NAME
    path = Path(model).expanduser().resolve()
    if path.is_file() and path.suffix.lower() == ".gguf":
        from lse.compiler.gguf.importer import GGUFError, TokenizerImportError, ensure_imported, gguf_model_name

        name = gguf_model_name(path)  # SmolLM2-135M-Instruct.Q4_1.gguf is served as SmolLM2-135M-Instruct
        try:  # imported once into the cache, like the default model, block formats kept
            return ensure_imported(path, name), None, name
        except (GGUFError, TokenizerImportError) as e:
            raise LseStartupError(f"{path}: {e}") from e
    if (path / MANIFEST_NAME).is_file():
        model_dir = Path(read_manifest(path).model_dir)
        return model_dir, path, model_dir.name
    if not (path / "config.json").is_file():
        raise LseStartupError(f"{path} is neither a model directory (config.json), an artifact (manifest.json) "
                              "nor a GGUF file")
    return path, None, path.name


def _has_verify(manifest, target: str) -> bool:
    """Whether the artifact's modules for ``target`` carry a verify entry (CompileOptions.speculative)."""
    return target in manifest.targets and any(e.name.startswith(VERIFY) for e in manifest.targets[target].entry_points)


def _artifact_kv_len(manifest, asked: int | None, default: int, artifact: Path) -> int:
    """The context an artifact serves: the one its modules fix (lse-compile
    --kv-len), else what was asked or the default."""
    if manifest.kv_len is None:
        return default
    if asked is not None and asked != manifest.kv_len:
        raise LseStartupError(f"{artifact} was compiled for a context of {manifest.kv_len} tokens (lse-compile "
                              f"--kv-len), not {asked}; recompile with --kv-len {asked}, or leave kv_len unset")
    return manifest.kv_len


def _kv_dtype(choice: str, model_dir: Path) -> str:
    if choice not in ("auto", "f16", "f32"):
        raise LseStartupError(f"kv_dtype {choice!r} is not one of auto, f16, f32")
    if choice != "auto":
        return choice
    return default_kv_dtype(model_dir)


def _memory_line(model_dir: Path, cfg, slots: int, kv_len: int, kv_dtype: str, layout=None) -> str:
    """Weights by stored format and the KV cache, in bytes the engine holds
    (the cache in ``layout``, compiler/kv_layout.KvLayout: a slab a layer where None)."""
    layout = layout or full_layout(cfg.num_hidden_layers, kv_len)
    formats: dict[str, int] = {}
    for t in read_tensors(model_dir).values():
        formats[t.dtype] = formats.get(t.dtype, 0) + t.nbytes
    weights = sum(formats.values())
    kv = cache_bytes(cfg, slots, kv_len, kv_dtype, layout.slabs)
    parts = ", ".join(f"{fmt} {n / 2**20:.1f}" for fmt, n in sorted(formats.items(), key=lambda kv: -kv[1]))
    split = kv_layer_bytes(cfg, layout, slots, kv_len, 2 if kv_dtype == "f16" else 4)
    layers = "" if split is None else (f"; sliding layers {split[0] / 2**20:.1f} MiB (window {cfg.sliding_window}, "
                                       f"{ring_note(cfg, layout)}), global layers {split[1] / 2**20:.1f} MiB")
    return (f"lse: memory: weights {weights / 2**20:.1f} MiB ({parts}), KV cache {kv / 2**20:.1f} MiB "
            f"({kv_dtype}, {slots} slot(s) x {kv_len} tokens, {kv // (slots * kv_len)} bytes per token{layers})")


def _eos_ids(model_dir: Path, cfg, tokenizer: Tokenizer) -> frozenset[int]:
    """End-of-turn ids: config.json, generation_config.json and the tokenizer's eos token."""
    ids = set(cfg.eos_token_ids)
    gen = model_dir / "generation_config.json"
    if gen.is_file():
        eos = json.loads(gen.read_text()).get("eos_token_id")
        ids.update(eos if isinstance(eos, list) else [eos] if eos is not None else [])
    tc = model_dir / "tokenizer_config.json"
    if tc.is_file():
        eos = json.loads(tc.read_text()).get("eos_token")
        eos = eos.get("content") if isinstance(eos, dict) else eos
        if isinstance(eos, str) and tokenizer.token_to_id(eos) is not None:
            ids.add(tokenizer.token_to_id(eos))
    return frozenset(ids)


def open_engine(config: LseConfig) -> Engine:
    try:
        return Engine(config)
    except (DeviceError, LseStartupError, ModelConfigError) as e:  # their messages name what is refused
        raise LseStartupError(str(e)) from e
    except (ValueError, OSError, RuntimeError) as e:
        raise LseStartupError(f"{type(e).__name__}: {e}") from e
