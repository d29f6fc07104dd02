"""What the next flush covers: the events taken since the last flush, each with the record it came
from (to dead-letter it if Neo4j refuses it), and when the first record arrived.

A record dead-lettered on arrival (malformed) is covered by the next flush too: nothing of it is
written, but the commit after the flush passes it, so it counts for when the flush is due.

A flush is due once the buffer holds ``batch_rows`` nodes+edges, or its first record waited
``batch_ms``. Pure: the loop passes the time.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from ingest_service.clients import Record
from ingest_service.store import Flush
from sparkprov.events import Event

__all__ = ["Buffer", "Taken"]


class Taken(NamedTuple):
    """A buffered event and the record it came from (partition ``tp``)."""

    tp: Any
    record: Record
    event: Event


class Buffer:
    def __init__(self, batch_rows: int, batch_ms: int) -> None:
        self._batch_rows = batch_rows
        self._batch_ms = batch_ms
        self.entries: list[Taken] = []  # in the order taken
        self.flush = Flush()  # the entries' events, as one write
        self._records = 0  # entries and records dead-lettered on arrival
        self._since = 0.0  # when the first of them arrived

    def add(self, entry: Taken, now: float) -> None:
        self._arrived(now)
        self.entries.append(entry)
        self.flush.add(entry.event)

    def skip(self, now: float) -> None:
        """A record was dead-lettered on arrival: the next flush's commit covers it."""
        self._arrived(now)

    def _arrived(self, now: float) -> None:
        if not self._records:
            self._since = now
        self._records += 1

    @property
    def full(self) -> bool:
        """Whether the buffer holds a write's worth: take no more records before the flush."""
        return self.flush.rows >= self._batch_rows

    def due(self, now: float) -> bool:
        if not self._records:
            return False
        return self.full or (now - self._since) * 1000 >= self._batch_ms

    def __len__(self) -> int:
        """Records covered: events taken and records dead-lettered on arrival."""
        return self._records
