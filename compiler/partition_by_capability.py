"""Partition fused groups by what a target can code-generate.

A group with an op the target has no kernel for becomes a host group, run by
the numpy interpreter between device calls; the plan is device segments and
host groups in graph order. Each device segment becomes one function per mode
(``prefill_<i>``, ``decode_<i>``) whose arguments and results are the values
that cross its boundary.
"""

from __future__ import annotations

from dataclasses import dataclass

from lse.compiler.emit_mlir import BUCKET
from lse.compiler.emit_verify import ROW_MODES, VERIFY
from lse.compiler.node_groups import Group
from lse.compiler.graph import Graph, Node
from lse.compiler.manifest import EntryPoint
from lse.compiler.weights import BLOCK_FORMATS

# Values each mode must hand back to the runtime.
MODE_OUTPUTS = {"prefill": ("hidden", "logits"), "decode": ("logits",), "decode1": ("logits",)}
MODE_SCALARS = {"prefill": ("slot",), "decode": ("window",), "decode1": ("slot",), VERIFY: ("slot",)}


class PartitionError(ValueError):
    pass


@dataclass(frozen=True)
class Step:
    kind: str  # "device" | "host"
    nodes: tuple[Node, ...]
    segment: int | None = None  # device: segment index
    group: int | None = None  # host: fused group id
    cause: str | None = None  # host: why it runs on the host


def kernel_name(node: Node, formats: dict[str, str]) -> str:
    """What a node needs a kernel for: its op, and the block format of its
    weight when it has one ("q4_k matmul")."""
    fmt = formats.get(node.weights[0]) if node.weights else None
    return f"{fmt} {node.op}" if fmt in BLOCK_FORMATS else node.op


def partition(groups: list[Group], target: str, unsupported: frozenset[str],
              failing_nodes: frozenset[int] = frozenset(), formats: dict[str, str] | None = None) -> list[Step]:
    """Device segments and host groups in order. ``unsupported`` ops and block
    formats come from the target's table and --no-kernel; ``failing_nodes``
    from iree-compile; ``formats`` maps weight names to their stored format."""
    formats = formats or {}
    steps: list[Step] = []
    run: list[Node] = []
    segment = 0
    for g in groups:
        lacking = [kernel_name(n, formats) for n in g.nodes
                   if n.op in unsupported or kernel_name(n, formats).split(" ")[0] in unsupported]
        failing = [n.op for n in g.nodes if n.id in failing_nodes]
        if not lacking and not failing:
            run.extend(g.nodes)
            continue
        if "attention" in g.ops:
            raise PartitionError(f"{g.describe()}: {target} cannot generate it, and attention reads the KV cache "
                                 "on the device, so it cannot run on the host; serve this model on cpu:0")
        if run:
            steps.append(Step("device", tuple(run), segment=segment))
            segment, run = segment + 1, []
        why = (f"no kernel for {', '.join(dict.fromkeys(lacking))}" if lacking
               else f"iree-compile failed for {', '.join(dict.fromkeys(failing))}")
        steps.append(Step("host", g.nodes, group=g.id, cause=f"{g.describe()}; {target}: {why}"))
    if run:
        steps.append(Step("device", tuple(run), segment=segment))
    return steps


def signatures(graph: Graph, steps: list[Step], mode: str, slot_tensor: bool = False) -> list[EntryPoint]:
    """One function per device step: the values it takes and hands on.
    ``slot_tensor``: decode1 takes its slot as a (1,) slot_ids input, as the
    buckets do, rather than a scalar (a scalar becomes a dispatch constant,
    and a command buffer with one is recorded at every call)."""
    later_uses: list[set[str]] = []
    needed = set(MODE_OUTPUTS.get(mode, ("logits",)))  # a decode bucket's: the logits
    for step in reversed(steps):
        later_uses.append(set(needed))
        for n in step.nodes:
            needed.update(n.inputs)
    later_uses.reverse()
    sigs = []
    for step, after in zip(steps, later_uses):
        if step.kind != "device":
            continue
        produced = {n.output for n in step.nodes}
        inputs = tuple(dict.fromkeys(v for n in step.nodes for v in n.inputs if v not in produced))
        outputs = tuple(n.output for n in step.nodes if n.output in after)
        has_attention = any(n.op == "attention" for n in step.nodes)
        slot_ids = has_attention and (mode.startswith(BUCKET) or (mode in ("decode1", *ROW_MODES) and slot_tensor))
        scalars = () if slot_ids or not has_attention else MODE_SCALARS.get(mode, ())
        if slot_ids:
            inputs += ("slot_ids",)  # the slot of each row, for the attention kernel
        sigs.append(EntryPoint(f"{mode}_{step.segment}", mode, inputs, scalars, has_attention, outputs))
    return sigs
