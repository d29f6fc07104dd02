"""At-least-once delivery with idempotent writes, on the real stack: a SIGKILLed ingest restarts
and catches up with exact counts; re-sent events duplicate nothing; malformed messages go to the
dead-letter topic with a reason and consumption continues."""

from __future__ import annotations

import threading
import time
import uuid

from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from pyspark.sql import functions as F

from capture_agent import ProvenanceSession
from sparkprov import defaults
from sparkprov.events import encode_run_complete, encode_run_started
from sparkprov.v1 import lineage_pb2

from .graph import own_nodes, run_graph
from .kafka_tools import read_all, wait_group_caught_up


def _stored(driver, run_id):  # type: ignore[no-untyped-def]
    records, _, _ = driver.execute_query(
        "MATCH (r:Run {run_id: $run}) RETURN r.stored_nodes + r.stored_edges AS n, r.complete AS c",
        run=run_id,
    )
    return (records[0]["n"], records[0]["c"]) if records else (0, False)


def _assert_exact(graph, run, nodes, edges):  # type: ignore[no-untyped-def]
    assert run.complete
    assert (run.expected_node_count, run.expected_edge_count) == (nodes, edges)
    assert (run.node_count, run.edge_count) == (nodes, edges)
    assert own_nodes(graph) == nodes
    assert graph.number_of_edges() == edges
    assert all(m == 1 for _, _, m in graph.edges(data="multiplicity"))


def test_sigkill_of_ingest_mid_run_loses_and_duplicates_nothing(  # type: ignore[no-untyped-def]
    stack, spark, client, neo4j_driver
):
    # big enough that ingest stores it in several flushes, so the kill lands mid-run
    df = spark.range(60_000).withColumn("k", F.col("id") % 40).withColumn("v", F.col("id") * 3)
    result: dict = {}

    def job() -> None:
        with ProvenanceSession(spark, workflow="crash-test") as prov:
            result["run"] = prov.run_id
            numbers = prov.source(df, "Numbers")
            grouped = numbers.groupBy("k").agg(F.sum("v").alias("s"), F.max("v").alias("m"))
            grouped.named("Sums").collect()
        result["counts"] = prov.counts()

    worker = threading.Thread(target=job)
    worker.start()
    deadline = time.monotonic() + 180
    while "run" not in result or _stored(neo4j_driver, result["run"])[0] == 0:
        assert time.monotonic() < deadline, "the ingest stored nothing of the run"
        time.sleep(0.05)
    stored_at_kill, complete_at_kill = _stored(neo4j_driver, result["run"])
    stack.kill("ingest")  # SIGKILL: no flush, no commit, possibly mid-transaction
    try:
        worker.join()
        nodes, edges = result["counts"]
        assert not complete_at_kill and stored_at_kill < nodes + edges, (
            f"the kill came after the run was stored ({stored_at_kill} of {nodes + edges})"
        )
    finally:  # the later tests need the ingest, whatever this one found
        stack.start("ingest")

    run = client.wait_for_run(result["run"], timeout_s=600)
    _assert_exact(run_graph(neo4j_driver, result["run"]), run, nodes, edges)


def test_resent_events_duplicate_nothing(stack, spark, client, neo4j_driver) -> None:  # type: ignore[no-untyped-def]
    bootstrap = stack.settings.kafka_bootstrap
    df = spark.createDataFrame([(i, i % 3) for i in range(30)], ["x", "g"])
    with ProvenanceSession(spark, workflow="resend-test") as prov:
        left = prov.source(df, "L")
        right = prov.source(df.withColumnRenamed("x", "y"), "R")
        joined = left.join(right, on="g").named("J")
        joined.groupBy("g").agg(F.count("x").alias("n")).named("Counts").collect()
    run = client.wait_for_run(prov.run_id)
    nodes, edges = prov.counts()

    mine = [
        r for r in read_all(bootstrap, defaults.TOPIC) if r.key and prov.run_id.encode() in r.key
    ]
    assert len(mine) > 3
    producer = KafkaProducer(bootstrap_servers=bootstrap)
    for record in mine:  # every event of the run, sent a second time
        producer.send(defaults.TOPIC, value=record.value, key=record.key)
    producer.flush()
    producer.close()
    wait_group_caught_up(bootstrap, "sparkprov-ingest", defaults.TOPIC)

    run = client.wait_for_run(prov.run_id)
    _assert_exact(run_graph(neo4j_driver, prov.run_id), run, nodes, edges)


def test_malformed_messages_go_to_the_dead_letter_topic(stack, client) -> None:  # type: ignore[no-untyped-def]
    bootstrap = stack.settings.kafka_bootstrap
    dlq = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
    partition = TopicPartition(defaults.DLQ_TOPIC, 0)
    dlq.assign([partition])
    dlq.seek_to_end(partition)
    start = dlq.position(partition)

    marker = uuid.uuid4().hex
    garbage = b"\xff\xfenot a protobuf " + marker.encode()
    future_version = lineage_pb2.LineageEvent(schema_version=99, run_id=marker).SerializeToString()
    producer = KafkaProducer(bootstrap_servers=bootstrap)
    producer.send(defaults.TOPIC, value=garbage, key=marker.encode())
    producer.send(defaults.TOPIC, value=future_version, key=marker.encode())
    # A valid run after the bad messages: consumption must go on.
    run_id = f"after-dlq-{marker}"
    producer.send(defaults.TOPIC, value=encode_run_started(run_id, "dlq-test", 1, ""))
    producer.send(defaults.TOPIC, value=encode_run_complete(run_id, "dlq-test", 0, 0))
    producer.flush()
    producer.close()

    assert client.wait_for_run(run_id).complete
    reasons = {}
    deadline = time.monotonic() + 60
    while len(reasons) < 2 and time.monotonic() < deadline:
        for records in dlq.poll(timeout_ms=500).values():
            for r in records:
                if r.offset >= start and r.key == marker.encode():
                    reasons[r.value] = dict(r.headers)["reason"].decode()
    dlq.close()
    assert reasons.get(garbage) in {"undecodable", "schema_version", "no_run_id"}
    assert reasons.get(future_version) == "schema_version"


def test_run_with_edges_to_never_stored_nodes_is_flagged(stack, client, neo4j_driver) -> None:  # type: ignore[no-untyped-def]
    """Wrong lineage made loud: every counted node and edge arrives, but two edges point at
    nodes that never do (what a rounded id did). ListRuns says COMPLETE_WITH_DANGLING with the
    count; a placeholder later filled stops counting."""
    import numpy as np

    from sparkprov.events import EdgeColumns, NodeColumns, encode_batch
    from sparkprov.query_model import RunState

    base = int(uuid.uuid4().int >> 66)  # fresh ids, far from any other test's
    run_id = f"dangling-{uuid.uuid4().hex}"
    nodes = NodeColumns("TOKEN", np.array([base, base + 1], dtype=np.int64), label="t")
    # base+1 is sent after its edge (in a later batch): a placeholder that gets filled.
    late = NodeColumns("PLUS", np.array([base + 2], dtype=np.int64), label="+")
    edges = EdgeColumns(
        np.array([base, base + 1, base + 7, base + 8], dtype=np.int64),
        np.array([base + 2, base + 2, base + 2, base + 1], dtype=np.int64),
    )
    producer = KafkaProducer(bootstrap_servers=stack.settings.kafka_bootstrap)
    key = run_id.encode()
    producer.send(defaults.TOPIC, value=encode_run_started(run_id, "dangling", 1, ""), key=key)
    producer.send(
        defaults.TOPIC, value=encode_batch(run_id, "dangling", "t", 0, 0, [], edges), key=key
    )
    producer.send(
        defaults.TOPIC,
        value=encode_batch(run_id, "dangling", "t", 0, 1, [nodes, late], None),
        key=key,
    )
    producer.send(defaults.TOPIC, value=encode_run_complete(run_id, "dangling", 3, 4), key=key)
    producer.flush()
    producer.close()

    run = client.wait_for_run(run_id, dangling_ok=True)
    assert run.complete and run.state is RunState.COMPLETE_WITH_DANGLING
    assert run.dangling_node_count == 2  # base+7 and base+8; base+1 and base+2 were filled
    records, _, _ = neo4j_driver.execute_query(
        "MATCH (n:Node) WHERE n.id IN $ids RETURN n.id AS id, n.op AS op, n.pending_run AS p",
        ids=[base + i for i in (1, 2, 7, 8)],
    )
    pending = {r["id"]: r["p"] for r in records}
    assert pending == {base + 1: None, base + 2: None, base + 7: run_id, base + 8: run_id}
