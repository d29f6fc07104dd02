"""Offset bookkeeping of the consume loop: what may be committed now, and where to read again.

The loop tells an :class:`Offsets` what it received from a poll, what it took into the buffer and
which records it dead-lettered (with the producer's delivery). It asks, after the buffer is
stored, what may be committed: per partition, one past the last record taken, but never past a
dead letter that is not acknowledged, since committing past it would lose that record for good.
When the loop drops what it holds (a rebalance revoked its partitions, or a dead letter could not
be delivered), :meth:`Offsets.drop` keeps, per partition, the first offset it held uncommitted:
the position to read again from, so nothing is skipped.

Pure bookkeeping: no Kafka calls, so it runs inside the rebalance listener (kafka-python 3 calls
it on its IO loop, where nothing may block) and in unit tests alike.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from typing import Generic, Protocol, TypeVar

__all__ = ["Delivery", "Offsets"]

P = TypeVar("P", bound=Hashable)


class Delivery(Protocol):
    """A dead letter's send; kafka-python's ``FutureRecordMetadata`` is one."""

    def succeeded(self) -> bool:
        """True once the broker acknowledged the record (acks=all)."""
        ...


class Offsets(Generic[P]):
    """Offsets per partition ``P`` (kafka's TopicPartition in the service)."""

    def __init__(self) -> None:
        # One past the last record taken, per partition: the commit that covers the buffer.
        self._next: dict[P, int] = {}
        # First offset received and not yet committed (taken or not): where to read again.
        self._first: dict[P, int] = {}
        # One past the last offset received: whether records are still waiting past a commit.
        self._end: dict[P, int] = {}
        self._letters: list[tuple[P, int, Delivery]] = []
        # Kept by drop() until the partition is assigned again (or the assignment is over).
        self._rewind: dict[P, int] = {}

    def received(self, partition: P, first: int, end: int) -> None:
        """A poll returned offsets ``first`` to ``end - 1`` of ``partition`` (in order)."""
        self._first.setdefault(partition, first)
        self._end[partition] = end

    def take(self, partition: P, offset: int) -> None:
        """The record is in the buffer: the next commit covers it."""
        self._next[partition] = offset + 1

    def dead_letter(self, partition: P, offset: int, delivery: Delivery) -> None:
        """The record was sent to the dead-letter topic: covered once ``delivery`` succeeds. The
        record may have been taken before (Neo4j refused it at the write): later records taken
        stay taken."""
        self._next[partition] = max(offset + 1, self._next.get(partition, 0))
        self._letters.append((partition, offset, delivery))

    @property
    def taken(self) -> bool:
        """Whether anything was taken since the last commit."""
        return bool(self._next)

    @property
    def holding(self) -> bool:
        """Whether anything received is not committed yet (taken or still waiting)."""
        return bool(self._first)

    @property
    def letters(self) -> int:
        """Dead letters sent since the last commit."""
        return len(self._letters)

    def committable(self) -> dict[P, int]:
        """The offsets to commit now that the buffer is stored: per partition the next offset
        after the last record taken, held back to the first dead letter not acknowledged (ask
        after flushing the producer: an unfinished send counts as not acknowledged)."""
        offsets = dict(self._next)
        for partition, offset, delivery in self._letters:
            if offset < offsets[partition] and not delivery.succeeded():
                offsets[partition] = offset
        return offsets

    def held_back(self, offsets: Mapping[P, int]) -> list[P]:
        """Partitions that ``offsets`` (from :meth:`committable`) do not cover to their end."""
        return [p for p, offset in self._next.items() if offsets.get(p, offset) < offset]

    def committed(self, offsets: Mapping[P, int]) -> None:
        """``offsets`` (from :meth:`committable`) were committed, or given up on: forget what was
        taken; records received past them are where each partition reads again."""
        for partition, offset in self._next.items():
            position = offsets.get(partition, offset)
            if self._end[partition] > position:
                self._first[partition] = position
            else:
                del self._first[partition], self._end[partition]
        self._next.clear()
        self._letters.clear()

    def drop(self) -> None:
        """Give up on everything held uncommitted: remember, per partition, the first offset held
        (see :meth:`rewind`) and forget the rest."""
        for partition, offset in self._first.items():
            self._rewind[partition] = min(offset, self._rewind.get(partition, offset))
        self._next.clear()
        self._first.clear()
        self._end.clear()
        self._letters.clear()

    def rewind(self, partition: P) -> int | None:
        """Where ``partition`` must be read again from, if something of it was dropped (once)."""
        return self._rewind.pop(partition, None)

    def forget_rewinds(self) -> None:
        """The assignment is complete: partitions that went elsewhere resume from their commit."""
        self._rewind.clear()
