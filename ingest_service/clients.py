"""The Kafka clients of the consume loop: the part of their API it uses, and their factories.

The loop is given factories (settings -> client) rather than clients, so unit tests run it on
fakes; :func:`kafka_consumer`, :func:`dlq_producer` and :func:`group_probe` build the real
kafka-python ones. Partition keys are kafka-python's ``TopicPartition`` (a named tuple): its
``pause``, ``resume`` and ``seek`` refuse anything else, so fakes use it too.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

from ingest_service.membership import GroupView
from ingest_service.offsets import Delivery
from ingest_service.settings import IngestSettings

__all__ = [
    "DeadLetters",
    "DeadLettersFactory",
    "GroupProbe",
    "GroupProbeFactory",
    "Record",
    "Source",
    "SourceFactory",
    "dlq_producer",
    "group_probe",
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


class GroupProbe(Protocol):
    """The broker's view of the loop's consumer group (``ingest_service.membership``)."""

    def describe(self, group_id: str, topic: str) -> GroupView: ...
    def close(self) -> None: ...


SourceFactory = Callable[[IngestSettings], Source]
DeadLettersFactory = Callable[[IngestSettings], DeadLetters]
GroupProbeFactory = Callable[[IngestSettings], GroupProbe]


def kafka_consumer(settings: IngestSettings, **overrides: Any) -> Source:
    """The loop's ``KafkaConsumer``; ``overrides`` replace or add kafka-python settings (tests
    shorten ``metadata_max_age_ms`` to see a topic change at once)."""
    from kafka import KafkaConsumer

    config: dict[str, Any] = dict(
        bootstrap_servers=settings.kafka_bootstrap.split(","),
        group_id=settings.group_id,
        # How the broker names this member, so the membership probe can find it in the group.
        client_id=settings.client_id,
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
    consumer: Source = KafkaConsumer(**{**config, **overrides})
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


class _AdminGroupProbe:
    """:class:`GroupProbe` on a kafka-python ``KafkaAdminClient`` (DescribeGroups, Metadata)."""

    def __init__(self, settings: IngestSettings) -> None:
        from kafka import KafkaAdminClient

        self._admin = KafkaAdminClient(
            bootstrap_servers=settings.kafka_bootstrap.split(","),
            client_id=f"{settings.client_id}-probe",
            **settings.kafka_security.as_kafka_kwargs(),
        )

    def describe(self, group_id: str, topic: str) -> GroupView:
        from kafka.errors import KafkaError

        group = self._admin.describe_groups([group_id])[group_id]
        if group.get("error"):
            raise KafkaError(f"describing group {group_id}: {group['error']}")
        owners: dict[str, frozenset[int]] = {}
        for member in group["members"]:
            assignment = member.get("member_assignment") or {}
            mine = frozenset(
                p
                for owned in assignment.get("assigned_partitions", [])
                if owned["topic"] == topic
                for p in owned["partitions"]
            )
            # A member that left without saying so may linger with the same client id until
            # its session expires: the client id owns what either owns.
            owners[member["client_id"]] = owners.get(member["client_id"], frozenset()) | mine
        (described,) = self._admin.describe_topics([topic])
        partitions = frozenset(p["partition_index"] for p in described.get("partitions", []))
        return GroupView(group["group_state"], owners, partitions)

    def close(self) -> None:
        self._admin.close()


def group_probe(settings: IngestSettings) -> GroupProbe:
    return _AdminGroupProbe(settings)
