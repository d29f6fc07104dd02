"""Polling and pausing, alone, on a fake Kafka consumer with plain partitions: records of a poll
wait with every partition paused, polls meanwhile fetch nothing, a partition a rebalance hands
over unpaused is sought back, and fetching resumes once nothing waits."""

from __future__ import annotations

from collections.abc import Callable

from ingest_service.fetcher import Fetcher, lag
from tests.unit.fakes import Rec


class Source:
    def __init__(self, logs: dict[str, int]) -> None:
        self.logs = dict(logs)  # partition -> records in it
        self.assigned = set(logs)
        self.positions = dict.fromkeys(logs, 0)
        self.paused_: set[str] = set()
        self.polls: list[tuple[int, frozenset[str]]] = []  # (timeout, paused at the poll)
        self.seeks: list[tuple[str, int]] = []
        self.in_poll: Callable[[], None] = lambda: None  # a rebalance inside the poll

    def poll(self, timeout_ms: int) -> dict[str, list[Rec]]:
        self.polls.append((timeout_ms, frozenset(self.paused_)))
        self.in_poll()
        out = {}
        for p in sorted(self.assigned - self.paused_):
            start, end = self.positions[p], self.logs[p]
            if end > start:
                out[p] = [Rec("t", 0, o, None, b"") for o in range(start, end)]
                self.positions[p] = end
        return out

    def assignment(self) -> set[str]:
        return set(self.assigned)

    def pause(self, *partitions: str) -> None:
        self.paused_ |= set(partitions)

    def resume(self, *partitions: str) -> None:
        self.paused_ -= set(partitions)

    def paused(self) -> set[str]:
        return set(self.paused_)

    def seek(self, partition: str, offset: int) -> None:
        self.positions[partition] = offset
        self.seeks.append((partition, offset))

    def position(self, partition: str) -> int:
        return self.positions[partition]

    def end_offsets(self, partitions: list[str]) -> dict[str, int]:
        return {p: self.logs[p] for p in partitions}


class Clock:
    now = 100.0

    def __call__(self) -> float:
        return self.now


def make(logs: dict[str, int]) -> tuple[Fetcher, Source, list[tuple[str, int, int]], Clock]:
    received: list[tuple[str, int, int]] = []
    clock = Clock()
    fetcher = Fetcher(lambda p, first, end: received.append((p, first, end)), clock)
    return fetcher, Source(logs), received, clock


def test_records_wait_and_polls_meanwhile_fetch_nothing_with_every_partition_paused() -> None:
    fetcher, source, received, _ = make({"a": 5, "b": 3})
    fetcher.poll(source)
    assert received == [("a", 0, 5), ("b", 0, 3)]
    assert fetcher.waiting == 8
    assert [fetcher.pop() for _ in range(3)] == [("a", Rec("t", 0, o, None, b"")) for o in range(3)]
    source.logs["a"] = 9  # more arrives
    fetcher.poll(source)
    assert source.polls[-1] == (0, frozenset({"a", "b"}))
    assert source.paused() == {"a", "b"}
    assert fetcher.waiting == 5 and len(received) == 2
    while fetcher.waiting:
        fetcher.pop()
    fetcher.poll(source)  # nothing waits: resume, then fetch
    assert source.polls[-1] == (100, frozenset())
    assert received[-1] == ("a", 5, 9)
    assert fetcher.waiting == 4


def test_a_partition_handed_over_unpaused_inside_a_paused_poll_is_sought_back() -> None:
    fetcher, source, received, _ = make({"a": 2})
    source.logs["c"] = 4
    source.positions["c"] = 1

    def rebalance() -> None:
        source.assigned.add("c")  # new, and not paused
        source.in_poll = lambda: None

    source.in_poll = rebalance
    fetcher.hold(source)
    assert source.seeks == [("c", 1)]
    assert source.paused() == {"a", "c"}
    assert fetcher.waiting == 0 and received == []
    # The records are fetched once nothing waits, from where they were.
    fetcher.poll(source)
    assert ("c", 1, 4) in received


def test_clear_forgets_the_waiting_records() -> None:
    fetcher, source, _, _ = make({"a": 5})
    fetcher.poll(source)
    fetcher.clear()
    assert fetcher.waiting == 0
    fetcher.poll(source)  # fetches again (the loop rewinds the partition)
    assert source.polls[-1][0] == 100


def test_busy_while_records_wait_or_arrived_lately() -> None:
    fetcher, source, _, clock = make({"a": 1})
    assert not fetcher.busy(quiet_s=1.0)
    fetcher.poll(source)
    fetcher.pop()
    assert fetcher.busy(quiet_s=1.0)
    clock.now += 1.0
    assert not fetcher.busy(quiet_s=1.0)
    source.logs["a"] = 2
    fetcher.poll(source)
    clock.now += 5.0
    assert fetcher.busy(quiet_s=1.0)  # one still waits


def test_lag_counts_what_is_not_fetched_yet() -> None:
    source = Source({"a": 10, "b": 4})
    source.positions["a"] = 7
    assert lag(source) == 3 + 4
    source.assigned = set()
    assert lag(source) == 0
