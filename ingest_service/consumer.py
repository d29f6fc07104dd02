"""The consume loop: poll, decode, buffer, write to Neo4j, then commit the offsets.

Malformed messages are copied to the dead-letter topic with their reason (headers) and skipped;
the DLQ producer is flushed before the offsets that skip them are committed. When Neo4j is down,
the loop pauses its partitions, backs off and retries the same flush: nothing is committed until
the write succeeds, so nothing is lost.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from ingest_service.settings import IngestSettings
from ingest_service.store import Flush, FlushResult, Store, StoreUnavailable
from sparkprov.events import MalformedEvent, decode

__all__ = ["Consumer", "Metrics"]

log = logging.getLogger(__name__)


@dataclass
class Metrics:
    """Counters for /metrics; written by the loop thread, read by the HTTP thread."""

    messages: int = 0
    dead_letters: int = 0
    flushes: int = 0
    nodes_written: int = 0
    edges_written: int = 0
    runs_completed: int = 0
    runs_dangling: int = 0  # completed runs whose edges reference never-stored nodes
    dangling_nodes: int = 0  # those never-stored nodes
    write_seconds_total: float = 0.0
    last_write_seconds: float = 0.0
    store_failures: int = 0
    lag: int = 0
    last_loop_monotonic: float = field(default_factory=time.monotonic)
    ready: bool = False


def _merge(total: FlushResult | None, part: FlushResult) -> FlushResult:
    if total is None:
        return part
    return FlushResult(
        total.nodes_created + part.nodes_created,
        total.edges_created + part.edges_created,
        total.components_merged + part.components_merged,
        total.completed_runs + part.completed_runs,
        {**total.dangling, **part.dangling},
    )


class Consumer:
    def __init__(self, settings: IngestSettings, store: Store, metrics: Metrics) -> None:
        from kafka import KafkaConsumer, KafkaProducer
        from kafka.consumer.subscription_state import ConsumerRebalanceListener

        self._settings = settings
        self._store = store
        self.metrics = metrics
        self._stop = threading.Event()
        self._buffer = Flush()
        self._uncommitted = False
        # Next offset to commit per (topic, partition): only what the buffer holds is committed.
        self._offsets: dict[tuple[str, int], int] = {}
        # First offset the buffer holds per partition: where to resume if the buffer is dropped.
        self._firsts: dict[tuple[str, int], int] = {}
        # Dropped at a revocation, to seek back to if the partition comes back to this member.
        self._rewind: dict[tuple[str, int], int] = {}
        self._generation = 0  # bumped whenever a revocation drops the buffer
        self._first_buffered = 0.0
        self._consumer = KafkaConsumer(
            bootstrap_servers=settings.kafka_bootstrap.split(","),
            group_id=settings.group_id,
            enable_auto_commit=False,
            auto_offset_reset="earliest",
            max_poll_records=settings.max_poll_records,
            max_partition_fetch_bytes=16 * 1024 * 1024,
            fetch_max_bytes=64 * 1024 * 1024,
            # A killed member is noticed (and its partitions reassigned) within 10s.
            session_timeout_ms=10000,
            heartbeat_interval_ms=3000,
        )
        self._dlq = KafkaProducer(
            bootstrap_servers=settings.kafka_bootstrap.split(","),
            acks="all",
            max_request_size=16 * 1024 * 1024,
        )
        outer = self

        class _Listener(ConsumerRebalanceListener):  # type: ignore[misc]
            def on_partitions_revoked(self, revoked: Any) -> None:
                # Runs on the client's IO loop (kafka-python 3), inside our poll(): no blocking
                # calls here. Drop what we hold without committing it: the partitions' next
                # owner resumes from the last commit, which only ever follows a Neo4j commit,
                # and the writes are idempotent, so the redelivery is harmless.
                if outer._uncommitted:
                    log.warning(
                        "partitions revoked: %d buffered events left uncommitted for redelivery",
                        outer._buffer.events,
                    )
                    outer._rewind.update(outer._firsts)
                    outer._generation += 1
                    outer._buffer = Flush()
                    outer._offsets = {}
                    outer._firsts = {}
                    outer._uncommitted = False

            def on_partitions_assigned(self, assigned: Any) -> None:
                log.info("assigned partitions %s", sorted(tp.partition for tp in assigned))
                # A partition that stays with us may keep its fetch position past what we
                # dropped: seek back to the first dropped offset (seek only sets the position).
                for tp in assigned:
                    offset = outer._rewind.pop((tp.topic, tp.partition), None)
                    if offset is not None:
                        outer._consumer.seek(tp, offset)
                outer._rewind.clear()

        self._consumer.subscribe([settings.topic], listener=_Listener())

    def stop(self) -> None:
        self._stop.set()

    def run(self) -> None:
        """Consume until :meth:`stop`; then write and commit what is buffered."""
        self.metrics.ready = True
        last_lag = 0.0
        try:
            while not self._stop.is_set():
                self.metrics.last_loop_monotonic = time.monotonic()
                polled = self._consumer.poll(timeout_ms=100)
                generation = self._generation
                for records in polled.values():
                    for record in records:
                        if self._generation != generation:
                            break
                        self._take(record)
                        # Flush inside a poll too: a poll may bring far more than one batch.
                        if self._buffer.rows >= self._settings.batch_rows:
                            self._flush(retry=True)
                if self._generation != generation:
                    # A rebalance (inside a flush's retries) dropped the buffer: leave the rest
                    # of this poll untaken, rewound, so it is read again after what was dropped.
                    self._rewind_untaken(polled)
                if self._due():
                    self._flush(retry=True)
                if time.monotonic() - last_lag > 5:
                    self._update_lag()
                    last_lag = time.monotonic()
            if self._uncommitted:
                try:
                    self._flush(retry=False)
                except StoreUnavailable:
                    log.warning(
                        "stopping with %d events unwritten; uncommitted, they will be redelivered",
                        self._buffer.events,
                    )
        finally:
            self._consumer.close(autocommit=False)
            self._dlq.close(timeout=10)

    def _take(self, record: Any) -> None:
        self.metrics.messages += 1
        if not self._uncommitted:
            self._first_buffered = time.monotonic()
        self._uncommitted = True
        self._offsets[(record.topic, record.partition)] = record.offset + 1
        self._firsts.setdefault((record.topic, record.partition), record.offset)
        try:
            event = decode(record.value)
        except MalformedEvent as e:
            self._dead_letter(record, e)
            return
        self._buffer.add(event)

    def _dead_letter(self, record: Any, error: MalformedEvent) -> None:
        self.metrics.dead_letters += 1
        log.warning(
            "dead-lettering %s[%d]@%d: %s", record.topic, record.partition, record.offset, error
        )
        headers = [
            ("reason", error.reason.encode()),
            ("detail", error.detail[:1000].encode()),
            ("source", f"{record.topic}/{record.partition}/{record.offset}".encode()),
        ]
        self._dlq.send(
            self._settings.dlq_topic, value=record.value, key=record.key, headers=headers
        )

    def _due(self) -> bool:
        if not self._uncommitted:
            return False
        if self._buffer.rows >= self._settings.batch_rows:
            return True
        return (time.monotonic() - self._first_buffered) * 1000 >= self._settings.batch_ms

    def _flush(self, *, retry: bool) -> None:
        backoff = 0.5
        paused = False
        while True:
            try:
                started = time.perf_counter()
                result = None
                if self._buffer:
                    for part in self._buffer.split(self._settings.batch_rows):
                        result = _merge(result, self._store.write(part))
                elapsed = time.perf_counter() - started
                break
            except StoreUnavailable as e:
                self.metrics.store_failures += 1
                if not retry or self._stop.is_set():
                    raise
                paused = True
                log.warning(
                    "Neo4j unavailable (%s); retrying in %.1fs, nothing committed", e, backoff
                )
                self._stop.wait(backoff)
                self._poll_paused()
                backoff = min(backoff * 2, 15.0)
        if paused:
            self._consumer.resume(*self._consumer.paused())
        self._dlq.flush(timeout=30)
        from kafka import OffsetAndMetadata, TopicPartition
        from kafka.errors import CommitFailedError

        offsets = {
            TopicPartition(topic, partition): OffsetAndMetadata(offset, "", -1)
            for (topic, partition), offset in self._offsets.items()
        }
        try:
            if offsets:
                self._consumer.commit(offsets)
        except CommitFailedError as e:
            # The group rebalanced under us: the writes are idempotent, redelivery is harmless.
            log.warning(
                "offset commit failed after a rebalance (%s); events will be redelivered", e
            )
        if result is not None:
            m = self.metrics
            m.flushes += 1
            m.nodes_written += result.nodes_created
            m.edges_written += result.edges_created
            m.runs_completed += len(result.completed_runs)
            m.runs_dangling += len(result.dangling)
            m.dangling_nodes += sum(result.dangling.values())
            m.write_seconds_total += elapsed
            m.last_write_seconds = elapsed
            for run in result.completed_runs:
                log.info("run %s complete", run)
            log.debug(
                "flushed %d events: %d new nodes, %d new edges, %d component merges in %.3fs",
                self._buffer.events,
                result.nodes_created,
                result.edges_created,
                result.components_merged,
                elapsed,
            )
        self._buffer = Flush()
        self._offsets = {}
        self._firsts = {}
        self._uncommitted = False

    def _rewind_untaken(self, polled: dict[Any, list[Any]]) -> None:
        assigned = self._consumer.assignment()
        for tp, records in polled.items():
            if records and tp in assigned:
                position = self._consumer.position(tp)
                self._consumer.seek(tp, min(records[0].offset, position))

    def _poll_paused(self) -> None:
        """Poll with every partition paused, to stay in the group while Neo4j is away. A
        rebalance inside the poll may hand us partitions that are not paused yet: records it
        returns are not taken, and their partitions are rewound so nothing is skipped."""
        from kafka import TopicPartition

        self._consumer.pause(*self._consumer.assignment())
        polled = self._consumer.poll(timeout_ms=0)
        for tp, records in polled.items():
            if records:
                self._consumer.seek(TopicPartition(tp.topic, tp.partition), records[0].offset)
        self._consumer.pause(*self._consumer.assignment())

    def _update_lag(self) -> None:
        try:
            assignment = self._consumer.assignment()
            if not assignment:
                self.metrics.lag = 0
                return
            ends = self._consumer.end_offsets(list(assignment))
            self.metrics.lag = sum(
                max(0, ends[tp] - self._consumer.position(tp)) for tp in assignment
            )
        except Exception:  # noqa: BLE001 - metrics only
            log.debug("lag update failed", exc_info=True)
