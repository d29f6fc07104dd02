"""Writing a buffer, alone, on a fake store and plain hooks (no Kafka): parts with a poll
between them, retries while Neo4j is away, poison events isolated and dead-lettered with their
reason, conflicting events dead-lettered after the write, and a flush the loop abandons."""

from __future__ import annotations

from typing import Any

import pytest

from ingest_service.buffer import Buffer, Taken
from ingest_service.flusher import Flusher, Written
from ingest_service.metrics import Metrics
from ingest_service.settings import IngestSettings
from ingest_service.store import Flush, FlushResult, RecordRejected, StoreUnavailable
from sparkprov.events import EdgeColumns, NodeColumns, decode, encode_batch
from tests.unit.fakes import Rec

POISON = RecordRejected("neo4j:Neo.ClientError.Statement.Fake", "too large to index")


def buffer_of(*sizes: int, label: str = "", edges: int = 0) -> Buffer:
    """One event per size: offset i holds ``sizes[i]`` nodes with ids from i*1000."""
    buffer = Buffer(batch_rows=10**9, batch_ms=250)
    for offset, nodes in enumerate(sizes):
        ids = list(range(offset * 1000, offset * 1000 + nodes))
        cut = EdgeColumns([ids[0]] * edges, ids[:1] * edges) if edges else None
        block = NodeColumns("TOKEN", ids, label=label)
        value = encode_batch("run", "wf", "tap", 0, offset, [block], cut)
        buffer.add(Taken("p", Rec("t", 0, offset, None, value), decode(value)), now=0.0)
    return buffer


class Store:
    """Neo4j: raises while ``down`` (for ``down`` more attempts), refuses any write holding a
    ``poison`` id, and every write while ``refusing``; keeps the first label of each id."""

    def __init__(self) -> None:
        self.down = 0
        self.refusing = False
        self.poison: set[int] = set()
        self.attempts = 0
        self.tries = 0  # attempts with data (not the empty probes)
        self.writes: list[list[int]] = []
        self.rows: list[int] = []
        self.labels: dict[int, str] = {}

    def write(self, flush: Flush) -> FlushResult:
        self.attempts += 1
        self.tries += bool(flush)
        if self.down:
            self.down -= 1
            raise StoreUnavailable("fake outage")
        if self.refusing:
            raise POISON
        if not flush:
            return FlushResult(0, 0, 0, [])
        ids = [i for block in flush.blocks for i in block["ids"]]
        if self.poison.intersection(ids):
            raise POISON
        self.writes.append(ids)
        self.rows.append(flush.rows)
        conflicts = [
            (position, i)
            for position, block in enumerate(flush.blocks)
            for i in block["ids"]
            if self.labels.setdefault(i, block["label"]) != block["label"]
        ]
        return FlushResult(len(ids), 0, 0, ["run"], conflicts=conflicts)

    @property
    def written(self) -> set[int]:
        return {i for ids in self.writes for i in ids}


class Loop:
    """The hooks a Flusher is given, recording what it asks of them, in one log."""

    def __init__(self, store: Store, batch_rows: int = 10**9) -> None:
        self.store = store
        self.log: list[Any] = []
        self.stopping = False
        self.abandon_at: int | None = None  # raise from the n-th ``between``
        self.metrics = Metrics()
        self.flusher = Flusher(
            store,
            IngestSettings(batch_rows=batch_rows),
            self.metrics,
            dead_letter=self.dead_letter,
            between=self.between,
            sleep=lambda s: self.log.append(("sleep", s)),
            stopping=lambda: self.stopping,
            clock=lambda: 0.0,
        )

    def dead_letter(self, tp: Any, record: Rec, reason: str, detail: str) -> None:
        self.log.append(("dead_letter", record.offset, reason, detail))

    def between(self) -> None:
        self.log.append("between")
        if self.abandon_at is not None and self.log.count("between") == self.abandon_at:
            raise InterruptedError("dropped")

    def of(self, kind: str) -> list[Any]:
        return [e for e in self.log if e == kind or (isinstance(e, tuple) and e[0] == kind)]


def test_a_large_buffer_is_written_in_parts_with_a_poll_between_any_two() -> None:
    loop = Loop(Store(), batch_rows=250)
    written = loop.flusher.flush(buffer_of(100, 100, 100, 100, 100, 100), retry=True)
    assert max(loop.store.rows) <= 250
    assert len(loop.store.writes) == 3
    assert loop.log == ["between", "between"]
    assert written.result is not None and written.result.nodes_created == 600
    assert written.result.completed_runs == ["run"] * 3


def test_while_neo4j_is_away_the_part_is_retried_after_doubling_waits_and_a_poll() -> None:
    loop = Loop(Store())
    loop.store.down = 3
    loop.flusher.flush(buffer_of(10, 10), retry=True)
    waits = [("sleep", 0.5), "between", ("sleep", 1.0), "between", ("sleep", 2.0), "between"]
    assert loop.log == waits
    assert loop.metrics.store_failures == 3
    assert loop.store.written == {*range(10), *range(1000, 1010)}


@pytest.mark.parametrize("retry, stopping", [(False, False), (True, True)])
def test_without_retry_or_once_stopping_an_outage_propagates_at_once(
    retry: bool, stopping: bool
) -> None:
    loop = Loop(Store())
    loop.store.down = 1
    loop.stopping = stopping
    with pytest.raises(StoreUnavailable):
        loop.flusher.flush(buffer_of(10), retry=retry)
    assert loop.log == [] and loop.store.writes == []


def test_a_store_refusing_even_an_empty_write_is_an_outage_not_the_datas_fault() -> None:
    loop = Loop(Store())
    loop.store.refusing = True
    with pytest.raises(StoreUnavailable):
        loop.flusher.flush(buffer_of(10, 10), retry=False)
    assert loop.of("dead_letter") == []
    assert loop.metrics.store_failures == 1 and loop.metrics.store_rejections == 0


def test_poison_events_are_isolated_and_dead_lettered_with_their_reason() -> None:
    loop = Loop(Store())
    loop.store.poison = {2005, 6000}
    written = loop.flusher.flush(buffer_of(*[10] * 8), retry=True)
    assert loop.of("dead_letter") == [
        ("dead_letter", 2, POISON.reason, POISON.detail),
        ("dead_letter", 6, POISON.reason, POISON.detail),
    ]
    assert loop.metrics.store_rejections == 2
    assert loop.metrics.store_failures == 0
    everything = {i * 1000 + k for i in range(8) for k in range(10)}
    assert loop.store.written == everything - {*range(2000, 2010), *range(6000, 6010)}
    # Each write of the search is preceded by a poll; the flush's first write is not.
    assert loop.log.count("between") == loop.store.tries - 1
    # The whole; halves 0-3 and 4-7 (refused), their halves (one of each refused), then 2, 3,
    # 6 and 7 alone.
    assert loop.store.tries == 11
    assert written.result is not None and written.result.nodes_created == 60


def test_events_with_conflicting_nodes_are_dead_lettered_once_the_buffer_is_written() -> None:
    loop = Loop(Store())
    loop.flusher.flush(buffer_of(5, label="a"), retry=True)
    buffer = buffer_of(3, label="b")  # ids 0..2 again, other label: the first version stays
    written = loop.flusher.flush(buffer, retry=True)
    ((kind, offset, reason, detail),) = loop.of("dead_letter")
    assert (offset, reason) == (0, "conflict")
    assert "Ids: 0, 1, 2" in detail
    assert loop.metrics.conflicts == 3
    assert loop.store.labels[1] == "a"
    assert list(written.conflicts.values()) == [(buffer.entries[0], [0, 1, 2])]


def test_an_exception_from_between_abandons_the_flush_with_nothing_dead_lettered() -> None:
    loop = Loop(Store(), batch_rows=10)
    loop.flusher.flush(buffer_of(5, label="a"), retry=True)
    loop.abandon_at = 1
    with pytest.raises(InterruptedError):
        loop.flusher.flush(buffer_of(5, 5, 5, label="b"), retry=True)  # would conflict
    assert len(loop.store.writes) == 2  # the first flush, the first part of the second
    assert loop.of("dead_letter") == []


def test_a_written_flush_is_counted() -> None:
    metrics = Metrics()
    result = FlushResult(5, 3, 1, ["r1", "r2"], dangling={"r2": 4})
    Written(result, 0.25, {}).count_in(metrics, events=7)
    assert (metrics.flushes, metrics.nodes_written, metrics.edges_written) == (1, 5, 3)
    assert (metrics.runs_completed, metrics.runs_dangling, metrics.dangling_nodes) == (2, 1, 4)
    assert metrics.write_seconds_total == metrics.last_write_seconds == 0.25


def test_parts_merge_their_results() -> None:
    a = Written(FlushResult(1, 2, 0, ["x"], {"x": 1}, [(0, 5)]), 1.0, {})
    b = Written(None, 0.5, {})
    c = Written(FlushResult(3, 4, 1, ["y"], {"y": 2}), 2.0, {})
    merged = a.then(b).then(c)
    assert merged.seconds == 3.5
    assert merged.result == FlushResult(4, 6, 1, ["x", "y"], {"x": 1, "y": 2}, [(0, 5)])
