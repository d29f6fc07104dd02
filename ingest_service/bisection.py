"""Finding the events at fault in a write Neo4j refused for its data (``RecordRejected``).

Retrying the same write fails the same way, so the events are written again in halves,
recursively and in order: a half Neo4j accepts is stored, a half it refuses is halved again, and
a single event it refuses is at fault. With k events at fault among n this takes about
2k log2(n) writes, instead of one per event.

Pure: the caller's ``write`` does the writing (and whatever it does around it, such as polling
Kafka between writes); any exception but ``RecordRejected`` ends the search and propagates.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Sequence
from typing import TypeVar

from ingest_service.store import RecordRejected

__all__ = ["isolate"]

T = TypeVar("T")


def isolate(
    items: Sequence[T],
    error: RecordRejected,
    write: Callable[[Sequence[T]], object],
    reject: Callable[[T, RecordRejected], object],
) -> None:
    """``items`` were refused together with ``error``: ``write`` them again in halves until each
    refused item is alone, and ``reject`` it (with the error of its own write) at once, in the
    order of ``items``. Every other item is in exactly one ``write`` that succeeds."""
    if len(items) == 1:
        reject(items[0], error)
        return
    middle = len(items) // 2
    groups = deque([items[:middle], items[middle:]])
    while groups:
        group = groups.popleft()
        if not group:
            continue
        try:
            write(group)
        except RecordRejected as e:
            if len(group) == 1:
                reject(group[0], e)
            else:
                middle = len(group) // 2
                groups.extendleft([group[middle:], group[:middle]])
