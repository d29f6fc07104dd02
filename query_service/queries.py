"""The questions beyond traces: Subgraph, zoom views, deletion propagation, DependsOn and
provenance polynomials. Each fetches the part of the stored graph its answer depends on (using
the traces inside Neo4j, query_service.traces.run, so CSProv applies), then answers in memory
with the pure functions of graph, zoom, deletion and polynomial. Nothing here writes to Neo4j.

What each fetches:
- Subgraph(n): inside Neo4j in one call (``sparkprov.subgraph``).
- Deletion and DependsOn: propagated inside Neo4j in one call (``sparkprov.propagateDeletion``
  over the forward closure: all that Definition 4.2 looks at), which also gives the surviving
  TENSOR values of the aggregates it touches. On zoomed-out views: the run's graph, then the
  pure functions of deletion.

The plugin's answers are checked against their Python reference (tests/reference/store.py).
- Provenance(n): n's ancestry (a backward trace).
- Zoom, and the other questions asked on a zoomed-out view: the run's whole graph.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from query_service.deletion import (
    Propagated,
    Recomputed,
    propagate,
    recompute,
    recompute_touched,
)
from query_service.graph import Graph
from query_service.model import (
    Direction,
    EdgeView,
    InvalidArgument,
    NodeView,
    NotFound,
    Semiring,
    Strategy,
    TraceResult,
)
from query_service.polynomial import (
    Polynomial,
    TooLarge,
    boolean,
    counting,
    minimal,
    polynomial,
    tropical,
    why,
)
from query_service.polynomial import probability as prob
from query_service.store import GraphStore
from query_service.traces import AUTO_FETCH_MAX, TraceQuery, run
from query_service.zoom import ZoomedView, invocations, zoom_in, zoom_out
from sparkprov.limits import quote, quote_all

__all__ = ["Deletion", "ProvenanceAnswer", "Queries", "provenance"]


@dataclass(frozen=True)
class Deletion:
    deleted: list[int]
    recomputed: list[Recomputed]


def _nothing() -> None:
    return None


class Queries:
    def __init__(self, store: GraphStore, max_nodes: int) -> None:
        self._store = store
        self._max = max_nodes

    # -- loading ---------------------------------------------------------------------------

    def _require(self, ids: Iterable[int]) -> dict[int, NodeView]:
        wanted = list(dict.fromkeys(ids))
        found = self._store.nodes(wanted)
        missing = [i for i in wanted if i not in found]
        if missing:
            raise NotFound(f"unknown node id(s): {', '.join(str(i) for i in missing[:10])}")
        return found

    def _closure(
        self, ids: list[int], direction: Direction, check: Callable[[], None], what: str
    ) -> TraceResult:
        result = run(
            self._store, TraceQuery(ids, direction, limit=self._max, strategy=Strategy.AUTO), check
        )
        if result.truncated:
            raise InvalidArgument(f"{what} has more than {self._max} nodes")
        return result

    def run_graph(self, run_id: str) -> Graph:
        if not self._store.run_exists(run_id):
            raise NotFound(f"unknown run {quote(run_id)}")
        nodes, edges = self._store.run_graph(run_id)
        return Graph.of(edges, nodes)

    def _view(self, node_ids: list[int], modules: list[str]) -> ZoomedView:
        """The zoomed-out view of the run of the first node."""
        views = self._require(node_ids)
        graph = self.run_graph(views[node_ids[0]].run_id)
        self._check_modules(graph, modules)
        view = zoom_out(graph, modules)
        hidden = [i for i in node_ids if i not in view.graph.nodes]
        if hidden:
            raise InvalidArgument(
                f"node(s) {', '.join(map(str, hidden[:10]))} are hidden by the zoom"
            )
        return view

    @staticmethod
    def _check_modules(graph: Graph, modules: Iterable[str]) -> None:
        known = {inv.name for inv in invocations(graph)}
        unknown = sorted(set(modules) - known)
        if unknown:
            raise InvalidArgument(f"no invocation of module(s) {quote_all(unknown)} in the run")

    # -- Subgraph --------------------------------------------------------------------------

    def subgraph(
        self,
        node_id: int,
        limit: int,
        check: Callable[[], None],
        timeout_s: float | None = None,
    ) -> TraceResult:
        """Subgraph(n) inside Neo4j, one round trip; ``timeout_s`` bounds the call."""
        check()
        return self._store.subgraph(node_id, limit, self._max, AUTO_FETCH_MAX, timeout_s)

    # -- zoom --------------------------------------------------------------------------------

    def zoom_out(self, run_id: str, modules: list[str], zoomed_out: list[str]) -> ZoomedView:
        if not modules:
            raise InvalidArgument("modules must name at least one module")
        graph = self.run_graph(run_id)
        self._check_modules(graph, [*modules, *zoomed_out])
        return zoom_out(graph, [*zoomed_out, *modules])

    def zoom_in(self, run_id: str, modules: list[str], zoomed_out: list[str]) -> ZoomedView:
        if not modules:
            raise InvalidArgument("modules must name at least one module")
        not_out = sorted(set(modules) - set(zoomed_out))
        if not_out:
            raise InvalidArgument(
                f"module(s) {quote_all(not_out)} are not zoomed out in the given view"
            )
        graph = self.run_graph(run_id)
        self._check_modules(graph, zoomed_out)
        return zoom_in(graph, zoomed_out, modules)

    def view_trace(
        self, node_ids: list[int], direction: Direction, modules: list[str], limit: int, depth: int
    ) -> TraceResult:
        """A trace on the zoomed-out view of the first node's run."""
        view = self._view(node_ids, modules)
        graph = view.graph
        backward = direction is Direction.BACKWARD
        step = graph.parents if backward else graph.children
        order: dict[int, None] = dict.fromkeys(node_ids)
        frontier = list(order)
        levels = 0
        while frontier and (depth == 0 or levels < depth):
            following = []
            for n in frontier:
                for m in sorted(step.get(n, ())):
                    if m not in order:
                        order[m] = None
                        following.append(m)
            frontier = following
            levels += 1
        ids = list(order)
        truncated = len(ids) > limit
        ids = ids[:limit]
        kept = set(ids)
        edges = [EdgeView(s, d) for s, d in graph.edges() if s in kept and d in kept]
        return TraceResult(
            nodes=[graph.nodes[i] for i in ids if i in graph.nodes],
            edges=edges,
            truncated=truncated,
            strategy=Strategy.COMPONENT,
            levels=levels,
            queries=3,
            extra={"nodes_reached": len(order)},
        )

    # -- deletion ----------------------------------------------------------------------------

    def _propagated(
        self, ids: list[int], check: Callable[[], None], timeout_s: float | None
    ) -> Propagated:
        """Definition 4.2 inside Neo4j, one round trip, bounded by ``timeout_s``."""
        check()
        done = self._store.propagate_deletion(
            list(dict.fromkeys(ids)), self._max, AUTO_FETCH_MAX, timeout_s
        )
        if done.truncated:
            raise InvalidArgument(f"the deletion's forward closure has more than {self._max} nodes")
        return done

    def delete(
        self,
        ids: list[int],
        modules: list[str],
        check: Callable[[], None] = _nothing,
        timeout_s: float | None = None,
    ) -> Deletion:
        if not ids:
            raise InvalidArgument("node_ids must name at least one node")
        if not modules:
            done = self._propagated(ids, check, timeout_s)
            return Deletion(done.removed, recompute_touched(done.touched))
        graph = self._view(ids, modules).graph
        removed = propagate(graph, ids)
        gone = set(removed)
        touched = sorted(
            {
                c
                for n in removed
                for c in graph.children.get(n, ())
                if c not in gone and graph.op(c) == "AGGREGATE"
            }
        )
        values = self._store.tensor_values(touched) if touched else {}
        return Deletion(removed, recompute(graph, removed, values))

    def depends_on(
        self,
        node_id: int,
        on: list[int],
        modules: list[str],
        check: Callable[[], None] = _nothing,
        timeout_s: float | None = None,
    ) -> bool:
        if not on:
            raise InvalidArgument("on_node_ids must name at least one node")
        if not modules:
            self._require([node_id])
            return node_id in set(self._propagated(on, check, timeout_s).removed)
        graph = self._view([node_id, *on], modules).graph
        return node_id in set(propagate(graph, on))

    # -- provenance --------------------------------------------------------------------------

    def ancestry(self, node_id: int, check: Callable[[], None] = _nothing) -> Graph:
        self._require([node_id])
        up = self._closure([node_id], Direction.BACKWARD, check, "the ancestry")
        graph = Graph.of(((e.src, e.dst) for e in up.edges), {n.id: n for n in up.nodes})
        graph.add_node(node_id)
        return graph


@dataclass
class ProvenanceAnswer:
    polynomial: Polynomial
    text: str
    text_truncated: bool
    tokens: list[NodeView]
    semiring: Semiring
    boolean: bool = False
    count: int = 0
    witnesses: list[list[int]] | None = None
    witnesses_truncated: bool = False
    cost: float = 0.0
    probability: float = 0.0
    method: str = ""


def provenance(
    graph: Graph,
    node_id: int,
    semiring: Semiring,
    false_nodes: list[int],
    costs: dict[int, float],
    probabilities: dict[int, float],
    samples: int,
) -> ProvenanceAnswer:
    """The polynomial of ``node_id`` over ``graph`` (its ancestry) and its value in a semiring."""
    for p in probabilities.values():
        if not 0.0 <= p <= 1.0:
            raise InvalidArgument(f"probability {p} is not within [0, 1]")
    if any(math.isnan(c) for c in costs.values()):
        raise InvalidArgument("token costs must be numbers")
    poly = polynomial(graph, node_id)
    text, cut = poly.text()
    answer = ProvenanceAnswer(poly, text, cut, [graph.nodes[v] for v in poly.variables], semiring)
    if semiring is Semiring.BOOLEAN:
        answer.boolean = boolean(poly, false_nodes)
    elif semiring is Semiring.COUNTING:
        answer.count = counting(poly)
    elif semiring is Semiring.WHY:
        try:
            answer.witnesses = [sorted(w) for w in minimal(why(poly))]
        except TooLarge:
            answer.witnesses_truncated = True
            answer.witnesses = []
    elif semiring is Semiring.TROPICAL:
        answer.cost = tropical(poly, costs)
    elif semiring is Semiring.PROBABILITY:
        result = prob(poly, probabilities, samples or 10_000)
        answer.probability = result.value
        answer.method = result.method
    return answer
