"""Set operations (intersect, subtract, exceptAll) and grouping sets (rollup, cube): the exact
graph on small inputs, and the same rows as plain Spark."""

from __future__ import annotations

from collections import Counter

import pytest
from pyspark.sql import functions as F

from capture_agent import ProvenanceSession, UnsupportedOperation

from .graph import aggregate, delta, shape, times, token
from .test_operators import _captured


def _rows(rows):  # type: ignore[no-untyped-def]
    return sorted((tuple(r) for r in rows), key=repr)


def test_intersect_is_delta_of_times_of_equal_rows(spark, client, neo4j_driver) -> None:  # type: ignore[no-untyped-def]
    a = spark.createDataFrame([("x",), ("x",), ("y",), (None,)], "v string")
    b = spark.createDataFrame([("x",), ("z",), (None,)], "v string")

    def build(prov):  # type: ignore[no-untyped-def]
        return prov.source(a, "A").intersect(prov.source(b, "B")).named("I").collect()

    rows, graph = _captured(spark, client, neo4j_driver, build)
    assert _rows(rows) == _rows(a.intersect(b).collect())
    ax, bx = token("A", v="x"), token("B", v="x")
    an, bn = token("A"), token("B")
    assert shape(graph) == Counter(
        [
            delta(times(ax, bx), times(ax, bx), relation="I", v="x"),
            delta(times(an, bn), relation="I"),  # nulls are equal, as in Spark
            token("A", v="y"),
            token("B", v="z"),
        ]
    )
    assert graph.number_of_nodes() == 7 + 3 + 2 and graph.number_of_edges() == 6 + 3


def test_subtract_keeps_the_left_copies_under_a_delta(spark, client, neo4j_driver) -> None:  # type: ignore[no-untyped-def]
    a = spark.createDataFrame([("x", 1), ("x", 1), ("y", 2), ("z", 3)], "k string, n int")
    b = spark.createDataFrame([("y", 2), ("z", 4)], "k string, n int")

    def build(prov):  # type: ignore[no-untyped-def]
        return prov.source(a, "A").subtract(prov.source(b, "B")).named("S").collect()

    rows, graph = _captured(spark, client, neo4j_driver, build)
    assert _rows(rows) == _rows(a.subtract(b).collect())
    x, z = token("A", k="x", n="1"), token("A", k="z", n="3")
    assert shape(graph) == Counter(
        [
            delta(x, x, relation="S", k="x", n="1"),
            delta(z, relation="S", k="z", n="3"),
            # the right side is not part of a difference's provenance (no monus)
            token("A", k="y", n="2"),
            token("B", k="y", n="2"),
            token("B", k="z", n="4"),
        ]
    )


def test_except_all_keeps_the_surviving_copies_provenance(spark, client, neo4j_driver) -> None:  # type: ignore[no-untyped-def]
    a = spark.createDataFrame([("x",), ("x",), ("x",), ("y",), (None,)], "v string")
    b = spark.createDataFrame([("x",), ("y",), ("w",)], "v string")

    def build(prov):  # type: ignore[no-untyped-def]
        return prov.source(a, "A").exceptAll(prov.source(b, "B")).named("E").collect()

    rows, graph = _captured(spark, client, neo4j_driver, build)
    assert _rows(rows) == _rows(a.exceptAll(b).collect())
    plus = [n for n, d in graph.nodes(data=True) if d.get("relation") == "E"]
    assert len(plus) == 3 and all(graph.nodes[n]["op"] == "PLUS" for n in plus)
    x = token("A", v="x")
    kept = [("PLUS", "+", "E", (("v", "x"),), "", (x,))] * 2 + [
        ("PLUS", "+", "E", (), "", (token("A"),))
    ]
    # two of the three x copies survive, each with its own token; one x copy and y are consumed
    assert shape(graph) == Counter(
        [*kept, x, token("A", v="y"), token("B", v="x"), token("B", v="y"), token("B", v="w")]
    )
    survivors = {next(iter(graph.predecessors(n))) for n in plus}
    assert len(survivors) == 3


def test_rollup_makes_each_grouping_set_its_own_groups(spark, client, neo4j_driver) -> None:  # type: ignore[no-untyped-def]
    df = spark.createDataFrame(
        [("a", "p", 1), ("a", "q", 2), ("b", "p", 4)], "g string, h string, x int"
    )

    def build(prov):  # type: ignore[no-untyped-def]
        t = prov.source(df, "T")
        return t.rollup("g", "h").agg(F.sum("x").alias("s")).named("R").collect()

    rows, graph = _captured(spark, client, neo4j_driver, build)
    assert _rows(rows) == _rows(df.rollup("g", "h").agg(F.sum("x").alias("s")).collect())
    t1, t2, t4 = (
        token("T", g="a", h="p", x="1"),
        token("T", g="a", h="q", x="2"),
        token("T", g="b", h="p", x="4"),
    )

    def group(members, total, **keys):  # type: ignore[no-untyped-def]
        agg = aggregate("SUM", total, [(m, v) for m, v in members])
        return delta(*[m for m, _ in members], agg, relation="R", s=total, **keys)

    assert shape(graph) == Counter(
        [
            group([(t1, "1")], "1", g="a", h="p"),
            group([(t2, "2")], "2", g="a", h="q"),
            group([(t4, "4")], "4", g="b", h="p"),
            group([(t1, "1"), (t2, "2")], "3", g="a"),
            group([(t4, "4")], "4", g="b"),
            group([(t1, "1"), (t2, "2"), (t4, "4")], "7"),
        ]
    )
    # 3 tokens, 6 groups with one AGGREGATE each, a TENSOR and VALUE per member per group
    assert graph.number_of_nodes() == 3 + 12 + 2 * (3 + 2 + 1 + 3)


def test_cube_groups_and_null_keys_stay_apart(spark, client, neo4j_driver) -> None:  # type: ignore[no-untyped-def]
    # A null key value in the data and a subtotal's null are different groups.
    df = spark.createDataFrame([("a", 1), (None, 2)], "g string, x int")

    def build(prov):  # type: ignore[no-untyped-def]
        # Every column: the expected tokens below carry x, which the query does not read.
        return prov.source(df, "T", values="all").cube("g").count().named("C").collect()

    rows, graph = _captured(spark, client, neo4j_driver, build)
    assert _rows(rows) == _rows(df.cube("g").count().collect())
    ta, tn = token("T", g="a", x="1"), token("T", x="2")

    def group(members, **keys):  # type: ignore[no-untyped-def]
        agg = aggregate("COUNT", str(len(members)), [(m, "1") for m in members])
        return delta(*members, agg, relation="C", count=str(len(members)), **keys)

    assert shape(graph) == Counter([group([ta], g="a"), group([tn]), group([ta, tn])])


def test_set_operation_variants_not_captured_raise(spark) -> None:  # type: ignore[no-untyped-def]
    df = spark.createDataFrame([(1,)], ["x"])
    with ProvenanceSession(spark, workflow="unsupported") as prov:
        t, u = prov.source(df, "T"), prov.source(df, "U")
        with pytest.raises(UnsupportedOperation, match="DataFrame.intersectAll"):
            t.intersectAll(u)
        with pytest.raises(UnsupportedOperation, match="untracked DataFrame"):
            t.subtract(df)  # type: ignore[arg-type]
        with pytest.raises(UnsupportedOperation, match="rollup on a Column expression"):
            t.rollup(F.col("x") + 1)  # type: ignore[arg-type]
        with pytest.raises(UnsupportedOperation, match="GroupedData.pivot"):
            t.cube("x").pivot("x")
