"""Backends that run one step of the model for the scheduler.

``DeviceBackend`` drives an artifact's compiled modules through the IREE
runtime and runs the plan's host groups with the numpy kernels in between;
``HostBackend`` runs every node on the host (the ``cpu:0`` device). Both keep
the KV cache (S, 2, P, T, kv, d), S slabs of T rows for P slots (the
artifact's layout, compiler/kv_layout.py: a slab a layer, or sliding
layers' rings packed into slabs), and expose the
same calls: prefill one slot, decode every slot, decode one slot, logits
for all rows, copy a prefix from one slot to another.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

import numpy as np

from lse.compiler.config import ModelConfig
from lse.compiler.emit_mlir import BUCKET
from lse.compiler.emit_verify import ROWS as VERIFY_ROWS
from lse.compiler.graph import Graph, Node, build_graph, logits_node
from lse.compiler.kv_layout import KvLayout, full_layout
from lse.runtime import cuda_context
from lse.runtime.host_kernels import StepState, run_nodes
from lse.runtime.page_cache import cache_in_huge_folios
from lse.compiler.manifest import Manifest, ManifestError, TargetArtifact
from lse.compiler.weights import load_array, read_tensors

# Called once per host-group run with its cause; raises to refuse it.
OnFallback = Callable[[str], None]


class _Weights:
    """Host copies of weights, loaded on first use (host groups need few)."""

    def __init__(self, model_dir: Path):
        self._infos = read_tensors(model_dir)
        self._arrays: dict[str, np.ndarray] = {}

    def __call__(self, name: str) -> np.ndarray:
        if name not in self._arrays:
            self._arrays[name] = load_array(self._infos[name])
        return self._arrays[name]


def cache_shape(cfg: ModelConfig, slots: int, kv_len: int, slabs: int | None = None) -> tuple[int, ...]:
    return (slabs or cfg.num_hidden_layers, 2, slots, kv_len, cfg.num_key_value_heads, cfg.head_dim)


def cache_bytes(cfg: ModelConfig, slots: int, kv_len: int, kv_dtype: str = "f32", slabs: int | None = None) -> int:
    return int(np.prod(cache_shape(cfg, slots, kv_len, slabs))) * np.dtype(KV_DTYPES[kv_dtype]).itemsize


def target_layout(cfg: ModelConfig, target: TargetArtifact, kv_len: int) -> KvLayout:
    """The layout the target's modules were compiled for (the manifest's), or a slab a layer."""
    return KvLayout.from_json(target.kv_layout) if target.kv_layout else full_layout(cfg.num_hidden_layers, kv_len)


KV_DTYPES = {"f32": np.float32, "f16": np.float16}


class HostBackend:
    """The whole model on the host interpreter (device ``cpu:0``)."""

    name = "cpu:0"
    buckets: list[int] = []  # no decode buckets: a batched step is every slot's (decode)

    def __init__(self, model_dir: Path, cfg: ModelConfig, slots: int, kv_len: int):
        self.cfg, self.slots, self.kv_len = cfg, slots, kv_len
        self.graph: Graph = build_graph(cfg)
        self.head = logits_node(self.graph)
        self.weights = _Weights(model_dir)
        self.kv_dtype = "f32"
        self.layout = full_layout(cfg.num_hidden_layers, kv_len)
        self.cache = np.zeros(cache_shape(cfg, slots, kv_len), np.float32)

    def _run(self, mode: str, values: dict, slot: int = 0) -> dict:
        run_nodes(list(self.graph.nodes), values, self.weights, StepState(mode, self.cfg, self.cache, slot))
        return values

    def prefill(self, tokens: np.ndarray, start: int, slot: int, on_fallback: OnFallback) -> tuple[np.ndarray, np.ndarray]:
        v = self._run("prefill", {"tokens": tokens, "positions": np.arange(start, start + len(tokens))}, slot)
        return v["logits"][0], v["hidden"]

    def decode(self, tokens: np.ndarray, positions: np.ndarray, on_fallback: OnFallback) -> np.ndarray:
        return self._run("decode", {"tokens": tokens, "positions": positions})["logits"]

    def decode_one(self, token: int, position: int, slot: int, on_fallback: OnFallback) -> np.ndarray:
        values = {"tokens": np.asarray([token], np.int64), "positions": np.asarray([position], np.int64)}
        return self._run("decode1", values, slot)["logits"][0]

    def all_logits(self, hidden: np.ndarray, on_fallback: OnFallback) -> np.ndarray:
        return _host_logits(self.head, self.cfg, self.weights, hidden)

    def copy_prefix(self, src: int, dst: int, count: int) -> bool:
        """Slot dst's first ``count`` positions become slot src's (every layer's K and V)."""
        self.cache[:, :, dst, :count] = self.cache[:, :, src, :count]
        return True


class DeviceBackend:
    """An artifact's modules on an IREE device, host groups in between."""

    def __init__(self, manifest: Manifest, artifact_dir: Path, target: TargetArtifact, device, name: str,
                 kv_len: int):
        import iree.runtime as rt

        self.name = name
        kind, _, index = name.partition(":")
        self._cuda = int(index or 0) if kind == "cuda" else None  # its context made current per thread (cuda_context)
        self.cfg = ModelConfig.from_json(manifest.model_config)
        self.slots, self.kv_len = manifest.slots, kv_len
        self.graph = build_graph(self.cfg)
        self.head = _named_head(self.graph, manifest.logits_node)
        self.plan = target.plan
        self.entries = {e.name: e for e in target.entry_points}
        self.weights = _Weights(Path(manifest.model_dir))
        instance = rt.VmInstance()
        index = rt.ParameterIndex()
        if kind.startswith("local"):  # the CPU kernels' layout streamed a step: in 2 MiB folios
            for f in target.parameter_files:
                cache_in_huge_folios(artifact_dir / f)
        for f in [*manifest.parameter_files, *(str(artifact_dir / f) for f in target.parameter_files)]:
            index.load(f)
        params = rt.create_io_parameters_module(instance, index.create_provider(scope="model"))
        self.device = device
        files = list(target.modules)
        vmfbs = [rt.VmModule.mmap(instance, str(artifact_dir / f)) for f in files]
        loaded = rt.load_vm_modules(params, rt.create_hal_module(instance, device), *vmfbs,
                                    config=rt.Config(device=device))[-len(files):]
        modules = dict(zip(files, loaded))
        self.functions = {e.name: getattr(modules[e.module], e.name) for e in target.entry_points}
        self.kv_dtype = manifest.kv_dtype
        # decode buckets (emit_mlir.bucket_modes): row counts below the slots
        # whose steps take any subset of the slots, smallest first
        self.buckets = sorted(int(e.mode[len(BUCKET):]) for e in target.entry_points
                              if e.mode.startswith(BUCKET) and e.name == f"{e.mode}_0")
        self.layout = target_layout(self.cfg, target, kv_len)
        shape = cache_shape(self.cfg, self.slots, kv_len, self.layout.slabs)
        self.cache = _zero_cache(device, name, shape, KV_DTYPES[manifest.kv_dtype])

    def _on_this_thread(self) -> None:
        """Before a call into the modules: a CUDA device's context current on the calling thread."""
        if self._cuda is not None:
            cuda_context.bind(self._cuda)

    def _run(self, mode: str, values: dict, scalars: dict, on_fallback: OnFallback, slot: int = 0) -> dict:
        self._on_this_thread()
        nodes = self.graph.nodes
        for step in self.plan:
            if step.kind == "host":
                on_fallback(step.cause)
                host_vals = {k: (v.to_host() if hasattr(v, "to_host") else v) for k, v in values.items()}
                run_nodes([nodes[i] for i in step.nodes], host_vals, self.weights, StepState(mode, self.cfg, None, slot))
                values.update({nodes[i].output: host_vals[nodes[i].output] for i in step.nodes})
                continue
            entry = self.entries[f"{mode}_{step.segment}"]
            args = [values[v] for v in entry.inputs] + [scalars[s] for s in entry.scalars]
            if entry.uses_cache:
                args.append(self.cache)
            results = self.functions[entry.name](*args)
            results = list(results) if isinstance(results, (list, tuple)) else [results]
            if entry.uses_cache:
                self.cache = results.pop(0)
            values.update(zip(entry.outputs, results))
        return values

    def prefill(self, tokens: np.ndarray, start: int, slot: int, on_fallback: OnFallback) -> tuple[np.ndarray, np.ndarray]:
        values = {"tokens": tokens, "positions": np.arange(start, start + len(tokens), dtype=np.int64)}
        v = self._run("prefill", values, {"slot": slot}, on_fallback, slot)
        return _host(v["logits"])[0], v["hidden"]

    def decode(self, tokens: np.ndarray, positions: np.ndarray, on_fallback: OnFallback) -> np.ndarray:
        window = int(positions.max()) + 1
        v = self._run("decode", {"tokens": tokens, "positions": positions}, {"window": window}, on_fallback)
        return _host(v["logits"])

    def decode_rows(self, slot_ids: np.ndarray, tokens: np.ndarray, positions: np.ndarray,
                    on_fallback: OnFallback) -> np.ndarray:
        """One token for each of len(slot_ids) slots (a bucket's row count, in
        self.buckets), row i in slot slot_ids[i]: logits (rows, vocab)."""
        values = {"tokens": tokens, "positions": positions, "slot_ids": slot_ids}
        v = self._run(f"{BUCKET}{len(slot_ids)}", values, {}, on_fallback)
        return _host(v["logits"])

    def decode_one(self, token: int, position: int, slot: int, on_fallback: OnFallback) -> np.ndarray:
        """One token of one slot: the static one-row module when the artifact
        has it (slots > 1), so a lone stream doesn't pay for idle slots."""
        if "decode1_0" not in self.entries:
            tokens = np.zeros(self.slots, np.int64)
            positions = np.zeros(self.slots, np.int64)
            tokens[slot], positions[slot] = token, position
            return self.decode(tokens, positions, on_fallback)[slot]
        values = {"tokens": np.asarray([token], np.int64), "positions": np.asarray([position], np.int64),
                  "slot_ids": np.asarray([slot], np.int64)}  # the slot: an input where the artifact takes it as one
        v = self._run("decode1", values, {"slot": slot}, on_fallback, slot)
        return _host(v["logits"])[0]

    def copy_prefix(self, src: int, dst: int, count: int) -> bool:
        """Slot dst's first ``count`` positions become slot src's, copied on
        the device; False where the artifact has no copy_kv (one slot)."""
        if "copy_kv" not in self.entries:
            return False
        self._on_this_thread()
        # rings hold positions at p mod R: the whole slot goes (its every row)
        self.cache = self.functions["copy_kv"](src, dst, self.kv_len if self.layout.rings else count, self.cache)
        return True

    def verify(self, tokens: np.ndarray, start: int, slot: int, on_fallback: OnFallback) -> np.ndarray | None:
        """Every row's logits (rows, vocab) for a slot's tokens at positions
        start.. in one call (compiler/emit_verify.py), None where the
        artifact has no verify entry (the caller runs prefill, then all_logits)."""
        n = len(tokens)
        rows = self.verify_rows(n, start)
        if rows:  # decode's shape, the rows padded (their cache positions past the last are never listed)
            padded = np.concatenate([tokens, np.full(rows - n, tokens[-1], np.int64)])
            values = {"tokens": padded, "positions": np.arange(start, start + rows, dtype=np.int64),
                      "slot_ids": np.full(rows, slot, np.int64)}
            return _host(self._run(f"verify{rows}", values, {}, on_fallback, slot)["logits"])[:n]
        if "verify_0" not in self.entries:
            return None
        values = {"tokens": tokens, "positions": np.arange(start, start + n, dtype=np.int64)}
        return _host(self._run("verify", values, {"slot": slot}, on_fallback, slot)["logits"])

    def verify_rows(self, n: int, start: int) -> int:
        """The static rows a verification of ``n`` tokens at ``start`` runs
        (its rows padded up to them, so fewer proposals cost the same), 0
        where no static entry fits (then ``verify_0``, or the caller's prefill)."""
        return next((r for r in VERIFY_ROWS if n <= r and start + r <= self.kv_len and f"verify{r}_0" in self.entries),
                    0)

    def all_logits(self, hidden, on_fallback: OnFallback) -> np.ndarray:
        if "lm_head_all" in self.entries:
            self._on_this_thread()
            return _host(self.functions["lm_head_all"](hidden))
        step = next(s for s in self.plan if s.kind == "host" and self.head.id in s.nodes)
        on_fallback(step.cause)
        return _host_logits(self.head, self.cfg, self.weights, _host(hidden))


def _zero_cache(device, name: str, shape: tuple[int, ...], dtype):
    """The KV cache, all zeros. On the CPU (``local:``, host memory) it is an
    allocation whose pages nothing has touched, so a slot's memory becomes
    resident as its tokens are written, not at startup: --parallel 8's 720
    MiB of default-model caches cost nothing until used. Reading untouched
    pages maps the kernel's zero page, so checking that they are zeros costs
    no memory either (0.26 s for 720 MiB); memory that is not zeros, and
    other devices, get a copy of zeros. An iree.runtime.DeviceArray."""
    import iree.runtime as rt

    if name.startswith("local"):
        nbytes = int(np.prod(shape)) * np.dtype(dtype).itemsize
        buffer = device.allocator.allocate_buffer(memory_type=rt.MemoryType.DEVICE_LOCAL,
                                                  allowed_usage=rt.BufferUsage.DEFAULT, allocation_size=nbytes)
        word = np.dtype(np.uint64 if nbytes % 8 == 0 else np.uint8)
        words = buffer.map().asarray([nbytes // word.itemsize], word)
        if not words.any():
            element = rt.HalElementType.FLOAT_16 if np.dtype(dtype) == np.float16 else rt.HalElementType.FLOAT_32
            return rt.DeviceArray(device, rt.HalBufferView(buffer, list(shape), element))
    return rt.asdevicearray(device, np.zeros(shape, dtype))


def _named_head(graph: Graph, node_id: int) -> Node:
    """The manifest's logits node, which must be the node of this graph that writes the logits."""
    head = logits_node(graph)
    if node_id != head.id:
        raise ManifestError(f"manifest logits_node {node_id} is not the graph's logits node {head.id}; "
                            "recompile with lse-compile")
    return head


def _host_logits(head: Node, cfg: ModelConfig, weights: _Weights, hidden: np.ndarray) -> np.ndarray:
    """lm_head over every row (N, V) on the host interpreter."""
    values = {head.inputs[0]: hidden}
    run_nodes([head], values, weights, StepState("lm_head_all", cfg))
    return values[head.output]


def _host(x) -> np.ndarray:
    """A host copy: ``to_host()`` maps the device buffer, which the next call may reuse."""
    return np.array(x.to_host()) if hasattr(x, "to_host") else np.asarray(x)


