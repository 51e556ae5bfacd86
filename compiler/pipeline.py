"""lse-compile's pipeline: model directory → artifact, as one list of stages.

config → weights → graph → verify → fuse → partition by capability →
emit MLIR → iree-compile (per target) → artifact (modules + manifest).
"""

from __future__ import annotations

import re
import shlex
import sys
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable

from lse.compiler import cpu_kernel_build as cpu_kernels, kernel_layout, kernel_objects
from lse.compiler.config import load_config
from lse.compiler.emit_mlir import BUCKET, COPY_KV, bucket_modes
from lse.compiler.emit_module import emit_module
from lse.compiler.emit_verify import VERIFY, entry_modes
from lse.compiler.node_groups import Group, group_nodes
from lse.compiler.graph import Graph, build_graph, logits_node, verify_graph
from lse.compiler.kv_layout import DEFAULT_SLACK, KvLayout, layout_for_target
from lse.compiler.iree_compile import COMPILER_VERSION, IreeCompileError, run_iree_compile
from lse.compiler.manifest import ABI_VERSION, EntryPoint, Manifest, PlanStep, TargetArtifact
from lse.compiler.partition_by_capability import Step, partition, signatures
from lse.compiler.targets import Target, cpu_features, get_target
from lse.compiler.weights import BLOCK_FORMATS, TensorInfo, check_weights, parameter_files, read_tensors


class CompileError(RuntimeError):
    pass


@dataclass(frozen=True)
class CompileOptions:
    targets: tuple[str, ...] = ("llvm-cpu",)
    slots: int = 1  # KV-cache slots, and the decode batch
    kv_dtype: str = "f32"  # the KV cache's element type: "f32" or "f16" (half the memory and reads)
    no_kernel: dict[str, frozenset[str]] = field(default_factory=dict)  # target -> ops declared kernel-less
    no_cpu_fallback: bool = False
    dump_dir: Path | None = None
    # the KV cache's positions, fixed in the modules (None: a dynamic size,
    # any context): fixed, decode's command buffers are recorded once
    kv_len: int | None = None
    # rows a step may write beyond a sliding layer's window (kv_layout.py): a
    # sliding layer's ring holds window + kv_slack rows
    kv_slack: int = DEFAULT_SLACK
    # where the kernels' interleaved weights are kept once per model and
    # linked into each artifact (None: each artifact writes its own); not
    # part of the cache key, since it changes no module
    layout_store: Path | None = None
    # where the kernels' C objects are kept once per sources and flags (None: each artifact compiles its own)
    kernel_store: Path | None = None
    # the verify entries speculative decoding checks its drafts with
    # (emit_verify): an engine that speculates asks for them; without, a
    # speculating engine verifies through prefill and lm_head_all
    speculative: bool = False


def progress(message: str) -> None:
    print(f"lse-compile: {message}", file=sys.stderr, flush=True)


def compile_model(model_dir: str | Path, out_dir: str | Path, options: CompileOptions, cache_key: str = "",
                  report: Callable[[str], None] = progress) -> Manifest:
    model_dir, out_dir = Path(model_dir).resolve(), Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    report(f"config: reading {model_dir / 'config.json'}")
    cfg = load_config(model_dir)                                       # config: HF keys, arch registry
    tensors = read_tensors(model_dir)                                  # weights: safetensors headers
    graph = build_graph(cfg)                                           # graph: named nodes
    verify_graph(graph)                                                # verify: the graph
    check_weights(cfg, graph, tensors)                                 # verify: the weight map
    groups = group_nodes(graph)                                        # group: numbered groups
    report(f"graph: {len(graph.nodes)} nodes in {len(groups)} fused groups, {len(tensors)} tensors")
    weights = {n: (t.shape, t.dtype) for n, t in tensors.items()}
    weights.update({p.name: (p.shape, p.dtype) for t in tensors.values() if t.parts for p in t.parts.values()})
    _dump(options.dump_dir, "graph.txt", "\n".join(f"{n.id} {n.op} {n.inputs} -> {n.output} {list(n.weights)}"
                                                   for n in graph.nodes))
    _dump(options.dump_dir, "groups.txt", "\n".join(g.describe() for g in groups))
    artifacts = {}
    for name in options.targets:
        artifacts[name] = compile_target(graph, groups, weights, get_target(name), out_dir, options, report, tensors)
    manifest = Manifest(
        abi_version=ABI_VERSION, model_dir=str(model_dir), model_config=cfg.to_json(),
        parameter_files=parameter_files(tensors), slots=options.slots,
        compiler_version=COMPILER_VERSION, cache_key=cache_key, cpu_features=cpu_features(),
        logits_node=logits_node(graph).id, targets=artifacts,
        kv_dtype=options.kv_dtype, kv_len=options.kv_len)
    manifest.write(out_dir)                                            # artifact: modules + manifest
    report(f"artifact: {out_dir}")
    return manifest


def compile_target(graph: Graph, groups: list[Group], weights: dict, target: Target, out_dir: Path,
                   options: CompileOptions, report: Callable[[str], None],
                   tensors: dict[str, TensorInfo]) -> TargetArtifact:
    ops_used = frozenset(n.op for n in graph.nodes)
    formats = {n: dtype for n, (_, dtype) in weights.items() if dtype in BLOCK_FORMATS}
    unsupported = ((ops_used - target.ops) | (frozenset(formats.values()) - target.formats)
                   | options.no_kernel.get(target.name, frozenset()))
    flags = list(target.flags)
    kernels = _cpu_kernels(target, formats, report)
    layout_files: list[str] = []
    # The layout is written on a thread while the kernels' C objects and
    # iree-compile run: the modules need only its parameters' names and
    # shapes; leaving the block waits for it.
    with ThreadPoolExecutor(1, thread_name_prefix="lse-layout") as pool:
        if kernels:
            weights, layout_files, written = _kernel_layout(graph, weights, tensors, out_dir, report, options, pool)
            kernel_objects.build_object(out_dir, options.kernel_store)
            flags.append(f"--iree-hal-executable-object-search-path={out_dir}")
        steps, modules, layout, params = _plan_and_compile(graph, groups, weights, target, out_dir, options, report,
                                                           flags, kernels, unsupported, formats)
    if kernels:
        written.result()  # the layout's error, if its write failed
    layout_files += _block_parts(tensors, params, out_dir, report, options.layout_store)
    _dump(options.dump_dir, f"{target.name}.plan.txt", "\n".join(
        f"{s.kind} segment {s.segment}: nodes {s.nodes[0].id}..{s.nodes[-1].id}" if s.kind == "device"
        else f"host: {s.cause}" for s in steps))
    return _artifact(target, modules, steps, layout_files, layout)


def _plan_and_compile(graph: Graph, groups: list[Group], weights: dict, target: Target, out_dir: Path,
                      options: CompileOptions, report: Callable[[str], None], flags: list[str], kernels: bool,
                      unsupported: frozenset, formats: dict[str, str]) -> tuple[list[Step], list, KvLayout, set[str]]:
    """Partition by capability, emit and iree-compile the modules; nodes
    iree-compile fails on are re-planned on the host until none fails."""
    failing: frozenset[int] = frozenset()
    while True:
        steps = partition(groups, target.name, unsupported, failing, formats)  # partition by capability
        host = [s for s in steps if s.kind == "host"]
        if host and options.no_cpu_fallback:
            raise CompileError("CPU fallback disabled (--no-cpu-fallback): " + "; ".join(s.cause for s in host))
        slot_tensor = _slot_kernel(graph, options, kernels)
        modes = (("prefill", "decode") + (("decode1",) if options.slots > 1 else ()) + _buckets(graph, options, kernels)
                 + (entry_modes(slot_tensor, steps) if options.speculative else ()))
        sigs = [sig for mode in modes for sig in signatures(graph, steps, mode, slot_tensor)]
        functions = [(sig, list(_segment(steps, sig).nodes)) for sig in sigs] + _lm_head_all(graph, steps)
        if options.slots > 1:  # a prefix in one slot's cache copied into another's
            functions.append((COPY_KV, []))
        modules = _modules(target, flags, functions)
        layout = _kv_layout(graph, options, target, steps)
        report(f"{target.name}: iree-compile {len(functions)} functions in {len(modules)} module(s), "
               f"{len(host)} host groups")
        start = time.monotonic()
        errors, params = _compile_modules(graph, weights, modules, kernels, target, out_dir, options, layout)
        if errors:
            for file, e in errors:
                _dump(options.dump_dir, f"{_stem(file)}.diagnostics.txt", e.diagnostics)
            new = frozenset().union(*(e.failing_nodes for _, e in errors)) - failing
            if not new:
                raise CompileError(str(errors[0][1])) from errors[0][1]
            report(f"{target.name}: no code generated for node(s) {sorted(new)}; re-planning them on the host")
            failing |= new
            continue
        report(f"{target.name}: compiled in {time.monotonic() - start:.1f} s")
        return steps, modules, layout, params


@dataclass(frozen=True)
class Module:
    file: str  # inside the artifact directory
    name: str  # the MLIR module's name: modules loaded side by side need distinct ones
    flags: list[str]
    functions: list  # (EntryPoint, nodes), each entry point naming this module's file


def _modules(target: Target, flags: list[str], functions: list) -> list[Module]:
    """One module, or two where the target compiles decode with its own flags."""
    if not target.decode_flags:
        return [_module(f"{target.name}.vmfb", "lse_model", flags, functions)]
    decode = [f for f in functions if f[0].mode.startswith(("decode", VERIFY)) or f[0].mode.startswith(BUCKET)]
    rest = [f for f in functions if f not in decode]
    return [_module(f"{target.name}.vmfb", "lse_model", flags, rest),
            _module(f"{target.name}-decode.vmfb", "lse_model_decode", [*flags, *target.decode_flags], decode)]


def _module(file: str, name: str, flags: list[str], functions: list) -> Module:
    return Module(file, name, flags, [(replace(entry, module=file), nodes) for entry, nodes in functions])


def _stem(file: str) -> str:
    return file.removesuffix(".vmfb")


def _compile_modules(graph: Graph, weights: dict, modules: list[Module], kernels: bool, target: Target,
                     out_dir: Path, options: CompileOptions,
                     layout: KvLayout) -> tuple[list[tuple[str, IreeCompileError]], set[str]]:
    """Emit and compile every module, side by side; the errors, by module
    file, and the names of the parameters the modules read."""
    jobs, params = [], set()
    for module in modules:
        mlir = emit_module(graph, weights, module.functions, options.slots, kernels, options.kv_dtype,  # emit MLIR
                           target.name, module_name=module.name, kv_len=options.kv_len,
                           layout=layout)
        mlir_path = (options.dump_dir or out_dir) / f"{_stem(module.file)}.mlir"
        mlir_path.parent.mkdir(parents=True, exist_ok=True)
        mlir_path.write_text(mlir)
        params |= set(_PARAMETER.findall(mlir))
        jobs.append((module, mlir_path))

    def run(job: tuple[Module, Path]) -> IreeCompileError | None:
        module, mlir_path = job
        try:
            cmd = run_iree_compile(mlir_path, out_dir / module.file, module.flags)  # iree-compile
        except IreeCompileError as e:
            return e
        _dump(options.dump_dir, f"{_stem(module.file)}.cmd", shlex.join(cmd))
        if options.dump_dir is None:
            mlir_path.unlink()
        return None

    with ThreadPoolExecutor(len(jobs)) as pool:
        results = list(pool.map(run, jobs))
    return [(job[0].file, e) for job, e in zip(jobs, results) if e is not None], params


_PARAMETER = re.compile(r'#stream\.parameter\.named<"model"::"([^"]+)">')


def _block_parts(tensors: dict[str, TensorInfo], params: set[str], out_dir: Path, report: Callable[[str], None],
                 store: Path | None) -> list[str]:
    """The parts (q, d, m) the modules read of block matrices the import
    reads in place from its GGUF (an embedding table on llvm-cpu; every
    matrix on a target without the kernels), written once per model into the
    store beside the kernel layout: the file's name ([] when none is read)."""
    names = sorted(p for p in params if p.rpartition(".")[2] in ("q", "d", "m")
                   and getattr(tensors.get(p.rpartition(".")[0]), "gguf", None))
    if not names:
        return []
    path = out_dir / kernel_layout.PARTS_FILE
    size, how = kernel_layout.shared_parts(tensors, names, path, store)
    matrices = sorted({n.rpartition(".")[0] for n in names})
    report(f"block parts: {len(matrices)} matrices ({', '.join(matrices[:3])}{', ...' if len(matrices) > 3 else ''}) "
           f"as q, d, m, {size / 2**20:.1f} MiB {how} ({path.name})")
    return [path.name]


def _cpu_kernels(target: Target, formats: dict[str, str], report: Callable[[str], None]) -> bool:
    """Whether the hand-written kernels serve this model here."""
    used = sorted(set(formats.values()) & set(cpu_kernels.GEMMS))  # every matvec format has a GEMM too
    if target.name != "llvm-cpu" or not used:
        return False
    why_not = cpu_kernels.kernels_available()
    if why_not:
        report(f"{target.name}: decode matvecs by code generation ({why_not})")
        return False
    report(f"{target.name}: hand-written kernels for {', '.join(used)}")
    return True


def _kernel_layout(graph: Graph, weights: dict, tensors: dict[str, TensorInfo], out_dir: Path,
                   report: Callable[[str], None], options: CompileOptions,
                   pool: ThreadPoolExecutor) -> tuple[dict, list[str], Future]:
    """The kernels' interleaved copy of every block matrix a matmul, the
    lm_head or the embedding reads, written beside the modules on ``pool``
    (into options.layout_store, its C form's library in options.kernel_store:
    kernel_layout.shared_layout): the weights with its parameters added, the
    file's name ([] when the model has none), and the write's future."""
    layout_store = options.layout_store
    names = sorted({w for n in graph.nodes if n.op in ("matmul", "lm_head", "embedding") for w in n.weights
                    if kernel_layout.interleavable(weights, w)})
    path = out_dir / kernel_layout.LAYOUT_FILE

    def write() -> None:
        if not names:
            return
        size, how = kernel_layout.shared_layout(tensors, weights, names, path, layout_store, options.kernel_store)
        formats = ", ".join(sorted({weights[n][1] for n in names}))
        where = f", shared in {layout_store}" if layout_store is not None else ""
        read = sum(tensors[n].nbytes for n in names)  # the imported parts a write reads
        source = f" from {read / 2**20:.1f} MiB of imported blocks" if how != "reused" else ""
        report(f"kernel layout: {len(names)} matrices ({formats}), 16 rows interleaved, {size / 2**20:.1f} MiB "
               f"{how}{source}{where} ({path.name})")
    written = pool.submit(write)
    if not names:
        return weights, [], written
    return {**weights, **kernel_layout.layout_weights(weights, names)}, [path.name], written


def _slot_kernel(graph: Graph, options: CompileOptions, kernels: bool) -> bool:
    """Decode's attention runs in the kernel that takes each row's slot from a
    slot_ids input (the buckets', and decode1's: no per-call scalar)."""
    cfg = graph.config
    return kernels and cpu_kernels.attention_supports(options.kv_dtype, cfg.head_dim, cfg.num_groups)


def _buckets(graph: Graph, options: CompileOptions, kernels: bool) -> tuple[str, ...]:
    """Decode buckets (emit_mlir.bucket_modes) where the slot kernel serves: a
    step of 2 streams among 4 slots then costs 2 rows, not 4."""
    return bucket_modes(options.slots) if _slot_kernel(graph, options, kernels) else ()


def _segment(steps: list[Step], sig: EntryPoint) -> Step:
    index = int(sig.name.rsplit("_", 1)[1])
    return next(s for s in steps if s.kind == "device" and s.segment == index)


def _lm_head_all(graph: Graph, steps: list[Step]) -> list[tuple[EntryPoint, list]]:
    """Logits for every row (scoring mode), when lm_head runs on the device."""
    head = logits_node(graph)
    if any(s.kind == "host" and head in s.nodes for s in steps):
        return []
    return [(EntryPoint("lm_head_all", "lm_head_all", head.inputs, (), False, (head.output,)), [head])]


def _kv_layout(graph: Graph, options: CompileOptions, target: Target, steps: list[Step]) -> KvLayout:
    """kv_layout.layout_for_target: rings on llvm-cpu unless the plan runs an attention on the host."""
    host_attention = any(s.kind == "host" and any(n.op == "attention" for n in s.nodes) for s in steps)
    try:
        return layout_for_target(graph.config, options.kv_len, options.kv_slack, target.name, host_attention)
    except ValueError as e:
        raise CompileError(str(e)) from e


def _artifact(target: Target, modules: list[Module], steps: list[Step], layout_files: list[str],
              layout: KvLayout) -> TargetArtifact:
    plan = [PlanStep(s.kind, [n.id for n in s.nodes], s.segment, s.group, s.cause) for s in steps]
    entries = [entry for m in modules for entry, _ in m.functions]
    return TargetArtifact(target.name, target.driver, {m.file: m.flags for m in modules}, plan, entries, target.note,
                          layout_files, layout.to_json() if layout.rings else {})


def _dump(dump_dir: Path | None, name: str, text: str) -> None:
    if dump_dir is not None:
        dump_dir.mkdir(parents=True, exist_ok=True)
        (dump_dir / name).write_text(text + "\n")
