"""Writing a buffer to Neo4j: in parts, through outages, around the events Neo4j refuses.

- A write is at most ``batch_rows`` rows (``Flush.split``) and the loop's ``between`` hook (a
  paused poll, which keeps the group membership) runs between any two writes, so the time between
  polls stays far below ``max_poll_interval_ms`` however large the buffer.
- While Neo4j is unavailable (``StoreUnavailable``) the same part is retried after a back-off
  (doubling, ``ingest_service.backoff``), with ``between`` after each wait; without ``retry`` or
  once stopping, the error propagates: nothing is committed, the events are redelivered.
- When Neo4j refuses a write for its data (``RecordRejected``), the buffer's events are written
  again in halves (``ingest_service.bisection``); each event at fault is dead-lettered with the
  reason (``neo4j:<status code>``) and the rest is stored. A refusal counts as the data's fault
  only if Neo4j still accepts an empty write; otherwise it is an outage, retried as above.
- An event that re-sends a stored node with other content is stored except for that node, which
  keeps its first version: the event is dead-lettered with reason ``conflict`` once the buffer is
  written, and the nodes are counted (``metrics.conflicts``).

Any exception from ``between`` ends the flush and propagates (the loop raises one when a
rebalance dropped the buffer meanwhile). Earlier parts stay written: the writes are idempotent.
No Kafka objects here: dead letters go through the loop's ``dead_letter`` hook.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple, Protocol

from ingest_service.backoff import Backoff
from ingest_service.bisection import isolate
from ingest_service.buffer import Buffer, Taken
from ingest_service.clients import Record
from ingest_service.metrics import Metrics
from ingest_service.settings import IngestSettings
from ingest_service.store import (
    Flush,
    FlushResult,
    RecordRejected,
    StoreError,
    StoreUnavailable,
)
from sparkprov.events import Batch

__all__ = ["DeadLetter", "Flusher", "Writer", "Written"]

log = logging.getLogger(__name__)

# (partition, record, reason, detail): send the record to the dead-letter topic.
DeadLetter = Callable[[Any, Record, str, str], object]


class Writer(Protocol):
    """Where flushes go: ``ingest_service.store.Store`` (raises StoreUnavailable when down,
    RecordRejected when Neo4j refuses the data)."""

    def write(self, flush: Flush) -> FlushResult: ...


class Written(NamedTuple):
    """What writing some taken events did: the merged result (None if nothing was written),
    the write time, and the events with conflicting nodes (by ``id`` of their Taken)."""

    result: FlushResult | None
    seconds: float
    conflicts: dict[int, tuple[Taken, list[int]]]

    def then(self, part: Written) -> Written:
        """This and a later ``part``, as one."""
        result = self.result if part.result is None else _merge(self.result, part.result)
        return Written(result, self.seconds + part.seconds, {**self.conflicts, **part.conflicts})

    def count_in(self, metrics: Metrics, events: int) -> None:
        """Count a flush of ``events`` events that wrote something (``result`` is set)."""
        result, elapsed = self.result, self.seconds
        assert result is not None
        metrics.flushes += 1
        metrics.nodes_written += result.nodes_created
        metrics.edges_written += result.edges_created
        metrics.runs_completed += len(result.completed_runs)
        metrics.runs_dangling += len(result.dangling)
        metrics.dangling_nodes += sum(result.dangling.values())
        metrics.write_seconds_total += elapsed
        metrics.flush_seconds.observe(elapsed)
        metrics.last_write_seconds = elapsed
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


class Flusher:
    """``between`` polls paused between two writes; ``sleep`` waits a back-off; ``stopping``
    says whether the loop is stopping (then an outage is not retried)."""

    def __init__(
        self,
        store: Writer,
        settings: IngestSettings,
        metrics: Metrics,
        *,
        dead_letter: DeadLetter,
        between: Callable[[], object],
        sleep: Callable[[float], object],
        stopping: Callable[[], bool],
        clock: Callable[[], float],
    ) -> None:
        self._store = store
        self._batch_rows = settings.batch_rows
        self._max_poll_interval_ms = settings.max_poll_interval_ms
        self._metrics = metrics
        self._dead_letter = dead_letter
        self._between = between
        self._sleep = sleep
        self._stopping = stopping
        self._clock = clock

    def flush(self, buffer: Buffer, *, retry: bool) -> Written:
        """Write the buffer, dead-letter the events Neo4j refuses (at once, as they are found)
        and then copies of the events with conflicting nodes. Raises StoreUnavailable if Neo4j is
        away without ``retry`` or once stopping, and whatever ``between`` raises."""
        taken = buffer.entries
        try:
            written = self._write_events(taken, buffer.flush, retry=retry)
        except RecordRejected as e:
            log.warning(
                "Neo4j refused a flush of %d events (%s): writing it in halves to find the "
                "events at fault",
                len(taken),
                e.reason,
            )
            written = self._isolate(taken, e, retry=retry)
        for entry, ids in written.conflicts.values():
            self._conflict(entry, ids)
        return written

    def _write_events(self, taken: Sequence[Taken], flush: Flush, *, retry: bool) -> Written:
        """Write ``flush`` (the events ``taken``) in parts of at most ``batch_rows``, calling
        ``between`` between parts; raises RecordRejected if Neo4j refuses a part (earlier parts
        stay written: idempotent)."""
        owner = {
            id(block): entry
            for entry in taken
            if isinstance(entry.event, Batch)
            for block in entry.event.blocks
        }
        total = Written(None, 0.0, {})
        parts = flush.split(self._batch_rows) if flush else []
        for i, part in enumerate(parts):
            if i:
                self._between()
            result, seconds = self._write(part, retry=retry)
            for position, node in result.conflicts:
                entry = owner[id(part.blocks[position])]
                total.conflicts.setdefault(id(entry), (entry, []))[1].append(node)
            total = total.then(Written(result, seconds, {}))
        return total

    def _isolate(self, taken: Sequence[Taken], error: RecordRejected, *, retry: bool) -> Written:
        """Write ``taken`` again in halves (see ``ingest_service.bisection``), calling
        ``between`` before each write, and dead-letter each event Neo4j refuses alone."""
        total = Written(None, 0.0, {})

        def write(group: Sequence[Taken]) -> None:
            nonlocal total
            self._between()
            flush = Flush.of(t.event for t in group)
            total = total.then(self._write_events(group, flush, retry=retry))

        isolate(taken, error, write, self._reject)
        return total

    def _reject(self, entry: Taken, error: RecordRejected) -> None:
        self._metrics.store_rejections += 1
        self._dead_letter(entry.tp, entry.record, error.reason, error.detail)

    def _conflict(self, entry: Taken, ids: list[int]) -> None:
        """The event is stored except ``ids``, which keep their stored version: a copy goes to
        the dead-letter topic, for whoever sent two versions of one node."""
        self._metrics.conflicts += len(ids)
        detail = (
            f"{len(ids)} node(s) already stored with another op, label, relation or run kept "
            f"their stored version; the rest of the event is stored. Ids: "
            + ", ".join(map(str, ids[:20]))
            + (" ..." if len(ids) > 20 else "")
        )
        self._dead_letter(entry.tp, entry.record, "conflict", detail)

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

    def _write(self, part: Flush, *, retry: bool) -> tuple[FlushResult, float]:
        """One part and its write time. While Neo4j is unavailable: back off, call ``between``
        and retry (nothing is committed meanwhile). Raises StoreUnavailable without ``retry`` or
        once stopping, and RecordRejected when Neo4j refuses the part's data."""
        backoff = Backoff()
        while True:
            started = self._clock()
            try:
                result = self._store.write(part)
            except (StoreUnavailable, RecordRejected) as e:
                if isinstance(e, RecordRejected) and self._accepts_empty_write():
                    raise
                self._metrics.store_failures += 1
                if not retry or self._stopping():
                    if isinstance(e, StoreUnavailable):
                        raise
                    raise StoreUnavailable(str(e)) from e
                wait = backoff.next()
                log.warning("Neo4j unavailable (%s); retrying in %.1fs, nothing committed", e, wait)
                self._sleep(wait)
                self._between()
                continue
            elapsed = self._clock() - started
            if elapsed * 1000 > self._max_poll_interval_ms / 2:
                log.warning(
                    "writing %d rows took %.0fs, over half of max_poll_interval_ms: lower "
                    "SPARKPROV_INGEST_BATCH_ROWS before Kafka drops this member from its group",
                    part.rows,
                    elapsed,
                )
            return result, elapsed
