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
    spark.stop()
    print(json.dumps({"run_id": prov.run_id}))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
