"""Commits, rewinds and dead letters, alone, on a fake Kafka consumer and DLQ producer:
nothing is committed past a dead letter Kafka did not acknowledge, the producer is flushed
before the commit, a refused commit does not stop the loop, and dropped partitions rewind."""

from __future__ import annotations

from typing import Any, NamedTuple

import pytest
from kafka.errors import CommitFailedError, KafkaConnectionError, KafkaTimeoutError

from ingest_service.checkpoint import Checkpoint
from ingest_service.metrics import Metrics
from tests.unit.fakes import Rec


class TP(NamedTuple):
    topic: str
    partition: int


A, B = TP("t", 0), TP("t", 1)


def rec(tp: TP, offset: int) -> Rec:
    return Rec(tp.topic, tp.partition, offset, b"k", b"v%d" % offset)


class Sent:
    def __init__(self) -> None:
        self.done = False
        self.ok = False

    def succeeded(self) -> bool:
        return self.done and self.ok


class Producer:
    """Sends complete at ``flush``, acknowledged unless ``failing``; ``refuse`` sends raise."""

    def __init__(self, log: list[Any]) -> None:
        self.log = log
        self.failing = False
        self.refuse = 0
        self.sent: list[tuple[str, bytes | None, bytes | None, dict[str, bytes]]] = []
        self._unfinished: list[Sent] = []

    def send(
        self, topic: str, *, value: bytes | None, key: bytes | None, headers: list[Any]
    ) -> Sent:
        if self.refuse:
            self.refuse -= 1
            raise KafkaTimeoutError("fake")
        self.sent.append((topic, value, key, dict(headers)))
        self._unfinished.append(Sent())
        return self._unfinished[-1]

    def flush(self, timeout: float) -> None:
        self.log.append("dlq flush")
        for sent in self._unfinished:
            sent.done, sent.ok = True, not self.failing
        self._unfinished.clear()

    def close(self, timeout: float) -> None:
        self.log.append("dlq close")


class Source:
    def __init__(self, log: list[Any]) -> None:
        self.log = log
        self.refuse: Exception | None = None

    def commit(self, offsets: dict[TP, Any]) -> None:
        if self.refuse is not None:
            raise self.refuse
        self.log.append(("commit", {tp: meta.offset for tp, meta in offsets.items()}))

    def seek(self, tp: TP, offset: int) -> None:
        self.log.append(("seek", tp, offset))

    def assignment(self) -> set[TP]:
        return {A, B}


def make() -> tuple[Checkpoint, Source, Producer, Metrics, list[Any]]:
    log: list[Any] = []
    producer, metrics = Producer(log), Metrics()
    return Checkpoint("dlq", producer, metrics), Source(log), producer, metrics, log


def test_a_dead_letter_carries_the_record_and_its_reason() -> None:
    checkpoint, _, producer, metrics, _ = make()
    checkpoint.received(A, 40, 43)
    checkpoint.dead_letter(A, rec(A, 42), "bad_magic", "x" * 5000)
    ((topic, value, key, headers),) = producer.sent
    assert (topic, value, key) == ("dlq", b"v42", b"k")
    assert headers["reason"] == b"bad_magic"
    assert headers["source"] == b"t/0/42"
    assert len(headers["detail"]) == 1000
    assert metrics.dead_letters == 1


def test_the_commit_follows_the_dead_letters_flush_and_covers_everything_taken() -> None:
    checkpoint, source, _, _, log = make()
    checkpoint.received(A, 0, 3)
    checkpoint.received(B, 7, 8)
    checkpoint.take(A, 0)
    checkpoint.dead_letter(A, rec(A, 1), "conflict", "")
    checkpoint.take(A, 2)
    checkpoint.take(B, 7)
    assert checkpoint.commit(source) is None
    assert log == ["dlq flush", ("commit", {A: 3, B: 8})]
    assert not checkpoint.holding


def test_without_dead_letters_the_producer_is_not_flushed() -> None:
    checkpoint, source, _, _, log = make()
    checkpoint.received(A, 0, 1)
    checkpoint.take(A, 0)
    checkpoint.commit(source)
    assert log == [("commit", {A: 1})]


@pytest.mark.parametrize("failure", ["unacknowledged", "send_raises"])
def test_a_dead_letter_not_acknowledged_holds_its_partition_back(failure: str) -> None:
    checkpoint, source, producer, metrics, log = make()
    if failure == "unacknowledged":
        producer.failing = True
    else:
        producer.refuse = 1
    checkpoint.received(A, 0, 4)
    checkpoint.received(B, 0, 1)
    checkpoint.take(A, 0)
    checkpoint.dead_letter(A, rec(A, 1), "bad", "")
    checkpoint.take(A, 2)
    checkpoint.take(B, 0)
    assert checkpoint.commit(source) == 0.5
    assert ("commit", {A: 1, B: 1}) in log
    assert metrics.dead_letter_failures == 1
    # The loop drops everything and reads the partition again from the dead letter.
    checkpoint.drop()
    checkpoint.rewind(source, source.assignment())
    assert [e for e in log if e[0] == "seek"] == [("seek", A, 1)]
    checkpoint.rewind(source, source.assignment())  # once
    assert len([e for e in log if e[0] == "seek"]) == 1


def test_the_back_off_doubles_while_dead_letters_fail_and_starts_over_after() -> None:
    checkpoint, source, producer, _, _ = make()
    producer.failing = True
    waits = []
    for offset in range(4):
        checkpoint.received(A, offset, offset + 1)
        checkpoint.dead_letter(A, rec(A, offset), "bad", "")
        waits.append(checkpoint.commit(source))
        checkpoint.drop()
    assert waits == [0.5, 1.0, 2.0, 4.0]
    producer.failing = False
    checkpoint.received(A, 9, 10)
    checkpoint.dead_letter(A, rec(A, 9), "bad", "")
    assert checkpoint.commit(source) is None
    producer.failing = True
    checkpoint.received(A, 10, 11)
    checkpoint.dead_letter(A, rec(A, 10), "bad", "")
    assert checkpoint.commit(source) == 0.5


@pytest.mark.parametrize(
    "error", [CommitFailedError("rebalanced"), KafkaConnectionError("111 ECONNREFUSED")]
)
def test_a_commit_kafka_refuses_is_given_up_not_raised(error: Exception) -> None:
    checkpoint, source, _, _, _ = make()
    source.refuse = error
    checkpoint.received(A, 0, 2)
    checkpoint.take(A, 0)
    checkpoint.take(A, 1)
    assert checkpoint.commit(source) is None
    assert not checkpoint.holding  # redelivered if no later commit covers it


def test_records_received_past_a_commit_are_where_a_drop_rewinds() -> None:
    checkpoint, source, _, _, log = make()
    checkpoint.received(A, 0, 10)
    checkpoint.take(A, 0)
    checkpoint.commit(source)
    assert checkpoint.holding  # 1..9 still wait
    checkpoint.drop()
    checkpoint.rewind(source, [A, B])
    assert log[-1] == ("seek", A, 1)


def test_close_closes_the_producer() -> None:
    checkpoint, _, _, _, log = make()
    checkpoint.close()
    assert log == ["dlq close"]
