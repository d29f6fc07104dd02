"""A captured job that also runs OpenLineage's own Spark listener (openlineage-spark, fetched by
``make setup`` into ``.stack/lib/openlineage``), both writing their events to files: reads a
partitioned parquet folder, aggregates, writes a parquet folder. Prints one JSON line: the run
id. The test compares the datasets both name.

    python -m tests.integration.openlineage_spark_job <folder> <openlineage-spark jar>
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from openlineage.client import OpenLineageClient
from openlineage.client.transport.file import FileConfig, FileTransport
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from capture_agent import ProvenanceSession

PARENT_RUN = "0193b1b6-0000-7000-8000-00000000cafe"


def main(folder: str, jar: str) -> None:
    work = Path(folder)
    spark = (
        SparkSession.builder.master("local[2]")
        .appName("sparkprov-openlineage-interop")
        .config("spark.jars", jar)
        .config("spark.extraListeners", "io.openlineage.spark.agent.OpenLineageSparkListener")
        .config("spark.openlineage.transport.type", "file")
        .config("spark.openlineage.transport.location", str(work / "openlineage-spark.jsonl"))
        .config("spark.openlineage.namespace", "interop")
        # The orchestrator's run both integrations read as the parent (the parent facet).
        .config("spark.openlineage.parentJobNamespace", "airflow")
        .config("spark.openlineage.parentJobName", "nightly.interop")
        .config("spark.openlineage.parentRunId", PARENT_RUN)
        .config("spark.ui.enabled", "false")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.driver.host", "127.0.0.1")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    orders = str(work / "lake" / "orders")
    rows = [(i, "NY" if i % 3 else "LA", float(i)) for i in range(30)]
    spark.createDataFrame(rows, "id int, city string, amount double") \
        .write.partitionBy("city").parquet(orders)  # fmt: skip
    ours = OpenLineageClient(
        transport=FileTransport(FileConfig(str(work / "sparkprov.jsonl"), append=True))
    )
    with ProvenanceSession(spark, "interop", openlineage=ours) as prov:
        source = prov.source(spark.read.parquet(orders), "Orders")
        totals = source.groupBy("city").agg(F.sum("amount").alias("total")).named("Totals")
        totals.write.mode("overwrite").parquet(str(work / "out" / "totals"))
    parsed = [_read_by_openlineage(spark, line) for line in (work / "sparkprov.jsonl").open()]
    spark.stop()
    print(json.dumps({"run_id": prov.run_id, "parsed": parsed}))


def _read_by_openlineage(spark: SparkSession, line: str) -> dict[str, object]:
    """One of our events as OpenLineage's own Java model (generated from its JSON schemas, in
    openlineage-spark's jar) reads it: the standard facets land in their typed classes."""
    utils = spark._jvm.io.openlineage.client.OpenLineageClientUtils  # type: ignore[attr-defined]
    event = utils.runEventFromJson(line)
    facets = event.getRun().getFacets()
    parent = facets.getParent()
    inputs = [event.getInputs().get(i) for i in range(event.getInputs().size())]
    return {
        "type": event.getEventType().toString(),
        "run_id": event.getRun().getRunId().toString(),
        "parent": [parent.getJob().getNamespace(), parent.getJob().getName()] if parent else None,
        "parent_run": parent.getRun().getRunId().toString() if parent else None,
        "sparkprov": facets.getAdditionalProperties().containsKey("sparkprov"),
        "input_fields": [
            [f.getName() for f in d.getFacets().getSchema().getFields()]
            for d in inputs
            if d.getFacets() is not None and d.getFacets().getSchema() is not None
        ],
    }


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
