"""Retention: a run's lineage removed from Neo4j in bounded transactions (docs/graph-schema.md,
"Deleting runs").

What a run owns: its nodes (``run_id``) and their edges, placeholders its edges made and nothing
filled (``pending_run``), the id records its nodes' ids name (``:Component`` by id,
``:LevelSet`` by key ``"<level>:<id>"``, ``:ConnectedSet`` by component), and its ``:Run`` row
with its ``REUSES``/``OF_VERSION`` links. Workflow versions, member keys and other runs stay.

Other runs' answers and ids stay exact because a deletion only ever removes whole components:
a run whose lineage touches another run's (an edge between their nodes: module state kept
across runs, a reused result) or that a later run reuses (``REUSES``) is *tied* to it, since
removing one side would leave the other's component ids naming nodes that are gone (union-find
records cannot split). A tied run is refused, naming the runs it is tied to, unless the caller
follows: then every run tied to it, transitively, is deleted with it. A run that is not complete
(its job may still be writing) or not indexed yet (the indexer would walk its edges) is refused
too, unless forced (a job that died without its run-complete marker never completes).

Each transaction deletes at most ``batch`` relationships or nodes, so a run of any size is
removed without a large transaction; the ``:Run`` row goes last, so a deletion cut short (a
killed process, Neo4j down) is finished by asking again.
"""

from __future__ import annotations

import logging
import threading
import time
from array import array
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

import neo4j

from ingest_service.levels import LEVELS

__all__ = [
    "Deleted",
    "Expiry",
    "RunNotDeletable",
    "RunNotFound",
    "delete_runs",
    "expire",
    "expired_runs",
    "tied_group",
    "tied_runs",
]

log = logging.getLogger(__name__)

DEFAULT_BATCH = 10_000

_RUN = """
MATCH (r:Run {run_id: $run})
OPTIONAL MATCH (w:IdWork) WHERE $run IN w.runs
RETURN r.complete AS complete, r.failed AS failed, count(w) AS pending
"""
# Runs this one is tied to by lineage (an edge either way, a folded join row's PARTNER included)
# or by reuse (either way).
_TIED_BY_EDGES = """
UNWIND $ids AS i
MATCH (n:Node {id: i})-[:DERIVES|PARTNER]-(m:Node)
WHERE m.run_id IS NOT NULL AND m.run_id <> $run
RETURN DISTINCT m.run_id AS run
"""
_TIED_BY_REUSE = """
MATCH (r:Run {run_id: $run})-[:REUSES]-(other:Run)
RETURN DISTINCT other.run_id AS run
"""
_NODE_IDS = "MATCH (n:Node) WHERE n.run_id = $run OR n.pending_run = $run RETURN n.id AS id"
_DELETE_EDGES = """
UNWIND $ids AS i
MATCH (:Node {id: i})-[e]-()
WITH DISTINCT e LIMIT $batch
DELETE e
RETURN count(*) AS n
"""
# The id records named by the run's ids (the records of a component or level set whose nodes are
# all the run's: deletions take whole components only).
_DELETE_ID_RECORDS = (
    "UNWIND $ids AS i MATCH (c:Component {id: i}) DETACH DELETE c RETURN count(*) AS n",
    "UNWIND $ids AS i MATCH (s:ConnectedSet {component_id: i}) DETACH DELETE s "
    "RETURN count(*) AS n",
    "UNWIND $keys AS k MATCH (l:LevelSet {key: k}) DETACH DELETE l RETURN count(*) AS n",
)
_DELETE_NODES = "UNWIND $ids AS i MATCH (n:Node {id: i}) DETACH DELETE n RETURN count(*) AS n"
_DELETE_RUN = "MATCH (r:Run {run_id: $run}) DETACH DELETE r"
# A run's age: since it completed, else since it started (its job died), else since ingest
# first stored it (created_unix_ms); a run with none of them (stored before they were kept) has
# no known age and is never expired: delete it by hand.
_EXPIRED = """
MATCH (r:Run)
WITH r, coalesce(r.completed_unix_ms, r.started_unix_ms, r.created_unix_ms) AS at
WHERE at < $before
RETURN r.run_id AS run ORDER BY at
"""


class RunNotFound(Exception):
    """No ``:Run`` with that id."""


class RunNotDeletable(Exception):
    """The run is tied to others, or still being written or indexed; the message says which."""


@dataclass
class Deleted:
    runs: list[str] = field(default_factory=list)
    nodes: int = 0
    relationships: int = 0
    id_records: int = 0

    def add(self, other: Deleted) -> None:
        self.runs += other.runs
        self.nodes += other.nodes
        self.relationships += other.relationships
        self.id_records += other.id_records


def _read(driver: neo4j.Driver, query: str, **params: object) -> list[neo4j.Record]:
    records, _, _ = driver.execute_query(query, params, routing_=neo4j.RoutingControl.READ)
    return list(records)


def _write(driver: neo4j.Driver, query: str, **params: object) -> int:
    records, _, _ = driver.execute_query(query, params)
    return int(records[0]["n"]) if records else 0


def _node_ids(driver: neo4j.Driver, run_id: str) -> array[int]:
    ids: array[int] = array("q")
    with driver.session(default_access_mode=neo4j.READ_ACCESS) as session:
        for record in session.run(_NODE_IDS, run=run_id):
            ids.append(record["id"])
    return ids


def _chunks(ids: array[int], size: int) -> Iterable[list[int]]:
    for start in range(0, len(ids), size):
        yield ids[start : start + size].tolist()


# The node ids of the runs one deletion touches, each listed once (a scan of :Node per run).
_IdsOf = dict[str, "array[int]"]


def _ids_of(driver: neo4j.Driver, run_id: str, known: _IdsOf) -> array[int]:
    if run_id not in known:
        known[run_id] = _node_ids(driver, run_id)
    return known[run_id]


def tied_runs(
    driver: neo4j.Driver,
    run_id: str,
    batch: int = DEFAULT_BATCH,
    known: _IdsOf | None = None,
) -> set[str]:
    """The runs ``run_id`` is tied to directly: by an edge between their nodes, or by reuse."""
    tied = {r["run"] for r in _read(driver, _TIED_BY_REUSE, run=run_id)}
    for chunk in _chunks(_ids_of(driver, run_id, {} if known is None else known), batch):
        tied |= {r["run"] for r in _read(driver, _TIED_BY_EDGES, ids=chunk, run=run_id)}
    tied.discard(run_id)
    return tied


def _check(driver: neo4j.Driver, run_id: str, force: bool) -> None:
    records = _read(driver, _RUN, run=run_id)
    if not records:
        raise RunNotFound(f"unknown run {run_id}")
    record = records[0]
    if record["pending"]:  # the indexer would walk edges whose nodes are gone
        raise RunNotDeletable(f"run {run_id} is not indexed yet: ask again once it is")
    if not (force or record["complete"] or record["failed"]):
        raise RunNotDeletable(
            f"run {run_id} is not complete: its job may still be writing (force deletes it, "
            "e.g. a job that died without its run-complete marker)"
        )


def tied_group(
    driver: neo4j.Driver,
    run_id: str,
    batch: int = DEFAULT_BATCH,
    known: _IdsOf | None = None,
) -> set[str]:
    """``run_id`` and every run tied to it, transitively."""
    group, todo = {run_id}, [run_id]
    known = {} if known is None else known
    while todo:
        tied = tied_runs(driver, todo.pop(), batch, known) - group
        group |= tied
        todo.extend(sorted(tied))
    return group


def delete_runs(
    driver: neo4j.Driver,
    run_id: str,
    *,
    follow: bool = False,
    force: bool = False,
    batch: int = DEFAULT_BATCH,
) -> Deleted:
    """Deletes ``run_id`` (and, with ``follow``, every run tied to it, transitively)."""
    if batch < 1:
        raise ValueError("batch must be positive")
    _check(driver, run_id, force)
    known: _IdsOf = {}
    return _delete_group(
        driver, run_id, tied_group(driver, run_id, batch, known), follow, force, batch, known
    )


def _delete_group(
    driver: neo4j.Driver,
    run_id: str,
    group: set[str],
    follow: bool,
    force: bool,
    batch: int,
    known: _IdsOf,
) -> Deleted:
    others = sorted(group - {run_id})
    if others and not follow:
        names = ", ".join(others[:10]) + (" ..." if len(others) > 10 else "")
        raise RunNotDeletable(
            f"run {run_id} is tied to {len(others)} other run(s) by shared lineage or reuse "
            f"({names}): deleting it alone would leave their ids wrong; follow deletes them "
            "with it"
        )
    for other in others:
        _check(driver, other, force)
    deleted = Deleted()
    for run in sorted(group):
        _delete_one(driver, run, _ids_of(driver, run, known), batch, deleted)
    return deleted


def expire(
    driver: neo4j.Driver, max_age_s: float, *, batch: int = DEFAULT_BATCH, now_ms: int | None = None
) -> Deleted:
    """Deletes the runs older than ``max_age_s`` (:func:`expired_runs`), each with the runs tied
    to it and only when all of those are expired too; a run never completed counts from its
    start (its job died). A run still waiting for the indexer is left for the next turn."""
    expired = expired_runs(driver, max_age_s, now_ms)
    old, seen, deleted = set(expired), set(), Deleted()
    for run_id in expired:
        if run_id in seen:
            continue
        known: _IdsOf = {}
        try:
            group = tied_group(driver, run_id, batch, known)
            seen |= group
            if not group <= old:
                log.info("run %s is expired but tied to runs that are not: kept", run_id)
                continue
            _check(driver, run_id, force=True)
            more = _delete_group(driver, run_id, group, True, True, batch, known)
        except (RunNotFound, RunNotDeletable) as e:  # deleted meanwhile, or not indexed yet
            log.info("expiry skips run %s: %s", run_id, e)
            continue
        deleted.add(more)
    return deleted


def _delete_one(
    driver: neo4j.Driver, run_id: str, ids: array[int], batch: int, deleted: Deleted
) -> None:
    started = time.monotonic()
    for chunk in _chunks(ids, batch):
        while n := _write(driver, _DELETE_EDGES, ids=chunk, batch=batch):
            deleted.relationships += n
        keys = [f"{level}:{i}" for i in chunk for level in range(LEVELS)]
        for query in _DELETE_ID_RECORDS:
            deleted.id_records += _write(driver, query, ids=chunk, keys=keys)
        deleted.nodes += _write(driver, _DELETE_NODES, ids=chunk)
    driver.execute_query(_DELETE_RUN, {"run": run_id})
    deleted.runs.append(run_id)
    log.info(
        "deleted run %s: %d nodes in %.1fs",
        run_id,
        len(ids),
        time.monotonic() - started,
    )


def expired_runs(driver: neo4j.Driver, max_age_s: float, now_ms: int | None = None) -> list[str]:
    """Runs completed (or, never completed, started or first stored) more than ``max_age_s``
    ago, oldest first."""
    now = int(time.time() * 1000) if now_ms is None else now_ms
    before = now - int(max_age_s * 1000)
    return [r["run"] for r in _read(driver, _EXPIRED, before=before)]


class Expiry:
    """The ingest service's age limit (``SPARKPROV_RETENTION_DAYS``): every ``every_s``, and
    once at start, :func:`expire` deletes the runs older than ``max_age_s``. ``expire_runs``
    is :func:`expire` bound to a driver (tests pass a fake)."""

    def __init__(
        self,
        expire_runs: Callable[[float], Deleted],
        max_age_s: float,
        every_s: float = 3600.0,
    ) -> None:
        if max_age_s <= 0:
            raise ValueError("the age limit must be positive")
        self._expire = expire_runs
        self._max_age_s = max_age_s
        self._every_s = every_s
        self._stop = threading.Event()
        self.deleted_runs = 0

    def stop(self) -> None:
        self._stop.set()

    def step(self) -> Deleted:
        deleted = self._expire(self._max_age_s)
        self.deleted_runs += len(deleted.runs)
        if deleted.runs:
            log.info(
                "retention: deleted %d run(s) older than %.1f days (%d nodes)",
                len(deleted.runs),
                self._max_age_s / 86400,
                deleted.nodes,
            )
        return deleted

    def run(self) -> None:
        while not self._stop.is_set():
            try:
                self.step()
            except Exception as e:  # Neo4j down: the next turn tries again; ingest goes on
                log.warning("retention: expiry failed (%s); again in %.0fs", e, self._every_s)
            self._stop.wait(self._every_s)

    def start(self) -> threading.Thread:
        thread = threading.Thread(target=self.run, name="sparkprov-retention", daemon=True)
        thread.start()
        return thread
