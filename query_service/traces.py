"""Backward and forward traces over the stored graph.

RECURSIVE expands level by level, one query per level (the CSProv paper's RQ). COMPONENT fetches
every edge of the seeds' weakly connected components by index and traverses in memory (CCProv).
CONNECTED_SET walks the set-dependency graph from the seeds' connected sets to their set-lineage
(backward) or set-descendants (forward), fetches only the edges whose destination (backward) or
source (forward) lies in one of those sets, and traverses in memory (CSProv, Algorithm 2). AUTO
picks per query from the stored sizes (see :func:`_auto`). All return the same nodes and edges:
unit tests check it against networkx, integration tests on the real ingest's ids.

The service runs them inside Neo4j (:func:`run`: the plugin's ``sparkprov.trace``, the same
strategies in Java, one round trip per trace); :func:`trace` here is their reference, which the
integration tests compare the procedure with, and what runs on stores without the procedure
(the unit tests' fakes).

CONNECTED_SET relies on ingest's invariant that every ancestor of a node lies in its set-lineage;
for a run whose ingest is incomplete (edges stored before their end's record), set dependencies
of the missing ends are not recorded yet, so use RECURSIVE or COMPONENT on incomplete runs.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

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
from query_service.store import Store

__all__ = ["AUTO_FETCH_MAX", "TraceQuery", "run", "run_encoded", "trace"]


@dataclass(frozen=True)
class TraceQuery:
    node_ids: list[int]
    direction: Direction
    max_depth: int = 0  # 0 = unlimited
    limit: int = 100_000
    strategy: Strategy = Strategy.AUTO
    views: bool = True  # False: only ``TraceResult.ids`` (callers that fetch what they need)


class _Expander:
    """Gives the next level's (src, dst) edges for a frontier."""

    def __init__(self, store: Store, query: TraceQuery) -> None:
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


def _set_lineage(store: Store, query: TraceQuery, sets: Iterable[int]) -> tuple[list[int], int]:
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
        self, store: Store, query: TraceQuery, sets: Iterable[int], walked: list[int] | None = None
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
    def __init__(self, store: Store, query: TraceQuery, components: Iterable[int]) -> None:
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


def run(
    store: Store,
    query: TraceQuery,
    check_deadline: Callable[[], None] = lambda: None,
    timeout_s: float | None = None,
) -> TraceResult:
    """The service's trace: inside Neo4j in one call of ``sparkprov.trace`` (its transaction
    bounded by ``timeout_s``, the caller's remaining deadline) on a :class:`Store`; on any
    other store (the unit tests' fakes), :func:`trace`."""
    if not isinstance(store, Store):
        return trace(store, query, check_deadline)
    started = time.perf_counter()
    result = store.trace(
        _seeds(query, check_deadline),
        query.direction,
        query.strategy,
        query.max_depth,
        query.limit,
        views=query.views,
        auto_fetch_max=AUTO_FETCH_MAX,
        timeout_s=timeout_s,
    )
    result.millis = (time.perf_counter() - started) * 1000
    return result


def _seeds(query: TraceQuery, check_deadline: Callable[[], None]) -> list[int]:
    """The query's seeds, once each, in order; the deadline checked before Neo4j is asked."""
    if not query.node_ids:
        raise InvalidArgument("node_ids must name at least one node")
    check_deadline()
    return list(dict.fromkeys(query.node_ids))


def run_encoded(
    store: Store,
    query: TraceQuery,
    check_deadline: Callable[[], None] = lambda: None,
    timeout_s: float | None = None,
) -> tuple[bytes, float] | None:
    """:func:`run` as the plugin's serialized ``TraceResponse`` and the milliseconds it took, for
    the service to pass on as it is; None on any other store than :class:`Store`."""
    if not isinstance(store, Store):
        return None
    started = time.perf_counter()
    encoded = store.trace_encoded(
        _seeds(query, check_deadline),
        query.direction,
        query.strategy,
        query.max_depth,
        query.limit,
        auto_fetch_max=AUTO_FETCH_MAX,
        timeout_s=timeout_s,
    )
    return encoded, (time.perf_counter() - started) * 1000


def trace(
    store: Store, query: TraceQuery, check_deadline: Callable[[], None] = lambda: None
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


# AUTO fetches a whole component (COMPONENT) or a whole set-lineage (CONNECTED_SET) only when it
# holds at most this many nodes; past that, RECURSIVE reads less. With the traversal inside Neo4j
# (sparkprov.trace) a level costs no round trip, so RECURSIVE reads exactly the lineage's edges
# and nothing else, while COMPONENT reads the whole component and CONNECTED_SET every member of
# the set-lineage (a superset of the lineage): RECURSIVE reads the least on every graph, and was
# the fastest strategy in every query class of bench/query_latency.py at 1M records on both
# generators (bench/README.md). So 0: AUTO runs RECURSIVE without walking anything to decide.
# (Over a loop of round trips, a level query cost ~4 ms against ~55 us per fetched edge, and 2,000
# was the break-even; the threshold stays a setting so that trade-off can be restored.)
AUTO_FETCH_MAX = 0


def _seed_sets(seeds: Iterable[NodeView]) -> list[int]:
    # A node not yet given a set by ingest is its own singleton set.
    return [n.id if n.set_id is None else n.set_id for n in seeds]


def _auto(
    store: Store, query: TraceQuery, seeds: list[NodeView]
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
