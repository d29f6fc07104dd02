"""Window functions: ranking keeps the row's provenance; aggregates over the whole partition get
an AGGREGATE node per partition and column over the members, and each row a TIMES node of itself
and those aggregates. Exact graphs on small inputs."""

from __future__ import annotations

from collections import Counter

import pytest
from pyspark.sql import Window
from pyspark.sql import functions as F

from capture_agent import ProvenanceSession, UnsupportedOperation

from .graph import aggregate, shape, times, token
from .test_operators import _captured


def test_window_aggregates_over_the_partition(spark, client, neo4j_driver) -> None:  # type: ignore[no-untyped-def]
    df = spark.createDataFrame([("a", 1), ("a", 5), ("b", 2), ("a", None)], "k string, x int")
    by_k = Window.partitionBy("k")

    def build(prov):  # type: ignore[no-untyped-def]
        t = prov.source(df, "T").withColumn("r", F.rank().over(by_k.orderBy("x")))
        out = t.withColumns({"s": F.sum("x").over(by_k), "m": F.max("x").over(by_k)})
        return out.named("W").collect()

    rows, graph = _captured(spark, client, neo4j_driver, build)
    plain = df.withColumn("r", F.rank().over(by_k.orderBy("x"))).withColumns(
        {"s": F.sum("x").over(by_k), "m": F.max("x").over(by_k)}
    )
    assert sorted(map(tuple, rows), key=repr) == sorted(map(tuple, plain.collect()), key=repr)
    a1, a5, an, b2 = (
        token("T", k="a", x="1"),
        token("T", k="a", x="5"),
        token("T", k="a"),
        token("T", k="b", x="2"),
    )
    sum_a = aggregate("SUM", "6", [(a1, "1"), (a5, "5")])  # the null is no tensor
    max_a = aggregate("MAX", "5", [(a1, "1"), (a5, "5")])
    sum_b, max_b = aggregate("SUM", "2", [(b2, "2")]), aggregate("MAX", "2", [(b2, "2")])
    assert shape(graph) == Counter(
        [
            times(a1, sum_a, max_a, relation="W", k="a", x="1", r="2", s="6", m="5"),
            times(a5, sum_a, max_a, relation="W", k="a", x="5", r="3", s="6", m="5"),
            times(an, sum_a, max_a, relation="W", k="a", r="1", s="6", m="5"),
            times(b2, sum_b, max_b, relation="W", k="b", x="2", r="1", s="2", m="2"),
        ]
    )
    # one AGGREGATE per partition and column, shared by the partition's rows
    assert graph.number_of_nodes() == 4 + 4 + 4 + 2 * (3 + 3)
    assert graph.number_of_edges() == 4 * 3 + 6 + 2 * 6


def test_window_over_the_whole_frame_and_explicit_full_frame(spark, client, neo4j_driver) -> None:  # type: ignore[no-untyped-def]
    df = spark.createDataFrame([("a", 1), ("b", 2)], "k string, x int")
    full = (
        Window.partitionBy()
        .orderBy("x")
        .rowsBetween(Window.unboundedPreceding, Window.unboundedFollowing)
    )

    def build(prov):  # type: ignore[no-untyped-def]
        return prov.source(df, "T").withColumn("n", F.count("x").over(full)).named("N").collect()

    rows, graph = _captured(spark, client, neo4j_driver, build)
    assert sorted((r["k"], r["n"]) for r in rows) == [("a", 2), ("b", 2)]
    a, b = token("T", k="a", x="1"), token("T", k="b", x="2")
    count = aggregate("COUNT", "2", [(a, "1"), (b, "2")])
    assert shape(graph) == Counter(
        [
            times(a, count, relation="N", k="a", x="1", n="2"),
            times(b, count, relation="N", k="b", x="2", n="2"),
        ]
    )


def test_window_variants_not_captured_raise(spark) -> None:  # type: ignore[no-untyped-def]
    df = spark.createDataFrame([("a", 1)], "k string, x int")
    by_k = Window.partitionBy("k")
    with ProvenanceSession(spark, workflow="unsupported") as prov:
        t = prov.source(df, "T")
        with pytest.raises(UnsupportedOperation, match="window function sum over the frame"):
            t.withColumn("s", F.sum("x").over(by_k.orderBy("x")))  # a running sum
        with pytest.raises(UnsupportedOperation, match="window function sum inside an expression"):
            t.withColumn("s", F.sum("x").over(by_k) * 2)
        with pytest.raises(UnsupportedOperation, match="different partitionings"):
            t.withColumns(
                {"s": F.sum("x").over(by_k), "n": F.count("x").over(Window.partitionBy())}
            )
        with pytest.raises(UnsupportedOperation, match="window function lead"):
            t.withColumn("s", F.lead("x").over(by_k.orderBy("x")))
