"""Neo4j and Kafka stopped and restarted under load: nothing is lost, nothing is stored twice,
and no process needs a manual step."""

from __future__ import annotations

import threading
import time

from pyspark.sql import functions as F

from capture_agent import ProvenanceSession

from .streams import publish_chain_run, wait_until_storing


def _exact(neo4j_driver, run_id: str) -> tuple[int, int]:  # type: ignore[no-untyped-def]
    """Nodes of the run and edges between them, counted in Neo4j itself."""
    records, _, _ = neo4j_driver.execute_query(
        "MATCH (n:Node {run_id: $run}) "
        "OPTIONAL MATCH (n)-[e:DERIVES]->(:Node {run_id: $run}) "
        "RETURN count(DISTINCT n) AS nodes, count(e) AS edges",
        run=run_id,
    )
    return records[0]["nodes"], records[0]["edges"]


def test_neo4j_restarted_mid_ingest_loses_and_duplicates_nothing(
    stack, client, neo4j_driver
) -> None:  # type: ignore[no-untyped-def]
    run = publish_chain_run(stack.settings.kafka_bootstrap, "neo4j-restart", batches=30, rows=1500)
    wait_until_storing(client, run.run_id)
    stack.down(("neo4j",))
    time.sleep(3)  # ingest finds Neo4j away: it pauses and commits nothing
    stack.up(("neo4j",))
    stored = client.wait_for_run(run.run_id, timeout_s=600)
    assert (stored.node_count, stored.edge_count) == (run.nodes, run.edges)
    assert _exact(neo4j_driver, run.run_id) == (run.nodes, run.edges)


def test_kafka_restarted_mid_capture_the_job_waits_and_nothing_is_lost(
    stack, spark, client, neo4j_driver
) -> None:  # type: ignore[no-untyped-def]
    """The broker goes away after the run started and comes back within the publish bound: the
    tasks wait and retry, the job succeeds, ingest resumes, and the run is stored exactly."""
    df = spark.range(20000).withColumn("k", F.col("id") % 50).withColumn("v", F.col("id") % 7)
    with ProvenanceSession(spark, workflow="kafka-restart", publish_timeout_s=90) as prov:
        stack.down(("kafka",))
        back = threading.Timer(8, stack.up, (("kafka",),))
        back.start()
        try:
            t = prov.source(df, "T")
            t.groupBy("k").agg(F.sum("v").alias("s")).named("S").collect()
        finally:
            back.join()
    nodes, edges = prov.counts()
    stored = client.wait_for_run(prov.run_id, timeout_s=600)
    assert (stored.node_count, stored.edge_count) == (nodes, edges)
    assert (stored.expected_node_count, stored.expected_edge_count) == (nodes, edges)
