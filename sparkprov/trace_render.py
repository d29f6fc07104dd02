"""Text renderings of a :class:`sparkprov.query_model.Trace`: the indented tree ``make demo``
prints, JSON (plain data, enums by name) and Graphviz DOT. Pure functions over the dataclasses.
"""

from __future__ import annotations

import enum
import json
from dataclasses import asdict
from typing import Any

from sparkprov.query_model import Node, Op, Trace

__all__ = ["describe", "plain", "render_dot", "render_json", "render_trace"]


def _op_name(op: int) -> str:
    try:
        return Op(op).name
    except ValueError:
        return str(op)


def describe(node: Node) -> str:
    """One line: ``[OP] relation label = value  attr=value ...``."""
    text = f"[{_op_name(node.op)}] "
    if node.relation:
        text += f"{node.relation} "
    text += node.label
    shows_value = node.value != node.label or node.op == Op.AGGREGATE
    if node.value and shows_value:
        text += f" = {node.value}"
    if node.attributes:
        text += "  " + " ".join(f"{k}={v}" for k, v in sorted(node.attributes.items()))
    return text


def render_trace(trace: Trace, root: str, *, backward: bool = True) -> str:
    """An indented tree of a trace from ``root``; shared ancestors are printed once."""
    nodes = {n.id: n for n in trace.nodes}
    nexts: dict[str, list[str]] = {}
    for edge in trace.edges:
        a, b = (edge.dst, edge.src) if backward else (edge.src, edge.dst)
        nexts.setdefault(a, []).append(b)
    arrow = "<- " if backward else "-> "
    lines: list[str] = []
    shown: set[str] = set()

    def walk(node_id: str, depth: int) -> None:
        node = nodes.get(node_id)
        text = describe(node) if node else f"(node {node_id})"
        prefix = "    " * depth + (arrow if depth else "")
        if node_id in shown:
            lines.append(f"{prefix}{text}  (see above)")
            return
        shown.add(node_id)
        lines.append(prefix + text)
        children = sorted(
            nexts.get(node_id, []), key=lambda i: describe(nodes[i]) if i in nodes else i
        )
        for child in children:
            walk(child, depth + 1)

    walk(root, 0)
    if trace.truncated:
        lines.append("... (truncated by the limit)")
    return "\n".join(lines)


def plain(value: Any) -> Any:
    """A dataclass (``asdict``) as JSON-ready data, enums by name."""
    if isinstance(value, enum.IntEnum):
        return value.name
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    return value


def render_json(trace: Trace) -> str:
    """The trace as JSON: ``{"nodes": [...], "edges": [...], "truncated", "stats"}``, enums by
    name."""
    data = {
        "nodes": [plain(asdict(n)) for n in trace.nodes],
        "edges": [{"src": e.src, "dst": e.dst} for e in trace.edges],
        "truncated": trace.truncated,
        "stats": plain(asdict(trace.stats)),
    }
    return json.dumps(data, indent=2, sort_keys=False)


def _dot_text(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"')


def render_dot(trace: Trace) -> str:
    """The trace as a Graphviz digraph (``dot -Tsvg``): one box per node, edges used -> derived."""
    lines = ["digraph trace {", "  rankdir=BT;", "  node [shape=box, fontname=Helvetica];"]
    for node in trace.nodes:
        lines.append(f'  "{node.id}" [label="{_dot_text(describe(node))}"];')
    for edge in trace.edges:
        lines.append(f'  "{edge.src}" -> "{edge.dst}";')
    lines.append("}")
    return "\n".join(lines)
