"""An in-memory provenance graph (adjacency both ways) and the queries that need nothing else.

The stores fetch edges; everything that walks them afterwards runs here, on plain ints, so that
unit tests can check it against networkx on random graphs.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from query_service.model import NodeView

__all__ = ["Graph"]


@dataclass
class Graph:
    """Directed edges parent -> child; ``nodes`` holds the views known for (some) node ids."""

    children: dict[int, set[int]] = field(default_factory=dict)
    parents: dict[int, set[int]] = field(default_factory=dict)
    nodes: dict[int, NodeView] = field(default_factory=dict)

    @classmethod
    def of(
        cls, edges: Iterable[tuple[int, int]], nodes: Mapping[int, NodeView] | None = None
    ) -> Graph:
        graph = cls(nodes=dict(nodes or {}))
        for node_id in graph.nodes:
            graph.add_node(node_id)
        for src, dst in edges:
            graph.add_edge(src, dst)
        return graph

    def add_node(self, node_id: int) -> None:
        self.children.setdefault(node_id, set())
        self.parents.setdefault(node_id, set())

    def add_edge(self, src: int, dst: int) -> None:
        self.add_node(src)
        self.add_node(dst)
        self.children[src].add(dst)
        self.parents[dst].add(src)

    def ids(self) -> set[int]:
        return set(self.children)

    def edges(self) -> list[tuple[int, int]]:
        return sorted((s, d) for s, ds in self.children.items() for d in ds)

    def op(self, node_id: int) -> str:
        view = self.nodes.get(node_id)
        return view.op if view else ""

    def reach(self, seeds: Iterable[int], backward: bool = False) -> list[int]:
        """The seeds, then every node reachable from them, in breadth-first order."""
        step = self.parents if backward else self.children
        order: dict[int, None] = dict.fromkeys(seeds)
        frontier = list(order)
        while frontier:
            following = []
            for n in frontier:
                for m in step.get(n, ()):
                    if m not in order:
                        order[m] = None
                        following.append(m)
            frontier = following
        return list(order)
