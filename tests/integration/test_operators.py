"""Each supported operator family produces exactly the graph of ../shared/MODEL.md (small inputs,
checked node by node through the real pipeline)."""

from __future__ import annotations

import pytest
from pyspark.sql import Window
from pyspark.sql import functions as F

from capture_agent import ProvenanceSession, UnsupportedOperation

from .graph import own_nodes, run_graph


def _captured(spark, client, neo4j_driver, build):  # type: ignore[no-untyped-def]
    with ProvenanceSession(spark, workflow="operators") as prov:
        rows = build(prov)
    run = client.wait_for_run(prov.run_id)
    graph = run_graph(neo4j_driver, prov.run_id)
    assert run.node_count == own_nodes(graph) == prov.counts()[0]
    assert run.edge_count == graph.number_of_edges() == prov.counts()[1]
    return rows, graph


def _of(graph, relation):  # type: ignore[no-untyped-def]
    return {n: d for n, d in graph.nodes(data=True) if d.get("relation") == relation}


def _parents(graph, node):  # type: ignore[no-untyped-def]
    return {
        graph.nodes[p].get("a_name") or graph.nodes[p]["label"] for p in graph.predecessors(node)
    }


def test_inner_join_makes_times_of_both_rows(spark, client, neo4j_driver) -> None:  # type: ignore[no-untyped-def]
    people = spark.createDataFrame([("ann", 1), ("bob", 2), ("cy", 3)], ["name", "dept"])
    depts = spark.createDataFrame([(1, "ops"), (2, "dev"), (2, "qa")], ["dept", "title"])

    def build(prov):  # type: ignore[no-untyped-def]
        p, d = prov.source(people, "People"), prov.source(depts, "Depts")
        return p.join(d, on="dept").named("Staff").collect()

    rows, graph = _captured(spark, client, neo4j_driver, build)
    assert sorted((r["name"], r["title"]) for r in rows) == [
        ("ann", "ops"),
        ("bob", "dev"),
        ("bob", "qa"),
    ]
    staff = _of(graph, "Staff")
    assert len(staff) == 3 and all(d["op"] == "TIMES" for d in staff.values())
    for node, data in staff.items():
        parents = list(graph.predecessors(node))
        assert sorted(graph.nodes[p]["relation"] for p in parents) == ["Depts", "People"]
        person = next(graph.nodes[p] for p in parents if graph.nodes[p]["relation"] == "People")
        dept = next(graph.nodes[p] for p in parents if graph.nodes[p]["relation"] == "Depts")
        assert person["a_name"] == data["a_name"] and dept["a_title"] == data["a_title"]
        assert person["a_dept"] == dept["a_dept"] == data["a_dept"]
    # cy has no partner: its token reaches nothing.
    cy = next(n for n, d in _of(graph, "People").items() if d["a_name"] == "cy")
    assert graph.out_degree(cy) == 0


def test_aggregates_count_sum_min_max_avg(spark, client, neo4j_driver) -> None:  # type: ignore[no-untyped-def]
    df = spark.createDataFrame([("a", 1), ("a", 5), ("b", 2), ("a", None)], ["g", "x"])

    def build(prov):  # type: ignore[no-untyped-def]
        t = prov.source(df, "T")
        out = t.groupBy("g").agg(
            F.count("x").alias("n"),
            F.sum("x").alias("s"),
            F.min("x").alias("lo"),
            F.max("x").alias("hi"),
            F.avg("x").alias("mean"),
            F.collect_list("x").alias("xs"),
            F.collect_set("x").alias("xset"),
        )
        return out.named("G").collect()

    rows, graph = _captured(spark, client, neo4j_driver, build)
    assert {r["g"]: (r["n"], r["s"], r["lo"], r["hi"]) for r in rows} == {
        "a": (2, 6, 1, 5),
        "b": (1, 2, 2, 2),
    }
    groups = {d["a_g"]: n for n, d in _of(graph, "G").items()}
    a = groups["a"]
    assert graph.nodes[a]["op"] == "DELTA"
    members = [p for p in graph.predecessors(a) if graph.nodes[p]["op"] == "TOKEN"]
    assert len(members) == 3  # the null row is a member of the group too
    aggregates = {
        graph.nodes[p]["label"]: p
        for p in graph.predecessors(a)
        if graph.nodes[p]["op"] == "AGGREGATE"
    }
    assert set(aggregates) == {"COUNT", "SUM", "MIN", "MAX", "AVG", "COLLECT_LIST", "COLLECT_SET"}
    assert graph.nodes[aggregates["SUM"]]["value"] == "6"
    assert graph.nodes[aggregates["AVG"]]["value"] == "3.0"
    assert sorted(rows[0]["xs"] if rows[0]["g"] == "a" else rows[1]["xs"]) == [1, 5]
    for label in ("COLLECT_LIST", "COLLECT_SET"):  # the collected values, in Spark's order
        value = graph.nodes[aggregates[label]]["value"]
        assert sorted(int(v) for v in value.strip("[]").split(",")) == [1, 5], value
    for label, agg in aggregates.items():
        tensors = list(graph.predecessors(agg))
        assert all(graph.nodes[t]["op"] == "TENSOR" for t in tensors)
        # one tensor per member with a value (the null is not aggregated), each fed by the member
        # and by a VALUE node holding the value
        assert len(tensors) == 2, label
        values = set()
        for t in tensors:
            feeders = {graph.nodes[p]["op"]: p for p in graph.predecessors(t)}
            assert set(feeders) == {"TOKEN", "VALUE"}
            values.add(graph.nodes[feeders["VALUE"]]["value"])
        assert values == {"1", "5"}


def test_union_keeps_provenance_and_distinct_makes_delta(spark, client, neo4j_driver) -> None:  # type: ignore[no-untyped-def]
    a = spark.createDataFrame([("x",), ("y",)], ["v"])
    b = spark.createDataFrame([("x",), ("z",)], ["v"])

    def build(prov):  # type: ignore[no-untyped-def]
        u = prov.source(a, "A").union(prov.source(b, "B")).named("U")
        return u.distinct().named("D").collect()

    rows, graph = _captured(spark, client, neo4j_driver, build)
    assert sorted(r["v"] for r in rows) == ["x", "y", "z"]
    union = _of(graph, "U")
    assert len(union) == 4 and all(d["op"] == "PLUS" for d in union.values())
    for node, data in union.items():
        (parent,) = graph.predecessors(node)
        assert graph.nodes[parent]["op"] == "TOKEN" and graph.nodes[parent]["a_v"] == data["a_v"]
    distinct = {d["a_v"]: n for n, d in _of(graph, "D").items()}
    assert all(graph.nodes[n]["op"] == "DELTA" for n in distinct.values())
    assert sorted(graph.nodes[p]["a_v"] for p in graph.predecessors(distinct["x"])) == ["x", "x"]
    assert graph.in_degree(distinct["y"]) == 1


def test_projection_and_filter_keep_the_row_provenance(spark, client, neo4j_driver) -> None:  # type: ignore[no-untyped-def]
    df = spark.createDataFrame([("a", 1), ("b", 2), ("c", 3)], ["k", "x"])

    def build(prov):  # type: ignore[no-untyped-def]
        t = prov.source(df, "T")
        out = t.where(F.col("x") > 1).withColumn("y", F.col("x") * 10).select("k", "y")
        return out.named("P").collect()

    rows, graph = _captured(spark, client, neo4j_driver, build)
    assert sorted((r["k"], r["y"]) for r in rows) == [("b", 20), ("c", 30)]
    projected = _of(graph, "P")
    assert sorted(d["a_y"] for d in projected.values()) == ["20", "30"]
    for node, data in projected.items():
        assert "a_x" not in data  # only the relation's own columns are kept
        (parent,) = graph.predecessors(node)
        assert graph.nodes[parent]["a_k"] == data["a_k"]


def test_unsupported_operations_raise_a_clear_error(spark) -> None:  # type: ignore[no-untyped-def]
    df = spark.createDataFrame([(1,)], ["x"])
    with ProvenanceSession(spark, workflow="unsupported") as prov:
        t = prov.source(df, "T")
        with pytest.raises(UnsupportedOperation, match="DataFrame.freqItems"):
            t.freqItems(["x"])
        with pytest.raises(UnsupportedOperation, match="DataFrame.mapInArrow"):
            t.mapInArrow(lambda it: it, "x long")
        with pytest.raises(UnsupportedOperation, match="how='sideways'"):
            t.join(prov.source(df, "U"), on="x", how="sideways")
        with pytest.raises(UnsupportedOperation, match="untracked DataFrame"):
            t.union(df)  # type: ignore[arg-type]
        with pytest.raises(UnsupportedOperation, match="aggregate functions inside select"):
            t.select(F.max("x"))
        w = Window.partitionBy("x").orderBy("x")
        with pytest.raises(UnsupportedOperation, match="window function sum"):
            t.withColumn("s", F.sum("x").over(w))
        with pytest.raises(UnsupportedOperation, match="window function lag"):
            t.withColumn("s", F.lag("x").over(w))
        with pytest.raises(UnsupportedOperation, match="mixes distinct and plain aggregates"):
            t.groupBy("x").agg((F.countDistinct("x") + F.sum("x")).alias("m"))  # one column
        with pytest.raises(UnsupportedOperation, match="aggregate expression"):
            t.groupBy("x").agg(F.lit(2).alias("two"))  # (F.sum("x") * 2 is captured)
