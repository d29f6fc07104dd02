"""Waits between retries of the consume loop: they double from a first wait up to a cap, and start
over after a success. Used while Neo4j is away (``ingest_service.flusher``) and while dead
letters are not acknowledged (``ingest_service.checkpoint``).

Pure: it only counts; the caller sleeps.
"""

from __future__ import annotations

__all__ = ["Backoff"]

FIRST_S = 0.5
MAX_S = 15.0


class Backoff:
    """The next wait, doubling from ``first_s`` up to ``max_s``; :meth:`reset` after a success."""

    def __init__(self, first_s: float = FIRST_S, max_s: float = MAX_S) -> None:
        self._first = first_s
        self._max = max_s
        self._next = first_s

    def next(self) -> float:
        """The wait before this retry; the one after is twice as long (up to the cap)."""
        wait = self._next
        self._next = min(wait * 2, self._max)
        return wait

    def reset(self) -> None:
        self._next = self._first
