"""What LSE reads from a chat template's text rather than from its
renderings: the values it compares reasoning_effort against, and the
``<name>``/``</name>`` tag pairs that mark reasoning and tool calls.
"""

from __future__ import annotations

import re

from jinja2 import nodes

from lse.runtime.chat.template import template_environment

EFFORT = "reasoning_effort"


def _string_consts(node: nodes.Node) -> list[str]:
    if isinstance(node, nodes.Const) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, (nodes.List, nodes.Tuple)):
        return [v for item in node.items for v in _string_consts(item)]
    return []


def _effort_names(ast: nodes.Template) -> set[str]:
    """``reasoning_effort`` and the variables set from an expression that
    reads it (``{% set effort = reasoning_effort | default('high') %}``)."""
    names = {EFFORT}
    assigns = [a for a in ast.find_all(nodes.Assign) if isinstance(a.target, nodes.Name)]
    changed = True
    while changed:
        changed = False
        for a in assigns:
            reads = {n.name for n in a.node.find_all(nodes.Name)}
            if isinstance(a.node, nodes.Name):
                reads.add(a.node.name)
            if a.target.name not in names and reads & names:
                names.add(a.target.name)
                changed = True
    return names


def effort_candidates(text: str) -> list[str]:
    """The string literals the template compares reasoning_effort against, in
    the template's order, each once."""
    ast = template_environment().parse(text)
    names = _effort_names(ast)
    found: list[str] = []
    for cmp in ast.find_all(nodes.Compare):
        sides = [cmp.expr] + [op.expr for op in cmp.ops]
        if not any(isinstance(s, nodes.Name) and s.name in names for s in sides):
            continue
        for side in sides:
            found.extend(v for v in _string_consts(side) if v not in found)
    return found


_OPEN_TAG = re.compile(r"<([A-Za-z_][\w\-]*)>")


def tag_pairs(text: str) -> list[tuple[str, str]]:
    """``<name>``/``</name>`` pairs that both occur in ``text``, in order of
    the opening tag's first occurrence."""
    pairs: list[tuple[str, str]] = []
    for m in _OPEN_TAG.finditer(text):
        pair = (m.group(0), f"</{m.group(1)}>")
        if pair[1] in text and pair not in pairs:
            pairs.append(pair)
    return pairs


def opens_reasoning(text: str, markers: tuple[str, str] | None) -> bool:
    """``text`` (a generation prompt) leaves a think block open."""
    if markers is None:
        return False
    open_at = text.rfind(markers[0])
    return open_at >= 0 and open_at > text.rfind(markers[1])


def think_markers(text: str, generation_prompts: list[str]) -> tuple[str, str] | None:
    """The think marker pair, from the template's text: the tag pair a
    generation prompt opens; else the pair whose closing tag the template
    splits past assistant turns on (``content.split('</think>')``)."""
    pairs = tag_pairs(text)
    for pair in pairs:
        if any(pair[0] in gp for gp in generation_prompts):
            return pair
    for pair in pairs:
        if re.search(r"\.split\(\s*(['\"])" + re.escape(pair[1]) + r"\1", text):
            return pair
    return None
