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
from pyspark.sql import functions as F
from pyspark.sql.types import BooleanType

from tests.faults.cluster_jobs import clean_then_faulted, cluster_spark

KILL_AT = 1_500  # a row of partition 0 (rows 0-1,999), past several 256-row messages


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


def main(markers: str, master: str) -> None:
    spark = cluster_spark(master, "sparkprov-executor-kill-fault")
    try:
        report = clean_then_faulted(spark, "executor-kill", "killed", _kill_once(markers))
        victim = Path(markers, "killed")
        report["victim"] = victim.read_text() if victim.exists() else ""
    finally:
        spark.stop()
    print(json.dumps(report))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
