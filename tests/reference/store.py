"""The questions the plugin answers inside Neo4j (``sparkprov.trace``, ``.subgraph``,
``.propagateDeletion``), answered in Python over a store's plain graph reads: the reference the
plugin is compared with, and the answers behind the unit tests' fake stores.

:class:`ReferenceQueries` is a mixin for a class with the reads of :mod:`tests.reference.traces`
plus ``nodes``, ``closure_inputs`` and ``tensor_values``; :class:`Neo4jReference` puts it over
the service's real :class:`query_service.store.Store` (whose reads it borrows)."""

from __future__ import annotations

from typing import Any

from query_service import adapter
from query_service.deletion import Propagated, Touched, propagate
from query_service.graph import Graph
from query_service.model import (
    Direction,
    EdgeView,
    InvalidArgument,
    NotFound,
    Strategy,
    TraceResult,
)
from query_service.traces import TraceQuery
from tests.reference.traces import trace

__all__ = ["Neo4jReference", "ReferenceQueries"]


class ReferenceQueries:
    """``trace``, ``trace_encoded``, ``subgraph`` and ``propagate_deletion`` with the signatures of
    query_service.store.Store, computed here from the reads."""

    def trace(
        self,
        node_ids: list[int],
        direction: Direction,
        strategy: Strategy,
        max_depth: int,
        limit: int,
        *,
        views: bool = True,
        auto_fetch_max: int = 0,
        timeout_s: float | None = None,
    ) -> TraceResult:
        return trace(self, TraceQuery(node_ids, direction, max_depth, limit, strategy, views))

    def trace_encoded(
        self,
        node_ids: list[int],
        direction: Direction,
        strategy: Strategy,
        max_depth: int,
        limit: int,
        *,
        auto_fetch_max: int = 0,
        timeout_s: float | None = None,
    ) -> bytes:
        result = self.trace(node_ids, direction, strategy, max_depth, limit)
        response = adapter.trace_response(result)
        response.stats.ClearField("millis")
        return bytes(response.SerializeToString())

    def _closure(self, ids: list[int], direction: Direction, limit: int, what: str) -> TraceResult:
        result = trace(self, TraceQuery(ids, direction, limit=limit))
        if result.truncated:
            raise InvalidArgument(f"{what} has more than {limit} nodes")
        return result

    def subgraph(
        self,
        node_id: int,
        limit: int,
        max_nodes: int,
        auto_fetch_max: int = 0,
        timeout_s: float | None = None,
    ) -> TraceResult:
        """Subgraph(n) assembled from a few reads: ancestors and descendants (two traces), the
        descendants' parents and those parents' children, then the views and edges among it."""
        store: Any = self
        if node_id not in store.nodes([node_id]):
            raise NotFound(f"unknown node id(s): {node_id}")
        up = self._closure([node_id], Direction.BACKWARD, max_nodes, "the ancestry")
        down = self._closure([node_id], Direction.FORWARD, max_nodes, "the descendants")
        descendants = [n.id for n in down.nodes if n.id != node_id]
        into = store.parents(descendants) if descendants else []
        parents = sorted({src for src, _ in into})
        out = store.children(parents) if parents else []
        edges = [(e.src, e.dst) for e in up.edges + down.edges] + into + out
        graph = Graph.of(edges)
        graph.add_node(node_id)
        order = subgraph(graph, node_id)
        truncated = len(order) > limit
        order = order[:limit]
        kept = set(order)
        views = store.nodes(order)
        among = sorted({(s, d) for s, d in store.children(order) if d in kept})
        return TraceResult(
            nodes=[views[i] for i in order if i in views],
            edges=[EdgeView(s, d) for s, d in among],
            truncated=truncated,
            strategy=up.strategy,
            levels=max(up.levels, down.levels),
            queries=up.queries + down.queries + 5,
            edges_fetched=up.edges_fetched + down.edges_fetched + len(into) + len(out),
            sets_visited=up.sets_visited + down.sets_visited,
            extra={"nodes_reached": len(kept) + (1 if truncated else 0)},
        )

    def propagate_deletion(
        self, ids: list[int], limit: int, auto_fetch_max: int = 0, timeout_s: float | None = None
    ) -> Propagated:
        """Definition 4.2 over the forward closure and every edge into it, with the surviving
        TENSOR values of each AGGREGATE the removal touched (in TENSOR id order)."""
        store: Any = self
        found = store.nodes(ids)
        missing = [i for i in ids if i not in found]
        if missing:
            raise NotFound(f"unknown node id(s): {', '.join(str(i) for i in missing[:10])}")
        down = trace(self, TraceQuery(ids, Direction.FORWARD, limit=limit, views=False))
        if down.truncated:
            return Propagated([], [], truncated=True)
        views, into = store.closure_inputs(down.ids)
        graph = Graph.of(into, views)
        removed = propagate(graph, ids)
        gone = set(removed)
        aggregates = sorted(
            {
                c
                for n in removed
                for c in graph.children.get(n, ())
                if c not in gone and graph.op(c) == "AGGREGATE"
            }
        )
        values = store.tensor_values(aggregates) if aggregates else {}
        touched = []
        for a in aggregates:
            tensors = sorted(p for p in graph.parents.get(a, ()) if p not in gone and p in values)
            view = graph.nodes[a]
            touched.append(Touched(a, view.label, view.value, [values[t] for t in tensors]))
        return Propagated(removed, touched)


class Neo4jReference(ReferenceQueries):
    """The reference over a real Neo4j: the service's Store's plain reads, the answers here."""

    def __init__(self, store: Any) -> None:
        self._store = store

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)


def subgraph(graph: Graph, node_id: int) -> list[int]:
    """Lipstick's Subgraph(n): n's ancestors and descendants, and every other child of a
    descendant's parents (its siblings). Order: n, ancestors, descendants, siblings."""
    ancestors = graph.reach([node_id], backward=True)
    descendants = graph.reach([node_id])
    order = dict.fromkeys(ancestors + descendants[1:])
    for d in descendants[1:]:
        for p in sorted(graph.parents.get(d, ())):
            for sibling in sorted(graph.children.get(p, ())):
                order.setdefault(sibling, None)
    return list(order)
