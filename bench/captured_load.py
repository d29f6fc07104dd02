"""A real PySpark pipeline captured into a benchmark's stack, loaded as bulk loads are.

:func:`load_captured` runs one pipeline under capture (JVM taps) with its lineage going to a
fresh topic of ``partitions`` partitions that nothing reads yet, then starts ``consumers`` ingest
processes on it (bench.harness's bulk-load settings) and the query service, and returns once
``QueryClient.wait_for_run`` reports the run complete. Pipelines, over ``input_rows`` rows of
input (generated once into Parquet under a data folder):

- ``tpch``: the 22 TPC-H queries of bench.tpch over its eight tables at the scale that gives
  ``input_rows`` rows in all, each source tracked once and keeping its key only (its values
  are not what a trace measures, and they would slow capture and ingest);
- ``pipeline``: bench.capture_overhead's pipeline, ``input_rows`` order rows and a tenth of that
  many customers (filter, join, groupBy region with 3 aggregates).

:func:`reuse_key` names what was loaded (pipeline, rows, theta and :data:`VERSION`); a stack
whose marker holds the same key is reused as it is (:func:`reusable`).
"""

from __future__ import annotations

import sys
import time
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from bench.harness import Consumers, create_topic, exact_counts, ingest_env
from localstack.stack import Stack

__all__ = [
    "PIPELINES",
    "TPCH_ROWS_AT_SCALE_1",
    "VERSION",
    "load_captured",
    "reusable",
    "reuse_key",
    "tpch_scale",
]

# Bump when a pipeline, its data or what its capture emits changes: --reuse then loads afresh.
VERSION = 1
PIPELINES = ("tpch", "pipeline")
# bench.tpch.data at scale 1: 6M lines, 1.5M orders, 800k partsupp, 200k parts, 150k customers,
# 10k suppliers, 25 nations, 5 regions.
TPCH_ROWS_AT_SCALE_1 = 8_660_030


def reuse_key(pipeline: str, input_rows: int, theta: int | None) -> dict[str, Any]:
    """What a loaded stack holds: equal keys mean the same stored graph."""
    return {"pipeline": pipeline, "input_rows": input_rows, "theta": theta, "version": VERSION}


def reusable(previous: Mapping[str, Any], key: Mapping[str, Any]) -> bool:
    """Whether a stack whose marker holds ``previous`` holds what ``key`` names (a marker is
    written only after a complete load, so an interrupted load is never reused)."""
    return bool(previous.get("run_id")) and all(previous.get(k) == v for k, v in key.items())


def tpch_scale(input_rows: int) -> float:
    """The TPC-H scale whose eight tables hold about ``input_rows`` rows."""
    if input_rows <= 0:
        raise ValueError(f"input rows must be positive, got {input_rows}")
    return input_rows / TPCH_ROWS_AT_SCALE_1


def _capture(
    pipeline: str, input_rows: int, data: Path, bootstrap: str, topic: str
) -> dict[str, Any]:
    """Run ``pipeline`` under JVM capture into ``topic``; the run's id, size and times."""
    from bench.capture_overhead import make_pipeline_inputs, tpch, tpch_inputs
    from bench.capture_overhead import pipeline as order_pipeline
    from capture_agent import ProvenanceSession
    from examples.spark import local_spark

    spark = local_spark("sparkprov-captured")
    try:
        folder = data / f"{pipeline}-{input_rows}"
        folder.mkdir(parents=True, exist_ok=True)
        if pipeline == "tpch":
            paths = tpch_inputs(spark, folder, tpch_scale(input_rows))
            rows = sum(spark.read.parquet(p).count() for p in paths.values())

            def body(prov: ProvenanceSession) -> object:
                return tpch(prov, paths, "key")
        else:
            facts, dims = make_pipeline_inputs(spark, folder, input_rows, input_rows // 10)
            rows = input_rows + input_rows // 10

            def body(prov: ProvenanceSession) -> object:
                return order_pipeline(prov, facts, dims)

        started = time.perf_counter()
        with ProvenanceSession(
            spark, workflow=f"captured-{pipeline}", bootstrap=bootstrap, topic=topic, capture="jvm"
        ) as prov:
            body(prov)
        capture_s = time.perf_counter() - started
        nodes, edges = prov.counts()
        assert prov.run_id is not None
        return {
            "run_id": prov.run_id,
            "source_rows": rows,
            "capture_s": capture_s,
            "lineage_nodes": nodes,
            "lineage_edges": edges,
        }
    finally:
        spark.stop()


def load_captured(
    stack: Stack,
    pipeline: str,
    input_rows: int,
    data: Path,
    *,
    consumers: int = 2,
    partitions: int = 4,
    http_base: int = 0,
    theta: int | None = None,
    timeout_s: float = 4 * 3600,
) -> dict[str, Any]:
    """Capture ``pipeline`` into a fresh topic of ``stack``'s Kafka (up), then ingest it with
    ``consumers`` processes (HTTP on ``http_base + i``, or ephemeral ports with 0) and the query
    service (started here) until the run is complete; what it took."""
    from ingest_service.store import Store
    from sparkprov.client import QueryClient

    if pipeline not in PIPELINES:
        raise ValueError(f"pipeline must be one of {PIPELINES}, got {pipeline!r}")
    settings = stack.settings
    topic = f"bench.captured.{uuid.uuid4().hex[:8]}"
    create_topic(settings.kafka_bootstrap, topic, partitions)
    result = _capture(pipeline, input_rows, data, settings.kafka_bootstrap, topic)
    run_id = result["run_id"]
    print(
        f"captured {result['lineage_nodes']:,} nodes + {result['lineage_edges']:,} edges in "
        f"{result['capture_s']:.1f}s; ingesting with {consumers} consumer(s)",
        file=sys.stderr,
    )

    env = ingest_env(settings, topic, run_id, partitions)
    if theta is not None:
        env["SPARKPROV_SET_THETA"] = str(theta)
    import neo4j

    driver = neo4j.GraphDatabase.driver(settings.neo4j_uri, auth=None)
    with driver:
        Store(driver).ensure_schema()
        stack.up(("query",))
        group = Consumers(consumers, env, stack.dir / "logs", http_base)
        started = time.monotonic()
        for i in range(consumers):
            group.start(i)
        try:
            with QueryClient(settings.grpc_addr) as client:
                client.wait_for_run(run_id, timeout_s=timeout_s)
        finally:
            group.stop()
        ingest_s = time.monotonic() - started
        stored_nodes, stored_edges = exact_counts(driver, run_id)
    records = result["lineage_nodes"] + result["lineage_edges"]
    return {
        **result,
        "topic": topic,
        "consumers": consumers,
        "partitions": partitions,
        "theta": theta,
        "ingest_s": ingest_s,
        "lineage_records_per_s": records / max(1e-9, ingest_s),
        "stored_nodes": stored_nodes,
        "stored_edges": stored_edges,
        "peak_rss_mib": group.peaks,
    }
