"""Commits and rewinds of the consume loop, and the dead letters the commits wait for.

- The loop reports what polls returned and what it took into its buffer; dead letters are sent
  through :meth:`Checkpoint.dead_letter`, which copies the record to the dead-letter topic with
  its reason (headers ``reason``, ``detail``, ``source``) and remembers the send.
- :meth:`Checkpoint.commit` runs only after Neo4j committed the buffer: it flushes the DLQ
  producer, then commits per partition one past the last record taken, but never past a dead
  letter that is not acknowledged (``ingest_service.offsets`` keeps that account). A commit Kafka
  refuses (a rebalance, a broker away) is logged and given up: the writes are idempotent, so a
  redelivery is harmless, and a later commit covers the offsets.
- A dead letter not acknowledged holds its partition back: ``commit`` then returns how long to
  back off (doubling while it recurs), and the loop drops everything it holds, :meth:`rewinds
  <Checkpoint.rewind>` its partitions to their committed offsets and reads them again.

No blocking call but ``commit``; :meth:`drop` is bookkeeping only, safe inside the rebalance
listener.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

from kafka import OffsetAndMetadata
from kafka.errors import CommitFailedError, KafkaError

from ingest_service.backoff import Backoff
from ingest_service.clients import DeadLetters, Record, Source
from ingest_service.metrics import Metrics
from ingest_service.offsets import Delivery, Offsets

__all__ = ["Checkpoint"]

log = logging.getLogger(__name__)

_DLQ_FLUSH_S = 30.0


class _Undelivered:
    """A dead letter whose send raised at once: never acknowledged."""

    def succeeded(self) -> bool:
        return False


class Checkpoint:
    """Partitions are kafka-python's ``TopicPartition`` (anything hashable with ``topic`` and
    ``partition`` attributes will do in tests)."""

    def __init__(self, dlq_topic: str, dead_letters: DeadLetters, metrics: Metrics) -> None:
        self._dlq_topic = dlq_topic
        self._dlq = dead_letters
        self._metrics = metrics
        self._offsets: Offsets[Any] = Offsets()
        self._backoff = Backoff()

    def received(self, tp: Any, first: int, end: int) -> None:
        """A poll returned offsets ``first`` to ``end - 1`` of ``tp``."""
        self._offsets.received(tp, first, end)

    def take(self, tp: Any, offset: int) -> None:
        """The record is in the buffer: the commit after the next flush covers it."""
        self._offsets.take(tp, offset)

    @property
    def holding(self) -> bool:
        """Whether anything polled is not committed yet (buffered or still waiting)."""
        return self._offsets.holding

    def dead_letter(self, tp: Any, record: Record, reason: str, detail: str) -> None:
        """Copy ``record`` to the dead-letter topic; the next commit passes it once Kafka
        acknowledged the copy."""
        self._metrics.dead_letters += 1
        log.warning(
            "dead-lettering %s[%d]@%d: %s: %s",
            record.topic,
            record.partition,
            record.offset,
            reason,
            detail[:200],
        )
        headers = [
            ("reason", reason.encode()),
            ("detail", detail[:1000].encode()),
            ("source", f"{record.topic}/{record.partition}/{record.offset}".encode()),
        ]
        delivery: Delivery
        try:
            delivery = self._dlq.send(
                self._dlq_topic, value=record.value, key=record.key, headers=headers
            )
        except KafkaError as e:
            log.warning("dead letter not sent (%s): its offset will not be committed", e)
            delivery = _Undelivered()
        self._offsets.dead_letter(tp, record.offset, delivery)

    def commit(self, source: Source) -> float | None:
        """Commit what the stored buffer and the acknowledged dead letters cover. None if that is
        everything taken; else a dead letter was not acknowledged: the seconds to back off
        before everything held is dropped and read again (:meth:`drop`, :meth:`rewind`)."""
        if self._offsets.letters:
            try:
                self._dlq.flush(timeout=_DLQ_FLUSH_S)
            except KafkaError as e:
                # Sends still unfinished count as not acknowledged below.
                log.warning("dead-letter flush failed: %s", e)
        offsets = self._offsets.committable()
        held = self._offsets.held_back(offsets)
        try:
            if offsets:
                source.commit(
                    {tp: OffsetAndMetadata(offset, "", -1) for tp, offset in offsets.items()}
                )
        except CommitFailedError as e:
            # The group rebalanced under us: the writes are idempotent, redelivery is harmless.
            log.warning(
                "offset commit failed after a rebalance (%s); events will be redelivered", e
            )
        except KafkaError as e:
            # The broker is away (connection refused, timeout): the same holds. A later commit
            # covers these offsets; if none comes, the events are redelivered.
            log.warning("offset commit failed (%s); events may be redelivered", e)
        self._offsets.committed(offsets)
        if not held:
            self._backoff.reset()
            return None
        wait = self._backoff.next()
        self._metrics.dead_letter_failures += 1
        log.error(
            "dead letters of %s not acknowledged: committed up to them only; reading again "
            "from there in %.1fs",
            sorted(f"{tp.topic}[{tp.partition}]" for tp in held),
            wait,
        )
        return wait

    def drop(self) -> None:
        """Give up on everything held uncommitted; :meth:`rewind` says where to read again."""
        self._offsets.drop()

    def rewind(self, source: Source, partitions: Iterable[Any]) -> None:
        """Seek each of ``partitions`` back to the first offset dropped, if any was (``seek``
        only sets the position: safe inside the rebalance listener); the others, gone elsewhere,
        resume at their next owner from the last commit."""
        for tp in partitions:
            offset = self._offsets.rewind(tp)
            if offset is not None:
                source.seek(tp, offset)
        self._offsets.forget_rewinds()

    def close(self) -> None:
        self._dlq.close(timeout=10)
