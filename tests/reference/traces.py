"""The trace strategies in Python: the reference the plugin's ``sparkprov.trace`` (Traces.java,
the same strategies inside Neo4j, one round trip per trace) is checked against.

RECURSIVE expands level by level, one query per level (the CSProv paper's RQ). COMPONENT fetches
every edge of the seeds' weakly connected components by index and traverses in memory (CCProv).
CONNECTED_SET walks the set-dependency graph from the seeds' connected sets to their set-lineage
(backward) or set-descendants (forward), fetches only the edges whose destination (backward) or
source (forward) lies in one of those sets, and traverses in memory (CSProv, Algorithm 2). AUTO
picks from the stored sizes (see :func:`_auto`). All return the same nodes and edges: the unit
tests check them against networkx, the integration tests the plugin against them on the real
ingest's ids.

A store here is anything with the graph reads they use (:class:`Reads`): the unit tests' fake
graph, or :class:`tests.reference.store.Neo4jReads` over a real Neo4j.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from typing import Any

from query_service.model import (
    Direction,
    EdgeView,
    InvalidArgument,
    NodeView,
    NotFound,
    Strategy,
    TraceResult,
    Unimplemented,
)
from query_service.traces import AUTO_FETCH_MAX, TraceQuery

__all__ = ["trace"]

# The graph reads of a reference store: nodes, parents, children, component_edges, set_parents,
# set_children, edges_into_sets, edges_out_of_sets, component_sizes, set_sizes.
Reads = Any


class _Expander:
    """Gives the next level's (src, dst) edges for a frontier."""

    def __init__(self, store: Reads, query: TraceQuery) -> None:
        self.store = store
        self.query = query
        self.queries = 0
        self.fetched = 0

    def __call__(self, frontier: list[int]) -> list[tuple[int, int]]:
        raise NotImplementedError


class _Recursive(_Expander):
    def __call__(self, frontier: list[int]) -> list[tuple[int, int]]:
        self.queries += 1
        if self.query.direction is Direction.BACKWARD:
            pairs = self.store.parents(frontier)
        else:
            pairs = self.store.children(frontier)
        self.fetched += len(pairs)
        return pairs


def _set_lineage(store: Reads, query: TraceQuery, sets: Iterable[int]) -> tuple[list[int], int]:
    """The set-lineage (or set-descendants), level by level over the SET_DEP graph, and the
    number of queries that took."""
    backward = query.direction is Direction.BACKWARD
    seen: dict[int, None] = dict.fromkeys(sets)
    frontier = list(seen)
    queries = 0
    while frontier:
        queries += 1
        if backward:
            reached = [src for src, _ in store.set_parents(frontier)]
        else:
            reached = [dst for _, dst in store.set_children(frontier)]
        frontier = [s for s in dict.fromkeys(reached) if s not in seen]
        seen.update(dict.fromkeys(frontier))
    return list(seen), queries


class _ConnectedSet(_Expander):
    def __init__(
        self, store: Reads, query: TraceQuery, sets: Iterable[int], walked: list[int] | None = None
    ) -> None:
        super().__init__(store, query)
        backward = query.direction is Direction.BACKWARD
        if walked is None:
            walked, self.queries = _set_lineage(store, query, sets)
        ids = walked
        self.sets = len(ids)
        self.queries += 1
        edges = store.edges_into_sets(ids) if backward else store.edges_out_of_sets(ids)
        self.fetched = len(edges)
        self._next: dict[int, list[tuple[int, int]]] = {}
        for src, dst in edges:
            self._next.setdefault(dst if backward else src, []).append((src, dst))

    def __call__(self, frontier: list[int]) -> list[tuple[int, int]]:
        return [edge for n in frontier for edge in self._next.get(n, ())]


class _Component(_Expander):
    def __init__(self, store: Reads, query: TraceQuery, components: Iterable[int]) -> None:
        super().__init__(store, query)
        self._next: dict[int, list[tuple[int, int]]] = {}
        backward = query.direction is Direction.BACKWARD
        for component in set(components):
            self.queries += 1
            edges = store.component_edges(component)
            self.fetched += len(edges)
            for src, dst in edges:
                self._next.setdefault(dst if backward else src, []).append((src, dst))

    def __call__(self, frontier: list[int]) -> list[tuple[int, int]]:
        return [edge for n in frontier for edge in self._next.get(n, ())]


def trace(
    store: Reads, query: TraceQuery, check_deadline: Callable[[], None] = lambda: None
) -> TraceResult:
    """The strategies in Python, a few queries per trace (see the module's docstring)."""
    started = time.perf_counter()
    if not query.node_ids:
        raise InvalidArgument("node_ids must name at least one node")
    seeds = list(dict.fromkeys(query.node_ids))
    seed_nodes = store.nodes(seeds)
    missing = [i for i in seeds if i not in seed_nodes]
    if missing:
        raise NotFound(f"unknown node id(s): {', '.join(str(i) for i in missing[:10])}")

    strategy = query.strategy
    queries = 2
    walked: list[int] | None = None
    if strategy is Strategy.AUTO:
        strategy, walked, asked = _auto(store, query, list(seed_nodes.values()))
        queries += asked
    expand: _Expander
    sets_visited = 0
    if strategy is Strategy.RECURSIVE:
        expand = _Recursive(store, query)
    elif strategy is Strategy.COMPONENT:
        components = [n.component_id for n in seed_nodes.values() if n.component_id is not None]
        expand = _Component(store, query, components)
    elif strategy is Strategy.CONNECTED_SET:
        # A node not yet given a set by ingest is its own singleton set.
        sets = _seed_sets(seed_nodes.values())
        cs = _ConnectedSet(store, query, sets, walked)
        sets_visited = cs.sets
        expand = cs
    else:
        raise Unimplemented(f"strategy {strategy.name} is not available")

    backward = query.direction is Direction.BACKWARD
    order: dict[int, None] = dict.fromkeys(seeds)
    edges: set[tuple[int, int]] = set()
    frontier = seeds
    depth = 0
    truncated = False
    while frontier and (query.max_depth == 0 or depth < query.max_depth):
        check_deadline()
        following: list[int] = []
        for src, dst in expand(frontier):
            edges.add((src, dst))
            reached = src if backward else dst
            if reached not in order:
                order[reached] = None
                following.append(reached)
        depth += 1
        frontier = following
        if len(order) > query.limit:
            truncated = True
            break

    ids = list(order)[: query.limit]
    kept = set(ids)
    views = store.nodes(ids) if query.views else {}
    return TraceResult(
        nodes=[views[i] for i in ids if i in views],
        ids=ids,
        edges=[EdgeView(s, d) for s, d in sorted(edges) if s in kept and d in kept],
        truncated=truncated,
        strategy=strategy,
        levels=depth,
        queries=expand.queries + queries,
        edges_fetched=expand.fetched,
        sets_visited=sets_visited,
        millis=(time.perf_counter() - started) * 1000,
        extra={"nodes_reached": len(order)},
    )


def _seed_sets(seeds: Iterable[NodeView]) -> list[int]:
    # A node not yet given a set by ingest is its own singleton set.
    return [n.id if n.set_id is None else n.set_id for n in seeds]


def _auto(
    store: Reads, query: TraceQuery, seeds: list[NodeView]
) -> tuple[Strategy, list[int] | None, int]:
    """From the stored sizes: COMPONENT when the seeds' components are small; else
    CONNECTED_SET when the set-lineage (walked on the small SET_DEP graph, and handed on so it
    is not walked twice) is small; else RECURSIVE. A small depth limit goes RECURSIVE at once.
    Returns the strategy, the walked set-lineage if any, and the queries spent deciding."""
    if 0 < query.max_depth <= 2 or AUTO_FETCH_MAX <= 0:
        return Strategy.RECURSIVE, None, 0
    components = sorted({n.component_id for n in seeds if n.component_id is not None})
    if not components:
        return Strategy.RECURSIVE, None, 0
    sizes = store.component_sizes(components)
    if sum(sizes.get(c, 1) for c in components) <= AUTO_FETCH_MAX:
        return Strategy.COMPONENT, None, 1
    walked, queries = _set_lineage(store, query, _seed_sets(seeds))
    set_sizes = store.set_sizes(walked)
    if sum(set_sizes.get(s, 1) for s in walked) <= AUTO_FETCH_MAX:
        return Strategy.CONNECTED_SET, walked, queries + 2
    return Strategy.RECURSIVE, None, queries + 2
