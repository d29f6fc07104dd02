"""Unchanged code captured (capture_agent.actions): a job that mixes spark.sql and DataFrame
calls over parquet files, wrapped in the ``with`` block alone, gives its plain results and the
lineage of each action's result; outside the block nothing is hooked.

Its sessions keep every source column (values="all"): the tests find source rows by values
the queries need not read.
"""

from __future__ import annotations

from pathlib import Path

import networkx as nx
import pytest

from bench.tpc_sql.oracle import emitted_graph
from capture_agent import ProvenanceSession
from capture_agent.actions import ACTIONS
from capture_agent.emitters import MemoryEmitter
from examples.unchanged_job import CUSTOMERS, ORDERS, job
from sparkprov.events import ATTRIBUTE_PREFIX


@pytest.fixture
def files(spark, tmp_path: Path) -> tuple[str, str]:  # type: ignore[no-untyped-def]
    orders, customers = str(tmp_path / "orders"), str(tmp_path / "customers")
    spark.createDataFrame(ORDERS, ["oid", "cust", "amount"]).write.parquet(orders)
    spark.createDataFrame(CUSTOMERS, ["id", "name", "city"]).write.parquet(customers)
    return orders, customers


def test_an_unchanged_job_is_captured_by_the_with_block_alone(spark, files, tmp_path) -> None:  # type: ignore[no-untyped-def]
    orders, customers = files
    plain = job(spark, orders, customers, str(tmp_path / "plain_out"))
    emitter = MemoryEmitter(spark)
    with ProvenanceSession(spark, "unchanged", values="all", emitter=emitter, actions=True) as prov:
        captured = job(spark, orders, customers, str(tmp_path / "enriched"))
    emitted = prov.counts()
    assert captured == plain == [("LA", 4.0), ("NY", 21.5)]
    written = sorted(tuple(r) for r in spark.read.parquet(str(tmp_path / "enriched")).collect())
    assert written == sorted(
        tuple(r) for r in spark.read.parquet(str(tmp_path / "plain_out")).collect()
    )

    nodes, graph = emitted_graph(emitter)
    assert (len(nodes), graph.number_of_edges()) == emitted
    relations = {n["relation"] for n in nodes.values()}
    assert {"orders", "customers", "result1", "enriched"} <= relations
    oid = {
        i: n["props"][ATTRIBUTE_PREFIX + "oid"]
        for i, n in nodes.items()
        if n["op"] == "TOKEN" and n["relation"] == "orders"
    }
    city_of = {c[0]: c[2] for c in CUSTOMERS}
    totals = [n for n in nodes.values() if n["relation"] == "result1"]
    assert len(totals) == len(plain)
    for i, n in nodes.items():
        if n["relation"] != "result1":
            continue
        city = n["props"][ATTRIBUTE_PREFIX + "city"]
        made_of = {str(o[0]) for o in ORDERS if o[2] > 1.5 and city_of.get(o[1]) == city}
        assert {oid[a] for a in nx.ancestors(graph, i) if a in oid} == made_of
    # Each written row is one node of relation "enriched", fed by its order and its customer.
    enriched = [i for i, n in nodes.items() if n["relation"] == "enriched"]
    assert len(enriched) == len(written)
    for i in enriched:
        assert len({oid[a] for a in nx.ancestors(graph, i) if a in oid}) == 1


def test_hooks_exist_only_inside_the_block(spark) -> None:  # type: ignore[no-untyped-def]
    from pyspark.sql.classic.dataframe import DataFrame as Classic

    before = {name: Classic.__dict__[name] for name in (*ACTIONS, "write")}
    with ProvenanceSession(spark, "hooks", emitter=MemoryEmitter(spark), actions=True):
        assert all(Classic.__dict__[name] is not before[name] for name in before)
    assert all(Classic.__dict__[name] is before[name] for name in before)
    with ProvenanceSession(spark, "no-hooks", emitter=MemoryEmitter(spark)):
        assert all(Classic.__dict__[name] is before[name] for name in before)


def test_a_failing_block_puts_the_hooks_back(spark) -> None:  # type: ignore[no-untyped-def]
    from pyspark.sql.classic.dataframe import DataFrame as Classic

    before = Classic.__dict__["collect"]
    with (
        pytest.raises(ZeroDivisionError),
        ProvenanceSession(spark, "fails", emitter=MemoryEmitter(spark), actions=True),
    ):
        _ = 1 / 0
    assert Classic.__dict__["collect"] is before
