"""A captured job with speculation on, on a Spark cluster (tests/faults/standalone.py: local
mode never speculates, and Spark never places a copy on the original attempt's host), whose
partition 0 stalls on the first attempt that gets past row 1,500, after part of its lineage
was sent, so that Spark launches a speculative copy of it (or lets the overtaken original go on),
which finishes first, and kills the stalled attempt. Run
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
from pyspark.sql import functions as F
from pyspark.sql.types import BooleanType

from tests.faults.cluster_jobs import clean_then_faulted, cluster_spark

STALL_AFTER = 1_500  # rows of partition 0 (2,000 rows), past several 256-row messages
STALL_S = 60.0  # far longer than a speculative copy needs: the copy wins


def _stall_once(markers: str) -> object:
    def keep(row_id: int) -> bool:
        task = TaskContext.get()
        if task is None or task.partitionId() != 0:
            return True
        if row_id == 0:
            Path(markers, f"attempt-{task.attemptNumber()}").touch()
        if row_id == STALL_AFTER:
            # The first attempt to get here stalls (usually attempt 0; under load its copy may
            # start first and overtake it), after several of its messages were sent; it is
            # killed when the other attempt succeeds.
            try:
                os.close(os.open(Path(markers, "stalled"), os.O_CREAT | os.O_EXCL))
            except FileExistsError:
                return True
            time.sleep(STALL_S)
        return True

    return F.udf(keep, BooleanType())


def main(markers: str, master: str) -> None:
    spark = cluster_spark(
        master,
        "sparkprov-speculation-fault",
        **{
            "spark.speculation": "true",
            "spark.speculation.interval": "100ms",
            "spark.speculation.quantile": "0.5",
            "spark.speculation.multiplier": "1.5",
            "spark.speculation.minTaskRuntime": "1s",
            # A stalled Python UDF reports no progress: judge by run time alone.
            "spark.speculation.efficiency.enabled": "false",
        },
    )
    try:
        # The clean run first: executors, their Python workers and the jar warm, so that the
        # stalled attempt gets past its first rows before a copy is considered.
        report = clean_then_faulted(spark, "speculation", "stalled", _stall_once(markers))
        report["attempts"] = sorted(p.name for p in Path(markers).iterdir())
    finally:
        spark.stop()
    print(json.dumps(report))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
