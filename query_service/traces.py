"""Backward and forward traces over the stored graph.

RECURSIVE expands level by level, one query per level (the CSProv paper's RQ). COMPONENT fetches
every edge of the seeds' weakly connected components by index and traverses in memory (CCProv).
AUTO picks RECURSIVE for now; both return the same nodes and edges, and tests check it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from query_service.model import (
    Direction,
    EdgeView,
    InvalidArgument,
    NotFound,
    Strategy,
    TraceResult,
    Unimplemented,
)
from query_service.store import Store

__all__ = ["TraceQuery", "trace"]


@dataclass(frozen=True)
class TraceQuery:
    node_ids: list[int]
    direction: Direction
    max_depth: int = 0  # 0 = unlimited
    limit: int = 100_000
    strategy: Strategy = Strategy.AUTO


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


def trace(
    store: Store, query: TraceQuery, check_deadline: Callable[[], None] = lambda: None
) -> TraceResult:
    started = time.perf_counter()
    if not query.node_ids:
        raise InvalidArgument("node_ids must name at least one node")
    seeds = list(dict.fromkeys(query.node_ids))
    seed_nodes = store.nodes(seeds)
    missing = [i for i in seeds if i not in seed_nodes]
    if missing:
        raise NotFound(f"unknown node id(s): {', '.join(str(i) for i in missing[:10])}")

    strategy = query.strategy
    if strategy is Strategy.AUTO:
        strategy = Strategy.RECURSIVE
    expand: _Expander
    if strategy is Strategy.RECURSIVE:
        expand = _Recursive(store, query)
    elif strategy is Strategy.COMPONENT:
        components = [n.component_id for n in seed_nodes.values() if n.component_id is not None]
        expand = _Component(store, query, components)
    else:
        raise Unimplemented(f"strategy {strategy.name} is not available yet")

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
    views = store.nodes(ids)
    return TraceResult(
        nodes=[views[i] for i in ids if i in views],
        edges=[EdgeView(s, d) for s, d in sorted(edges) if s in kept and d in kept],
        truncated=truncated,
        strategy=strategy,
        levels=depth,
        queries=expand.queries + 2,
        edges_fetched=expand.fetched,
        millis=(time.perf_counter() - started) * 1000,
    )
