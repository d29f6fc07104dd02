"""A captured job whose task fails on its first attempt after part of its lineage was sent, run
twice in one Spark application that retries tasks (``local[2,3]``: a test session's Spark gives
up at the first failure, so this runs in a process of its own): once with the fault, once
without, under two workflows. Prints one JSON line: both runs' ids and counts, and how many
attempts the fault failed.

    python -m tests.faults.retry_job <marker folder>

The fault is a Python UDF in a filter (which keeps provenance: no node of its own) after the
source tap, raising in partition 0's first attempt once that attempt has passed 1,500 of its
rows: with 256 rows per message, the source tap has sent several messages of the partition by
then, and the retry sends them again."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from pyspark import TaskContext
from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import BooleanType

from capture_agent import ProvenanceSession

ROWS = 8_000
PARTITIONS = 4
FAIL_AFTER = 1_500  # rows of partition 0 (2,000 rows), past several 256-row messages


def _fail_once(markers: str) -> object:
    def keep(row_id: int) -> bool:
        task = TaskContext.get()
        if (
            task is not None
            and task.partitionId() == 0
            and task.attemptNumber() == 0
            and row_id >= FAIL_AFTER
        ):
            Path(markers, f"failed-{task.taskAttemptId()}").touch()
            raise RuntimeError("injected fault: first attempt of partition 0")
        return True

    return F.udf(keep, BooleanType())


def _job(spark: SparkSession, workflow: str, keep: object) -> tuple[str, tuple[int, int]]:
    df = spark.range(0, ROWS, 1, PARTITIONS).withColumn("k", F.col("id") % 20)
    with ProvenanceSession(spark, workflow=workflow, rows_per_message=256) as prov:
        numbers = prov.source(df.withColumn("v", F.col("id") * 3), "Numbers")
        kept = numbers.filter(keep(F.col("id")))  # type: ignore[operator]
        kept.groupBy("k").agg(F.sum("v").alias("s")).named("Sums").collect()
    return prov.run_id, prov.counts()


def main(markers: str) -> None:
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark = (
        SparkSession.builder.master("local[2,3]")  # up to 3 attempts per task
        .appName("sparkprov-retry-fault")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.ui.showConsoleProgress", "false")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("OFF")  # the injected failure is expected
    try:
        faulty, faulty_counts = _job(spark, "retry-fault", _fail_once(markers))
        clean, clean_counts = _job(spark, "retry-clean", F.udf(lambda _: True, BooleanType()))
    finally:
        spark.stop()
    failed = len(list(Path(markers).glob("failed-*")))
    print(
        json.dumps(
            {
                "faulty": faulty,
                "faulty_counts": faulty_counts,
                "clean": clean,
                "clean_counts": clean_counts,
                "failed_attempts": failed,
            }
        )
    )


if __name__ == "__main__":
    main(sys.argv[1])
