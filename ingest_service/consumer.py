"""The consume loop: poll, decode, buffer, write to Neo4j, then commit the offsets.

- An offset is committed only after Neo4j committed every record before it, and after Kafka
  acknowledged every dead letter before it (``ingest_service.offsets`` keeps that account).
- Malformed messages are copied to the dead-letter topic with their reason (headers) and skipped.
- A poison record does not stop the partition: when Neo4j refuses a write for its data
  (``RecordRejected``: retrying cannot fix it), the flush's events are written again in halves,
  recursively, until the event(s) at fault are alone; those are dead-lettered with the reason
  (``neo4j:<status code>``) and the rest is stored. A rejection counts as the data's fault only
  if Neo4j still accepts an empty write; otherwise it is an outage, retried as below.
- An event that re-sends a stored node with other content (op, label, relation or run) is stored
  except for that node, which keeps its first version; the event is copied to the dead-letter
  topic with reason ``conflict`` and the conflicting nodes are counted (``metrics.conflicts``).
  Before a commit the DLQ producer is flushed and every send checked; a dead letter that is not
  acknowledged holds its partition's commit back, everything held is dropped and read again from
  the committed offsets after a back-off (the writes are idempotent, so re-reading is harmless).
- When Neo4j is down, the loop pauses its partitions, backs off and retries the same write:
  nothing is committed until it succeeds, so nothing is lost.
- The loop polls between any two writes, and a write is at most ``batch_rows`` rows
  (``Flush.split``), so the time between polls stays far below ``max_poll_interval_ms`` however
  large the backlog. Records a poll returned beyond one buffer wait in the loop with their
  partitions paused: the polls in between return nothing and only keep the group membership.
- kafka-python 3 calls the rebalance listener on its IO loop, inside our poll(): the listener
  must not block (no flush, no commit). On a revocation it drops everything held uncommitted (the
  buffer and the waiting records); a partition that comes back is sought back to the first offset
  dropped, others resume, at their next owner, from the last commit.
- A member that holds no partition for ``unassigned_s`` is checked against the broker's view of
  its group; if the group left it out (kafka-python can drop an assignment without a word: see
  ``ingest_service.membership``), its Kafka consumer is closed and made again through the
  factory, logged as a warning and counted (``metrics.consumer_recreations``). A legitimately
  idle member (more members than partitions) is left alone.

Kafka clients come from factories and the store is anything with ``write``, so unit tests run
the loop on fakes, with a fake clock.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from typing import Any, NamedTuple, Protocol

from kafka import ConsumerRebalanceListener, OffsetAndMetadata
from kafka.errors import CommitFailedError, KafkaError

from ingest_service.clients import (
    DeadLettersFactory,
    GroupProbe,
    GroupProbeFactory,
    Record,
    SourceFactory,
    dlq_producer,
    group_probe,
    kafka_consumer,
)
from ingest_service.membership import Watchdog, stuck
from ingest_service.metrics import Metrics
from ingest_service.offsets import Delivery, Offsets
from ingest_service.settings import IngestSettings
from ingest_service.store import (
    Flush,
    FlushResult,
    RecordRejected,
    StoreError,
    StoreUnavailable,
)
from sparkprov.events import Batch, Event, MalformedEvent, decode

__all__ = ["Consumer", "Writer"]

log = logging.getLogger(__name__)

_FIRST_BACKOFF_S = 0.5
_MAX_BACKOFF_S = 15.0
_DLQ_FLUSH_S = 30.0
_LAG_EVERY_S = 5.0


class Writer(Protocol):
    """Where flushes go: ``ingest_service.store.Store`` (raises StoreUnavailable when down,
    RecordRejected when Neo4j refuses the data)."""

    def write(self, flush: Flush) -> FlushResult: ...


class _Taken(NamedTuple):
    """A buffered event and the record it came from (to dead-letter it after a write)."""

    tp: Any
    record: Record
    event: Event


class _Written(NamedTuple):
    """What writing some taken events did: the merged result (None if nothing was written),
    the write time, and the events with conflicting nodes (by ``id`` of their _Taken)."""

    result: FlushResult | None
    seconds: float
    conflicts: dict[int, tuple[_Taken, list[int]]]


class _Undelivered:
    """A dead letter whose send raised at once: never acknowledged."""

    def succeeded(self) -> bool:
        return False


class _Listener(ConsumerRebalanceListener):  # type: ignore[misc]
    def __init__(
        self,
        revoked: Callable[[Iterable[Any]], None],
        assigned: Callable[[Iterable[Any]], None],
    ) -> None:
        self._revoked = revoked
        self._assigned = assigned

    def on_partitions_revoked(self, revoked: Any) -> None:
        self._revoked(revoked)

    def on_partitions_assigned(self, assigned: Any) -> None:
        self._assigned(assigned)


def _merge(total: FlushResult | None, part: FlushResult) -> FlushResult:
    if total is None:
        return part
    return FlushResult(
        total.nodes_created + part.nodes_created,
        total.edges_created + part.edges_created,
        total.components_merged + part.components_merged,
        total.completed_runs + part.completed_runs,
        {**total.dangling, **part.dangling},
        total.conflicts + part.conflicts,
    )


def _combine(total: _Written, part: _Written) -> _Written:
    result = total.result if part.result is None else _merge(total.result, part.result)
    return _Written(result, total.seconds + part.seconds, {**total.conflicts, **part.conflicts})


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
        self._store = store
        self.metrics = metrics
        self._clock = clock
        self._stop = threading.Event()
        self._sleep = sleep or self._stop.wait
        self._buffer = Flush()
        self._taken: list[_Taken] = []  # the buffer's events, in order
        # Records polled but not taken yet (their partitions stay paused until they are).
        self._waiting: deque[tuple[Any, Record]] = deque()
        self._offsets: Offsets[Any] = Offsets()
        self._generation = 0  # bumped whenever what we hold is dropped
        self._first_buffered = 0.0
        self._last_records = -1e18  # when a poll last returned records (busy)
        self._dlq_backoff = _FIRST_BACKOFF_S
        self._source = source
        self._group = group
        self._probe: GroupProbe | None = None  # made at the first check of the membership
        self._watchdog = Watchdog(
            settings.unassigned_s, probe_every_s=min(5.0, settings.unassigned_s / 3)
        )
        # The partitions the rebalance listener gave us and did not take back. Not the
        # consumer's assignment(): after a revocation kafka-python keeps listing the partitions
        # until the next assignment is applied, which may never happen (membership).
        self._held: frozenset[Any] = frozenset()
        self._kafka = source(settings)
        self._dlq = dead_letters(settings)
        self._subscribe()

    def _subscribe(self) -> None:
        self._kafka.subscribe(
            [self._settings.topic], listener=_Listener(self._revoked, self._assigned)
        )

    def stop(self) -> None:
        self._stop.set()

    def busy(self, quiet_s: float = 1.0) -> bool:
        """Whether records wait to be written, events are buffered, or records arrived within
        the last ``quiet_s``: while a stream flows, the indexer yields (data first)."""
        return (
            bool(self._waiting)
            or self._buffer.events > 0
            or self._clock() - self._last_records < quiet_s
        )

    def run(self) -> None:
        """Consume until :meth:`stop`; then write and commit what is buffered."""
        self.metrics.ready = True
        last_lag = self._clock()
        try:
            try:
                while not self._stop.is_set():
                    self.metrics.last_loop_monotonic = self._clock()
                    self._poll()
                    self._take_waiting()
                    if self._due():
                        self._flush(retry=True)
                    if self._clock() - last_lag > _LAG_EVERY_S:
                        self._update_lag()
                        last_lag = self._clock()
                    self._watch_membership()
                if self._offsets.taken:
                    self._flush(retry=False)
            except StoreUnavailable:
                log.warning(
                    "stopping with %d events unwritten; uncommitted, they will be redelivered",
                    self._buffer.events,
                )
        finally:
            self._kafka.close(autocommit=False)
            self._dlq.close(timeout=10)
            if self._probe is not None:
                self._probe.close()

    # -- polling --------------------------------------------------------------------------

    def _poll(self) -> None:
        """Fetch new records, or, while records of an earlier poll still wait, poll paused."""
        if self._waiting:
            self._poll_paused()
            return
        paused = self._kafka.paused()
        if paused:
            self._kafka.resume(*paused)
        for tp, records in self._kafka.poll(timeout_ms=100).items():
            if records:
                self._last_records = self._clock()
                self._offsets.received(tp, records[0].offset, records[-1].offset + 1)
                self._waiting.extend((tp, record) for record in records)

    def _poll_paused(self) -> None:
        """Poll with every partition paused, to stay in the group while records wait or Neo4j
        is away. A rebalance inside the poll may hand us partitions that are not paused yet:
        records it returns are not taken, and their partitions are rewound so nothing is
        skipped."""
        self._kafka.pause(*self._kafka.assignment())
        for tp, records in self._kafka.poll(timeout_ms=0).items():
            if records:
                self._kafka.seek(tp, records[0].offset)
        self._kafka.pause(*self._kafka.assignment())

    def _back_off(self, seconds: float) -> None:
        self._sleep(seconds)
        self._poll_paused()

    # -- membership -----------------------------------------------------------------------

    def _watch_membership(self) -> None:
        """Recreate the Kafka consumer if it holds no partition while its group left it out."""
        now = self._clock()
        held = len(self._held)
        self.metrics.assigned_partitions = held
        if not self._watchdog.due(now, held > 0):
            return
        reason = self._stuck_reason()
        unassigned_s = self._watchdog.unassigned_for(now)
        if self._watchdog.observe(now, reason) and reason is not None:
            self._recreate(reason, unassigned_s)

    def _stuck_reason(self) -> str | None:
        """Why the broker's view of the group says this member is left out; None when it is not,
        or when Kafka does not answer (a consumer made now would fare no better)."""
        try:
            if self._probe is None:
                self._probe = self._group(self._settings)
            view = self._probe.describe(self._settings.group_id, self._settings.topic)
        except Exception as e:  # noqa: BLE001 - a failed check must not stop consuming
            log.info("membership check failed (%s); trying again later", e)
            return None
        return stuck(view, self._settings.client_id)

    def _recreate(self, reason: str, unassigned_s: float) -> None:
        """Close the Kafka consumer and subscribe a new one. The new one is made first: if
        Kafka refuses, the old one stays and the watchdog tries again after a longer bound."""
        try:
            fresh = self._source(self._settings)
        except KafkaError as e:
            log.warning("recreating the Kafka consumer failed (%s); trying again later", e)
            return
        self.metrics.consumer_recreations += 1
        log.warning(
            "kafka consumer recreated: event=consumer_recreated reason=%r group=%s topic=%s "
            "client_id=%s unassigned_s=%.0f recreations=%d",
            reason,
            self._settings.group_id,
            self._settings.topic,
            self._settings.client_id,
            unassigned_s,
            self.metrics.consumer_recreations,
            extra={
                "event": "consumer_recreated",
                "reason": reason,
                "group": self._settings.group_id,
                "topic": self._settings.topic,
                "unassigned_s": unassigned_s,
            },
        )
        # It holds no partition, so nothing is held; drop anyway, so nothing can be committed
        # through the new consumer for records the old one returned.
        if self._offsets.holding:
            self._drop()
        old, self._kafka = self._kafka, fresh
        self._held = frozenset()
        try:
            old.close(autocommit=False)
        except Exception:  # noqa: BLE001 - the old consumer is given up either way
            log.warning("closing the replaced Kafka consumer failed", exc_info=True)
        self._subscribe()

    # -- rebalance (runs on kafka-python's IO loop: nothing here may block) -----------------

    def _revoked(self, revoked: Iterable[Any]) -> None:
        self._held = self._held - frozenset(revoked)
        # Drop what we hold without committing it: the partitions' next owner resumes from the
        # last commit, which only ever follows a Neo4j commit, and the writes are idempotent, so
        # the redelivery is harmless.
        if self._offsets.holding:
            log.warning(
                "partitions revoked: %d buffered events and %d waiting records left uncommitted "
                "for redelivery",
                self._buffer.events,
                len(self._waiting),
            )
            self._drop()

    def _assigned(self, assigned: Iterable[Any]) -> None:
        assigned = list(assigned)
        self._held = self._held | frozenset(assigned)
        log.info("assigned partitions %s", sorted(tp.partition for tp in assigned))
        # A partition that stays with us may keep its fetch position past what we dropped: seek
        # back to the first dropped offset (seek only sets the position).
        for tp in assigned:
            offset = self._offsets.rewind(tp)
            if offset is not None:
                self._kafka.seek(tp, offset)
        self._offsets.forget_rewinds()

    def _drop(self) -> None:
        self._offsets.drop()
        self._buffer = Flush()
        self._taken = []
        self._waiting.clear()
        self._generation += 1

    # -- taking records -------------------------------------------------------------------

    def _take_waiting(self) -> None:
        """Take waiting records until the buffer holds a write's worth (one write between
        polls)."""
        while self._waiting and self._buffer.rows < self._settings.batch_rows:
            tp, record = self._waiting.popleft()
            self._take(tp, record)

    def _take(self, tp: Any, record: Record) -> None:
        self.metrics.messages += 1
        if not self._offsets.taken:
            self._first_buffered = self._clock()
        try:
            event = decode(record.value)
        except MalformedEvent as e:
            self._offsets.dead_letter(
                tp, record.offset, self._dead_letter(record, e.reason, e.detail)
            )
            return
        self._offsets.take(tp, record.offset)
        self._buffer.add(event)
        self._taken.append(_Taken(tp, record, event))

    def _dead_letter(self, record: Record, reason: str, detail: str) -> Delivery:
        self.metrics.dead_letters += 1
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
        try:
            return self._dlq.send(
                self._settings.dlq_topic, value=record.value, key=record.key, headers=headers
            )
        except KafkaError as e:
            log.warning("dead letter not sent (%s): its offset will not be committed", e)
            return _Undelivered()

    def _due(self) -> bool:
        if not self._offsets.taken:
            return False
        if self._buffer.rows >= self._settings.batch_rows:
            return True
        return (self._clock() - self._first_buffered) * 1000 >= self._settings.batch_ms

    # -- writing and committing -----------------------------------------------------------

    def _flush(self, *, retry: bool) -> None:
        """Write the buffer (isolating and dead-lettering the events Neo4j refuses), dead-letter
        copies of the events with conflicting nodes, then commit. A rebalance that drops the
        buffer meanwhile ends the flush uncommitted."""
        taken = self._taken
        try:
            written = self._write_events(taken, self._buffer, retry=retry)
        except RecordRejected as e:
            log.warning(
                "Neo4j refused a flush of %d events (%s): writing it in halves to find the "
                "events at fault",
                len(taken),
                e.reason,
            )
            written = self._isolate(taken, e, retry=retry)
        if written is None:
            return
        events = self._buffer.events
        self._buffer = Flush()
        self._taken = []
        for entry, ids in written.conflicts.values():
            self._conflict(entry, ids)
        self._commit()
        if written.result is not None:
            self._count(written.result, events, written.seconds)

    def _write_events(self, taken: list[_Taken], flush: Flush, *, retry: bool) -> _Written | None:
        """Write ``flush`` (the events ``taken``) in parts of at most ``batch_rows``, polling
        (paused) between parts. None if a rebalance dropped the buffer meanwhile; raises
        RecordRejected if Neo4j refuses a part (earlier parts stay written: idempotent)."""
        generation = self._generation
        owner = {
            id(block): entry
            for entry in taken
            if isinstance(entry.event, Batch)
            for block in entry.event.blocks
        }
        total = _Written(None, 0.0, {})
        parts = flush.split(self._settings.batch_rows) if flush else []
        for i, part in enumerate(parts):
            if i:
                self._poll_paused()
                if self._generation != generation:
                    return None
            written = self._write(part, retry=retry)
            if written is None:
                return None
            result, seconds = written
            for position, node in result.conflicts:
                entry = owner[id(part.blocks[position])]
                total.conflicts.setdefault(id(entry), (entry, []))[1].append(node)
            total = _combine(total, _Written(result, seconds, {}))
        return total

    def _isolate(
        self, taken: list[_Taken], error: RecordRejected, *, retry: bool
    ) -> _Written | None:
        """Write ``taken`` again event by event where needed: halves, recursively and in order;
        a half Neo4j accepts is stored, a single event it refuses is dead-lettered. With k events
        at fault among n this takes about 2k log2(n) writes. Polls (paused) before each write;
        None if a rebalance dropped the buffer meanwhile."""
        generation = self._generation
        total = _Written(None, 0.0, {})
        if len(taken) == 1:
            self._reject(taken[0], error)
            return total
        groups = deque([taken[: len(taken) // 2], taken[len(taken) // 2 :]])
        while groups:
            group = groups.popleft()
            if not group:
                continue
            self._poll_paused()
            if self._generation != generation:
                return None
            try:
                written = self._write_events(group, Flush.of(t.event for t in group), retry=retry)
            except RecordRejected as e:
                if len(group) == 1:
                    self._reject(group[0], e)
                else:
                    middle = len(group) // 2
                    groups.extendleft([group[middle:], group[:middle]])
                continue
            if written is None:
                return None
            total = _combine(total, written)
        return total

    def _reject(self, entry: _Taken, error: RecordRejected) -> None:
        self.metrics.store_rejections += 1
        delivery = self._dead_letter(entry.record, error.reason, error.detail)
        self._offsets.dead_letter(entry.tp, entry.record.offset, delivery)

    def _conflict(self, entry: _Taken, ids: list[int]) -> None:
        """The event is stored except ``ids``, which keep their stored version: a copy goes to
        the dead-letter topic, for whoever sent two versions of one node."""
        self.metrics.conflicts += len(ids)
        detail = (
            f"{len(ids)} node(s) already stored with another op, label, relation or run kept "
            f"their stored version; the rest of the event is stored. Ids: "
            + ", ".join(map(str, ids[:20]))
            + (" ..." if len(ids) > 20 else "")
        )
        delivery = self._dead_letter(entry.record, "conflict", detail)
        self._offsets.dead_letter(entry.tp, entry.record.offset, delivery)

    def _accepts_empty_write(self) -> bool:
        """Whether Neo4j still takes a write with no data (the procedure is called, with empty
        columns): if not, a refusal is not the data's fault (a broken store, or a procedure of
        another version, must not send every event to the dead-letter topic)."""
        try:
            self._store.write(Flush())
        except StoreError as e:
            log.warning("Neo4j refuses even an empty write (%s): treated as unavailable", e)
            return False
        return True

    def _write(self, part: Flush, *, retry: bool) -> tuple[FlushResult, float] | None:
        """One part and its write time. While Neo4j is unavailable: back off with every
        partition paused and retry (nothing is committed meanwhile); None if a rebalance
        dropped the buffer while waiting. Raises StoreUnavailable without ``retry`` or once
        stopping, and RecordRejected when Neo4j refuses the part's data."""
        generation = self._generation
        backoff = _FIRST_BACKOFF_S
        while True:
            started = self._clock()
            try:
                result = self._store.write(part)
            except (StoreUnavailable, RecordRejected) as e:
                if isinstance(e, RecordRejected) and self._accepts_empty_write():
                    raise
                self.metrics.store_failures += 1
                if not retry or self._stop.is_set():
                    if isinstance(e, StoreUnavailable):
                        raise
                    raise StoreUnavailable(str(e)) from e
                log.warning(
                    "Neo4j unavailable (%s); retrying in %.1fs, nothing committed", e, backoff
                )
                self._back_off(backoff)
                if self._generation != generation:
                    return None
                backoff = min(backoff * 2, _MAX_BACKOFF_S)
                continue
            elapsed = self._clock() - started
            if elapsed * 1000 > self._settings.max_poll_interval_ms / 2:
                log.warning(
                    "writing %d rows took %.0fs, over half of max_poll_interval_ms: lower "
                    "SPARKPROV_INGEST_BATCH_ROWS before Kafka drops this member from its group",
                    part.rows,
                    elapsed,
                )
            return result, elapsed

    def _commit(self) -> None:
        """Commit what the stored buffer and the acknowledged dead letters cover. A dead letter
        that is not acknowledged holds its partition back: then everything held is dropped and
        read again from the committed offsets, after a back-off."""
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
                self._kafka.commit(
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
            self._dlq_backoff = _FIRST_BACKOFF_S
            return
        self.metrics.dead_letter_failures += 1
        log.error(
            "dead letters of %s not acknowledged: committed up to them only; reading again "
            "from there in %.1fs",
            sorted(f"{tp.topic}[{tp.partition}]" for tp in held),
            self._dlq_backoff,
        )
        self._drop()
        for tp in self._kafka.assignment():
            offset = self._offsets.rewind(tp)
            if offset is not None:
                self._kafka.seek(tp, offset)
        self._offsets.forget_rewinds()
        self._back_off(self._dlq_backoff)
        self._dlq_backoff = min(self._dlq_backoff * 2, _MAX_BACKOFF_S)

    def _count(self, result: FlushResult, events: int, elapsed: float) -> None:
        m = self.metrics
        m.flushes += 1
        m.nodes_written += result.nodes_created
        m.edges_written += result.edges_created
        m.runs_completed += len(result.completed_runs)
        m.runs_dangling += len(result.dangling)
        m.dangling_nodes += sum(result.dangling.values())
        m.write_seconds_total += elapsed
        m.flush_seconds.observe(elapsed)
        m.last_write_seconds = elapsed
        for run in result.completed_runs:
            log.info("run %s complete", run)
        log.debug(
            "flushed %d events: %d new nodes, %d new edges, %d component merges in %.3fs",
            events,
            result.nodes_created,
            result.edges_created,
            result.components_merged,
            elapsed,
        )

    def _update_lag(self) -> None:
        try:
            assignment = self._kafka.assignment()
            if not assignment:
                self.metrics.lag = 0
                return
            ends = self._kafka.end_offsets(list(assignment))
            self.metrics.lag = sum(
                max(0, ends[tp] - (self._kafka.position(tp) or 0)) for tp in assignment
            )
        except Exception:  # noqa: BLE001 - metrics only
            log.debug("lag update failed", exc_info=True)
