"""The Kafka clients of the consume loop: the part of their API it uses, and their factories.

The loop is given factories (settings -> client) rather than clients, so unit tests run it on
fakes; :func:`kafka_consumer` and :func:`dlq_producer` build the real kafka-python ones. Partition
keys are kafka-python's ``TopicPartition`` (a named tuple): its ``pause``, ``resume`` and ``seek``
refuse anything else, so fakes use it too.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

from ingest_service.offsets import Delivery
from ingest_service.settings import IngestSettings

__all__ = [
    "DeadLetters",
    "DeadLettersFactory",
    "Record",
    "Source",
    "SourceFactory",
    "dlq_producer",
    "kafka_consumer",
]


class Record(Protocol):
    """A consumed message (kafka-python's ``ConsumerRecord``)."""

    @property
    def topic(self) -> str: ...
    @property
    def partition(self) -> int: ...
    @property
    def offset(self) -> int: ...
    @property
    def key(self) -> bytes | None: ...
    @property
    def value(self) -> bytes | None: ...


class Source(Protocol):
    """What the loop calls on its ``KafkaConsumer`` (same names, same arguments)."""

    def subscribe(self, topics: Sequence[str], listener: Any) -> None: ...
    def poll(self, timeout_ms: int) -> Mapping[Any, Sequence[Record]]: ...
    def assignment(self) -> set[Any]: ...
    def pause(self, *partitions: Any) -> None: ...
    def resume(self, *partitions: Any) -> None: ...
    def paused(self) -> set[Any]: ...
    def seek(self, partition: Any, offset: int) -> None: ...
    def position(self, partition: Any) -> int | None: ...
    def end_offsets(self, partitions: list[Any]) -> Mapping[Any, int]: ...
    def commit(self, offsets: Mapping[Any, Any]) -> None: ...
    def close(self, autocommit: bool) -> None: ...


class DeadLetters(Protocol):
    """What the loop calls on its dead-letter ``KafkaProducer``."""

    def send(
        self,
        topic: str,
        *,
        value: bytes | None,
        key: bytes | None,
        headers: list[tuple[str, bytes]],
    ) -> Delivery: ...
    def flush(self, timeout: float) -> None: ...
    def close(self, timeout: float) -> None: ...


SourceFactory = Callable[[IngestSettings], Source]
DeadLettersFactory = Callable[[IngestSettings], DeadLetters]


def kafka_consumer(settings: IngestSettings) -> Source:
    from kafka import KafkaConsumer

    consumer: Source = KafkaConsumer(
        bootstrap_servers=settings.kafka_bootstrap.split(","),
        group_id=settings.group_id,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        max_poll_records=settings.max_poll_records,
        # The loop polls between any two writes (see consumer), so this bounds one write.
        max_poll_interval_ms=settings.max_poll_interval_ms,
        max_partition_fetch_bytes=16 * 1024 * 1024,
        fetch_max_bytes=64 * 1024 * 1024,
        # A killed member is noticed (and its partitions reassigned) within 10s.
        session_timeout_ms=10000,
        heartbeat_interval_ms=3000,
        **settings.kafka_security.as_kafka_kwargs(),
    )
    return consumer


def dlq_producer(settings: IngestSettings) -> DeadLetters:
    from kafka import KafkaProducer

    producer: DeadLetters = KafkaProducer(
        bootstrap_servers=settings.kafka_bootstrap.split(","),
        acks="all",
        max_request_size=16 * 1024 * 1024,
        **settings.kafka_security.as_kafka_kwargs(),
    )
    return producer
