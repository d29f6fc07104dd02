"""Poison records on the real stack: an event over the wire limits, an event Neo4j refuses, and a
node re-sent with other content each go to the dead-letter topic with their reason, while the
events around them are stored and the consumer goes on (its offsets pass them)."""

from __future__ import annotations

import time
import urllib.request
import uuid

import numpy as np
from kafka import KafkaConsumer, KafkaProducer, TopicPartition

from sparkprov import defaults
from sparkprov.events import (
    SCHEMA_VERSION,
    NodeColumns,
    encode_batch,
    encode_run_complete,
    encode_run_started,
)
from sparkprov.v1 import lineage_pb2
from tests.integration.kafka_tools import wait_group_caught_up


class _DeadLetters:
    """Reads the dead-letter topic from where it ends now: the reasons of the letters keyed
    ``key``."""

    def __init__(self, bootstrap: str) -> None:
        self._consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
        partitions = self._consumer.partitions_for_topic(defaults.DLQ_TOPIC) or {0}
        self._partitions = [TopicPartition(defaults.DLQ_TOPIC, p) for p in partitions]
        self._consumer.assign(self._partitions)
        self._consumer.seek_to_end(*self._partitions)
        for tp in self._partitions:
            self._consumer.position(tp)  # resolve the end now, before anything is sent

    def reasons(self, key: bytes, count: int, timeout_s: float = 90) -> list[str]:
        found: list[str] = []
        deadline = time.monotonic() + timeout_s
        while len(found) < count and time.monotonic() < deadline:
            for records in self._consumer.poll(timeout_ms=500).values():
                found += [dict(r.headers)["reason"].decode() for r in records if r.key == key]
        return found

    def close(self) -> None:
        self._consumer.close()


def _metric(stack, name: str) -> float:  # type: ignore[no-untyped-def]
    url = f"http://{stack.settings.ingest_http_addr}/metrics"
    with urllib.request.urlopen(url, timeout=10) as reply:
        for line in reply.read().decode().splitlines():
            if line.startswith(name + " "):
                return float(line.split()[1])
    raise AssertionError(f"{name} not in /metrics")


def _ids(*ids: int) -> np.ndarray:
    return np.array(ids, dtype=np.int64)


def test_events_over_the_limits_are_dead_lettered_and_consumption_goes_on(stack, client) -> None:  # type: ignore[no-untyped-def]
    bootstrap = stack.settings.kafka_bootstrap
    dlq = _DeadLetters(bootstrap)
    marker = uuid.uuid4().hex
    key = marker.encode()
    big = "x" * 20_000  # what made Neo4j refuse to index a run id, or a relation

    def raw(run_id: str, relation: str) -> bytes:  # as a producer without the checks sends it
        block = lineage_pb2.NodeBlock(op=lineage_pb2.OP_TOKEN, ids=[1, 2], relation=relation)
        return lineage_pb2.LineageEvent(
            schema_version=SCHEMA_VERSION,
            run_id=run_id,
            workflow="poison",
            batch=lineage_pb2.LineageBatch(tap="t", nodes=[block]),
        ).SerializeToString()

    run_id = f"after-poison-{marker}"
    base = int(uuid.uuid4().int >> 66)
    producer = KafkaProducer(bootstrap_servers=bootstrap)
    producer.send(defaults.TOPIC, value=raw(big, "R"), key=key)
    producer.send(defaults.TOPIC, value=raw(f"poison-{marker}", big), key=key)
    producer.send(defaults.TOPIC, value=encode_run_started(run_id, "poison", 1, ""), key=key)
    nodes = NodeColumns("TOKEN", _ids(base, base + 1), label="t")
    producer.send(
        defaults.TOPIC, value=encode_batch(run_id, "poison", "t", 0, 0, [nodes], None), key=key
    )
    producer.send(defaults.TOPIC, value=encode_run_complete(run_id, "poison", 2, 0), key=key)
    producer.flush()
    producer.close()

    assert client.wait_for_run(run_id).complete
    assert sorted(dlq.reasons(key, 2)) == ["limit:relation", "limit:run_id"]
    dlq.close()
    wait_group_caught_up(bootstrap, "sparkprov-ingest", defaults.TOPIC)


def test_an_event_neo4j_refuses_is_isolated_and_dead_lettered(stack, client, neo4j_driver) -> None:  # type: ignore[no-untyped-def]
    """An attribute indexed here for the test only: a 10 KB value (within the wire limits) is
    too large for Neo4j to index, so the procedure fails. The loop writes the flush in halves,
    dead-letters the event at fault with Neo4j's code and stores the rest."""
    bootstrap = stack.settings.kafka_bootstrap
    marker = uuid.uuid4().hex
    attribute = f"poison_{marker[:8]}"
    index = f"test_poison_{marker[:8]}"
    neo4j_driver.execute_query(
        f"CREATE INDEX {index} IF NOT EXISTS FOR (n:Node) ON (n.a_{attribute})"
    )
    neo4j_driver.execute_query("CALL db.awaitIndexes(60)")
    dlq = _DeadLetters(bootstrap)
    key = marker.encode()
    try:
        rejected_before = _metric(stack, "sparkprov_ingest_store_rejections_total")
        run_id = f"refused-{marker}"
        base = int(uuid.uuid4().int >> 66)
        producer = KafkaProducer(bootstrap_servers=bootstrap)
        producer.send(defaults.TOPIC, value=encode_run_started(run_id, "poison", 1, ""), key=key)
        for i in range(6):  # sent at once: most likely one flush
            value = "v" * 10_000 if i == 3 else "ok"
            block = NodeColumns("TOKEN", _ids(base + i), label="t", attributes={attribute: [value]})
            producer.send(
                defaults.TOPIC,
                value=encode_batch(run_id, "poison", "t", 0, i, [block], None),
                key=key,
            )
        producer.send(defaults.TOPIC, value=encode_run_complete(run_id, "poison", 5, 0), key=key)
        producer.flush()
        producer.close()

        assert client.wait_for_run(run_id).complete  # 5 of the 6 nodes: all but the refused
        assert dlq.reasons(key, 1) == ["neo4j:Neo.ClientError.Procedure.ProcedureCallFailed"]
        records, _, _ = neo4j_driver.execute_query(
            "MATCH (n:Node) WHERE n.id IN $ids RETURN n.id AS id", ids=[base + i for i in range(6)]
        )
        assert {r["id"] for r in records} == {base + i for i in (0, 1, 2, 4, 5)}
        assert _metric(stack, "sparkprov_ingest_store_rejections_total") >= rejected_before + 1
        wait_group_caught_up(bootstrap, "sparkprov-ingest", defaults.TOPIC)
    finally:
        dlq.close()
        neo4j_driver.execute_query(f"DROP INDEX {index} IF EXISTS")


def test_a_node_resent_with_other_content_is_counted_and_dead_lettered(  # type: ignore[no-untyped-def]
    stack, client, neo4j_driver
) -> None:
    bootstrap = stack.settings.kafka_bootstrap
    dlq = _DeadLetters(bootstrap)
    marker = uuid.uuid4().hex
    key = marker.encode()
    conflicts_before = _metric(stack, "sparkprov_ingest_conflicts_total")
    run_id = f"conflict-{marker}"
    base = int(uuid.uuid4().int >> 66)
    first = NodeColumns("TOKEN", _ids(base, base + 1), label="first", relation="R")
    other = NodeColumns("TOKEN", _ids(base + 1), label="second", relation="R")
    producer = KafkaProducer(bootstrap_servers=bootstrap)
    producer.send(defaults.TOPIC, value=encode_run_started(run_id, "conflict", 1, ""), key=key)
    for sequence, block in enumerate([first, first, other]):  # a duplicate, then a conflict
        producer.send(
            defaults.TOPIC,
            value=encode_batch(run_id, "conflict", "t", 0, sequence, [block], None),
            key=key,
        )
        producer.flush()  # in this order
    producer.send(defaults.TOPIC, value=encode_run_complete(run_id, "conflict", 2, 0), key=key)
    producer.flush()
    producer.close()

    assert client.wait_for_run(run_id).complete
    assert dlq.reasons(key, 2, timeout_s=20) == ["conflict"]  # the duplicate is silent
    dlq.close()
    records, _, _ = neo4j_driver.execute_query(
        "MATCH (n:Node {id: $id}) RETURN n.label AS label", id=base + 1
    )
    assert [r["label"] for r in records] == ["first"]
    assert _metric(stack, "sparkprov_ingest_conflicts_total") >= conflicts_before + 1
