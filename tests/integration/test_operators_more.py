"""Joins of every kind, deduplication, unionByName, generators, UDF black boxes, window ranking,
writes as materialization points, and the kill switch; exact graphs on small inputs."""

from __future__ import annotations

import pytest
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
    # semi: the kept row is TIMES of its left row and its one match (r·s); anti passes through.
    (semi_row,) = _of(graph, "Semi")
    assert [r["k"] for r in semi] == ["b"] and _tokens(graph, semi_row) == {("L", "b"), ("R", "b")}
    assert graph.nodes[semi_row]["op"] == "TIMES" and graph.in_degree(semi_row) == 2
    (anti_row,) = _of(graph, "Anti")
    assert [r["k"] for r in anti] == ["a"] and _tokens(graph, anti_row) == {("L", "a")}
    # anti: the excluded row b is an EXCLUDED node of it and its match (value: the match's id)
    (excluded,) = [n for n, d in graph.nodes(data=True) if d.get("op") == "EXCLUDED"]
    (match,) = [p for p in graph.predecessors(excluded) if graph.nodes[p]["relation"] == "R"]
    assert graph.nodes[excluded]["value"] == str(match) and graph.out_degree(excluded) == 0
    assert _tokens(graph, excluded) == {("L", "b"), ("R", "b")}
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


@pytest.mark.parametrize("values", [None, "all"], ids=["ids-only", "with-values"])
def test_outer_joins_keep_ids_above_2_53_on_both_sides(spark, client, neo4j_driver, values) -> None:  # type: ignore[no-untyped-def]
    """Regression: a batch that mixes matched and unmatched rows reached Python with the
    nullable side's ids as float64 (Spark's numeric-only conversion, used when the tap reads no
    values), which rounded them: the joined rows' edges pointed at nodes that do not exist. One
    partition per side, so every batch mixes; almost every id is above 2^53 in magnitude."""
    n, shift = 60, 20
    left = spark.createDataFrame([(f"k{i}", i) for i in range(n)], ["k", "l"]).coalesce(1)
    right = spark.createDataFrame(
        [(f"k{i}", 10 * i) for i in range(shift, n + shift)], ["k", "r"]
    ).coalesce(1)

    def build(prov):  # type: ignore[no-untyped-def]
        lt, rt = prov.source(left, "L"), prov.source(right, "R")
        return {
            how: lt.join(rt, on="k", how=how).named(how.capitalize(), values=values).collect()
            for how in ("left", "right", "full")
        }

    rows, graph = _captured(spark, client, neo4j_driver, build)
    tokens = [t for t, d in graph.nodes(data=True) if d["op"] == "TOKEN"]
    # tokens are salted splitmix64 ids: each is below 2^53 in magnitude with odds 2^-10, so a
    # run has almost all of them above it (requiring every one failed about one run in nine)
    assert len(tokens) == 2 * n and sum(abs(t) > 2**53 for t in tokens) >= 2 * n - 5
    expected = {
        "Left": range(n),
        "Right": range(shift, n + shift),
        "Full": range(n + shift),
    }
    for relation, keys in expected.items():
        assert len(rows[relation.lower()]) == len(keys)
        found = sorted(sorted(_tokens(graph, node)) for node in _of(graph, relation))
        wanted = sorted(
            sorted(
                ({("L", f"k{i}")} if i < n else set()) | ({("R", f"k{i}")} if i >= shift else set())
            )
            for i in keys
        )
        assert found == wanted, relation


def _sides(i: int, n: int, shift: int) -> list[tuple[str, str]]:
    """The tokens of key i's outer-join row: L's if i < n, R's if i >= shift."""
    return sorted({("L", f"k{i}")} if i < n else set()) + ([("R", f"k{i}")] if i >= shift else [])


def test_semi_join_rows_are_times_of_row_and_sum_of_matches(spark, client, neo4j_driver) -> None:  # type: ignore[no-untyped-def]
    """r·(s1 + s2): deleting one match keeps the row, deleting all of them removes it."""
    orders = spark.createDataFrame([(1, "urgent"), (2, "low"), (3, "low")], ["o", "prio"])
    items = spark.createDataFrame([(1, 5, 9), (1, 7, 8), (2, 1, 2), (3, 4, 4)], ["o", "c", "r"])

    def build(prov):  # type: ignore[no-untyped-def]
        o, i = prov.source(orders, "Orders"), prov.source(items, "Items")
        on_names = o.join(i.filter(F.col("c") < F.col("r")), on="o", how="semi")
        on_expr = o.join(i, (o["o"] == i["o"]) & (i["c"] < i["r"]), how="left_semi")
        return on_names.named("ByName").collect(), on_expr.named("ByExpr").collect()

    (by_name, by_expr), graph = _captured(spark, client, neo4j_driver, build)
    assert sorted(r["o"] for r in by_name) == sorted(r["o"] for r in by_expr) == [1, 2]
    # the columns, in order, of Spark's own semi joins
    assert list(by_name[0].asDict()) == orders.join(items, on="o", how="semi").columns
    assert list(by_expr[0].asDict()) == orders.columns
    for relation in ("ByName", "ByExpr"):
        rows = {int(d["a_o"]): n for n, d in _of(graph, relation).items()}
        assert sorted(rows) == [1, 2]
        one, two = rows[1], rows[2]
        assert graph.nodes[one]["op"] == "TIMES"
        plus = [p for p in graph.predecessors(one) if graph.nodes[p]["op"] == "PLUS"]
        assert len(plus) == 1 and graph.in_degree(plus[0]) == 2
        assert _tokens(graph, one) == {("Orders", None), ("Items", None)}
        witnesses = sorted(
            (graph.nodes[t]["a_c"], graph.nodes[t]["a_r"]) for t in graph.predecessors(plus[0])
        )
        assert witnesses == [("5", "9"), ("7", "8")]
        # a single match feeds the row directly: o2 = o2 · i(2,1,2)
        assert graph.in_degree(two) == 2
        assert {graph.nodes[p]["relation"] for p in graph.predecessors(two)} == {"Orders", "Items"}
