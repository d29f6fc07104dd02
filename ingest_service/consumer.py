"""The consume loop: poll, decode, buffer, write to Neo4j, then commit the offsets.

At least once, exactly stored: an offset is committed only after Neo4j committed every record
before it and Kafka acknowledged every dead letter before it; the writes are idempotent, so
whatever is dropped uncommitted (a rebalance, an outage at stop, a dead letter not acknowledged)
is simply read again, and a restarted process catches up from the last commit. The loop wires
four parts, each with its own contract and unit tests:

- ``ingest_service.fetcher``: polling and pausing (records of a poll wait, their partitions
  paused, until the buffer takes them; the loop polls between any two writes);
- ``ingest_service.flusher``: writing the buffer (``ingest_service.buffer``) in parts, retrying
  while Neo4j is away, and isolating (``ingest_service.bisection``) and dead-lettering the events
  Neo4j refuses or that conflict with stored nodes, with their reason;
- ``ingest_service.checkpoint``: dead letters, commits after the write, rewinds after a drop;
- ``ingest_service.subscription``: the Kafka consumer, the rebalance listener, and a new Kafka
  consumer when the group silently left this member out.

Malformed messages are dead-lettered on arrival, with their reason. The rebalance listener
(run inside ``poll()``, where nothing may block) drops everything held uncommitted when
partitions are revoked, and seeks a partition that comes back to the first offset dropped. A
flush that a rebalance dropped meanwhile ends uncommitted.

Kafka clients come from factories and the store is anything with ``write``, so unit tests run
the loop on fakes, with a fake clock.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from ingest_service.buffer import Buffer, Taken
from ingest_service.checkpoint import Checkpoint
from ingest_service.clients import (
    DeadLettersFactory,
    GroupProbeFactory,
    Record,
    SourceFactory,
    dlq_producer,
    group_probe,
    kafka_consumer,
)
from ingest_service.fetcher import Fetcher, lag
from ingest_service.flusher import Flusher, Writer
from ingest_service.metrics import Metrics
from ingest_service.settings import IngestSettings
from ingest_service.store import StoreUnavailable
from ingest_service.subscription import Subscription
from sparkprov.events import MalformedEvent, decode

__all__ = ["Consumer", "Writer"]

log = logging.getLogger(__name__)

_LAG_EVERY_S = 5.0


class _Dropped(Exception):
    """A rebalance dropped the buffer while a flush was writing it: end the flush uncommitted."""


class Consumer:
    """``clock`` is monotonic seconds (``/healthz`` compares ``metrics.last_loop_monotonic``
    with ``time.monotonic``); ``sleep`` waits between retries and returns early on :meth:`stop`
    by default."""

    def __init__(
        self,
        settings: IngestSettings,
        store: Writer,
        metrics: Metrics,
        *,
        source: SourceFactory = kafka_consumer,
        dead_letters: DeadLettersFactory = dlq_producer,
        group: GroupProbeFactory = group_probe,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], object] | None = None,
    ) -> None:
        self._settings = settings
        self.metrics = metrics
        self._clock = clock
        self._stop = threading.Event()
        self._sleep = sleep or self._stop.wait
        self._buffer = self._new_buffer()
        self._subscription = Subscription(
            settings,
            metrics,
            source=source,
            group=group,
            on_revoked=self._revoked,
            on_assigned=self._assigned,
            on_replaced=self._replaced,
        )
        self._checkpoint = Checkpoint(settings.dlq_topic, dead_letters(settings), metrics)
        self._fetcher = Fetcher(self._checkpoint.received, clock)
        self._flusher = Flusher(
            store,
            settings,
            metrics,
            dead_letter=self._checkpoint.dead_letter,
            between=self._between_writes,
            sleep=self._sleep,
            stopping=self._stop.is_set,
            clock=clock,
        )

    def stop(self) -> None:
        self._stop.set()

    def busy(self, quiet_s: float = 1.0) -> bool:
        """Whether records wait to be written, events are buffered, or records arrived within
        the last ``quiet_s``: while a stream flows, the indexer yields (data first)."""
        return self._buffer.flush.events > 0 or self._fetcher.busy(quiet_s)

    def run(self) -> None:
        """Consume until :meth:`stop`; then write and commit what is buffered."""
        self.metrics.ready = True
        last_lag = self._clock()
        try:
            try:
                while not self._stop.is_set():
                    self.metrics.last_loop_monotonic = self._clock()
                    self._fetcher.poll(self._subscription.source)
                    self._take_waiting()
                    if self._buffer.due(self._clock()):
                        self._flush(retry=True)
                    if self._clock() - last_lag > _LAG_EVERY_S:
                        self._update_lag()
                        last_lag = self._clock()
                    self._subscription.watch(self._clock())
                if self._buffer:
                    self._flush(retry=False)
            except StoreUnavailable:
                log.warning(
                    "stopping with %d events unwritten; uncommitted, they will be redelivered",
                    self._buffer.flush.events,
                )
        finally:
            self._subscription.close()
            self._checkpoint.close()

    def _new_buffer(self) -> Buffer:
        return Buffer(self._settings.batch_rows, self._settings.batch_ms)

    def _take_waiting(self) -> None:
        """Take waiting records until the buffer holds a write's worth (one write between
        polls)."""
        while self._fetcher.waiting and not self._buffer.full:
            tp, record = self._fetcher.pop()
            self._take(tp, record)

    def _take(self, tp: Any, record: Record) -> None:
        self.metrics.messages += 1
        try:
            event = decode(record.value)
        except MalformedEvent as e:
            self._buffer.skip(self._clock())
            self._checkpoint.dead_letter(tp, record, e.reason, e.detail)
            return
        self._checkpoint.take(tp, record.offset)
        self._buffer.add(Taken(tp, record, event), self._clock())

    def _flush(self, *, retry: bool) -> None:
        """Write the buffer, then commit; a rebalance that drops the buffer meanwhile ends the
        flush uncommitted."""
        buffer = self._buffer
        try:
            written = self._flusher.flush(buffer, retry=retry)
        except _Dropped:
            return
        self._buffer = self._new_buffer()
        self._commit()
        if written.result is not None:
            written.count_in(self.metrics, buffer.flush.events)

    def _between_writes(self) -> None:
        """Poll paused between two writes of a flush, to stay in the group; raises _Dropped if
        a rebalance inside the poll dropped the buffer being written."""
        buffer = self._buffer
        self._fetcher.hold(self._subscription.source)
        if self._buffer is not buffer:
            raise _Dropped

    def _commit(self) -> None:
        """Commit; if a dead letter was not acknowledged, drop everything held and read it again
        from the committed offsets, after a back-off."""
        source = self._subscription.source
        wait = self._checkpoint.commit(source)
        if wait is None:
            return
        self._drop()
        self._checkpoint.rewind(source, source.assignment())
        self._sleep(wait)
        self._fetcher.hold(source)

    def _drop(self) -> None:
        """Give up on everything held uncommitted (buffered or waiting): it is read again."""
        self._checkpoint.drop()
        self._buffer = self._new_buffer()
        self._fetcher.clear()

    # -- the subscription's hooks (revoked and assigned run inside poll: nothing may block) --

    def _revoked(self, revoked: frozenset[Any]) -> None:
        # Drop what we hold without committing it: the partitions' next owner resumes from the
        # last commit, which only ever follows a Neo4j commit, and the writes are idempotent, so
        # the redelivery is harmless.
        if self._checkpoint.holding:
            log.warning(
                "partitions revoked: %d buffered events and %d waiting records left uncommitted "
                "for redelivery",
                self._buffer.flush.events,
                self._fetcher.waiting,
            )
            self._drop()

    def _assigned(self, assigned: frozenset[Any]) -> None:
        # A partition that stays with us may keep its fetch position past what we dropped.
        self._checkpoint.rewind(self._subscription.source, assigned)

    def _replaced(self) -> None:
        # The new Kafka consumer holds no partition, so nothing is held; drop anyway, so nothing
        # can be committed through the new consumer for records the old one returned.
        if self._checkpoint.holding:
            self._drop()

    def _update_lag(self) -> None:
        try:
            self.metrics.lag = lag(self._subscription.source)
        except Exception:  # noqa: BLE001 - metrics only
            log.debug("lag update failed", exc_info=True)
