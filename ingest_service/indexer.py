"""The indexer: component and set ids kept behind the data (docs/graph-schema.md, "Component and
set ids"; ../shared/MODEL.md section 6).

Writes store their data and record their id work (``:IdWork``); this loop calls
``sparkprov.index`` (:meth:`Store.index`), which keeps the ids of the oldest writes exactly and
deletes their work, while no write runs beside it. Data comes first: the loop indexes while the
consumer has had nothing to write for a second (``busy`` is false), and at the latest
``max_wait_s`` after its last progress even under a steady load, so ids never stop behind a
stream that never pauses. Such an overdue call holds every writer back while it runs, so it is
small (``overdue_edges``, a tenth of a quiet call): under a load it keeps the ids moving for
about 1% of the writers' time instead of 10% (bench/README.md, issue 27). Any number of ingest
processes may run one: the calls exclude each other inside Neo4j.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Protocol

from ingest_service.metrics import Metrics
from ingest_service.store import IndexCallTooLarge, IndexResult, StoreError

__all__ = ["Indexer", "IndexStore"]

log = logging.getLogger(__name__)


class IndexStore(Protocol):
    def index(
        self, max_edges: int, quiet_s: float = 0.0, timeout_s: float = 120.0
    ) -> IndexResult: ...


class Indexer:
    def __init__(
        self,
        store: IndexStore,
        metrics: Metrics,
        *,
        busy: Callable[[], bool] = lambda: False,
        max_edges: int = 50_000,
        overdue_edges: int = 5_000,
        idle_s: float = 0.25,
        max_wait_s: float = 30.0,
        quiet_s: float = 1.0,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], object] | None = None,
    ) -> None:
        self._store = store
        self._metrics = metrics
        self._busy = busy
        self._max_edges = max_edges
        # The size of the next call: halved after a failed call, doubled back after each one
        # that succeeds (a call that outgrew Neo4j's transaction memory or its time limit
        # comes again smaller, down to one write's work, instead of failing as large forever).
        self._edges = max_edges
        self._overdue_edges = overdue_edges
        self._idle_s = idle_s
        self._max_wait_s = max_wait_s
        self._quiet_s = quiet_s
        self._last_progress = clock()
        self._clock = clock
        self._stop = threading.Event()
        self._sleep = sleep or self._stop.wait

    def stop(self) -> None:
        self._stop.set()

    def step(self) -> IndexResult | None:
        """One turn: index one batch if it is the indexer's turn (None if it is not). Its turn
        comes when this process's consumer is not busy and (inside Neo4j) no ingest process
        wrote for ``quiet_s``; or anyway, for at most ``overdue_edges``, once ids have not moved
        for ``max_wait_s``."""
        overdue = self._clock() - self._last_progress >= self._max_wait_s
        if self._busy() and not overdue:
            return None
        started = self._clock()
        # Overdue under a load: a small call, the writers wait for it. Overdue but idle (a
        # quiet consumer whose calls keep yielding to another process's writes): the same.
        edges = min(self._edges, self._overdue_edges) if overdue else self._edges
        try:
            result = self._store.index(edges, 0.0 if overdue else self._quiet_s)
        except StoreError:
            # Half of what failed: an overdue call asked for less than the bound.
            self._edges = max(1, edges // 2)
            raise
        self._edges = min(self._max_edges, self._edges * 2)
        elapsed = self._clock() - started
        # A page of a hub's edges finishes no write but is progress (docs/graph-schema.md).
        if result.items or result.edges or not result.remaining:
            self._last_progress = self._clock()
        m = self._metrics
        m.index_calls += 1
        m.index_seconds_total += elapsed
        m.index_call_seconds.observe(elapsed)
        m.writes_indexed += result.items
        m.ids_pending_writes = result.remaining
        if result.items or result.edges:
            log.debug(
                "indexed %d writes (%d edges, %d merges) in %.2fs; %d left",
                result.items,
                result.edges,
                result.merges,
                elapsed,
                result.remaining,
            )
        return result

    def run(self) -> None:
        """Until :meth:`stop`: index while there is id work, else wait a little."""
        backoff = 1.0
        while not self._stop.is_set():
            try:
                result = self.step()
            except IndexCallTooLarge:
                # Not an outage: the call's writes refine more sets than it may re-read at
                # once; step halved the bound, and the next call takes fewer writes.
                log.debug(
                    "indexer: a call refined too much at once; again for %d edges", self._edges
                )
                continue
            except StoreError as e:
                # A call that ran out of time or of transaction memory (a batch too large for
                # Neo4j's heap: a hub node filled at last, docs/graph-schema.md) leaves the
                # writers free; the ids wait (pending, never stale) and the call comes again,
                # later and smaller (step). Ids that never catch up are rebuilt by
                # python -m ingest_service.reindex --write.
                log.warning(
                    "indexer: a call failed (%s); again in %.0fs, for about %d edges. If this "
                    "repeats, the pending ids can be rebuilt with python -m "
                    "ingest_service.reindex --write",
                    e,
                    backoff,
                    self._edges,
                )
                self._sleep(backoff)
                backoff = min(backoff * 2, 300.0)
                continue
            backoff = 1.0
            if result is None or not result.remaining:
                self._sleep(self._idle_s)

    def start(self) -> threading.Thread:
        thread = threading.Thread(target=self.run, name="sparkprov-indexer", daemon=True)
        thread.start()
        return thread
