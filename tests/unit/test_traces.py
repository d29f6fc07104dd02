"""Trace algorithms on a fake store (a networkx graph with CSProv set ids from ingest's
from-scratch definition): every strategy must equal networkx's ancestors/descendants with the
traversal edges."""

from __future__ import annotations

import networkx as nx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from query_service.model import Direction, NodeView, NotFound, Strategy
from query_service.traces import TraceQuery
from tests.reference.sets import dependencies, recompute
from tests.reference.store import ReferenceQueries
from tests.reference.traces import trace

SPLITS = [("a",), ("a", "x"), ("a", "y"), ("b",), ("b", "z"), ()]


class FakeStore(ReferenceQueries):
    """A networkx graph with ids from the from-scratch definition; its trace, subgraph and
    deletion answers are the Python reference's."""

    def __init__(self, graph: nx.DiGraph, splits=None, theta: int = 4) -> None:  # type: ignore[no-untyped-def]
        self.graph = graph
        splits = splits or {n: ("a",) for n in graph.nodes}
        self.component, self.set_of = recompute(splits, list(graph.edges), theta)
        self.set_deps = dependencies(graph.edges, self.set_of)
        self.calls: list[str] = []

    def unstored_source_rows(self, ids):  # type: ignore[no-untyped-def]
        return {}  # no run here drops source rows

    def nodes(self, ids):  # type: ignore[no-untyped-def]
        return {
            i: NodeView(i, "r", "TOKEN", str(i), "", {}, "", self.component[i], self.set_of[i])
            for i in ids
            if i in self.graph
        }

    def component_sizes(self, ids):  # type: ignore[no-untyped-def]
        return {c: sum(1 for n in self.component.values() if n == c) for c in ids}

    def set_sizes(self, ids):  # type: ignore[no-untyped-def]
        return {s: sum(1 for n in self.set_of.values() if n == s) for s in ids}

    def set_parents(self, ids):  # type: ignore[no-untyped-def]
        self.calls.append("set_parents")
        return [(a, b) for a, b in self.set_deps if b in ids]

    def set_children(self, ids):  # type: ignore[no-untyped-def]
        self.calls.append("set_children")
        return [(a, b) for a, b in self.set_deps if a in ids]

    def edges_into_sets(self, ids):  # type: ignore[no-untyped-def]
        return [(a, b) for a, b in self.graph.edges if self.set_of[b] in ids]

    def edges_out_of_sets(self, ids):  # type: ignore[no-untyped-def]
        return [(a, b) for a, b in self.graph.edges if self.set_of[a] in ids]

    def parents(self, ids):  # type: ignore[no-untyped-def]
        return [(p, i) for i in ids for p in self.graph.predecessors(i)]

    def children(self, ids):  # type: ignore[no-untyped-def]
        return [(i, c) for i in ids for c in self.graph.successors(i)]

    def component_edges(self, component):  # type: ignore[no-untyped-def]
        return [(a, b) for a, b in self.graph.edges if self.component[a] == component]

    def closure_inputs(self, ids):  # type: ignore[no-untyped-def]
        return self.nodes(ids), self.parents(ids)

    def tensor_values(self, aggregates):  # type: ignore[no-untyped-def]
        return {}


@st.composite
def dags(draw):  # type: ignore[no-untyped-def]
    n = draw(st.integers(1, 25))
    edges = draw(st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), max_size=50))
    graph = nx.DiGraph()
    graph.add_nodes_from(range(n))
    graph.add_edges_from((a, b) for a, b in edges if a < b)
    splits = {i: draw(st.sampled_from(SPLITS)) for i in range(n)}
    return graph, splits


ALL = (Strategy.AUTO, Strategy.RECURSIVE, Strategy.COMPONENT, Strategy.CONNECTED_SET)


@settings(max_examples=80, deadline=None)
@given(dags(), st.data())
def test_strategies_equal_networkx(dag, data: st.DataObject) -> None:  # type: ignore[no-untyped-def]
    graph, splits = dag
    store = FakeStore(graph, splits, theta=data.draw(st.integers(1, 6)))
    seed = data.draw(st.sampled_from(sorted(graph.nodes)))
    for direction, reach in (
        (Direction.BACKWARD, nx.ancestors),
        (Direction.FORWARD, nx.descendants),
    ):
        expected_nodes = reach(graph, seed) | {seed}
        expected_edges = set(graph.subgraph(expected_nodes).edges)
        for strategy in ALL:
            result = trace(store, TraceQuery([seed], direction, strategy=strategy))  # type: ignore[arg-type]
            assert {n.id for n in result.nodes} == expected_nodes
            assert result.nodes[0].id == seed
            got_edges = {(e.src, e.dst) for e in result.edges}
            # Traversal edges only: every edge on a path to (or from) the seed.
            assert got_edges <= expected_edges
            on_paths = {
                (a, b)
                for a, b in expected_edges
                if (b in expected_nodes if direction is Direction.BACKWARD else a in expected_nodes)
            }
            assert got_edges == on_paths
            assert not result.truncated
            if strategy is Strategy.CONNECTED_SET:
                assert result.sets_visited >= 1


def test_depth_limit_and_truncation() -> None:
    graph = nx.DiGraph([(0, 1), (1, 2), (2, 3), (10, 3)])
    store = FakeStore(graph)
    two = trace(store, TraceQuery([3], Direction.BACKWARD, max_depth=1))  # type: ignore[arg-type]
    assert {n.id for n in two.nodes} == {3, 2, 10}
    cut = trace(store, TraceQuery([3], Direction.BACKWARD, limit=2))  # type: ignore[arg-type]
    assert cut.truncated and len(cut.nodes) == 2


def test_unknown_seed_is_not_found() -> None:
    with pytest.raises(NotFound):
        trace(FakeStore(nx.DiGraph([(0, 1)])), TraceQuery([7], Direction.BACKWARD))  # type: ignore[arg-type]


def test_connected_set_fetches_only_the_set_lineage() -> None:
    # Two chains in one component: 0->1->2 (split a) feeding 3 (split b); 4->5 (split c) -> 3.
    # Tracing 2 back must not read the edges into set b or c.
    graph = nx.DiGraph([(0, 1), (1, 2), (2, 3), (4, 5), (5, 3)])
    splits = {0: ("a",), 1: ("a",), 2: ("a",), 3: ("b",), 4: ("c",), 5: ("c",)}
    store = FakeStore(graph, splits, theta=100)
    result = trace(store, TraceQuery([2], Direction.BACKWARD, strategy=Strategy.CONNECTED_SET))  # type: ignore[arg-type]
    assert {n.id for n in result.nodes} == {0, 1, 2}
    assert result.sets_visited == 1 and result.edges_fetched == 2
    whole = trace(store, TraceQuery([2], Direction.BACKWARD, strategy=Strategy.COMPONENT))  # type: ignore[arg-type]
    assert whole.edges_fetched == 5
    forward = trace(store, TraceQuery([4], Direction.FORWARD, strategy=Strategy.CONNECTED_SET))  # type: ignore[arg-type]
    assert {n.id for n in forward.nodes} == {4, 5, 3}
    assert forward.sets_visited == 2 and forward.edges_fetched == 2


def test_auto_fetches_a_component_or_a_set_lineage_only_when_it_is_small(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    import tests.reference.traces as traces

    # two chains in splits a and b joined at the end: a0 -> a1 -> a2 -> b0 <- b1 <- b2 <- b3
    graph = nx.DiGraph([(0, 1), (1, 2), (2, 3), (4, 3), (5, 4), (6, 5)])
    splits = {0: ("a",), 1: ("a",), 2: ("a",), 3: ("b",), 4: ("b",), 5: ("b",), 6: ("b",)}
    store = FakeStore(graph, splits, theta=100)

    def ran(node: int) -> tuple[Strategy, set[int]]:
        result = trace(store, TraceQuery([node], Direction.BACKWARD, strategy=Strategy.AUTO))
        return result.strategy, set(result.ids)

    monkeypatch.setattr(traces, "AUTO_FETCH_MAX", 7)  # the whole component fits
    assert ran(2) == (Strategy.COMPONENT, {0, 1, 2})
    monkeypatch.setattr(traces, "AUTO_FETCH_MAX", 3)  # set {a0, a1, a2} fits, the component not
    assert ran(2) == (Strategy.CONNECTED_SET, {0, 1, 2})
    # b0's set-lineage is both sets (7 nodes): level by level reads less
    assert ran(3) == (Strategy.RECURSIVE, set(range(7)))
