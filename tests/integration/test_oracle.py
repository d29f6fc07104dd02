"""The re-execution oracle (tests/integration/oracle.py) over TPC-H-shaped queries and over the
shapes of the exact-graph workloads: every checked output row comes back when the query runs on
its witness alone."""

from __future__ import annotations

import pandas as pd
import pytest
from pyspark.sql import Window
from pyspark.sql import functions as F
from pyspark.sql.types import StringType

from . import tpch
from .oracle import check_by_reexecution


@pytest.fixture(scope="module")
def tpch_tables(spark):  # type: ignore[no-untyped-def]
    tables = tpch.tables(spark)
    for df in tables.values():
        df.cache()
    return tables


@pytest.mark.parametrize("name", sorted(tpch.QUERIES))
def test_tpch_rows_come_back_from_their_witness(spark, client, tpch_tables, name) -> None:  # type: ignore[no-untyped-def]
    checked = check_by_reexecution(
        spark, client, tpch_tables, tpch.KEYS, tpch.QUERIES[name], workflow=f"oracle-{name}"
    )
    assert checked.checked >= 1
    if name in ("q4", "q4_on_names", "q12"):
        # the witness holds the decisive lineitems too, not only the counted orders
        assert all(size > 1 for size in checked.witness_sizes)


def test_q13_witness_holds_every_order_of_its_group(spark, client, tpch_tables) -> None:  # type: ignore[no-untyped-def]
    """The held-out failure: c_count = k groups' witnesses held only the orders whose ids a
    double represents. Here every group is checked, and its witness size is exact."""
    counts = tpch.q13(dict(tpch_tables)).collect()  # plain DataFrames: the expectation
    checked = check_by_reexecution(
        spark, client, tpch_tables, tpch.KEYS, tpch.q13, max_rows=100, workflow="oracle-q13-all"
    )
    assert checked.checked == checked.rows == len(counts)
    expected = sorted(r["custdist"] * (1 + r["c_count"]) for r in counts)
    assert sorted(checked.witness_sizes) == expected


# -- the exact-graph workloads' shapes -------------------------------------------------------


def _people(spark):  # type: ignore[no-untyped-def]
    return spark.createDataFrame(
        [(1, "Steve", 30, "NY"), (2, "Mark", 40, "NY"), (3, "Ann", 20, "LA"), (4, "Zoe", 50, "LA"),
         (5, "Bo", 25, "SF")],
        ["pid", "Name", "Age", "City"],
    )  # fmt: skip


def _depts(spark):  # type: ignore[no-untyped-def]
    return spark.createDataFrame(
        [(1, "NY", "ops"), (2, "NY", "dev"), (3, "LA", "qa"), (4, "SF", "ops"), (5, "XX", "hr")],
        ["did", "City", "title"],
    )


def _upper(s: pd.Series) -> pd.Series:
    return s.str.upper()


def _people_avg(t):  # type: ignore[no-untyped-def]
    return t["P"].filter(F.col("Age") >= 25).groupBy("City").agg(F.avg("Age").alias("Age"))


def _join_agg(t):  # type: ignore[no-untyped-def]
    joined = t["P"].join(t["D"], on="City")
    return joined.groupBy("title").agg(F.count("pid").alias("n"), F.max("Age").alias("oldest"))


def _full_outer(t):  # type: ignore[no-untyped-def]
    return t["P"].join(t["D"], on="City", how="full").groupBy("City").agg(F.count("did").alias("n"))


def _union_distinct(t):  # type: ignore[no-untyped-def]
    return t["P"].select("City").union(t["D"].select("City")).distinct()


def _intersect(t):  # type: ignore[no-untyped-def]
    return t["P"].select("City").intersect(t["D"].select("City"))


def _subtract(t):  # type: ignore[no-untyped-def]
    return t["D"].select("City").subtract(t["P"].select("City"))


def _explode(t):  # type: ignore[no-untyped-def]
    words = t["D"].select("City", F.explode(F.split("title", "")).alias("ch"))
    return words.groupBy("ch").agg(F.count("City").alias("n"))


def _window(t):  # type: ignore[no-untyped-def]
    w = Window.partitionBy("City")
    return t["P"].withColumn("total", F.sum("Age").over(w)).select("Name", "total")


def _udf(t):  # type: ignore[no-untyped-def]
    upper = F.pandas_udf(_upper, StringType())  # type: ignore[call-overload]
    return t["P"].withColumn("shout", upper("Name")).groupBy("shout").count()


def _apply_in_pandas(t):  # type: ignore[no-untyped-def]
    def oldest(pdf: pd.DataFrame) -> pd.DataFrame:
        return pdf.nlargest(1, "Age")[["City", "Age"]]

    return t["P"].groupBy("City").applyInPandas(oldest, "City string, Age long")


def _rollup(t):  # type: ignore[no-untyped-def]
    return t["P"].rollup("City").agg(F.sum("Age").alias("s"))


def _semi_anti(t):  # type: ignore[no-untyped-def]
    semi = t["P"].join(t["D"].filter(F.col("title") == "ops"), on="City", how="left_semi")
    anti = t["P"].join(t["D"].filter(F.col("title") == "qa"), on="City", how="left_anti")
    return semi.union(anti).groupBy("City").agg(F.count("pid").alias("n"))


WORKLOADS = {
    "people_avg": _people_avg,
    "join_agg": _join_agg,
    "full_outer": _full_outer,
    "union_distinct": _union_distinct,
    "intersect": _intersect,
    "subtract": _subtract,
    "explode": _explode,
    "window_aggregate": _window,
    "pandas_udf": _udf,
    "apply_in_pandas": _apply_in_pandas,
    "rollup": _rollup,
    "semi_and_anti": _semi_anti,
}


@pytest.mark.parametrize("name", sorted(WORKLOADS))
def test_workload_rows_come_back_from_their_witness(spark, client, name) -> None:  # type: ignore[no-untyped-def]
    sources = {"P": _people(spark), "D": _depts(spark)}
    checked = check_by_reexecution(
        spark,
        client,
        sources,
        {"P": "pid", "D": "did"},
        WORKLOADS[name],
        max_rows=20,
        workflow=f"oracle-{name}",
    )
    assert checked.checked == checked.rows >= 1
