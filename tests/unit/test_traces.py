"""Trace algorithms on a fake store (a networkx graph): RECURSIVE and COMPONENT must both equal
networkx's ancestors/descendants with the induced edges."""

from __future__ import annotations

import networkx as nx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from query_service.model import Direction, NodeView, NotFound, Strategy
from query_service.traces import TraceQuery, trace


class FakeStore:
    def __init__(self, graph: nx.DiGraph) -> None:
        self.graph = graph
        self.component = {}
        for component in nx.weakly_connected_components(graph):
            for n in component:
                self.component[n] = min(component)

    def nodes(self, ids):  # type: ignore[no-untyped-def]
        return {
            i: NodeView(i, "r", "TOKEN", str(i), "", {}, "", self.component[i], None)
            for i in ids
            if i in self.graph
        }

    def parents(self, ids):  # type: ignore[no-untyped-def]
        return [(p, i) for i in ids for p in self.graph.predecessors(i)]

    def children(self, ids):  # type: ignore[no-untyped-def]
        return [(i, c) for i in ids for c in self.graph.successors(i)]

    def component_edges(self, component):  # type: ignore[no-untyped-def]
        return [(a, b) for a, b in self.graph.edges if self.component[a] == component]


@st.composite
def dags(draw):  # type: ignore[no-untyped-def]
    n = draw(st.integers(1, 25))
    edges = draw(st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), max_size=50))
    graph = nx.DiGraph()
    graph.add_nodes_from(range(n))
    graph.add_edges_from((a, b) for a, b in edges if a < b)
    return graph


@settings(max_examples=60, deadline=None)
@given(dags(), st.data())
def test_strategies_equal_networkx(graph: nx.DiGraph, data: st.DataObject) -> None:
    store = FakeStore(graph)
    seed = data.draw(st.sampled_from(sorted(graph.nodes)))
    for direction, reach in (
        (Direction.BACKWARD, nx.ancestors),
        (Direction.FORWARD, nx.descendants),
    ):
        expected_nodes = reach(graph, seed) | {seed}
        expected_edges = set(graph.subgraph(expected_nodes).edges)
        for strategy in (Strategy.AUTO, Strategy.RECURSIVE, Strategy.COMPONENT):
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
