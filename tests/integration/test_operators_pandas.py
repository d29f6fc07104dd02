"""Pandas functions as black boxes: applyInPandas (per group), mapInPandas (per partition) and
scalar pandas UDFs. Exact graphs on small inputs."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator

import pandas as pd
from pyspark.sql import functions as F

from .graph import node, shape, token
from .test_operators import _captured


def totals(pdf: pd.DataFrame) -> pd.DataFrame:
    return pd.DataFrame({"k": [pdf["k"].iloc[0]] * 2, "t": [pdf["x"].sum(), pdf["x"].max()]})


def evens(batches: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
    for pdf in batches:
        yield pdf[pdf["x"] % 2 == 0]


def test_apply_in_pandas_rows_are_black_boxes_of_their_group(spark, client, neo4j_driver) -> None:  # type: ignore[no-untyped-def]
    df = spark.createDataFrame([("a", 1), ("a", 2), ("b", 5)], "k string, x long")

    def build(prov):  # type: ignore[no-untyped-def]
        t = prov.source(df, "T")
        return t.groupBy("k").applyInPandas(totals, "k string, t long").named("AP").collect()

    rows, graph = _captured(spark, client, neo4j_driver, build)
    plain = df.groupBy("k").applyInPandas(totals, "k string, t long").collect()
    assert sorted(map(tuple, rows)) == sorted(map(tuple, plain))
    a1, a2, b5 = token("T", k="a", x="1"), token("T", k="a", x="2"), token("T", k="b", x="5")

    def box(t: str, *inputs):  # type: ignore[no-untyped-def]
        k = "b" if b5 in inputs else "a"
        return node("BLACK_BOX", "totals", "AP", {"k": k, "t": t}, parents=inputs)

    assert shape(graph) == Counter([box("3", a1, a2), box("2", a1, a2), box("5", b5), box("5", b5)])
    assert graph.number_of_nodes() == 3 + 4 and graph.number_of_edges() == 2 * 2 + 2


def test_map_in_pandas_rows_are_black_boxes_of_their_partition(spark, client, neo4j_driver) -> None:  # type: ignore[no-untyped-def]
    df = spark.createDataFrame([("a", 1), ("b", 2), ("c", 4)], "k string, x long").coalesce(1)

    def build(prov):  # type: ignore[no-untyped-def]
        t = prov.source(df, "T")
        return t.mapInPandas(evens, "k string, x long").named("MP").collect()

    rows, graph = _captured(spark, client, neo4j_driver, build)
    assert sorted(map(tuple, rows)) == [("b", 2), ("c", 4)]
    inputs = [token("T", k="a", x="1"), token("T", k="b", x="2"), token("T", k="c", x="4")]

    def named(k: str, x: str):  # type: ignore[no-untyped-def]
        box = node("BLACK_BOX", "evens", parents=inputs)
        return node("PLUS", "+", "MP", {"k": k, "x": x}, parents=[box])

    assert shape(graph) == Counter([named("b", "2"), named("c", "4")])
    assert graph.number_of_nodes() == 3 + 2 + 2 and graph.number_of_edges() == 2 * 3 + 2


def test_pandas_udf_is_a_black_box_named_after_the_function(spark, client, neo4j_driver) -> None:  # type: ignore[no-untyped-def]
    df = spark.createDataFrame([("a", 1), ("b", 2)], "k string, x long")

    @F.pandas_udf("long")  # type: ignore[call-overload]
    def plus_one(s: pd.Series) -> pd.Series:
        return s + 1

    def build(prov):  # type: ignore[no-untyped-def]
        return prov.source(df, "T").withColumn("y", plus_one("x")).named("U").collect()

    rows, graph = _captured(spark, client, neo4j_driver, build)
    assert sorted((r["k"], r["y"]) for r in rows) == [("a", 2), ("b", 3)]
    a, b = token("T", k="a", x="1"), token("T", k="b", x="2")
    assert shape(graph) == Counter(
        [
            node("BLACK_BOX", "plus_one", "U", {"k": "a", "x": "1", "y": "2"}, parents=[a]),
            node("BLACK_BOX", "plus_one", "U", {"k": "b", "x": "2", "y": "3"}, parents=[b]),
        ]
    )
