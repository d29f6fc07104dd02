"""Capture overhead: each workload with and without capture, in one process, alternating.

    python -m bench.capture_overhead [--pairs 3] [--warmup 1] [--workloads pipeline,cars,arctic]

"With capture" includes publishing every lineage batch to the real Kafka of the local stack
(topic ``sparkprov.bench``, which the ingest service does not consume, so ingest does not compete
for the two cores) and waiting for the acknowledgements. "Without" is the same code with the kill
switch (``ProvenanceSession(enabled=False)``: a constant id column, no taps). Prints the median
ratio captured/plain per workload and writes JSON under bench/results/.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from capture_agent import ProvenanceSession
from examples import arctic, cars
from examples.spark import local_spark
from sparkprov import defaults

RESULTS = Path(__file__).parent / "results"
TOPIC = "sparkprov.bench"


def make_pipeline_inputs(spark: SparkSession, folder: Path, rows: int, dim: int) -> tuple[str, str]:
    facts, dims = folder / "facts.parquet", folder / "dims.parquet"
    if not facts.exists():
        print(f"generating {rows:,} fact rows and {dim:,} dimension rows ...", flush=True)
        spark.range(rows).select(
            F.col("id").alias("order_id"),
            (F.col("id") * 7919 % dim).alias("customer_id"),
            (F.col("id") % 1000 / 10).alias("amount"),
            (F.col("id") % 5).alias("status"),
        ).write.parquet(str(facts))
        spark.range(dim).select(
            F.col("id").alias("customer_id"),
            F.concat(F.lit("region-"), (F.col("id") % 37).cast("string")).alias("region"),
        ).write.parquet(str(dims))
    return str(facts), str(dims)


def pipeline(prov: ProvenanceSession, facts: str, dims: str) -> int:
    """1M rows: filter, join with a 100k-row table, groupBy with 3 aggregates."""
    spark = prov.spark
    orders = prov.source(spark.read.parquet(facts), "Orders")
    customers = prov.source(spark.read.parquet(dims), "Customers")
    paid = orders.filter(F.col("status") != 0)
    joined = paid.join(customers, on="customer_id")
    result = joined.groupBy("region").agg(
        F.sum("amount").alias("total"),
        F.avg("amount").alias("mean"),
        F.count("order_id").alias("n"),
    )
    return len(result.named("RegionTotals").collect())


def timed(
    spark: SparkSession, enabled: bool, body: Callable[[ProvenanceSession], Any]
) -> tuple[float, tuple[int, int]]:
    started = time.perf_counter()
    with ProvenanceSession(spark, workflow="bench", topic=TOPIC, enabled=enabled) as prov:
        body(prov)
    return time.perf_counter() - started, prov.counts()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument(
        "--warmup", type=int, default=1, help="untimed plain+captured pairs first (per workload)"
    )
    parser.add_argument("--workloads", default="pipeline,cars,arctic")
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--dim", type=int, default=100_000)
    parser.add_argument("--cars", type=int, default=20_000)
    parser.add_argument("--cars-exec", type=int, default=10)
    parser.add_argument("--arctic-exec", type=int, default=2)
    parser.add_argument("--data", default=os.path.join(tempfile.gettempdir(), "sparkprov-bench"))
    args = parser.parse_args(argv)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark = local_spark("sparkprov-bench")
    data = Path(args.data)
    data.mkdir(parents=True, exist_ok=True)
    facts, dims = make_pipeline_inputs(spark, data, args.rows, args.dim)
    workloads: dict[str, Callable[[ProvenanceSession], Any]] = {
        "pipeline": lambda prov: pipeline(prov, facts, dims),
        "cars": lambda prov: cars.run(prov, args.cars, args.cars_exec, seed=1),
        "arctic": lambda prov: arctic.run(prov, 24, "dense", 6, "month", args.arctic_exec),
    }
    chosen = [w for w in args.workloads.split(",") if w]
    report: dict[str, Any] = {
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count()},
        "kafka": os.environ.get(defaults.ENV_KAFKA_BOOTSTRAP, defaults.KAFKA_BOOTSTRAP),
        "pairs": args.pairs,
        "workloads": {},
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    out = RESULTS / f"capture_overhead-{time.strftime('%Y%m%d-%H%M%S')}.json"
    report["arguments"] = vars(args)
    for name in chosen:
        body = workloads[name]
        for _ in range(args.warmup):  # JIT, Python workers, file cache
            timed(spark, False, body)
            timed(spark, True, body)
        plain, captured, lineage = [], [], (0, 0)
        for i in range(args.pairs):
            order = (False, True) if i % 2 == 0 else (True, False)
            for enabled in order:
                seconds, counts = timed(spark, enabled, body)
                (captured if enabled else plain).append(seconds)
                if enabled:
                    lineage = counts
            print(
                f"  {name} pair {i + 1}: plain {plain[-1]:.2f}s captured {captured[-1]:.2f}s",
                flush=True,
            )
        ratio = statistics.median(captured) / statistics.median(plain)
        report["workloads"][name] = {
            "plain_s": plain,
            "captured_s": captured,
            "median_plain_s": statistics.median(plain),
            "median_captured_s": statistics.median(captured),
            "ratio": ratio,
            "lineage_nodes": lineage[0],
            "lineage_edges": lineage[1],
        }
        p, c = statistics.median(plain), statistics.median(captured)
        print(
            f"{name:9} plain {p:7.2f}s  captured {c:7.2f}s  ratio {ratio:.2f}"
            f"  ({lineage[0]:,} nodes, {lineage[1]:,} edges)",
            flush=True,
        )
        out.write_text(json.dumps(report, indent=2))  # after each workload: a long run may stop
    spark.stop()
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
