"""The 22 TPC-H queries, written with the DataFrame API and the specification's validation
parameters.

Each query is a function of its sources (a dict of table name -> DataFrame, or of tracked
frames in a capture session), so the same code runs plain and captured. Only operators the
capture agent wraps are used: filter, select, withColumn(Renamed), joins (inner, left outer,
left semi for EXISTS/IN, left anti for NOT EXISTS/NOT IN), groupBy/agg, orderBy, limit. A scalar
subquery is an aggregate joined back (a cross join with a one-row aggregate, or a join on the
correlation keys); HAVING is a filter after the aggregation; a self-join renames one side.
"""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal
from typing import Any

from pyspark.sql import Column
from pyspark.sql import functions as F

from bench.tpch.data import KEYS

__all__ = ["KEYS", "QUERIES", "Sources"]

Sources = dict[str, Any]  # table name -> DataFrame or TrackedFrame
Frame = Any  # DataFrame or TrackedFrame


def _date(text: str) -> Column:
    return F.lit(text).cast("date")


def _between(column: str, start: str, end: str) -> Column:
    """start <= column < end (dates)."""
    return (F.col(column) >= _date(start)) & (F.col(column) < _date(end))


def _on(left: str, right: str) -> Column:
    return F.col(left) == F.col(right)


def _revenue() -> Column:
    return F.col("l_extendedprice") * (1 - F.col("l_discount"))


def _region_nations(t: Sources, region: str) -> Frame:
    """The nations of one region (n_nationkey, n_name)."""
    r = t["region"].filter(F.col("r_name") == region)
    return t["nation"].join(r, _on("n_regionkey", "r_regionkey")).select("n_nationkey", "n_name")


def _renamed_nation(t: Sources, key: str, name: str) -> Frame:
    """The nation table with its key and name renamed (for a second use in one query)."""
    return t["nation"].select(F.col("n_nationkey").alias(key), F.col("n_name").alias(name))


def q1(t: Sources) -> Frame:
    """Q1, pricing summary report: lines shipped by 1998-09-02 summed per return flag and
    line status."""
    li = t["lineitem"].filter(F.col("l_shipdate") <= _date("1998-09-02"))
    charge = _revenue() * (1 + F.col("l_tax"))
    grouped = li.groupBy("l_returnflag", "l_linestatus").agg(
        F.sum("l_quantity").alias("sum_qty"),
        F.sum("l_extendedprice").alias("sum_base_price"),
        F.sum(_revenue()).alias("sum_disc_price"),
        F.sum(charge).alias("sum_charge"),
        F.avg("l_quantity").alias("avg_qty"),
        F.avg("l_extendedprice").alias("avg_price"),
        F.avg("l_discount").alias("avg_disc"),
        F.count("*").alias("count_order"),
    )
    return grouped.orderBy("l_returnflag", "l_linestatus")


def q2(t: Sources) -> Frame:
    """Q2, minimum cost supplier: for each size-15 brass part, the European suppliers that
    offer it at the lowest European supply cost."""
    europe = _region_nations(t, "EUROPE")
    suppliers = t["supplier"].join(europe, _on("s_nationkey", "n_nationkey"))
    offers = t["partsupp"].join(suppliers, _on("ps_suppkey", "s_suppkey"))
    cheapest = (
        offers.groupBy("ps_partkey")
        .agg(F.min("ps_supplycost").alias("min_cost"))
        .withColumnRenamed("ps_partkey", "min_partkey")
    )
    parts = t["part"].filter((F.col("p_size") == 15) & F.col("p_type").like("%BRASS"))
    best = offers.join(
        cheapest,
        _on("ps_partkey", "min_partkey") & (F.col("ps_supplycost") == F.col("min_cost")),
    )
    joined = parts.join(best, _on("p_partkey", "ps_partkey"))
    out = joined.select(
        "s_acctbal", "s_name", "n_name", "p_partkey", "p_mfgr", "s_address", "s_phone",
        "s_comment",
    )  # fmt: skip
    return out.orderBy(F.col("s_acctbal").desc(), "n_name", "s_name", "p_partkey").limit(100)


def q3(t: Sources) -> Frame:
    """Q3, shipping priority: the ten unshipped orders of the BUILDING segment with the highest
    revenue as of 1995-03-15."""
    c = t["customer"].filter(F.col("c_mktsegment") == "BUILDING")
    o = t["orders"].filter(F.col("o_orderdate") < _date("1995-03-15"))
    li = t["lineitem"].filter(F.col("l_shipdate") > _date("1995-03-15"))
    joined = c.join(o, _on("c_custkey", "o_custkey")).join(li, _on("l_orderkey", "o_orderkey"))
    grouped = joined.groupBy("l_orderkey", "o_orderdate", "o_shippriority").agg(
        F.sum(_revenue()).alias("revenue")
    )
    out = grouped.select("l_orderkey", "revenue", "o_orderdate", "o_shippriority")
    return out.orderBy(F.col("revenue").desc(), "o_orderdate").limit(10)


def q4(t: Sources) -> Frame:
    """Q4, order priority checking: orders of 1993-Q3 with a line received after its commit
    date (EXISTS), counted per priority."""
    o = t["orders"].filter(_between("o_orderdate", "1993-07-01", "1993-10-01"))
    late = t["lineitem"].filter(F.col("l_commitdate") < F.col("l_receiptdate"))
    kept = o.join(late, _on("o_orderkey", "l_orderkey"), "left_semi")
    counted = kept.groupBy("o_orderpriority").agg(F.count("*").alias("order_count"))
    return counted.orderBy("o_orderpriority")


def q5(t: Sources) -> Frame:
    """Q5, local supplier volume: 1994 revenue of lines an Asian customer bought from a supplier
    of the same nation, per nation."""
    asia = _region_nations(t, "ASIA")
    o = t["orders"].filter(_between("o_orderdate", "1994-01-01", "1995-01-01"))
    joined = (
        t["customer"]
        .join(o, _on("c_custkey", "o_custkey"))
        .join(t["lineitem"], _on("l_orderkey", "o_orderkey"))
        .join(
            t["supplier"],
            _on("l_suppkey", "s_suppkey") & _on("c_nationkey", "s_nationkey"),
        )
        .join(asia, _on("s_nationkey", "n_nationkey"))
    )
    grouped = joined.groupBy("n_name").agg(F.sum(_revenue()).alias("revenue"))
    return grouped.orderBy(F.col("revenue").desc())


def q6(t: Sources) -> Frame:
    """Q6, forecasting revenue change: 1994 revenue of lines with a discount of 0.05-0.07 and a
    quantity under 24."""
    li = t["lineitem"].filter(
        _between("l_shipdate", "1994-01-01", "1995-01-01")
        & F.col("l_discount").between(Decimal("0.05"), Decimal("0.07"))
        & (F.col("l_quantity") < 24)
    )
    return li.agg(F.sum(F.col("l_extendedprice") * F.col("l_discount")).alias("revenue"))


def q7(t: Sources) -> Frame:
    """Q7, volume shipping: revenue of lines shipped in 1995-1996 between France and Germany
    (either way), per supplier nation, customer nation and year."""
    li = t["lineitem"].filter(
        (F.col("l_shipdate") >= _date("1995-01-01")) & (F.col("l_shipdate") <= _date("1996-12-31"))
    )
    joined = (
        t["supplier"]
        .join(li, _on("s_suppkey", "l_suppkey"))
        .join(t["orders"], _on("o_orderkey", "l_orderkey"))
        .join(t["customer"], _on("c_custkey", "o_custkey"))
        .join(_renamed_nation(t, "n1_key", "supp_nation"), _on("s_nationkey", "n1_key"))
        .join(_renamed_nation(t, "n2_key", "cust_nation"), _on("c_nationkey", "n2_key"))
    )
    pair = lambda a, b: (F.col("supp_nation") == a) & (F.col("cust_nation") == b)  # noqa: E731
    shipping = joined.filter(pair("FRANCE", "GERMANY") | pair("GERMANY", "FRANCE")).select(
        "supp_nation",
        "cust_nation",
        F.year("l_shipdate").alias("l_year"),
        _revenue().alias("volume"),
    )
    grouped = shipping.groupBy("supp_nation", "cust_nation", "l_year").agg(
        F.sum("volume").alias("revenue")
    )
    return grouped.orderBy("supp_nation", "cust_nation", "l_year")


def q8(t: Sources) -> Frame:
    """Q8, national market share: Brazil's share of the American market for ECONOMY ANODIZED
    STEEL parts, per year of 1995-1996."""
    america = _region_nations(t, "AMERICA").withColumnRenamed("n_nationkey", "n1_key")
    parts = t["part"].filter(F.col("p_type") == "ECONOMY ANODIZED STEEL")
    o = t["orders"].filter(
        (F.col("o_orderdate") >= _date("1995-01-01"))
        & (F.col("o_orderdate") <= _date("1996-12-31"))
    )
    joined = (
        parts.join(t["lineitem"], _on("p_partkey", "l_partkey"))
        .join(t["supplier"], _on("s_suppkey", "l_suppkey"))
        .join(o, _on("l_orderkey", "o_orderkey"))
        .join(t["customer"], _on("o_custkey", "c_custkey"))
        .join(america.drop("n_name"), _on("c_nationkey", "n1_key"))
        .join(_renamed_nation(t, "n2_key", "nation"), _on("s_nationkey", "n2_key"))
    )
    volumes = joined.select(
        F.year("o_orderdate").alias("o_year"), _revenue().alias("volume"), "nation"
    )
    brazil = F.when(F.col("nation") == "BRAZIL", F.col("volume")).otherwise(0)
    grouped = volumes.groupBy("o_year").agg(
        F.sum(brazil).alias("brazil_volume"), F.sum("volume").alias("total_volume")
    )
    share = grouped.select(
        "o_year", (F.col("brazil_volume") / F.col("total_volume")).alias("mkt_share")
    )
    return share.orderBy("o_year")


def q9(t: Sources) -> Frame:
    """Q9, product type profit measure: profit on 'green' parts per supplier nation and year."""
    parts = t["part"].filter(F.col("p_name").like("%green%"))
    joined = (
        parts.join(t["lineitem"], _on("p_partkey", "l_partkey"))
        .join(t["supplier"], _on("s_suppkey", "l_suppkey"))
        .join(
            t["partsupp"],
            _on("ps_suppkey", "l_suppkey") & _on("ps_partkey", "l_partkey"),
        )
        .join(t["orders"], _on("o_orderkey", "l_orderkey"))
        .join(t["nation"], _on("s_nationkey", "n_nationkey"))
    )
    profit = joined.select(
        F.col("n_name").alias("nation"),
        F.year("o_orderdate").alias("o_year"),
        (_revenue() - F.col("ps_supplycost") * F.col("l_quantity")).alias("amount"),
    )
    grouped = profit.groupBy("nation", "o_year").agg(F.sum("amount").alias("sum_profit"))
    return grouped.orderBy("nation", F.col("o_year").desc())


def q10(t: Sources) -> Frame:
    """Q10, returned item reporting: the 20 customers with the most revenue lost to returns of
    orders placed in 1993-Q4."""
    o = t["orders"].filter(_between("o_orderdate", "1993-10-01", "1994-01-01"))
    li = t["lineitem"].filter(F.col("l_returnflag") == "R")
    joined = (
        t["customer"]
        .join(o, _on("c_custkey", "o_custkey"))
        .join(li, _on("l_orderkey", "o_orderkey"))
        .join(t["nation"], _on("c_nationkey", "n_nationkey"))
    )
    grouped = joined.groupBy(
        "c_custkey", "c_name", "c_acctbal", "c_phone", "n_name", "c_address", "c_comment"
    ).agg(F.sum(_revenue()).alias("revenue"))
    out = grouped.select(
        "c_custkey", "c_name", "revenue", "c_acctbal", "n_name", "c_address", "c_phone",
        "c_comment",
    )  # fmt: skip
    return out.orderBy(F.col("revenue").desc(), "c_custkey").limit(20)


def q11(t: Sources) -> Frame:
    """Q11, important stock identification: German stock value per part, the parts holding more
    than 0.0001 of the total (HAVING over a scalar subquery)."""
    germany = t["nation"].filter(F.col("n_name") == "GERMANY")
    stock = (
        t["partsupp"]
        .join(t["supplier"], _on("ps_suppkey", "s_suppkey"))
        .join(germany, _on("s_nationkey", "n_nationkey"))
        .select("ps_partkey", (F.col("ps_supplycost") * F.col("ps_availqty")).alias("worth"))
    )
    per_part = stock.groupBy("ps_partkey").agg(F.sum("worth").alias("value"))
    threshold = stock.agg((F.sum("worth") * Decimal("0.0001")).alias("threshold"))
    kept = per_part.crossJoin(threshold).filter(F.col("value") > F.col("threshold"))
    return kept.select("ps_partkey", "value").orderBy(F.col("value").desc(), "ps_partkey")


def q12(t: Sources) -> Frame:
    """Q12, shipping modes and order priority: 1994 lines by MAIL or SHIP received late though
    shipped in time, counted per mode for high and for low priority orders."""
    li = t["lineitem"].filter(
        F.col("l_shipmode").isin("MAIL", "SHIP")
        & (F.col("l_commitdate") < F.col("l_receiptdate"))
        & (F.col("l_shipdate") < F.col("l_commitdate"))
        & _between("l_receiptdate", "1994-01-01", "1995-01-01")
    )
    joined = t["orders"].join(li, _on("o_orderkey", "l_orderkey"))
    high = F.col("o_orderpriority").isin("1-URGENT", "2-HIGH")
    grouped = joined.groupBy("l_shipmode").agg(
        F.sum(F.when(high, 1).otherwise(0)).alias("high_line_count"),
        F.sum(F.when(high, 0).otherwise(1)).alias("low_line_count"),
    )
    return grouped.orderBy("l_shipmode")


def q13(t: Sources) -> Frame:
    """Q13, customer distribution: how many customers have k orders (without 'special
    requests' comments), for every k including 0 (a left outer join)."""
    o = t["orders"].filter(~F.col("o_comment").like("%special%requests%"))
    joined = t["customer"].join(o, _on("c_custkey", "o_custkey"), "left_outer")
    per_customer = joined.groupBy("c_custkey").agg(F.count("o_orderkey").alias("c_count"))
    dist = per_customer.groupBy("c_count").agg(F.count("*").alias("custdist"))
    return dist.orderBy(F.col("custdist").desc(), F.col("c_count").desc())


def q14(t: Sources) -> Frame:
    """Q14, promotion effect: the percentage of September 1995 revenue from PROMO parts."""
    li = t["lineitem"].filter(_between("l_shipdate", "1995-09-01", "1995-10-01"))
    joined = li.join(t["part"], _on("l_partkey", "p_partkey"))
    promo = F.when(F.col("p_type").like("PROMO%"), _revenue()).otherwise(0)
    sums = joined.agg(F.sum(promo).alias("promo"), F.sum(_revenue()).alias("total"))
    return sums.select((F.col("promo") * Decimal("100.00") / F.col("total")).alias("promo_revenue"))


def q15(t: Sources) -> Frame:
    """Q15, top supplier: the suppliers with the largest revenue in 1996-Q1 (the revenue view,
    and its maximum as a scalar subquery)."""
    li = t["lineitem"].filter(_between("l_shipdate", "1996-01-01", "1996-04-01"))
    revenue = li.groupBy(F.col("l_suppkey").alias("supplier_no")).agg(
        F.sum(_revenue()).alias("total_revenue")
    )
    top = revenue.agg(F.max("total_revenue").alias("max_revenue"))
    best = revenue.join(top, _on("total_revenue", "max_revenue"))
    joined = t["supplier"].join(best, _on("s_suppkey", "supplier_no"))
    out = joined.select("s_suppkey", "s_name", "s_address", "s_phone", "total_revenue")
    return out.orderBy("s_suppkey")


def q16(t: Sources) -> Frame:
    """Q16, parts/supplier relationship: how many suppliers without customer complaints offer
    parts of given sizes, other than Brand#45 and MEDIUM POLISHED types."""
    parts = t["part"].filter(
        (F.col("p_brand") != "Brand#45")
        & ~F.col("p_type").like("MEDIUM POLISHED%")
        & F.col("p_size").isin(49, 14, 23, 45, 19, 3, 36, 9)
    )
    complaints = t["supplier"].filter(F.col("s_comment").like("%Customer%Complaints%"))
    offers = (
        t["partsupp"]
        .join(parts, _on("p_partkey", "ps_partkey"))
        .join(complaints, _on("ps_suppkey", "s_suppkey"), "left_anti")
    )
    grouped = offers.groupBy("p_brand", "p_type", "p_size").agg(
        F.countDistinct("ps_suppkey").alias("supplier_cnt")
    )
    return grouped.orderBy(F.col("supplier_cnt").desc(), "p_brand", "p_type", "p_size")


def q17(t: Sources) -> Frame:
    """Q17, small-quantity-order revenue: yearly loss if small orders (under 20% of the part's
    average quantity) of Brand#23 MED BOX parts were no longer taken."""
    parts = t["part"].filter((F.col("p_brand") == "Brand#23") & (F.col("p_container") == "MED BOX"))
    average = (
        t["lineitem"]
        .groupBy(F.col("l_partkey").alias("avg_partkey"))
        .agg((F.avg("l_quantity") * Decimal("0.2")).alias("small"))
    )
    joined = (
        parts.join(t["lineitem"], _on("p_partkey", "l_partkey"))
        .join(average, _on("p_partkey", "avg_partkey"))
        .filter(F.col("l_quantity") < F.col("small"))
    )
    total = joined.agg(F.sum("l_extendedprice").alias("total"))
    return total.select((F.col("total") / Decimal("7.0")).alias("avg_yearly"))


def q18(t: Sources) -> Frame:
    """Q18, large volume customer: the 100 orders of more than 300 units, with their customer."""
    big = (
        t["lineitem"]
        .groupBy(F.col("l_orderkey").alias("big_orderkey"))
        .agg(F.sum("l_quantity").alias("units"))
        .filter(F.col("units") > 300)
    )
    o = t["orders"].join(big, _on("o_orderkey", "big_orderkey"), "left_semi")
    joined = (
        t["customer"]
        .join(o, _on("c_custkey", "o_custkey"))
        .join(t["lineitem"], _on("o_orderkey", "l_orderkey"))
    )
    grouped = joined.groupBy(
        "c_name", "c_custkey", "o_orderkey", "o_orderdate", "o_totalprice"
    ).agg(F.sum("l_quantity").alias("sum_qty"))
    return grouped.orderBy(F.col("o_totalprice").desc(), "o_orderdate", "o_orderkey").limit(100)


def _q19_branch(brand: str, containers: list[str], low: int, high: int, size: int) -> Column:
    return (
        (F.col("p_brand") == brand)
        & F.col("p_container").isin(*containers)
        & F.col("l_quantity").between(low, high)
        & F.col("p_size").between(1, size)
    )


def q19(t: Sources) -> Frame:
    """Q19, discounted revenue: revenue of air shipments delivered in person of three kinds of
    part (brand, container, quantity and size ranges)."""
    li = t["lineitem"].filter(
        F.col("l_shipmode").isin("AIR", "AIR REG")
        & (F.col("l_shipinstruct") == "DELIVER IN PERSON")
    )
    joined = t["part"].join(li, _on("p_partkey", "l_partkey"))
    kinds = (
        _q19_branch("Brand#12", ["SM CASE", "SM BOX", "SM PACK", "SM PKG"], 1, 11, 5)
        | _q19_branch("Brand#23", ["MED BAG", "MED BOX", "MED PKG", "MED PACK"], 10, 20, 10)
        | _q19_branch("Brand#34", ["LG CASE", "LG BOX", "LG PACK", "LG PKG"], 20, 30, 15)
    )
    return joined.filter(kinds).agg(F.sum(_revenue()).alias("revenue"))


def q20(t: Sources) -> Frame:
    """Q20, potential part promotion: Canadian suppliers with more of a 'forest' part in stock
    than half of what they shipped of it in 1994."""
    forest = t["part"].filter(F.col("p_name").like("forest%"))
    shipped = (
        t["lineitem"]
        .filter(_between("l_shipdate", "1994-01-01", "1995-01-01"))
        .groupBy("l_partkey", "l_suppkey")
        .agg((F.sum("l_quantity") * Decimal("0.5")).alias("half"))
    )
    stocked = (
        t["partsupp"]
        .join(forest, _on("ps_partkey", "p_partkey"), "left_semi")
        .join(shipped, _on("ps_partkey", "l_partkey") & _on("ps_suppkey", "l_suppkey"))
        .filter(F.col("ps_availqty") > F.col("half"))
    )
    canada = t["nation"].filter(F.col("n_name") == "CANADA")
    kept = (
        t["supplier"]
        .join(stocked, _on("s_suppkey", "ps_suppkey"), "left_semi")
        .join(canada, _on("s_nationkey", "n_nationkey"))
    )
    return kept.select("s_name", "s_address").orderBy("s_name")


def q21(t: Sources) -> Frame:
    """Q21, suppliers who kept orders waiting: Saudi suppliers whose late line held up a
    finished multi-supplier order in which no other supplier was late."""
    late = t["lineitem"].filter(F.col("l_receiptdate") > F.col("l_commitdate"))
    others = t["lineitem"].select(
        F.col("l_orderkey").alias("l2_orderkey"), F.col("l_suppkey").alias("l2_suppkey")
    )
    others_late = late.select(
        F.col("l_orderkey").alias("l3_orderkey"), F.col("l_suppkey").alias("l3_suppkey")
    )
    other_supplier = lambda k, s: _on("l_orderkey", k) & (F.col("l_suppkey") != F.col(s))  # noqa: E731
    saudi = t["nation"].filter(F.col("n_name") == "SAUDI ARABIA")
    waiting = (
        t["supplier"]
        .join(late, _on("s_suppkey", "l_suppkey"))
        .join(t["orders"].filter(F.col("o_orderstatus") == "F"), _on("o_orderkey", "l_orderkey"))
        .join(saudi, _on("s_nationkey", "n_nationkey"))
        .join(others, other_supplier("l2_orderkey", "l2_suppkey"), "left_semi")
        .join(others_late, other_supplier("l3_orderkey", "l3_suppkey"), "left_anti")
    )
    counted = waiting.groupBy("s_name").agg(F.count("*").alias("numwait"))
    return counted.orderBy(F.col("numwait").desc(), "s_name").limit(100)


_Q22_CODES = ("13", "31", "23", "29", "30", "18", "17")


def q22(t: Sources) -> Frame:
    """Q22, global sales opportunity: customers of seven country codes with no order and an
    account balance above their codes' positive average, per code."""
    coded = t["customer"].withColumn("cntrycode", F.substring("c_phone", 1, 2))
    candidates = coded.filter(F.col("cntrycode").isin(*_Q22_CODES))
    average = candidates.filter(F.col("c_acctbal") > 0).agg(F.avg("c_acctbal").alias("avg_bal"))
    rich = candidates.crossJoin(average).filter(F.col("c_acctbal") > F.col("avg_bal"))
    idle = rich.join(t["orders"], _on("c_custkey", "o_custkey"), "left_anti")
    grouped = idle.groupBy("cntrycode").agg(
        F.count("*").alias("numcust"), F.sum("c_acctbal").alias("totacctbal")
    )
    return grouped.orderBy("cntrycode")


QUERIES: dict[str, Callable[[Sources], Frame]] = {
    f"q{i}": f
    for i, f in enumerate(
        [q1, q2, q3, q4, q5, q6, q7, q8, q9, q10, q11, q12, q13, q14, q15, q16, q17, q18, q19,
         q20, q21, q22],
        start=1,
    )
}  # fmt: skip
