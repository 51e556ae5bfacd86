"""Number runs of consecutive nodes: each anchor op (embedding, rms_norm,
matmul, rope, attention, lm_head) starts a group and the elementwise ops after
it (silu, mul, add) join it. Nothing is fused here: the group is the unit of
CPU fallback (a host group runs on the host interpreter), and its description
(``fused group 12 (...)``, lse-api.md's cpu_fallback cause) names it."""

from __future__ import annotations

from dataclasses import dataclass

from lse.compiler.graph import ELEMENTWISE_OPS, Graph, Node


@dataclass(frozen=True)
class Group:
    id: int
    nodes: tuple[Node, ...]

    @property
    def ops(self) -> tuple[str, ...]:
        return tuple(n.op for n in self.nodes)

    def describe(self) -> str:
        """The documented form: ``fused group 12 (3 nodes: mul, silu, add)``."""
        count = len(self.nodes)
        return f"fused group {self.id} ({count} node{'s' if count != 1 else ''}: {', '.join(self.ops)})"


def group_nodes(graph: Graph) -> list[Group]:
    groups: list[list[Node]] = []
    for node in graph.nodes:
        if node.op in ELEMENTWISE_OPS and groups:
            groups[-1].append(node)
        else:
            groups.append([node])
    return [Group(i, tuple(nodes)) for i, nodes in enumerate(groups)]
