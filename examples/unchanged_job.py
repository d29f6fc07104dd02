"""A user's PySpark job, unchanged, captured by the ``with`` block alone (issue 28).

The job reads parquet files, queries them with SQL text over temp views and with DataFrame calls,
collects a summary and writes the enriched rows. ``ProvenanceSession(..., actions=True)`` captures
each action from its plan: the sources are named by their views, the summary is ``result1`` and
the written rows ``enriched``. Then it asks the query service which input rows (parquet file
and row) made one city's total. Run with the local stack up (``make up``):

    .venv/bin/python -m examples.unchanged_job [--data DIR] [--city NY]
"""

from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from capture_agent import ProvenanceSession
from examples.spark import local_spark
from sparkprov import defaults
from sparkprov.client import QueryClient
from sparkprov.query_model import Op

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


def write_inputs(spark: SparkSession, data: Path) -> tuple[str, str]:
    """The job's parquet inputs, under ``data``."""
    orders, customers = str(data / "orders"), str(data / "customers")
    spark.createDataFrame(ORDERS, ["oid", "cust", "amount"]).write.mode("overwrite").parquet(orders)
    spark.createDataFrame(CUSTOMERS, ["id", "name", "city"]).write.mode("overwrite").parquet(
        customers
    )
    return orders, customers


def input_rows(client: QueryClient, run_id: str, city: str) -> list[str]:
    """Which input rows made the job's total for ``city``: each source row of its lineage as
    ``relation  file:row  values`` (LocateSourceRows; ``sparkprov sources NODE_ID`` prints the
    same)."""
    (total,) = client.find_nodes(run_id, "result1", {"city": city})
    tokens = [n for n in client.backward_trace([total.id]).nodes if n.op == Op.TOKEN]
    lines = []
    for node, where in zip(tokens, client.locate_source_rows([n.id for n in tokens]), strict=True):
        values = " ".join(f"{k}={v}" for k, v in sorted(node.attributes.items()))
        lines.append(f"{node.relation}  {where.file}:{where.row}  {values}")
    return sorted(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", default=tempfile.mkdtemp(prefix="sparkprov-unchanged-"))
    parser.add_argument("--city", default="NY", help="whose total to explain (default NY)")
    args = parser.parse_args(argv)
    data = Path(args.data)
    spark = local_spark("sparkprov-unchanged-job")
    try:
        orders, customers = write_inputs(spark, data)
        with ProvenanceSession(spark, "unchanged-job", actions=True) as prov:
            rows = job(spark, orders, customers, str(data / "enriched"))
    finally:
        spark.stop()
    print(f"run {prov.run_id}: totals by city {rows}; written rows are relation 'enriched'")
    address = os.environ.get(defaults.ENV_GRPC_ADDR, defaults.GRPC_ADDR)
    with QueryClient(address) as client:
        client.wait_for_run(prov.run_id)
        print(f"the {args.city} total was made of these input rows (file:row):")
        for line in input_rows(client, prov.run_id, args.city):
            print(f"  {line}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
