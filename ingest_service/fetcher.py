"""Polling and pausing of the consume loop: what to fetch, and which partitions are paused and why.

One poll may return more records than one write takes. They wait here, in order, until the loop
takes them into its buffer, and the loop polls between any two writes all the same, to keep its
group membership (``max_poll_interval_ms``). Those polls must fetch nothing:

- While records wait, or while the loop waits between writes (the parts of a large buffer, the
  halves of a refused one, Neo4j away, a dead letter not acknowledged), :meth:`Fetcher.hold`
  polls with every partition paused. A rebalance inside that poll may hand us partitions that
  are not paused yet: the records it returns are not kept, and their partitions are sought back
  to the first of them, so nothing is skipped.
- Once nothing waits, :meth:`Fetcher.poll` resumes the paused partitions and fetches.

The Kafka consumer is passed to each call: the loop may replace it (``ingest_service.
subscription``). What a poll returned is reported to ``received`` (the loop's checkpoint).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import Any

from ingest_service.clients import Record, Source

__all__ = ["Fetcher", "lag"]


class Fetcher:
    def __init__(
        self, received: Callable[[Any, int, int], object], clock: Callable[[], float]
    ) -> None:
        self._received = received
        self._clock = clock
        # Records polled but not taken yet (their partitions stay paused until they are).
        self._waiting: deque[tuple[Any, Record]] = deque()
        self._last_records = -1e18  # when a poll last returned records

    def poll(self, source: Source) -> None:
        """Fetch new records, or, while records of an earlier poll still wait, poll paused."""
        if self._waiting:
            self.hold(source)
            return
        paused = source.paused()
        if paused:
            source.resume(*paused)
        for tp, records in source.poll(timeout_ms=100).items():
            if records:
                self._last_records = self._clock()
                self._received(tp, records[0].offset, records[-1].offset + 1)
                self._waiting.extend((tp, record) for record in records)

    def hold(self, source: Source) -> None:
        """Poll with every partition paused, to stay in the group while fetching nothing."""
        source.pause(*source.assignment())
        for tp, records in source.poll(timeout_ms=0).items():
            if records:
                source.seek(tp, records[0].offset)
        source.pause(*source.assignment())

    @property
    def waiting(self) -> int:
        """Records polled and not taken yet."""
        return len(self._waiting)

    def pop(self) -> tuple[Any, Record]:
        """The first record waiting, and its partition."""
        return self._waiting.popleft()

    def clear(self) -> None:
        """Forget the records waiting (the loop dropped them; they are read again)."""
        self._waiting.clear()

    def busy(self, quiet_s: float) -> bool:
        """Whether records wait or a poll returned some within the last ``quiet_s``."""
        return bool(self._waiting) or self._clock() - self._last_records < quiet_s


def lag(source: Source) -> int:
    """Records not fetched yet on the partitions ``source`` is assigned (raises what Kafka
    raises)."""
    assignment = source.assignment()
    if not assignment:
        return 0
    ends = source.end_offsets(list(assignment))
    return sum(max(0, ends[tp] - (source.position(tp) or 0)) for tp in assignment)
