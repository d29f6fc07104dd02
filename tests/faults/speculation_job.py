"""A captured job with speculation on, on a Spark cluster (tests/faults/standalone.py: local
mode never speculates, and Spark never places a copy on the original attempt's host), whose
partition 0 stalls on its first attempt after part of its lineage was sent, so that Spark
launches a speculative copy of it, which finishes first, and kills the stalled attempt. Run
twice in one application (with the stall, then without, under two workflows). Prints one JSON
line: both runs' ids and counts, and the partition-0 attempts that ran.

    python -m tests.faults.speculation_job <marker folder> <master URL>

Both attempts of partition 0 send lineage: the stalled one several messages before it stalls
(1,500 of its 2,000 rows, 256 rows per message), the copy all of it. Ingest must store each node
and edge once and the run's counts must be those of the successful attempts only."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

from pyspark import TaskContext
from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import BooleanType

from capture_agent import ProvenanceSession

ROWS = 8_000
PARTITIONS = 4
STALL_AFTER = 1_500  # rows of partition 0 (2,000 rows), past several 256-row messages
ROWS_PER_MESSAGE = 256
STALL_S = 60.0  # far longer than a speculative copy needs: the copy wins


def _stall_once(markers: str) -> object:
    def keep(row_id: int) -> bool:
        task = TaskContext.get()
        if task is None or task.partitionId() != 0:
            return True
        if row_id == 0:
            Path(markers, f"attempt-{task.attemptNumber()}").touch()
        if task.attemptNumber() == 0 and row_id == STALL_AFTER:
            Path(markers, "stalled").touch()  # several messages of this attempt were sent
            time.sleep(STALL_S)  # killed when the speculative copy succeeds
        return True

    return F.udf(keep, BooleanType())


def _job(spark: SparkSession, workflow: str, keep: object) -> tuple[str, tuple[int, int]]:
    df = spark.range(0, ROWS, 1, PARTITIONS).withColumn("k", F.col("id") % 20)
    with ProvenanceSession(spark, workflow=workflow, rows_per_message=ROWS_PER_MESSAGE) as prov:
        numbers = prov.source(df.withColumn("v", F.col("id") * 3), "Numbers")
        kept = numbers.filter(keep(F.col("id")))  # type: ignore[operator]
        kept.groupBy("k").agg(F.sum("v").alias("s")).named("Sums").collect()
    return prov.run_id, prov.counts()


def main(markers: str, master: str) -> None:
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark = (
        SparkSession.builder.master(master)
        .appName("sparkprov-speculation-fault")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.speculation", "true")
        .config("spark.speculation.interval", "100ms")
        .config("spark.speculation.quantile", "0.5")
        .config("spark.speculation.multiplier", "1.5")
        .config("spark.speculation.minTaskRuntime", "1s")
        # A stalled Python UDF reports no progress: judge by run time alone.
        .config("spark.speculation.efficiency.enabled", "false")
        .config("spark.executorEnv.PYSPARK_PYTHON", sys.executable)
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("OFF")  # the killed attempt is expected
    try:
        # The clean run first: executors, their Python workers and the jar warm, so that the
        # stalled attempt gets past its first rows before a copy is considered.
        clean, clean_counts = _job(spark, "speculation-clean", F.udf(lambda _: True, BooleanType()))
        stalled, stalled_counts = _job(spark, "speculation-stall", _stall_once(markers))
        attempts = sorted(p.name for p in Path(markers).iterdir())
    finally:
        spark.stop()
    print(
        json.dumps(
            {
                "stalled": stalled,
                "stalled_counts": stalled_counts,
                "clean": clean,
                "clean_counts": clean_counts,
                "attempts": attempts,
            }
        )
    )


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
