"""Deletion propagation (Definition 4.2), DependsOn, aggregate recomputation and Subgraph on
in-memory graphs, against independent reference implementations on random DAGs; and the
agreement of deletion with the Boolean evaluation of the provenance polynomial."""

from __future__ import annotations

import itertools

import networkx as nx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from query_service.deletion import aggregate, depends_on, propagate, recompute
from query_service.graph import Graph
from query_service.model import NodeView
from query_service.polynomial import boolean, polynomial
from tests.reference.store import subgraph

OPS = ["PLUS", "TIMES", "DELTA", "TENSOR", "AGGREGATE", "BLACK_BOX", "EXCLUDED"]


def view(i: int, op: str, label: str = "", value: str = "") -> NodeView:
    return NodeView(i, "r", op, label or str(i), "", {}, value, 0, 0)


@st.composite
def typed_dags(draw: st.DrawFn) -> Graph:
    n = draw(st.integers(1, 16))
    edges = draw(st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), max_size=40))
    pairs = {(a, b) for a, b in edges if a < b}
    has_parents = {b for _, b in pairs}
    nodes = {
        i: view(i, draw(st.sampled_from(OPS)) if i in has_parents else "TOKEN") for i in range(n)
    }
    return Graph.of(pairs, nodes)


def reference_deletion(graph: Graph, deleted: set[int]) -> set[int]:
    """Definition 4.2 read literally: a fixpoint over all nodes until nothing changes."""
    removed = set(deleted)
    changed = True
    while changed:
        changed = False
        for n in graph.ids() - removed:
            parents = graph.parents[n]
            lost = parents & removed
            if not lost:
                continue
            if lost == parents or graph.op(n) in ("TIMES", "TENSOR", "EXCLUDED"):
                removed.add(n)
                changed = True
    return removed


@settings(max_examples=150, deadline=None)
@given(typed_dags(), st.data())
def test_propagation_equals_the_definition_and_boolean_evaluation(
    graph: Graph, data: st.DataObject
) -> None:
    deleted = set(data.draw(st.lists(st.sampled_from(sorted(graph.ids())), max_size=3)))
    removed = propagate(graph, deleted)
    assert set(removed) == reference_deletion(graph, deleted)
    assert removed[: len(deleted)] == list(dict.fromkeys(deleted)) or not deleted
    for n in graph.ids():
        # n survives iff its polynomial is true with the deleted nodes false
        assert boolean(polynomial(graph, n), deleted) == (n not in removed)
        assert depends_on(graph, n, deleted) == (n in removed)


def test_times_dies_with_any_input_plus_with_all() -> None:
    # 0, 1 tokens; 2 = 0·1; 3 = 0+1; 4 = δ(2); 5 = 3·5?
    graph = Graph.of(
        [(0, 2), (1, 2), (0, 3), (1, 3), (2, 4)],
        {0: view(0, "TOKEN"), 1: view(1, "TOKEN"), 2: view(2, "TIMES"), 3: view(3, "PLUS"),
         4: view(4, "DELTA")},
    )  # fmt: skip
    assert set(propagate(graph, [0])) == {0, 2, 4}
    assert set(propagate(graph, [0, 1])) == {0, 1, 2, 3, 4}
    assert not depends_on(graph, 3, [1]) and depends_on(graph, 3, [0, 1])


def _group(values: list[str], function: str) -> tuple[Graph, dict[int, str]]:
    """Members 10+i (tokens) -> TENSOR 20+i <- VALUE 30+i; tensors -> AGGREGATE 1 -> DELTA 2."""
    nodes = {1: view(1, "AGGREGATE", function, "old"), 2: view(2, "DELTA")}
    edges = [(1, 2)]
    tensor_values = {}
    for i, v in enumerate(values):
        nodes[10 + i] = view(10 + i, "TOKEN")
        nodes[20 + i] = view(20 + i, "TENSOR")
        nodes[30 + i] = view(30 + i, "VALUE", v, v)
        edges += [(10 + i, 20 + i), (30 + i, 20 + i), (20 + i, 1), (10 + i, 2)]
        tensor_values[20 + i] = v
    return Graph.of(edges, nodes), tensor_values


@pytest.mark.parametrize(
    ("function", "values", "expected"),
    [
        ("COUNT", ["a", "b", "c"], "2"),
        ("SUM", ["5", "7", "11"], "18"),
        ("MIN", ["5", "7", "11"], "7"),
        ("MAX", ["5", "7", "11"], "11"),
        ("AVG", ["5", "7", "11"], "9.0"),
        ("SUM", ["2", "1.5", "3"], "4.5"),
        ("MIN", ["a", "c", "b"], "b"),
    ],
)
def test_surviving_aggregates_are_recomputed(
    function: str, values: list[str], expected: str
) -> None:
    graph, tensor_values = _group(values, function)
    removed = propagate(graph, [10])  # the first member goes, with its TENSOR
    assert 20 in removed and 1 not in removed and 2 not in removed
    surviving = {t: v for t, v in tensor_values.items() if t not in removed}
    (result,) = recompute(graph, removed, surviving)
    assert (result.node_id, result.function, result.new_value) == (1, function, expected)
    assert result.old_value == "old" and result.inputs == len(values) - 1


def test_aggregate_of_no_members_is_deleted_with_its_group() -> None:
    graph, tensor_values = _group(["4"], "SUM")
    removed = propagate(graph, [10])
    assert {1, 2, 20} <= set(removed) and recompute(graph, removed, {}) == []


def test_aggregate_helper() -> None:
    assert aggregate("COUNT", []) == "0" and aggregate("SUM", []) == "0"
    assert aggregate("MIN", []) == "" and aggregate("MAX", ["b", "a"]) == "b"


@settings(max_examples=100, deadline=None)
@given(typed_dags(), st.data())
def test_subgraph_equals_its_definition(graph: Graph, data: st.DataObject) -> None:
    n = data.draw(st.sampled_from(sorted(graph.ids())))
    g = nx.DiGraph(graph.edges())
    g.add_nodes_from(graph.ids())
    descendants = nx.descendants(g, n)
    siblings = {s for d in descendants for p in g.predecessors(d) for s in g.successors(p)}
    expected = {n} | nx.ancestors(g, n) | descendants | siblings
    got = subgraph(graph, n)
    assert got[0] == n and len(got) == len(set(got))
    assert set(got) == expected


def test_small_exhaustive_agreement() -> None:
    # every subset of tokens deleted, on a diamond with a join and an alternative
    graph = Graph.of(
        [(0, 3), (1, 3), (1, 4), (2, 4), (3, 5), (4, 5)],
        {0: view(0, "TOKEN"), 1: view(1, "TOKEN"), 2: view(2, "TOKEN"), 3: view(3, "TIMES"),
         4: view(4, "PLUS"), 5: view(5, "TIMES")},
    )  # fmt: skip
    poly = polynomial(graph, 5)
    for k in range(4):
        for deleted in itertools.combinations([0, 1, 2], k):
            assert boolean(poly, deleted) == (5 not in propagate(graph, deleted))
