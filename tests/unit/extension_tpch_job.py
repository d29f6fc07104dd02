"""TPC-H's 22 queries (or TPC-DS's 99) as SQL text under sparkprov's capture extension, in a
process of its own (tests/unit/test_capture_extension_tpch.py; ``spark.sql.extensions`` is read
when a session starts): per query the plain rows and the captured ones (as text), whether the
emitted graph holds the nodes and edges the run counted, the output rows it names, and Titian's
oracle on sampled output rows: re-running the text on only the rows of a row's witness gives the
row back. A query the extension refuses is recorded with its error.

Usage: python -m tests.unit.extension_tpch_job JAR SF SAMPLED OUT.json [tpch|tpcds [1,5,9]]
(bench/README.md, "TPC-DS as SQL text under the capture extension", runs it over TPC-DS)
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path
from typing import Any

CAPTURE = "spark.sparkprov.capture"


def main(
    jar: str, sf: str, sampled: str, out_path: str, benchmark: str = "tpch", numbers: str = ""
) -> None:
    from bench.tpc_sql.compare import equal
    from bench.tpc_sql.data import generate
    from bench.tpc_sql.oracle import compact, reproduces, texts
    from bench.tpc_sql.queries import adapt, original
    from bench.tpc_sql.run import spark_views
    from examples.spark import local_spark
    from tests.unit.extension_job import RunMessages

    spark = local_spark(
        "sparkprov-extension-tpch",
        conf={
            "spark.jars": jar,
            "spark.sql.extensions": "io.sparkprov.capture.CaptureExtension",
            "spark.sparkprov.sink": "memory",
            # the oracle restricts each view to its witness rows by their whole values
            "spark.sparkprov.values": "all",
            "spark.sql.codegen.fallback": "false",
            CAPTURE: "false",
        },
    )
    from bench.tpc_sql.queries import COUNTS

    queries = [int(q) for q in numbers.split(",")] if numbers else range(1, COUNTS[benchmark] + 1)
    tables = generate(benchmark, float(sf), Path(tempfile.mkdtemp(prefix="sparkprov-tpc-")))
    spark_views(spark, tables)
    runs = spark._jvm.io.sparkprov.capture.CaptureRun
    views = [t.name for t in spark.catalog.listTables() if t.isTemporary]
    results: dict[int, Any] = {}
    for number in queries:
        sql = adapt(benchmark, number, original(benchmark, number))
        plain = texts(spark.sql(sql))
        run = runs.of(spark._jsc.sc())  # a run per query: finished below
        spark.conf.set(CAPTURE, "true")
        try:
            df = spark.sql(sql)
            columns, captured = df.columns, texts(df)
        except Exception as e:  # the query's result, for the test to read
            results[number] = {"error": str(e)[:2000]}
            print(number, "refused:", str(e)[:300].replace("\n", " "), flush=True)
            run.finish()
            continue
        finally:
            spark.conf.set(CAPTURE, "false")
        run.finish()
        counted = list(run.totals())
        graph = compact(RunMessages(run))
        outputs = graph.of_relation(str(run.lastResult()))
        held = []
        for node in outputs[:: max(1, len(outputs) // int(sampled))][: int(sampled)]:
            found, _ = reproduces(spark, sql, views, graph, node, columns)
            held.append(found)
        results[number] = {
            "equal": equal(captured, plain),
            "rows": len(plain),
            "outputs": len(outputs),
            "counted": counted,
            "emitted": [graph.node_count, graph.edge_count],
            "oracle": held,
        }
        print(number, results[number], flush=True)
    Path(out_path).write_text(json.dumps(results))
    spark.stop()


if __name__ == "__main__":
    main(*sys.argv[1:7])
