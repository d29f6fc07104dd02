"""Distinct aggregates (count(DISTINCT x), sum(DISTINCT x)...) are captured as their definition:
the distinct (keys, inputs) rows, a DELTA node each, aggregated plainly. Checked through the
in-memory emitter (no broker): results equal Spark's, and each group's lineage holds exactly
its input rows.

Its sessions keep every source column (values="all"): the tests find source rows by values
the queries need not read.
"""

from __future__ import annotations

import networkx as nx
import pytest
from pyspark.sql import functions as F

from bench.tpc_sql.oracle import emitted_graph
from capture_agent import ProvenanceSession, UnsupportedOperation
from capture_agent.emitters import MemoryEmitter
from sparkprov.events import ATTRIBUTE_PREFIX

ROWS = [
    (1, "a", 1, 10),
    (2, "a", 1, 20),
    (3, "a", 2, 30),
    (4, "b", 3, 40),
    (5, "b", 3, None),
    (6, "b", None, 60),
    (7, "c", None, None),
]


def test_count_distinct_is_captured_over_the_distinct_rows(spark) -> None:  # type: ignore[no-untyped-def]
    df = spark.createDataFrame(ROWS, "pid long, k string, x long, y long")
    plain = sorted(
        tuple(r)
        for r in df.groupBy("k")
        .agg(F.countDistinct("x").alias("n"), F.sum_distinct(F.col("x")).alias("s"))
        .collect()
    )
    emitter = MemoryEmitter(spark)
    with ProvenanceSession(spark, "distinct", values="all", emitter=emitter) as prov:
        rows = prov.source(df, "Rows")
        out = rows.groupBy("k").agg(
            F.countDistinct("x").alias("n"), F.sum_distinct(F.col("x")).alias("s")
        )
        captured = sorted(tuple(r) for r in out.named("Out").collect())
    emitted = prov.counts()
    assert captured == plain == [("a", 2, 3), ("b", 1, 3), ("c", 0, None)]

    nodes, graph = emitted_graph(emitter)
    assert (graph.number_of_nodes(), graph.number_of_edges()) == emitted
    pids = {
        i: n["props"][ATTRIBUTE_PREFIX + "pid"]
        for i, n in nodes.items()
        if n["op"] == "TOKEN" and n["relation"] == "Rows"
    }
    for node_id, node in nodes.items():
        if node["relation"] != "Out":
            continue
        k = node["props"][ATTRIBUTE_PREFIX + "k"]
        lineage = {pids[a] for a in nx.ancestors(graph, node_id) if a in pids}
        assert lineage == {str(r[0]) for r in ROWS if r[1] == k}
        # the members are the distinct (k, x) rows: a DELTA each
        members = [p for p in graph.predecessors(node_id) if nodes[p]["op"] == "DELTA"]
        assert len(members) == len({r[2] for r in ROWS if r[1] == k})


def test_count_distinct_of_two_columns_counts_rows_without_nulls(spark) -> None:  # type: ignore[no-untyped-def]
    df = spark.createDataFrame(ROWS, "pid long, k string, x long, y long")
    plain = sorted(tuple(r) for r in df.groupBy("k").agg(F.countDistinct("x", "y")).collect())
    with ProvenanceSession(spark, "distinct2", values="all", emitter=MemoryEmitter(spark)) as prov:
        out = prov.source(df, "Rows").groupBy("k").agg(F.countDistinct("x", "y"))
        assert sorted(tuple(r) for r in out.collect()) == plain
        assert out.columns == df.groupBy("k").agg(F.countDistinct("x", "y")).columns


@pytest.mark.parametrize("keys", [["k"], []])
def test_distinct_beside_plain_aggregates_is_a_join_of_one_grouping_per_kind(spark, keys) -> None:  # type: ignore[no-untyped-def]
    df = spark.createDataFrame(ROWS, "pid long, k string, x long, y long")

    def shape(f):  # type: ignore[no-untyped-def]
        return f.groupBy(*keys).agg(
            F.sum("y").alias("total"),
            F.countDistinct("x").alias("xs"),
            F.count("pid").alias("n"),
            F.sum_distinct(F.col("y")).alias("ys"),
        )

    plain = sorted(map(repr, shape(df).collect()))
    emitter = MemoryEmitter(spark)
    with ProvenanceSession(spark, "distinct3", values="all", emitter=emitter) as prov:
        out = shape(prov.source(df, "Rows")).named("Out")
        assert out.columns == shape(df).columns
        assert sorted(map(repr, out.collect())) == plain
    emitted = prov.counts()
    nodes, graph = emitted_graph(emitter)
    assert (graph.number_of_nodes(), graph.number_of_edges()) == emitted
    pids = {
        i: n["props"][ATTRIBUTE_PREFIX + "pid"]
        for i, n in nodes.items()
        if n["op"] == "TOKEN" and n["relation"] == "Rows"
    }
    outs = [(i, n) for i, n in nodes.items() if n["relation"] == "Out"]
    assert len(outs) == len(plain)
    for node_id, node in outs:
        k = node["props"].get(ATTRIBUTE_PREFIX + "k")
        lineage = {pids[a] for a in nx.ancestors(graph, node_id) if a in pids}
        assert lineage == {str(r[0]) for r in ROWS if not keys or r[1] == k}
        # one group per kind (plain; distinct x; distinct y), joined
        above = nx.ancestors(graph, node_id) | {node_id}
        assert sum(nodes[a]["op"] == "TIMES" for a in above) == 2


def test_one_column_mixing_distinct_and_plain_is_refused_by_name(spark) -> None:  # type: ignore[no-untyped-def]
    df = spark.createDataFrame(ROWS, "pid long, k string, x long, y long")
    with ProvenanceSession(spark, "distinct4", values="all", emitter=MemoryEmitter(spark)) as prov:
        rows = prov.source(df, "Rows")
        with pytest.raises(UnsupportedOperation, match="mixes distinct and plain aggregates"):
            rows.groupBy("k").agg((F.countDistinct("x") + F.sum("y")).alias("m"))


def test_the_kill_switch_keeps_distinct_rows_and_subtotals_as_spark_does(spark) -> None:  # type: ignore[no-untyped-def]
    """Under the kill switch node ids are a constant: deduplication and grouping sets must
    not key on them (they once kept one row of a whole distinct())."""
    df = spark.createDataFrame(ROWS, "pid long, k string, x long, y long")
    shapes = {
        "distinct": lambda f: f.select("k", "x").distinct(),
        "dropDuplicates": lambda f: f.dropDuplicates(["k"]).select("k"),
        "countDistinct": lambda f: f.groupBy("k").agg(F.countDistinct("x")),
        "rollup": lambda f: f.rollup("k", "x").agg(F.count("pid")),
    }
    with ProvenanceSession(spark, "killed", enabled=False) as prov:
        rows = prov.source(df, "Rows")
        for name, shape in shapes.items():
            got = sorted(map(repr, shape(rows).collect()))
            assert got == sorted(map(repr, shape(df).collect())), name


def test_columns_computed_on_aggregates_are_captured(spark) -> None:  # type: ignore[no-untyped-def]
    """sum(x) * 0.5 in agg() (TPC-H Q11, Q17, Q20 write it so): the inner aggregates get their
    AGGREGATE nodes, the column is computed on the group's row."""
    df = spark.createDataFrame(ROWS, "pid long, k string, x long, y long")

    def shape(f):  # type: ignore[no-untyped-def]
        return f.groupBy("k").agg(
            (F.sum("x") * 0.5).alias("half"),
            F.max("y").alias("top"),
            (F.sum("y") / F.count("y")).alias("mean"),
        )

    plain = sorted(map(repr, shape(df).collect()))
    emitter = MemoryEmitter(spark)
    with ProvenanceSession(spark, "composite", values="all", emitter=emitter) as prov:
        out = shape(prov.source(df, "Rows"))
        assert out.columns == shape(df).columns
        assert sorted(map(repr, out.named("Out").collect())) == plain
    nodes, graph = emitted_graph(emitter)
    pids = {
        i: n["props"][ATTRIBUTE_PREFIX + "pid"]
        for i, n in nodes.items()
        if n["op"] == "TOKEN" and n["relation"] == "Rows"
    }
    for node_id, node in nodes.items():
        if node["relation"] == "Out":
            k = node["props"][ATTRIBUTE_PREFIX + "k"]
            lineage = {pids[a] for a in nx.ancestors(graph, node_id) if a in pids}
            assert lineage == {str(r[0]) for r in ROWS if r[1] == k}


def test_a_column_computed_on_a_distinct_aggregate_is_captured(spark) -> None:  # type: ignore[no-untyped-def]
    df = spark.createDataFrame(ROWS, "pid long, k string, x long, y long")

    def shape(f):  # type: ignore[no-untyped-def]
        return f.groupBy("k").agg((F.countDistinct("x") + 1).alias("kinds"))

    with ProvenanceSession(spark, "composite2", values="all", emitter=MemoryEmitter(spark)) as prov:
        got = sorted(map(repr, shape(prov.source(df, "Rows")).collect()))
    assert got == sorted(map(repr, shape(df).collect()))
