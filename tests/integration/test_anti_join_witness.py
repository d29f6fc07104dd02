"""A left anti join's excluded rows, and the witness closed under them (docs/capture.md, "Semi
and anti joins"), on a tiny Q22-shaped job through the real pipeline.

Customers with a balance above the average and without an order, per code: the output row's
backward trace holds every customer (the average came from them) and no order (the anti join
kept its rows because no order matched). Re-run on that alone, the rich customer who has orders
passes the anti join too. The anti join records it as an EXCLUDED node, fed by its row and its
order with the smallest id, and the witness takes that order in.
"""

from __future__ import annotations

from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from capture_agent import ProvenanceSession
from capture_agent.replay import witness_frames
from sparkprov.query_model import Op

from .graph import run_graph

CUSTOMERS = [(1, "a", 10.0), (2, "a", 50.0), (3, "b", 70.0), (4, "b", 90.0)]  # average 55
ORDERS = [(10, 3), (11, 3), (12, 1)]  # customer 3 is rich and has orders; 1 is not rich
KEYS = {"C": "ck", "O": "ok"}


def _query(t: dict[str, Any]) -> Any:
    average = t["C"].agg(F.avg("bal").alias("avg_bal"))
    rich = t["C"].crossJoin(average).filter(F.col("bal") > F.col("avg_bal"))
    idle = rich.join(t["O"], F.col("ck") == F.col("o_ck"), "left_anti")
    return idle.groupBy("code").agg(F.count("*").alias("n"), F.sum("bal").alias("total"))


def _rerun(spark: Any, sources: dict[str, DataFrame], witness: Any) -> list[tuple[Any, ...]]:
    frames = witness_frames(sources, witness, KEYS)
    with ProvenanceSession(spark, workflow="anti-witness", enabled=False) as plain:
        rerun = _query({name: plain.source(df, name) for name, df in frames.items()})
        return [tuple(r) for r in rerun.df.collect()]


def test_excluded_rows_are_recorded_and_close_the_witness(spark, client, neo4j_driver) -> None:  # type: ignore[no-untyped-def]
    sources = {
        "C": spark.createDataFrame(CUSTOMERS, "ck long, code string, bal double"),
        "O": spark.createDataFrame(ORDERS, "ok long, o_ck long"),
    }
    # values="all": the replay finds witness rows by key columns the query need not read.
    with ProvenanceSession(spark, workflow="anti-witness", values="all") as prov:
        tracked = {name: prov.source(df, name) for name, df in sources.items()}
        rows = _query(tracked).named("Out").collect()
    assert [tuple(r) for r in rows] == [("b", 1, 90.0)]
    run = client.wait_for_run(prov.run_id)
    graph = run_graph(neo4j_driver, prov.run_id)
    assert run.node_count == prov.counts()[0]

    # The one excluded row: customer 3's row at the anti join, with its smallest order.
    (excluded,) = [n for n, d in graph.nodes(data=True) if d.get("op") == "EXCLUDED"]
    node = graph.nodes[excluded]
    orders = {n: d["a_o_ck"] for n, d in graph.nodes(data=True) if d.get("relation") == "O"}
    smallest = min(n for n, ck in orders.items() if ck == "3")
    assert node["label"] == "▷" and node["value"] == str(smallest)
    (left,) = set(graph.predecessors(excluded)) - {smallest}
    assert set(graph.predecessors(excluded)) == {left, smallest}
    customers = {
        graph.nodes[a]["a_ck"]
        for a in graph.predecessors(left)
        if graph.nodes[a].get("relation") == "C"
    }
    assert customers == {"3"} and graph.out_degree(excluded) == 0

    (out,) = client.find_nodes(prov.run_id, "Out")
    # Without the closure (the backward trace's tokens alone) the re-run counts customer 3 too.
    trace = client.backward_trace([out.id])
    positive: dict[str, list[dict[str, str]]] = {}
    for n in trace.nodes:
        if n.op == Op.TOKEN:
            positive.setdefault(n.relation, []).append(dict(n.attributes))
    assert "O" not in positive and len(positive["C"]) == len(CUSTOMERS)
    assert _rerun(spark, sources, positive) == [("b", 2, 160.0)]

    # Closed: every customer, and customer 3's smallest order; the row comes back.
    witness = client.witness([out.id])
    assert sorted(r["ck"] for r in witness["C"]) == ["1", "2", "3", "4"]
    assert [r["ok"] for r in witness["O"]] == [graph.nodes[smallest]["a_ok"]]
    assert _rerun(spark, sources, witness) == [("b", 1, 90.0)]
