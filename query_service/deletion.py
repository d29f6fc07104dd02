"""Deletion propagation (Lipstick Definition 4.2, MODEL.md section 4) and DependsOn, in memory.

The graph handed in must hold the forward closure of the deleted nodes and every in-edge of the
closure's nodes: that is all Definition 4.2 looks at, and all the store fetches. The service
propagates inside Neo4j (``sparkprov.propagateDeletion``, the same definition in Java, one round
trip) and recomputes the aggregates it reports with :func:`recompute_touched`; these functions
are its reference and run the zoomed-out views.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from query_service.graph import Graph

__all__ = [
    "AGGREGATES",
    "Propagated",
    "Recomputed",
    "Touched",
    "aggregate",
    "depends_on",
    "propagate",
    "recompute",
    "recompute_touched",
]

# A node of these ops is removed as soon as it loses any incoming edge (joint use). An anti
# join's EXCLUDED node stands for the pair (left row, the right row that matched it): it goes
# with either. It has no child, so it changes no other node's fate (docs/capture.md).
_ALL_INPUTS = frozenset({"TIMES", "TENSOR", "EXCLUDED"})
AGGREGATES = ("COUNT", "SUM", "MIN", "MAX", "AVG")


def propagate(graph: Graph, deleted: Iterable[int]) -> list[int]:
    """The removed nodes: ``deleted``, then, repeatedly, every node that had incoming edges and
    lost all of them, or is TIMES or TENSOR and lost any. Order: deleted first, then by removal."""
    removed: dict[int, None] = dict.fromkeys(deleted)
    frontier = list(removed)
    while frontier:
        following: list[int] = []
        for n in frontier:
            for child in sorted(graph.children.get(n, ())):
                if child in removed:
                    continue
                inputs = graph.parents.get(child, set())
                if graph.op(child) in _ALL_INPUTS or all(p in removed for p in inputs):
                    removed[child] = None
                    following.append(child)
        frontier = following
    return list(removed)


def depends_on(graph: Graph, node_id: int, on: Iterable[int]) -> bool:
    """n depends on S iff n is removed when S is deleted."""
    return node_id in set(propagate(graph, on))


def _number(text: str) -> float:
    return float(text)


def aggregate(function: str, values: list[str]) -> str:
    """The aggregate of the values as text (ints stay ints); "" for an empty MIN/MAX/AVG."""
    if function == "COUNT":
        return str(len(values))
    if not values:
        return "0" if function == "SUM" else ""
    try:
        numbers = [_number(v) for v in values]
    except ValueError:
        # MIN and MAX of text compare as text; SUM and AVG of text are undefined
        if function == "MIN":
            return min(values)
        if function == "MAX":
            return max(values)
        return ""
    if function == "AVG":
        result = sum(numbers) / len(numbers)
    elif function == "SUM":
        result = sum(numbers)
    elif function == "MIN":
        result = min(numbers)
    elif function == "MAX":
        result = max(numbers)
    else:
        raise ValueError(f"cannot recompute aggregate {function}")
    if function != "AVG" and result.is_integer() and all("." not in v for v in values):
        return str(int(result))
    return repr(result)


@dataclass(frozen=True)
class Recomputed:
    node_id: int
    function: str
    old_value: str
    new_value: str
    inputs: int


def recompute(
    graph: Graph,
    removed: Iterable[int],
    tensor_values: Mapping[int, str],
) -> list[Recomputed]:
    """Surviving AGGREGATE nodes among the removed nodes' children, over their surviving TENSOR
    inputs; ``tensor_values`` gives each TENSOR input's value (its VALUE parent's) and so says
    which parents are TENSORs (surviving ones need not have a view in ``graph``). Aggregates of
    functions other than COUNT, SUM, MIN, MAX and AVG are left out."""
    gone = set(removed)
    touched = sorted(
        {
            c
            for n in gone
            for c in graph.children.get(n, ())
            if c not in gone and graph.op(c) == "AGGREGATE"
        }
    )
    out = []
    for node_id in touched:
        view = graph.nodes[node_id]
        function = view.label.upper()
        if function not in AGGREGATES:
            continue
        tensors = sorted(
            p for p in graph.parents.get(node_id, ()) if p not in gone and p in tensor_values
        )
        values = [tensor_values[t] for t in tensors]
        out.append(
            Recomputed(node_id, function, view.value, aggregate(function, values), len(tensors))
        )
    return out


@dataclass(frozen=True)
class Touched:
    """A surviving AGGREGATE node that lost inputs, as ``sparkprov.propagateDeletion`` reports
    it: its label (the function), its stored value, and its surviving TENSOR inputs' values in
    TENSOR id order."""

    node_id: int
    label: str
    value: str
    values: list[str]


@dataclass(frozen=True)
class Propagated:
    """A deletion propagated inside Neo4j: ``truncated`` when the forward closure was over the
    limit (nothing else is then given)."""

    removed: list[int]
    touched: list[Touched]
    truncated: bool = False


def recompute_touched(touched: Iterable[Touched]) -> list[Recomputed]:
    """:func:`recompute` from what the procedure reports of each touched aggregate."""
    out = []
    for t in touched:
        function = t.label.upper()
        if function in AGGREGATES:
            new = aggregate(function, list(t.values))
            out.append(Recomputed(t.node_id, function, t.value, new, len(t.values)))
    return out
