"""The traces inside Neo4j (``sparkprov.trace``, query_service.traces.run) against their Python
reference (query_service.traces.trace) on a captured run with a join, an aggregation with null
values (member edges) and a rollup (members of several groups): for a sample of nodes of every op
(derived TENSOR and VALUE nodes included), every strategy and both directions, the same nodes,
edges, views, chosen strategy and stats; with depth bounds and limits the same truncation.
Deletion propagation inside Neo4j (``sparkprov.propagateDeletion``) against deletion.py's pure
functions on the Python closure: the same removed nodes in the same order, the same recomputed
aggregates, the same DependsOn answers. Subgraph inside Neo4j (``sparkprov.subgraph``) against
the Python reference (tests/reference/store.py)."""

from __future__ import annotations

from collections import defaultdict

import grpc
import networkx as nx
import pytest
from pyspark.sql import functions as F

from capture_agent import ProvenanceSession
from query_service import adapter
from query_service.deletion import Recomputed, propagate, recompute
from query_service.graph import Graph
from query_service.model import Direction, InvalidArgument, NotFound, Strategy, TraceResult
from query_service.queries import Queries
from query_service.store import Store
from query_service.traces import TraceQuery, run, run_encoded
from sparkprov import query_errors
from sparkprov.v1 import query_pb2
from tests.reference.neo4j_reads import Neo4jReads
from tests.reference.store import Neo4jReference
from tests.reference.traces import trace

from .graph import run_graph

ROWS = [(k % 3, k % 2, float(k), None if k % 4 == 0 else k * 10) for k in range(16)]
NAMES = [(0, "zero"), (1, "one"), (2, "two")]
STRATEGIES = (Strategy.RECURSIVE, Strategy.COMPONENT, Strategy.CONNECTED_SET, Strategy.AUTO)
PER_OP = 3


@pytest.fixture(scope="module")
def captured(spark, client, neo4j_driver):  # type: ignore[no-untyped-def]
    rows = spark.createDataFrame(ROWS, "g long, h long, x double, y long")
    names = spark.createDataFrame(NAMES, "g long, name string")
    with ProvenanceSession(spark, workflow="trace-procedure") as prov:
        joined = prov.source(rows, "Rows").join(prov.source(names, "Names"), "g")
        joined.groupBy("name").agg(F.sum("x").alias("sx"), F.max("y").alias("my")).named(
            "Out"
        ).collect()
        joined.rollup("g", "h").agg(F.count("y").alias("cy")).named("R").collect()
        # rows whose g has no name with an x below 3: the others become EXCLUDED nodes
        few = prov.source(names, "NamesB").join(prov.source(rows, "RowsB").filter("x < 3"), "g")
        prov.source(rows, "RowsA").join(few, "g", "left_anti").named("A").collect()
    client.wait_for_run(prov.run_id)
    return run_graph(neo4j_driver, prov.run_id)


@pytest.fixture(scope="module")
def store(neo4j_driver):  # type: ignore[no-untyped-def]
    return Neo4jReads(neo4j_driver)


def _sample(graph: nx.DiGraph) -> list[int]:
    by_op: dict[str, list[int]] = defaultdict(list)
    for n, data in sorted(graph.nodes(data=True)):
        by_op[str(data["op"])].append(n)
    assert {"TENSOR", "VALUE", "AGGREGATE", "DELTA", "TIMES", "TOKEN", "EXCLUDED"} <= by_op.keys()
    return [n for nodes in by_op.values() for n in nodes[:: max(1, len(nodes) // PER_OP)]]


def _same(got: TraceResult, want: TraceResult, what: object) -> None:
    assert got.truncated == want.truncated, what
    assert got.strategy == want.strategy, what
    assert got.levels == want.levels, what
    assert got.extra == want.extra, what
    assert got.sets_visited == want.sets_visited, what
    ids, wanted = [n.id for n in got.nodes], [n.id for n in want.nodes]
    assert len(ids) == len(wanted) and ids[0] == wanted[0], what
    if not want.truncated:  # a cut keeps nodes in traversal order, which may differ
        assert set(ids) == set(wanted), what
        assert {(e.src, e.dst) for e in got.edges} == {(e.src, e.dst) for e in want.edges}, what
        assert sorted(got.nodes, key=lambda v: v.id) == sorted(want.nodes, key=lambda v: v.id)


def test_the_procedure_answers_as_the_python_strategies(captured, store) -> None:  # type: ignore[no-untyped-def]
    graph = captured
    for node in _sample(graph):
        for direction, reach in (
            (Direction.BACKWARD, nx.ancestors),
            (Direction.FORWARD, nx.descendants),
        ):
            expected = reach(graph, node) | {node}
            for strategy in STRATEGIES:
                query = TraceQuery([node], direction, strategy=strategy)
                try:
                    got = run(store, query)
                except Exception as e:
                    raise AssertionError((node, graph.nodes[node], strategy, direction)) from e
                want = trace(store, query)
                _same(got, want, (node, direction, strategy))
                assert set(got.ids) == expected, (node, direction, strategy)
                assert got.queries == 1
                if strategy is not Strategy.RECURSIVE:
                    assert got.edges_fetched == want.edges_fetched, (node, direction, strategy)


def test_depth_bounds_and_limits_cut_the_same(captured, store) -> None:  # type: ignore[no-untyped-def]
    graph = captured
    outs = sorted(n for n, d in graph.nodes(data=True) if d.get("relation") == "Out")
    tokens = sorted(n for n, d in graph.nodes(data=True) if d.get("relation") == "Rows")
    cases = [(outs, Direction.BACKWARD), (tokens[:2], Direction.FORWARD)]
    truncated = 0
    for seeds, direction in cases:
        for depth, limit in ((1, 100_000), (3, 100_000), (0, 5), (2, 4), (0, len(seeds))):
            for strategy in STRATEGIES:
                query = TraceQuery(seeds, direction, depth, limit, strategy)
                got, want = run(store, query), trace(store, query)
                _same(got, want, (direction, depth, limit, strategy))
                truncated += got.truncated
    assert truncated > 0


def test_the_encoded_trace_is_the_message_the_service_builds(captured, store) -> None:  # type: ignore[no-untyped-def]
    """The plugin's TraceResponse bytes (TraceMessage.java, what gRPC clients receive) against
    query_service/adapter.py's message built from the same trace's rows: both sides of
    query.proto's contract, for every op, strategy, direction, and cut traces."""
    graph = captured
    outs = sorted(n for n, d in graph.nodes(data=True) if d.get("relation") == "Out")
    queries = [
        TraceQuery([node], direction, strategy=strategy)
        for node in _sample(graph)
        for direction in Direction
        for strategy in STRATEGIES
    ] + [TraceQuery(outs, Direction.BACKWARD, 2, 4, s) for s in STRATEGIES]
    truncated = 0
    for query in queries:
        built = adapter.trace_response(run(store, query))
        done = run_encoded(store, query)
        assert done is not None
        encoded = query_pb2.TraceResponse.FromString(adapter.with_millis(*done))
        assert encoded.stats.millis > 0
        encoded.stats.millis = built.stats.millis = 0
        assert encoded == built, query
        truncated += encoded.truncated
    assert truncated > 0


def test_grpc_traces_take_one_round_trip(captured, client) -> None:  # type: ignore[no-untyped-def]
    graph = captured
    out = min(n for n, d in graph.nodes(data=True) if d.get("relation") == "Out")
    reply = client.backward_trace([str(out)])
    assert reply.stats.queries == 1
    assert {int(n.id) for n in reply.nodes} == nx.ancestors(graph, out) | {out}
    with pytest.raises(query_errors.NotFound) as failed:
        client.forward_trace(["12345"])
    assert failed.value.code == grpc.StatusCode.NOT_FOUND
    assert "unknown node id(s): 12345" in failed.value.details


def _reference_deletion(store: Store, ids: list[int]) -> tuple[list[int], list[Recomputed]]:
    """PropagateDeletion as the service answered before sparkprov.propagateDeletion: the
    closure by the Python strategies, its in-edges, then deletion.py's pure functions."""
    down = trace(store, TraceQuery(ids, Direction.FORWARD, views=False))
    views, into = store.closure_inputs(down.ids)
    graph = Graph.of(into, views)
    removed = propagate(graph, ids)
    gone = set(removed)
    touched = sorted(
        c
        for n in removed
        for c in graph.children.get(n, ())
        if c not in gone and graph.op(c) == "AGGREGATE"
    )
    return removed, recompute(graph, removed, store.tensor_values(touched) if touched else {})


def test_deletion_inside_neo4j_answers_as_the_python_reference(captured, store) -> None:  # type: ignore[no-untyped-def]
    graph = captured
    queries = Queries(store, max_nodes=100_000)
    sample = _sample(graph)
    recomputed = 0
    for node in sample:
        got = queries.delete([node], [])
        removed, want = _reference_deletion(store, [node])
        assert got.deleted == removed, node
        assert got.recomputed == want, node
        recomputed += len(want)
    assert recomputed > 0
    # an anti join's EXCLUDED node goes with either of its two parents, in both implementations
    excluded = sorted(n for n, d in graph.nodes(data=True) if d["op"] == "EXCLUDED")
    for node in excluded:
        parents = sorted(graph.predecessors(node))
        assert len(parents) == 2
        for parent in parents:
            got = queries.delete([parent], [])
            assert node in got.deleted
            assert (got.deleted, got.recomputed) == _reference_deletion(store, [parent])
    tokens = sorted(n for n, d in graph.nodes(data=True) if d.get("relation") == "Rows")
    got = queries.delete(tokens[:6], [])
    assert (got.deleted, got.recomputed) == _reference_deletion(store, tokens[:6])
    outs = sorted(n for n, d in graph.nodes(data=True) if d.get("relation") == "Out")
    for out in outs:
        for on in (tokens[:1], tokens[:8], tokens):
            removed, _ = _reference_deletion(store, on)
            assert queries.depends_on(out, on, []) == (out in removed)
    widest = max(tokens, key=lambda n: len(nx.descendants(graph, n)))
    assert len(nx.descendants(graph, widest)) > 2
    with pytest.raises(InvalidArgument):
        Queries(store, max_nodes=2).delete([widest], [])
    with pytest.raises(NotFound):
        queries.delete([12345], [])


def test_subgraph_inside_neo4j_answers_as_the_python_reference(captured, store) -> None:  # type: ignore[no-untyped-def]
    graph = captured
    queries = Queries(store, max_nodes=100_000)
    reference = Queries(Neo4jReference(store), max_nodes=100_000)  # type: ignore[arg-type]
    for node in _sample(graph):
        for limit in (100_000, 7):
            got = queries.subgraph(node, limit, lambda: None)
            want = reference.subgraph(node, limit, lambda: None)
            _same(got, want, (node, limit))
    # the node with the largest subgraph: any sampled node may have a small one (an anti join's
    # excluded row, say), which would not be too large
    widest = max(graph.nodes, key=lambda n: len(nx.ancestors(graph, n) | nx.descendants(graph, n)))
    with pytest.raises(InvalidArgument):
        Queries(store, max_nodes=2).subgraph(widest, 10, lambda: None)
    with pytest.raises(NotFound):
        queries.subgraph(12345, 10, lambda: None)
