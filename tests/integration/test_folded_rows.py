"""A join's rows folded into their member edges (docs/graph-schema.md, "A join's rows folded into
their member edges"): an inner join read only by an aggregation stores its rows as member edges
l -[:DERIVES {times, partner}]-> g with (r)-[:PARTNER]->(g), and every reader answers over the
logical graph, with the TIMES nodes and their edges l -> T, r -> T, T -> g: the Python reads of
the query service's Store and of the reference (tests/reference/neo4j_reads.py), the plugin's
traces, and the run's counts."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from pyspark.sql import functions as F

from capture_agent import ProvenanceSession
from query_service.store import Store
from sparkprov.query_model import Op, Strategy
from tests.reference.neo4j_reads import Neo4jReads
from tests.reference.sets import DEFAULT_THETA, recompute, same_partition

from .graph import assert_traces_are_the_graphs, own_nodes, run_graph

ORDERS = [(k % 5, float(k), None if k % 7 == 0 else k) for k in range(30)]
CUSTOMERS = [(c, ["EU", "US"][c % 2]) for c in range(5)]
STRATEGIES = [Strategy.RECURSIVE, Strategy.COMPONENT, Strategy.CONNECTED_SET, Strategy.AUTO]
_FOLDED = """
MATCH (l:Node {run_id: $run})-[m:DERIVES]->(g:Node)
WHERE m.times IS NOT NULL
OPTIONAL MATCH (t:Node {id: m.times})
OPTIONAL MATCH (r:Node {id: m.partner})-[p:PARTNER]->(g)
RETURN l.id AS left, m.times AS times, m.partner AS partner, g.id AS grp,
       t IS NOT NULL AS stored, p IS NOT NULL AS linked
"""


@pytest.fixture(scope="module")
def joined(spark, client):  # type: ignore[no-untyped-def]
    orders = spark.createDataFrame(ORDERS, "cid long, amount double, qty long")
    customers = spark.createDataFrame(CUSTOMERS, "cid long, region string")
    with ProvenanceSession(spark, workflow="folded-rows") as prov:
        o = prov.source(orders, "Orders")
        c = prov.source(customers, "Customers")
        out = (
            o.join(c, "cid")
            .groupBy("region")
            .agg(F.sum("amount").alias("total"), F.count("qty").alias("n"))
        )
        out.named("ByRegion").collect()
    client.wait_for_run(prov.run_id)
    return prov.run_id


@pytest.fixture(scope="module")
def self_joined(spark, client):  # type: ignore[no-untyped-def]
    rows = spark.createDataFrame([(k % 3, float(k)) for k in range(9)], "k long, x double")
    with ProvenanceSession(spark, workflow="folded-self-join") as prov:
        r = prov.source(rows, "Rows")
        b = r.withColumnRenamed("k", "k2").withColumnRenamed("x", "x2")  # the same rows
        out = r.join(b, F.col("x") == F.col("x2")).groupBy("k").agg(F.sum("x2").alias("sx"))
        out.named("Same").collect()
    client.wait_for_run(prov.run_id)
    return prov.run_id


def _folded(neo4j_driver, run_id):  # type: ignore[no-untyped-def]
    records, _, _ = neo4j_driver.execute_query(_FOLDED, run=run_id)
    return records


def _check_reads(stack, neo4j_driver, client, run_id) -> None:  # type: ignore[no-untyped-def]
    folded = _folded(neo4j_driver, run_id)
    assert folded, "no joined row was folded"
    graph = run_graph(neo4j_driver, run_id)  # the logical graph, expanded from the stored one
    run = client.wait_for_run(run_id)
    assert run.node_count == run.expected_node_count == own_nodes(graph)
    assert run.edge_count == run.expected_edge_count == graph.number_of_edges()
    for r in folded:
        t = r["times"]
        assert graph.nodes[t]["op"] == "TIMES" and graph.nodes[t]["label"] == "·"
        assert set(graph.predecessors(t)) == {r["left"], r["partner"]}
        assert r["grp"] in set(graph.successors(t))
        if not r["stored"]:
            assert not graph.has_edge(r["left"], r["grp"])  # no logical edge l -> g
        assert r["linked"] == (r["partner"] != r["left"])  # PARTNER except for self-pairs
    # the service's Store: the run's graph is the logical graph
    store = Store.connect(stack.settings.neo4j_uri)
    try:
        nodes, edges = store.run_graph(run_id)
        assert set(nodes) == set(graph.nodes)
        assert set(edges) == set(graph.edges)
        for r in folded:
            view, expected = nodes[r["times"]], graph.nodes[r["times"]]
            assert (view.op, view.label, view.run_id) == ("TIMES", "·", run_id)
            assert (view.component_id, view.set_id) == (expected["component"], expected["set"])
    finally:
        store.close()
    # the reference's reads, from nothing met: TIMES ids found again by their edge's times
    fresh = Neo4jReads.connect(stack.settings.neo4j_uri)
    try:
        times = sorted({r["times"] for r in folded})
        views = fresh.nodes(times)
        assert {t: (v.op, v.label) for t, v in views.items()} == {t: ("TIMES", "·") for t in times}
        ends = sorted({i for r in folded for i in (r["left"], r["partner"], r["grp"])})
        for n in [*times[:5], *ends]:
            assert sorted(set(fresh.parents([n]))) == sorted(graph.in_edges(n)), n
            assert sorted(set(fresh.children([n]))) == sorted(graph.out_edges(n)), n
        grp_set = graph.nodes[folded[0]["grp"]]["set"]
        into = {e for e in graph.edges if graph.nodes[e[1]]["set"] == grp_set}
        assert set(fresh.edges_into_sets([grp_set])) == into
        out = {e for e in graph.edges if graph.nodes[e[0]]["set"] == grp_set}
        assert set(fresh.edges_out_of_sets([grp_set])) == out
    finally:
        fresh.close()


def test_a_joins_folded_rows_read_as_the_logical_graph(joined, stack, neo4j_driver, client) -> None:  # type: ignore[no-untyped-def]
    _check_reads(stack, neo4j_driver, client, joined)


def test_self_pairs_read_as_the_logical_graph(self_joined, stack, neo4j_driver, client) -> None:  # type: ignore[no-untyped-def]
    assert any(r["partner"] == r["left"] for r in _folded(neo4j_driver, self_joined))
    _check_reads(stack, neo4j_driver, client, self_joined)


DOC = Path(__file__).resolve().parents[2] / "docs" / "graph-schema.md"


def test_the_documented_example_reads_the_folded_rows(joined, neo4j_driver, client) -> None:  # type: ignore[no-untyped-def]
    """docs/graph-schema.md's Cypher for folded rows names each row's TIMES id and parents."""
    (example,) = re.findall(r"<!-- folded-example -->\s*```cypher\n(.*?)```", DOC.read_text(), re.S)
    records, _, _ = neo4j_driver.execute_query(example, run=joined)
    assert records
    graph = run_graph(neo4j_driver, joined)
    for r in records:
        assert set(graph.predecessors(r["times"])) == {r["left"], r["right"]}
        assert r["grp"] in set(graph.successors(r["times"]))
    for r in records[:3]:  # the gRPC service: the row's trace is its TIMES node and parents
        trace = client.backward_trace([str(r["times"])])
        ops = {int(n.id): n.op for n in trace.nodes}
        assert ops[r["times"]] == Op.TIMES
        assert {(int(e.src), int(e.dst)) for e in trace.edges} == {
            (r["left"], r["times"]),
            (r["right"], r["times"]),
        }


def test_every_strategy_traces_folded_rows(joined, client, neo4j_driver) -> None:  # type: ignore[no-untyped-def]
    graph = run_graph(neo4j_driver, joined)
    outputs = [out.id for out in client.find_nodes(joined, "ByRegion")]
    (customer, *_) = client.find_nodes(joined, "Customers")
    assert_traces_are_the_graphs(client, graph, outputs, customer.id, STRATEGIES)


@pytest.fixture(scope="module", params=["collected-first", "aggregated-first"])
def stored_and_folded(request, spark, client):  # type: ignore[no-untyped-def]
    """One join read by two actions: one collects its rows (their TIMES nodes stored), the other
    aggregates them (folded into member edges with the same TIMES ids), in either order."""
    orders = spark.createDataFrame(ORDERS, "cid long, amount double, qty long")
    customers = spark.createDataFrame(CUSTOMERS, "cid long, region string")
    with ProvenanceSession(spark, workflow="folded-and-stored") as prov:
        o = prov.source(orders, "Orders")
        c = prov.source(customers, "Customers")
        joined = o.join(c, "cid")
        by_region = joined.groupBy("region").agg(F.sum("amount").alias("total")).named("ByRegion")
        actions = [joined.collect, by_region.collect]
        for action in actions if request.param == "collected-first" else reversed(actions):
            action()
    client.wait_for_run(prov.run_id, indexed=True)
    return prov.run_id


def test_rows_stored_by_one_action_and_folded_by_another(  # type: ignore[no-untyped-def]
    stored_and_folded, stack, neo4j_driver, client
) -> None:
    """A TIMES node stored by one action and folded by another is one logical node: counted once
    by the capture agent and by ingest, read once with its edges, with ids equal to their
    recomputation from the logical graph, and traced alike by every strategy."""
    folded = _folded(neo4j_driver, stored_and_folded)
    assert folded and all(r["stored"] for r in folded)
    _check_reads(stack, neo4j_driver, client, stored_and_folded)  # the counts: exact
    graph = run_graph(neo4j_driver, stored_and_folded)
    splits = {n: tuple(d.get("split") or ()) for n, d in graph.nodes(data=True)}
    component, connected = recompute(splits, list(graph.edges), DEFAULT_THETA)
    assert same_partition({n: d["component"] for n, d in graph.nodes(data=True)}, component)
    assert same_partition({n: d["set"] for n, d in graph.nodes(data=True)}, connected)
    outputs = [out.id for out in client.find_nodes(stored_and_folded, "ByRegion")]
    (customer, *_) = client.find_nodes(stored_and_folded, "Customers")
    assert_traces_are_the_graphs(client, graph, outputs, customer.id, STRATEGIES)
