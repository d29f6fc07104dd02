"""Backward and forward traces over the stored graph, computed inside Neo4j by the plugin's
``sparkprov.trace`` (neo4j_plugin: Traces.java, one round trip per trace).

RECURSIVE expands level by level (the CSProv paper's RQ). COMPONENT fetches every edge of the
seeds' weakly connected components by index and traverses in memory (CCProv). CONNECTED_SET
walks the set-dependency graph from the seeds' connected sets to their set-lineage (backward) or
set-descendants (forward), fetches only the edges whose destination (backward) or source
(forward) lies in one of those sets, and traverses in memory (CSProv, Algorithm 2). AUTO picks
per query from the stored sizes. All return the same nodes and edges; their Python reference,
which the plugin is tested against, is tests/reference/traces.py.

CONNECTED_SET relies on ingest's invariant that every ancestor of a node lies in its set-lineage;
for a run whose ingest is incomplete (edges stored before their end's record), set dependencies
of the missing ends are not recorded yet, so use RECURSIVE or COMPONENT on incomplete runs.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from query_service.model import (
    Direction,
    InvalidArgument,
    Strategy,
    TraceResult,
)
from query_service.store import GraphStore

__all__ = ["AUTO_FETCH_MAX", "TraceQuery", "run", "run_encoded"]


@dataclass(frozen=True)
class TraceQuery:
    node_ids: list[int]
    direction: Direction
    max_depth: int = 0  # 0 = unlimited
    limit: int = 100_000
    strategy: Strategy = Strategy.AUTO
    views: bool = True  # False: only ``TraceResult.ids`` (callers that fetch what they need)


def run(
    store: GraphStore,
    query: TraceQuery,
    check_deadline: Callable[[], None] = lambda: None,
    timeout_s: float | None = None,
) -> TraceResult:
    """The service's trace: one call of ``sparkprov.trace`` (its transaction bounded by
    ``timeout_s``, the caller's remaining deadline)."""
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
    store: GraphStore,
    query: TraceQuery,
    check_deadline: Callable[[], None] = lambda: None,
    timeout_s: float | None = None,
) -> tuple[bytes, float]:
    """:func:`run` as the plugin's serialized ``TraceResponse`` and the milliseconds it took, for
    the service to pass on as it is."""
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
