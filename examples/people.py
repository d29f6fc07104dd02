"""The CSProv paper's person example (Tables I-III), end to end: ``make demo``.

Person1 is read from examples/data/person1.csv, filtered to Age >= 25 into Person2, and averaged
per City into AvgAge, under capture. The script then waits until the ingest service stored the
whole run and prints the backward trace of AvgAge's NY row, source values included, and where to
look further: the trace viewer, Neo4j Browser and the command line.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Mapping
from pathlib import Path

from pyspark.sql import functions as F

from capture_agent import ProvenanceSession
from examples.spark import local_spark
from sparkprov import defaults
from sparkprov.client import QueryClient, render_trace

DATA = Path(__file__).parent / "data" / "person1.csv"


def run_workflow(spark: object, path: Path = DATA) -> tuple[str, list[object]]:
    """Runs the workflow under capture; returns the run id and the AvgAge rows."""
    people = spark.read.csv(str(path), header=True, inferSchema=True)  # type: ignore[attr-defined]
    with ProvenanceSession(spark, workflow="people") as prov:  # type: ignore[arg-type]
        # Every column, read by the workflow or not (the default, "read", keeps Age and City):
        # the trace below shows each person by name.
        person1 = prov.source(people, "Person1", values="all")
        person2 = person1.filter(F.col("Age") >= 25).named("Person2")
        avg_age = person2.groupBy("City").agg(F.avg("Age").alias("Age")).named("AvgAge")
        rows = avg_age.collect()
    return prov.run_id, rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--city", default="NY", help="which AvgAge row to trace (default NY)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s %(message)s")
    spark = local_spark("sparkprov-demo-people")
    try:
        run_id, rows = run_workflow(spark)
    finally:
        spark.stop()
    print(f"run {run_id}: AvgAge = {[r.asDict() for r in rows]}")  # type: ignore[attr-defined]

    address = os.environ.get(defaults.ENV_GRPC_ADDR, defaults.GRPC_ADDR)
    with QueryClient(address) as client:
        run = client.wait_for_run(run_id)
        print(f"ingested: {run.node_count} nodes, {run.edge_count} edges (complete)")
        found = client.find_nodes(run_id, "AvgAge", {"City": args.city})
        if not found:
            print(f"no AvgAge row with City={args.city}", file=sys.stderr)
            return 1
        row = found[0]
        trace = client.backward_trace([row.id])
        print(f"\nbackward trace of AvgAge City={args.city} ({len(trace.nodes)} nodes):")
        print(render_trace(trace, row.id))
    print(where_to_look(run_id, row.id, os.environ))
    return 0


def where_to_look(run_id: str, node_id: str, environ: Mapping[str, str]) -> str:
    """The closing lines of ``make demo``: the viewer, Neo4j Browser and the CLI on this run."""
    viewer = environ.get(defaults.ENV_VIEWER_ADDR, defaults.VIEWER_ADDR)
    browser = environ.get(defaults.ENV_NEO4J_HTTP_ADDR, defaults.NEO4J_HTTP_ADDR)
    bolt = environ.get(defaults.ENV_NEO4J_URI, defaults.NEO4J_URI)
    return "\n".join(
        [
            "",
            "Where to look:",
            f"  trace viewer   http://{viewer}/#run={run_id}",
            f"                 http://{viewer}/#node={node_id}  (this row's trace)",
            f"  Neo4j Browser  http://{browser}/browser/  (connect to {bolt}, no auth)",
            # Node ids may be negative: "--" keeps the CLI from reading one as an option.
            f"  command line   sparkprov trace back {'-- ' if node_id.startswith('-') else ''}"
            f"{node_id}",
            "  graph schema   docs/graph-schema.md (labels, properties, example Cypher)",
        ]
    )


if __name__ == "__main__":
    sys.exit(main())
