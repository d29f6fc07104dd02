"""What the captured jobs on a standalone cluster share (tests/faults/speculation_job.py,
tests/faults/executor_kill_job.py): the session on the cluster, and the job itself: numbers in
PARTITIONS partitions, a source, a filter through a Python UDF (where a fault is injected), a
groupBy, published ROWS_PER_MESSAGE rows per message."""

from __future__ import annotations

import os
import sys

from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import BooleanType

from capture_agent import ProvenanceSession

ROWS = 8_000
PARTITIONS = 4
ROWS_PER_MESSAGE = 256


def cluster_spark(master: str, app: str, **conf: str) -> SparkSession:
    """A session on ``master`` whose executors run this interpreter; quiet (the faults the jobs
    inject are expected)."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = (
        SparkSession.builder.master(master)
        .appName(app)
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", str(PARTITIONS))
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.executorEnv.PYSPARK_PYTHON", sys.executable)
    )
    for key, value in conf.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("OFF")
    return spark


def numbers_job(spark: SparkSession, workflow: str, keep: object) -> tuple[str, tuple[int, int]]:
    """The captured job; ``keep`` (a boolean UDF of the row's id) is where a fault happens."""
    df = spark.range(0, ROWS, 1, PARTITIONS).withColumn("k", F.col("id") % 20)
    with ProvenanceSession(spark, workflow=workflow, rows_per_message=ROWS_PER_MESSAGE) as prov:
        numbers = prov.source(df.withColumn("v", F.col("id") * 3), "Numbers")
        kept = numbers.filter(keep(F.col("id")))  # type: ignore[operator]
        kept.groupBy("k").agg(F.sum("v").alias("s")).named("Sums").collect()
    return prov.run_id, prov.counts()


def clean_then_faulted(spark: SparkSession, workflow: str, faulted: str, keep: object) -> dict:
    """The job twice: clean (workflow ``<workflow>-clean``), then with ``keep``'s fault; both
    runs' ids and counts, under ``clean`` and ``faulted``."""
    clean, clean_counts = numbers_job(
        spark, f"{workflow}-clean", F.udf(lambda _: True, BooleanType())
    )
    run, counts = numbers_job(spark, workflow, keep)
    return {"clean": clean, "clean_counts": clean_counts, faulted: run, f"{faulted}_counts": counts}
