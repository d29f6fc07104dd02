"""Helpers that talk to the real Kafka of the stack."""

from __future__ import annotations

import time

from kafka import KafkaConsumer, TopicPartition


def wait_group_caught_up(bootstrap: str, group: str, topic: str, timeout_s: float = 180) -> None:
    """Until the group's committed offsets reach the end of every partition of the topic; the
    ingest commits only after Neo4j committed, so this means everything is stored."""
    # Never subscribes, so it does not join (or disturb) the group; it only reads its offsets.
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False)
    try:
        partitions = [TopicPartition(topic, p) for p in consumer.partitions_for_topic(topic)]
        ends = consumer.end_offsets(partitions)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            committed = {tp: consumer.committed(tp) for tp in partitions}
            if all((committed[tp] or 0) >= ends[tp] for tp in partitions):
                return
            time.sleep(0.5)
        raise TimeoutError(f"group {group} did not catch up with {topic} in {timeout_s}s")
    finally:
        consumer.close(autocommit=False)


def read_all(bootstrap: str, topic: str, timeout_s: float = 120) -> list:  # type: ignore[type-arg]
    """Every record currently in the topic: up to the end offsets its partitions have when
    called. Reading to those offsets, rather than until the topic has been idle for a while,
    returns as soon as everything is read (no idle wait at the end)."""
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
    try:
        partitions = [TopicPartition(topic, p) for p in consumer.partitions_for_topic(topic) or ()]
        consumer.assign(partitions)
        consumer.seek_to_beginning(*partitions)
        ends = consumer.end_offsets(partitions)
        records: list = []  # type: ignore[type-arg]
        deadline = time.monotonic() + timeout_s
        while any(consumer.position(tp) < ends[tp] for tp in partitions):
            if time.monotonic() > deadline:
                raise TimeoutError(f"{topic}: not read to its end offsets in {timeout_s}s")
            for batch in consumer.poll(timeout_ms=500).values():
                records.extend(batch)
        return records
    finally:
        consumer.close()
