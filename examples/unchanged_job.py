"""A user's PySpark job, unchanged, captured by the ``with`` block alone (issue 28).

The job reads parquet files, queries them with SQL text over temp views and with DataFrame calls,
collects a summary and writes the enriched rows. ``ProvenanceSession(..., actions=True)`` captures
each action from its plan: the sources are named by their views, the summary is ``result1`` and
the written rows ``enriched``. Run with the local stack up (``make up``):

    .venv/bin/python -m examples.unchanged_job [--data DIR]
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from capture_agent import ProvenanceSession
from examples.spark import local_spark

ORDERS = [(1, 10, 5.0), (2, 10, 7.5), (3, 20, 1.0), (4, 30, 9.0), (5, 20, 4.0), (6, 40, 2.0)]
CUSTOMERS = [(10, "ann", "NY"), (20, "bo", "LA"), (30, "cy", "NY"), (50, "di", "SF")]


def job(spark: SparkSession, orders: str, customers: str, out: str) -> list[tuple[object, ...]]:
    """The job as its author wrote it: nothing of sparkprov in it."""
    spark.read.parquet(orders).createOrReplaceTempView("orders")
    spark.read.parquet(customers).createOrReplaceTempView("customers")
    big = spark.sql(
        "SELECT o.oid, o.amount, c.city FROM orders o JOIN customers c ON o.cust = c.id "
        "WHERE o.amount > 1.5"
    )
    by_city = big.groupBy("city").agg(F.sum("amount").alias("total"))
    rows = sorted(tuple(r) for r in by_city.collect())
    big.write.mode("overwrite").parquet(out)
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", default=tempfile.mkdtemp(prefix="sparkprov-unchanged-"))
    args = parser.parse_args(argv)
    data = Path(args.data)
    spark = local_spark("sparkprov-unchanged-job")
    try:
        orders, customers = str(data / "orders"), str(data / "customers")
        spark.createDataFrame(ORDERS, ["oid", "cust", "amount"]).write.mode("overwrite").parquet(
            orders
        )
        spark.createDataFrame(CUSTOMERS, ["id", "name", "city"]).write.mode("overwrite").parquet(
            customers
        )
        with ProvenanceSession(spark, "unchanged-job", actions=True) as prov:
            rows = job(spark, orders, customers, str(data / "enriched"))
    finally:
        spark.stop()
    print(f"run {prov.run_id}: totals by city {rows}; written rows are relation 'enriched'")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
