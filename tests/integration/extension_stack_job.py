"""examples/unchanged_job.py's job, not a line of it changed, in a session started with sparkprov's
capture extension (``spark.sql.extensions``) and sending to the stack's Kafka: what a cluster
configured for capture runs. The inputs are written with capture off. The session's end
completes the run (its marker, from the extension's listener). Prints one JSON line: the run id
and the job's rows.

    python -m tests.integration.extension_stack_job <folder> <capture jar> <bootstrap>
"""

from __future__ import annotations

import json
import sys
import uuid
from pathlib import Path

from examples.spark import local_spark
from examples.unchanged_job import job, write_inputs


def main(folder: str, jar: str, bootstrap: str) -> None:
    data = Path(folder)
    run_id = str(uuid.uuid4())
    spark = local_spark(
        "sparkprov-extension-stack",
        conf={
            "spark.jars": jar,
            "spark.sql.extensions": "io.sparkprov.capture.CaptureExtension",
            "spark.sparkprov.kafka.bootstrap": bootstrap,
            "spark.sparkprov.runId": run_id,
            "spark.sparkprov.workflow": "unchanged-job-extension",
        },
    )
    spark.conf.set("spark.sparkprov.capture", "false")
    orders, customers = write_inputs(spark, data)
    spark.conf.set("spark.sparkprov.capture", "true")
    rows = job(spark, orders, customers, str(data / "enriched"))
    spark.stop()
    print(json.dumps({"run_id": run_id, "rows": [list(r) for r in rows]}))


if __name__ == "__main__":
    main(*sys.argv[1:4])
