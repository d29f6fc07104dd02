"""Group members stored as member edges (docs/graph-schema.md, "Group members"): Neo4j holds one
edge per member and no TENSOR or VALUE node, while every query answers over the logical graph
with the derived nodes, whichever strategy, and finds a derived id it has never met."""

from __future__ import annotations

import networkx as nx
import pytest
from pyspark.sql import functions as F

from capture_agent import ProvenanceSession
from sparkprov.query_model import Op, Strategy
from tests.reference.neo4j_reads import Neo4jReads

from .graph import assert_traces_are_the_graphs, own_nodes, run_graph

ROWS = [(k % 4, float(k), None if k % 5 == 0 else k * 10) for k in range(40)]
STRATEGIES = [
    Strategy.RECURSIVE,
    Strategy.COMPONENT,
    Strategy.CONNECTED_SET,
    Strategy.AUTO,
]


@pytest.fixture(scope="module")
def grouped(spark, client):  # type: ignore[no-untyped-def]
    df = spark.createDataFrame(ROWS, "g long, x double, y long")
    with ProvenanceSession(spark, workflow="member-edges") as prov:
        rows = prov.source(df, "Rows")
        out = rows.groupBy("g").agg(
            F.sum("x").alias("sx"), F.max("y").alias("my"), F.count("y").alias("cy")
        )
        out.named("Out").collect()
    run = client.wait_for_run(prov.run_id)
    return prov.run_id, run


def test_members_are_stored_as_edges_and_counted_as_the_logical_graph(
    grouped, neo4j_driver
) -> None:  # type: ignore[no-untyped-def]
    run_id, run = grouped
    records, _, _ = neo4j_driver.execute_query(
        "MATCH (n:Node {run_id: $run}) RETURN n.op AS op, count(*) AS n", run=run_id
    )
    stored = {r["op"]: r["n"] for r in records}
    assert "TENSOR" not in stored and "VALUE" not in stored
    records, _, _ = neo4j_driver.execute_query(
        "MATCH (m:Node {run_id: $run})-[r:DERIVES]->(g:Node {op: 'DELTA'}) "
        "WHERE r.member_key IS NOT NULL RETURN count(r) AS n, collect(r.member_nulls) AS nulls",
        run=run_id,
    )
    assert records[0]["n"] == len(ROWS)
    # y is null for every 5th row: its max and count columns (1 and 2) are null there
    assert sorted(records[0]["nulls"]) == [[1, 2]] * 8
    present = 40 + 2 * 32  # sum(x) for all rows, max(y) and count(y) where y is not null
    graph = run_graph(neo4j_driver, run_id)  # the logical graph, expanded from the stored one
    assert sum(1 for _, d in graph.nodes(data=True) if d["op"] == "TENSOR") == present
    assert run.node_count == run.expected_node_count == own_nodes(graph)
    assert run.edge_count == run.expected_edge_count == graph.number_of_edges()


def test_every_strategy_traces_the_logical_graph(grouped, client, neo4j_driver) -> None:  # type: ignore[no-untyped-def]
    run_id, _ = grouped
    graph = run_graph(neo4j_driver, run_id)
    outputs = [out.id for out in client.find_nodes(run_id, "Out")]
    (token, *_) = client.find_nodes(run_id, "Rows")
    assert_traces_are_the_graphs(client, graph, outputs, token.id, STRATEGIES)


def test_a_derived_id_is_found_by_its_member_edge(grouped, stack, neo4j_driver, client) -> None:  # type: ignore[no-untyped-def]
    run_id, _ = grouped
    graph = run_graph(neo4j_driver, run_id)
    derived = {n: d for n, d in graph.nodes(data=True) if d["op"] in ("TENSOR", "VALUE")}
    fresh = Neo4jReads.connect(stack.settings.neo4j_uri)  # nothing met yet: found by pair
    try:
        views = fresh.nodes(sorted(derived))
        assert {n: (v.op, v.label, v.value) for n, v in views.items()} == {
            n: (d["op"], d["label"], d.get("value", "")) for n, d in derived.items()
        }
        for n, view in views.items():  # a derived node has its member's run and ids
            assert view.run_id == run_id
            assert (view.component_id, view.set_id) == (
                graph.nodes[n]["component"],
                graph.nodes[n]["set"],
            )
        tensor = next(n for n, d in derived.items() if d["op"] == "TENSOR")
        assert sorted(fresh.parents([tensor])) == sorted(
            (p, tensor) for p in graph.predecessors(tensor)
        )
        assert fresh.children([tensor]) == [(tensor, next(iter(graph.successors(tensor))))]
    finally:
        fresh.close()
    trace = client.forward_trace([str(tensor)])
    assert {int(n.id) for n in trace.nodes} == nx.descendants(graph, tensor) | {tensor}
    assert any(n.op == Op.AGGREGATE for n in trace.nodes)
