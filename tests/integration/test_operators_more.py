"""Joins of every kind, deduplication, unionByName, generators, UDF black boxes, window ranking,
writes as materialization points, and the kill switch; exact graphs on small inputs."""

from __future__ import annotations

from pyspark.sql import Window
from pyspark.sql import functions as F
from pyspark.sql.types import StringType

from capture_agent import ProvenanceSession

from .graph import own_nodes, run_graph
from .test_operators import _captured, _of


def _tokens(graph, node):  # type: ignore[no-untyped-def]
    """The source tokens a node derives from: (relation, first attribute value)."""
    import networkx as nx

    out = set()
    for a in nx.ancestors(graph, node) | {node}:
        data = graph.nodes[a]
        if data.get("op") == "TOKEN":
            out.add((data["relation"], data.get("a_k")))
    return out


def test_outer_semi_anti_and_cross_joins(spark, client, neo4j_driver) -> None:  # type: ignore[no-untyped-def]
    left = spark.createDataFrame([("a", 1), ("b", 2)], ["k", "l"])
    right = spark.createDataFrame([("b", 20), ("c", 30)], ["k", "r"])

    def build(prov):  # type: ignore[no-untyped-def]
        lt, rt = prov.source(left, "L"), prov.source(right, "R")
        full = lt.join(rt, on="k", how="full").named("Full").collect()
        semi = lt.join(rt, on="k", how="left_semi").named("Semi").collect()
        anti = lt.join(rt, on="k", how="left_anti").named("Anti").collect()
        cross = lt.crossJoin(rt).named("Cross").collect()
        return full, semi, anti, cross

    (full, semi, anti, cross), graph = _captured(spark, client, neo4j_driver, build)
    assert sorted(r["k"] for r in full) == ["a", "b", "c"]
    by_key = {d["a_k"]: n for n, d in _of(graph, "Full").items()}
    assert _tokens(graph, by_key["a"]) == {("L", "a")}
    assert _tokens(graph, by_key["b"]) == {("L", "b"), ("R", "b")}
    assert _tokens(graph, by_key["c"]) == {("R", "c")}
    assert all(graph.nodes[n]["op"] == "TIMES" for n in by_key.values())
    # semi/anti: the kept left row's provenance passes through (a PLUS over the left token).
    (semi_row,) = _of(graph, "Semi")
    assert [r["k"] for r in semi] == ["b"] and _tokens(graph, semi_row) == {("L", "b")}
    (anti_row,) = _of(graph, "Anti")
    assert [r["k"] for r in anti] == ["a"] and _tokens(graph, anti_row) == {("L", "a")}
    assert len(cross) == 4 and all(graph.in_degree(n) == 2 for n in _of(graph, "Cross"))


def test_drop_duplicates_on_a_subset_and_union_by_name(spark, client, neo4j_driver) -> None:  # type: ignore[no-untyped-def]
    a = spark.createDataFrame([("x", 1), ("x", 2), ("y", 3)], ["k", "v"])
    b = spark.createDataFrame([(4, "x")], ["v", "k"])

    def build(prov):  # type: ignore[no-untyped-def]
        u = prov.source(a, "A").unionByName(prov.source(b, "B"))
        return u.dropDuplicates(["k"]).named("D").collect()

    rows, graph = _captured(spark, client, neo4j_driver, build)
    assert sorted(r["k"] for r in rows) == ["x", "y"]
    by_key = {d["a_k"]: n for n, d in _of(graph, "D").items()}
    assert graph.nodes[by_key["x"]]["op"] == "DELTA"
    parents = sorted(
        (graph.nodes[p]["relation"], graph.nodes[p]["a_v"]) for p in graph.predecessors(by_key["x"])
    )
    assert parents == [("A", "1"), ("A", "2"), ("B", "4")]


def test_explode_makes_times_of_row_and_element(spark, client, neo4j_driver) -> None:  # type: ignore[no-untyped-def]
    df = spark.createDataFrame([("a", ["p", "q", "p"]), ("b", [])], ["k", "items"])

    def build(prov):  # type: ignore[no-untyped-def]
        t = prov.source(df, "T")
        return t.select("k", F.explode("items").alias("item")).named("E").collect()

    rows, graph = _captured(spark, client, neo4j_driver, build)
    assert sorted(r["item"] for r in rows) == ["p", "p", "q"]
    exploded = _of(graph, "E")
    assert len(exploded) == 3  # equal elements stay distinct rows
    for node, data in exploded.items():
        assert data["op"] == "TIMES"
        feeders = {graph.nodes[p]["op"]: graph.nodes[p] for p in graph.predecessors(node)}
        assert feeders["TOKEN"]["a_k"] == "a"
        assert feeders["VALUE"]["value"] == data["a_item"]


def test_python_udf_is_a_black_box(spark, client, neo4j_driver) -> None:  # type: ignore[no-untyped-def]
    df = spark.createDataFrame([("a",), ("b",)], ["k"])

    @F.udf(returnType=StringType())
    def shout(s: str) -> str:
        return s.upper() + "!"

    def build(prov):  # type: ignore[no-untyped-def]
        return prov.source(df, "T").withColumn("loud", shout("k")).named("U").collect()

    rows, graph = _captured(spark, client, neo4j_driver, build)
    assert sorted(r["loud"] for r in rows) == ["A!", "B!"]
    boxes = [n for n, d in graph.nodes(data=True) if d["op"] == "BLACK_BOX"]
    assert len(boxes) == 2
    for box in boxes:
        assert graph.nodes[box]["label"] == "shout"
        (parent,) = graph.predecessors(box)
        assert graph.nodes[parent]["op"] == "TOKEN"
    assert {graph.nodes[n]["a_loud"] for n in _of(graph, "U")} == {"A!", "B!"}


def test_ranking_windows_limit_and_order_keep_row_provenance(spark, client, neo4j_driver) -> None:  # type: ignore[no-untyped-def]
    df = spark.createDataFrame([("a", 3), ("a", 1), ("b", 2)], ["k", "x"])

    def build(prov):  # type: ignore[no-untyped-def]
        w = Window.partitionBy("k").orderBy("x")
        t = prov.source(df, "T").withColumn("rank", F.rank().over(w))
        return t.orderBy("x").limit(2).named("Top").collect()

    rows, graph = _captured(spark, client, neo4j_driver, build)
    assert [(r["x"], r["rank"]) for r in rows] == [(1, 1), (2, 1)]
    for node, data in _of(graph, "Top").items():
        (parent,) = graph.predecessors(node)
        assert graph.nodes[parent]["a_x"] == data["a_x"]


def test_write_is_a_materialization_point(spark, client, neo4j_driver, tmp_path) -> None:  # type: ignore[no-untyped-def]
    df = spark.createDataFrame([("a", 1), ("b", 2)], ["k", "x"])
    out = tmp_path / "out.parquet"
    with ProvenanceSession(spark, workflow="write-test") as prov:
        prov.source(df, "T").groupBy("k").agg(F.sum("x").alias("s")).named("S").write.parquet(
            str(out)
        )
    run = client.wait_for_run(prov.run_id)
    graph = run_graph(neo4j_driver, prov.run_id)
    assert run.node_count == own_nodes(graph) == prov.counts()[0] > 0
    assert sorted(r["k"] for r in spark.read.parquet(str(out)).collect()) == ["a", "b"]
    assert len(_of(graph, "S")) == 2


def test_kill_switch_makes_capture_a_pass_through(spark, client, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("SPARKPROV_DISABLED", "1")
    df = spark.createDataFrame([("a", 1), ("a", 2)], ["k", "x"])
    with ProvenanceSession(spark, workflow="disabled") as prov:
        rows = prov.source(df, "T").groupBy("k").agg(F.sum("x").alias("s")).named("S").collect()
    assert [tuple(r) for r in rows] == [("a", 3)]
    assert prov.counts() == (0, 0)
    assert prov.run_id not in {r.run_id for r in client.runs("disabled")}


def test_value_capture_all_listed_or_none(spark, client, neo4j_driver) -> None:  # type: ignore[no-untyped-def]
    df = spark.createDataFrame([("a", 1, "secret")], ["k", "x", "pii"])

    def build(prov):  # type: ignore[no-untyped-def]
        t = prov.source(df, "T", values=["k", "x"])
        t.named("All").collect()
        t.named("Listed", values=["x"]).collect()
        return t.named("Nothing", values=None).collect()

    _, graph = _captured(spark, client, neo4j_driver, build)
    (token,) = [d for _, d in graph.nodes(data=True) if d["op"] == "TOKEN"]
    assert (token["a_k"], token["a_x"]) == ("a", "1") and "a_pii" not in token
    (every,) = _of(graph, "All").values()
    assert {k for k in every if k.startswith("a_")} == {"a_k", "a_x", "a_pii"}
    (listed,) = _of(graph, "Listed").values()
    assert {k for k in listed if k.startswith("a_")} == {"a_x"}
    (nothing,) = _of(graph, "Nothing").values()
    assert not [k for k in nothing if k.startswith("a_")]
