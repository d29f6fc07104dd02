"""TPC-H-shaped tables and queries written with the DataFrame API, for the re-execution oracle.

The tables keep TPC-H's columns that the queries read (plus a unique key per table, so that a
witness can be mapped back to its rows); values are drawn from a seeded generator. Prices are
decimals, so that sums over the same rows in another order are equal, not merely close. Each
query is a function of its tracked sources, so the same code runs captured and plain (a session
with ``enabled=False``).
"""

from __future__ import annotations

import datetime as dt
import random
from collections.abc import Callable
from decimal import Decimal
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

__all__ = ["KEYS", "QUERIES", "tables"]

# The unique key of each table: how a witness token is mapped back to its source row.
KEYS = {"customer": "c_custkey", "orders": "o_orderkey", "lineitem": "l_id"}

_PRIORITIES = ["1-URGENT", "2-HIGH", "3-MEDIUM", "4-NOT SPECIFIED", "5-LOW"]
_MODES = ["MAIL", "SHIP", "AIR", "RAIL", "TRUCK"]
_SEGMENTS = ["BUILDING", "AUTOMOBILE", "MACHINERY"]
_COMMENTS = ["quick deposits", "special requests", "pending special requests", "regular ideas"]


def tables(spark: SparkSession, customers: int = 300, seed: int = 7) -> dict[str, DataFrame]:
    """customer, orders (about 10 per customer, a third of the customers have none) and
    lineitem (1 to 7 per order)."""
    rng = random.Random(seed)
    start = dt.date(1993, 1, 1)
    customer_rows = [
        (c, f"Customer#{c:06d}", rng.choice(_SEGMENTS), rng.randrange(5))
        for c in range(1, customers + 1)
    ]
    order_rows, item_rows = [], []
    orderkey = item_id = 0
    for c in range(1, customers + 1):
        if c % 3 == 0:
            continue  # TPC-H: a third of the customers place no order (Q13's zero group)
        for _ in range(rng.randrange(1, 20)):
            orderkey += 1
            date = start + dt.timedelta(days=rng.randrange(2000))
            order_rows.append((orderkey, c, date, rng.choice(_PRIORITIES), rng.choice(_COMMENTS)))
            for line in range(1, rng.randrange(2, 9)):
                item_id += 1
                ship = date + dt.timedelta(days=rng.randrange(1, 120))
                commit = date + dt.timedelta(days=rng.randrange(30, 90))
                receipt = ship + dt.timedelta(days=rng.randrange(1, 30))
                price = Decimal(rng.randrange(100, 10_000_00)) / 100
                item_rows.append(
                    (
                        item_id,
                        orderkey,
                        line,
                        Decimal(rng.randrange(1, 51)),
                        price,
                        Decimal(rng.randrange(0, 11)) / 100,
                        rng.choice("RAN"),
                        rng.choice("OF"),
                        ship,
                        commit,
                        receipt,
                        rng.choice(_MODES),
                    )
                )
    customer = spark.createDataFrame(
        customer_rows, "c_custkey int, c_name string, c_mktsegment string, c_nationkey int"
    )
    orders = spark.createDataFrame(
        order_rows,
        "o_orderkey int, o_custkey int, o_orderdate date, o_orderpriority string, o_comment string",
    )
    lineitem = spark.createDataFrame(
        item_rows,
        "l_id int, l_orderkey int, l_linenumber int, l_quantity decimal(12,2), "
        "l_extendedprice decimal(12,2), l_discount decimal(12,2), l_returnflag string, "
        "l_linestatus string, l_shipdate date, l_commitdate date, l_receiptdate date, "
        "l_shipmode string",
    )
    return {"customer": customer, "orders": orders, "lineitem": lineitem}


Sources = dict[str, Any]  # relation -> TrackedFrame


def q1(t: Sources) -> Any:
    """Pricing summary: one scan, a filter, a group with eight aggregates."""
    li = t["lineitem"].filter(F.col("l_shipdate") <= F.lit("1998-09-02").cast("date"))
    disc = F.col("l_extendedprice") * (1 - F.col("l_discount"))
    return li.groupBy("l_returnflag", "l_linestatus").agg(
        F.sum("l_quantity").alias("sum_qty"),
        F.sum("l_extendedprice").alias("sum_base_price"),
        F.sum(disc).alias("sum_disc_price"),
        F.avg("l_quantity").alias("avg_qty"),
        F.avg("l_discount").alias("avg_disc"),
        F.count("l_id").alias("count_order"),
    )


def q3(t: Sources) -> Any:
    """Shipping priority: a three-way join, a group, top rows by revenue."""
    c = t["customer"].filter(F.col("c_mktsegment") == "BUILDING")
    o = t["orders"].filter(F.col("o_orderdate") < F.lit("1995-03-15").cast("date"))
    li = t["lineitem"].filter(F.col("l_shipdate") > F.lit("1995-03-15").cast("date"))
    joined = c.join(o, F.col("c_custkey") == F.col("o_custkey")).join(
        li, F.col("l_orderkey") == F.col("o_orderkey")
    )
    revenue = F.sum(F.col("l_extendedprice") * (1 - F.col("l_discount"))).alias("revenue")
    grouped = joined.groupBy("l_orderkey", "o_orderdate").agg(revenue)
    return grouped.orderBy(F.col("revenue").desc(), "l_orderkey").limit(10)


def q4(t: Sources) -> Any:
    """Order priority checking: orders with a late line (EXISTS: a left semi join), counted."""
    o = t["orders"].filter(
        (F.col("o_orderdate") >= F.lit("1994-01-01").cast("date"))
        & (F.col("o_orderdate") < F.lit("1995-01-01").cast("date"))
    )
    late = t["lineitem"].filter(F.col("l_commitdate") < F.col("l_receiptdate"))
    kept = o.join(late, o["o_orderkey"] == late["l_orderkey"], "left_semi")
    return kept.groupBy("o_orderpriority").agg(F.count("o_orderkey").alias("order_count"))


def q4_on_names(t: Sources) -> Any:
    """Q4 with the semi join on a column name (the other capture path)."""
    o = t["orders"].filter(F.col("o_orderdate") >= F.lit("1996-01-01").cast("date"))
    late = (
        t["lineitem"]
        .filter(F.col("l_commitdate") < F.col("l_receiptdate"))
        .withColumnRenamed("l_orderkey", "o_orderkey")
    )
    kept = o.join(late, "o_orderkey", "semi")
    return kept.groupBy("o_orderpriority").agg(F.count("o_orderkey").alias("order_count"))


def q12(t: Sources) -> Any:
    """Shipping modes: a join, filters across both sides, conditional sums per mode."""
    li = t["lineitem"].filter(
        F.col("l_shipmode").isin("MAIL", "SHIP")
        & (F.col("l_commitdate") < F.col("l_receiptdate"))
        & (F.col("l_shipdate") < F.col("l_commitdate"))
    )
    joined = t["orders"].join(li, F.col("o_orderkey") == F.col("l_orderkey"))
    high = F.col("o_orderpriority").isin("1-URGENT", "2-HIGH")
    return joined.groupBy("l_shipmode").agg(
        F.sum(F.when(high, 1).otherwise(0)).alias("high_line_count"),
        F.sum(F.when(high, 0).otherwise(1)).alias("low_line_count"),
    )


def q13(t: Sources) -> Any:
    """Customer distribution: a left outer join and two levels of aggregation."""
    o = t["orders"].filter(~F.col("o_comment").like("%special%requests%"))
    joined = t["customer"].join(o, F.col("c_custkey") == F.col("o_custkey"), "left_outer")
    per_customer = joined.groupBy("c_custkey").agg(F.count("o_orderkey").alias("c_count"))
    return per_customer.groupBy("c_count").agg(F.count("c_custkey").alias("custdist"))


def q13_full(t: Sources) -> Any:
    """Q13's shape over a full outer join (orders of no customer exist after the filter)."""
    c = t["customer"].filter(F.col("c_nationkey") < 3)
    joined = c.join(t["orders"], F.col("c_custkey") == F.col("o_custkey"), "full_outer")
    per_customer = joined.groupBy("c_nationkey").agg(F.count("o_orderkey").alias("orders"))
    return per_customer


def q22_anti(t: Sources) -> Any:
    """Customers without orders (NOT EXISTS: a left anti join), per nation."""
    idle = t["customer"].join(t["orders"], F.col("c_custkey") == F.col("o_custkey"), "left_anti")
    return idle.groupBy("c_nationkey").agg(F.count("c_custkey").alias("numcust"))


QUERIES: dict[str, Callable[[Sources], Any]] = {
    "q1": q1,
    "q3": q3,
    "q4": q4,
    "q4_on_names": q4_on_names,
    "q12": q12,
    "q13": q13,
    "q13_full": q13_full,
    "q22_anti": q22_anti,
}
