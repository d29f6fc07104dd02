"""A captured job on a Spark cluster (tests/faults/standalone.py) one of whose executors is
killed mid-job: partition 0's first attempt, after part of its lineage was sent, SIGKILLs its
own executor JVM (found by walking up from the Python worker to the process running
``CoarseGrainedExecutorBackend``). Spark re-runs that executor's tasks on the other worker's
executor (or the one the worker starts again). Run twice in one application (clean first, then
with the kill, under two workflows). Prints one JSON line: both runs' ids and counts, and the
executor killed.

    python -m tests.faults.executor_kill_job <marker folder> <master URL>
"""

from __future__ import annotations

import json
import os
import signal
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
KILL_AT = 1_500  # a row of partition 0 (rows 0-1,999), past several 256-row messages
ROWS_PER_MESSAGE = 256


def _executor_jvm() -> int:
    """The pid of the executor JVM above this Python worker."""
    pid = os.getppid()
    while pid > 1:
        command = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ")
        if b"CoarseGrainedExecutorBackend" in command:
            return pid
        stat = Path(f"/proc/{pid}/stat").read_text()
        pid = int(stat.rpartition(")")[2].split()[1])  # the parent: field 4
    raise RuntimeError("no executor JVM above this Python worker")


def _kill_once(markers: str) -> object:
    def keep(row_id: int) -> bool:
        task = TaskContext.get()
        if task is None or task.partitionId() != 0 or row_id != KILL_AT:
            return True
        marker = Path(markers, "killed")
        if not marker.exists():
            jvm = _executor_jvm()
            marker.write_text(str(jvm))
            time.sleep(2.0)  # the messages of the rows before this one reach Kafka
            os.kill(jvm, signal.SIGKILL)  # the executor, mid-task, lineage partly sent
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
        .appName("sparkprov-executor-kill-fault")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.executorEnv.PYSPARK_PYTHON", sys.executable)
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("OFF")  # the lost executor is expected
    try:
        clean, clean_counts = _job(
            spark, "executor-kill-clean", F.udf(lambda _: True, BooleanType())
        )
        killed, killed_counts = _job(spark, "executor-kill", _kill_once(markers))
        victim = Path(markers, "killed").read_text() if Path(markers, "killed").exists() else ""
    finally:
        spark.stop()
    print(
        json.dumps(
            {
                "killed": killed,
                "killed_counts": killed_counts,
                "clean": clean,
                "clean_counts": clean_counts,
                "victim": victim,
            }
        )
    )


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
