"""The ingest service's indexer loop (ingest_service.indexer) with a stand-in store: data first
(no call while the consumer is busy), but ids never wait past the bound; metrics; errors."""

from __future__ import annotations

import threading

import pytest

from ingest_service.indexer import Indexer
from ingest_service.metrics import Metrics
from ingest_service.store import IndexCallTooLarge, IndexResult, StoreUnavailable


class FakeStore:
    def __init__(self, queue: int) -> None:
        self.queue = queue
        self.calls: list[int] = []
        self.quiet: list[float] = []
        self.fail = 0

    def index(self, max_edges: int, quiet_s: float = 0.0) -> IndexResult:
        self.calls.append(max_edges)
        self.quiet.append(quiet_s)
        if self.fail:
            self.fail -= 1
            raise StoreUnavailable("down")
        taken = min(self.queue, 2)
        self.queue -= taken
        runs = ["r"] if not self.queue else []
        return IndexResult(taken, 10 * taken, 1, self.queue, runs)


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_it_yields_to_a_busy_consumer_until_the_bound_then_indexes_anyway() -> None:
    store, clock, busy = FakeStore(queue=5), Clock(), [True]
    metrics = Metrics()
    indexer = Indexer(store, metrics, busy=lambda: busy[0], max_wait_s=10.0, clock=clock)
    assert indexer.step() is None and store.calls == []  # busy: data first
    clock.now += 10.5  # ids have waited past the bound: one call even though busy
    first = indexer.step()
    assert first is not None and first.items == 2 and store.calls == [5_000]
    assert store.quiet == [0.0]  # overdue: small, and it does not yield to other writers
    assert indexer.step() is None  # busy again, and the bound restarted with the progress
    busy[0] = False
    assert indexer.step() is not None and indexer.step() is not None
    assert store.quiet[1:] == [1.0, 1.0]  # not overdue: it yields to any writer in Neo4j
    assert store.calls[1:] == [50_000, 50_000]  # and takes a full call's edges
    assert store.queue == 0
    assert metrics.index_calls == 3 and metrics.writes_indexed == 5
    assert metrics.ids_pending_writes == 0


class PagingStore:
    """A hub's edges indexed in pages: calls that finish no write but join edges."""

    def __init__(self, pages: int) -> None:
        self.pages = pages
        self.quiet: list[float] = []

    def index(self, max_edges: int, quiet_s: float = 0.0) -> IndexResult:
        self.quiet.append(quiet_s)
        if self.pages:
            self.pages -= 1
            return IndexResult(0, max_edges, 0, 1, [])
        return IndexResult(1, 0, 0, 0, ["r"])


def test_a_page_of_a_hub_counts_as_progress_not_as_a_write() -> None:
    store, clock, busy = PagingStore(pages=3), Clock(), [True]
    metrics = Metrics()
    indexer = Indexer(store, metrics, busy=lambda: busy[0], max_wait_s=10.0, clock=clock)
    clock.now += 10.5
    page = indexer.step()  # overdue: one call
    assert page is not None and (page.items, page.remaining) == (0, 1)
    assert indexer.step() is None  # a page is progress: the bound restarted
    busy[0] = False
    while indexer.step() is not None and store.pages:
        pass
    assert indexer.step() is not None
    assert metrics.writes_indexed == 1 and metrics.ids_pending_writes == 0
    assert store.quiet[0] == 0.0 and set(store.quiet[1:]) == {1.0}


def test_run_drains_the_queue_and_backs_off_when_neo4j_refuses() -> None:
    store = FakeStore(queue=7)
    store.fail = 1
    waits: list[float] = []

    def wait(seconds: float) -> bool:  # no real sleeping
        waits.append(seconds)
        if store.queue == 0:
            indexer.stop()
        return False

    indexer = Indexer(store, Metrics(), idle_s=0.01, sleep=wait)
    indexer.run()
    assert store.queue == 0
    assert waits[0] == pytest.approx(1.0)  # the refused call backed off
    assert len(store.calls) == 1 + 4  # the failure, then 2+2+2+1 writes


def test_a_failed_call_comes_again_smaller_and_grows_back_after_successes() -> None:
    """A call that outgrew Neo4j's transaction memory (or time) is not repeated as large: the
    next asks for half the edges, down to one write's work, and successes double it back."""
    store = FakeStore(queue=20)
    store.fail = 3
    indexer = Indexer(store, Metrics(), max_edges=40_000)
    for _ in range(3):
        with pytest.raises(StoreUnavailable):
            indexer.step()
    for _ in range(4):
        assert indexer.step() is not None
    assert store.calls == [40_000, 20_000, 10_000, 5_000, 10_000, 20_000, 40_000]
    store.fail = 20
    for _ in range(20):
        with pytest.raises(StoreUnavailable):
            indexer.step()
    assert store.calls[-1] == 1 and min(store.calls) == 1  # never zero


def test_a_call_refused_as_too_large_comes_again_smaller_at_once() -> None:
    """The plugin refuses a call whose sets' refinement is past its bound: no outage, so no
    backoff; the next call asks for half the edges."""

    class Refusing(FakeStore):
        def index(self, max_edges: int, quiet_s: float = 0.0) -> IndexResult:
            if max_edges > 10_000:
                self.calls.append(max_edges)
                raise IndexCallTooLarge("... call again with fewer edges")
            return super().index(max_edges, quiet_s)

    store = Refusing(queue=3)
    waits: list[float] = []

    def wait(seconds: float) -> bool:
        waits.append(seconds)
        if store.queue == 0:
            indexer.stop()
        return False

    indexer = Indexer(store, Metrics(), max_edges=40_000, idle_s=0.01, sleep=wait)
    indexer.run()
    assert store.calls[:3] == [40_000, 20_000, 10_000]
    assert store.queue == 0 and all(w == 0.01 for w in waits)  # idle waits only, no backoff


def test_start_runs_a_daemon_thread_that_stops() -> None:
    store = FakeStore(queue=0)
    indexer = Indexer(store, Metrics(), idle_s=0.01)
    thread = indexer.start()
    assert isinstance(thread, threading.Thread) and thread.daemon
    indexer.stop()
    thread.join(timeout=5)
    assert not thread.is_alive()
    assert store.calls  # it asked at least once


def test_an_overdue_call_is_small_and_halves_after_each_failure() -> None:
    """Writers wait for an overdue call: it takes overdue_edges, and half of what it asked after
    each failure (not half of the larger bound of a quiet call)."""
    store, clock = FakeStore(queue=20), Clock()
    indexer = Indexer(
        store, Metrics(), busy=lambda: True, max_edges=40_000, overdue_edges=4_000, clock=clock
    )
    clock.now += 31.0
    assert indexer.step() is not None
    store.fail = 4
    for _ in range(4):
        clock.now += 31.0
        with pytest.raises(StoreUnavailable):
            indexer.step()
    clock.now += 31.0
    assert indexer.step() is not None
    assert store.calls == [4_000, 4_000, 2_000, 1_000, 500, 250]
    indexer = Indexer(store, Metrics(), busy=lambda: False, max_edges=40_000, clock=clock)
    store.calls.clear()
    store.fail = 1
    with pytest.raises(StoreUnavailable):
        indexer.step()  # a quiet call at the bound fails: the next takes half of it
    indexer.step()
    indexer.step()
    assert store.calls == [40_000, 20_000, 40_000]
