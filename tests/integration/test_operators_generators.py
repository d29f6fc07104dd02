"""Generators (posexplode, explode_outer), flatten and limit: exact graphs on small inputs."""

from __future__ import annotations

from collections import Counter

from pyspark.sql import functions as F

from .graph import node, shape, times, token
from .test_operators import _captured


def test_posexplode_explode_outer_flatten_and_limit(spark, client, neo4j_driver) -> None:  # type: ignore[no-untyped-def]
    df = spark.createDataFrame([("a", ["p", "q"]), ("b", [])], "k string, items array<string>")
    nested = spark.createDataFrame(
        [("n", [["p"], ["q", "r"]])], "k string, nested array<array<string>>"
    )

    def build(prov):  # type: ignore[no-untyped-def]
        t = prov.source(df, "T")
        pos = t.select("k", F.posexplode("items")).named("PE").collect()
        outer = t.select("k", F.explode_outer("items").alias("item")).named("EO").collect()
        flat = prov.source(nested, "N").withColumn("flat", F.flatten("nested")).drop("nested")
        flat_rows = flat.named("FL").collect()
        first = t.orderBy("k").limit(1).named("L").collect()
        return pos, outer, flat_rows, first

    (pos, outer, flat, first), graph = _captured(spark, client, neo4j_driver, build)
    assert sorted(map(tuple, pos)) == [("a", 0, "p"), ("a", 1, "q")]
    assert sorted(map(tuple, outer), key=repr) == [("a", "p"), ("a", "q"), ("b", None)]
    assert [tuple(r) for r in flat] == [("n", ["p", "q", "r"])]
    assert [r["k"] for r in first] == ["a"]
    a, b = token("T", k="a", items="[p, q]"), token("T", k="b", items="[]")
    n = token("N", k="n", nested="[[p], [q, r]]")

    def value(text: str):  # type: ignore[no-untyped-def]
        return node("VALUE", text, value=text)

    assert shape(graph) == Counter(
        [
            # posexplode: the element is the (position, value) pair
            times(a, value("0,p"), relation="PE", k="a", pos="0", col="p"),
            times(a, value("1,q"), relation="PE", k="a", pos="1", col="q"),
            times(a, value("p"), relation="EO", k="a", item="p"),
            times(a, value("q"), relation="EO", k="a", item="q"),
            times(b, relation="EO", k="b"),  # explode_outer of []: the row alone, no element
            # flatten is a projection: the row keeps its provenance (named: a PLUS over it)
            node("PLUS", "+", "FL", {"k": "n", "flat": "[p, q, r]"}, parents=[n]),
            # limit: the kept row keeps its provenance
            node("PLUS", "+", "L", {"k": "a", "items": "[p, q]"}, parents=[a]),
        ]
    )
