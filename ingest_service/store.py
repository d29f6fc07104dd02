"""Neo4j writes of the ingest service. All of its Cypher lives here, always parameterized, but for
the schema it makes at startup: sparkprov/schema.cypher, which the Neo4j plugin's tests run too.

One flush is one write transaction (``execute_write`` retries it on transient errors, so it is
idempotent by construction), or with ``tx_records`` the procedure commits the flush's data in
transactions of that many records, each adding what it stored to its runs' counts (what is
committed is counted once; sending the flush again stores and counts only the rest), and the
caller's transaction keeps the run markers: our procedure ``sparkprov.write`` (neo4j_plugin,
io.sparkprov.plugin.write.Ingest; its jar is loaded from Neo4j's plugins folder by the local
stack's launcher or a server) upserts the flush's node and edge blocks (their contract:
sparkprov.blocks); then run markers are recorded and runs whose counts are complete are marked
so. Writers run in parallel: no lock serialises them (two that create the same node at once: the
loser's transaction is retried, and finds it).

Ids behind the data (docs/graph-schema.md, "Component and set ids"): by default a write leaves
the component ids, connected sets and set dependencies to the indexer and records what it
created (``:IdWork``); :meth:`Store.index` (run by ingest_service.indexer) keeps them exact by
reference, oldest writes first, while no write runs. A run is queryable once its data is stored
and indexed once no id work of it is left (tests/reference/sets.py states what the ids must equal).

Errors, by what the consume loop does about them: :class:`StoreUnavailable` when retrying may
fix the write (Neo4j unreachable, a leader switch, a deadlock, any transient error, or a refusal
an operator must fix, such as credentials or a missing procedure): back off and retry.
:class:`RecordRejected` when Neo4j refuses the data itself (a statement, schema or procedure error
the data caused, such as a property too large to index): retrying the same write fails the same
way, so the loop finds the record(s) at fault and dead-letters them.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, cast

import neo4j

from ingest_service import versions
from ingest_service.levels import DEFAULT_THETA
from sparkprov import schema
from sparkprov.blocks import EdgeBlock, MemberBlock, NodeBlock
from sparkprov.events import (
    Batch,
    RunComplete,
    RunStarted,
    member_block,
    source_files_key,
    source_masks_key,
)
from sparkprov.procedures import INDEX_CALL_TOO_LARGE, IndexedRow, WrittenRow
from sparkprov.runtime import neo4j_driver

__all__ = [
    "SCHEMA",
    "Flush",
    "IndexResult",
    "FlushResult",
    "IndexCallTooLarge",
    "RecordRejected",
    "Store",
    "StoreError",
    "StoreUnavailable",
]

log = logging.getLogger(__name__)

# The constraints and indexes ensure_schema makes, in order: sparkprov/schema.cypher, which the
# Neo4j plugin's tests run too.
SCHEMA = schema.statements()

_WRITE = """
CALL sparkprov.write($blocks, $edges, $theta, $members, $defer, $tx_records)
  YIELD run, nodes, edges, merges, conflict_blocks, conflict_ids
RETURN run, nodes, edges, merges, conflict_blocks, conflict_ids
"""

_INDEX = """
CALL sparkprov.index($max_edges, $quiet_ms) YIELD items, edges, merges, remaining, indexed_runs
RETURN items, edges, merges, remaining, indexed_runs
"""


_RUN_STARTED = """
UNWIND $rows AS r
MERGE (run:Run {run_id: r.run})
  ON CREATE SET run.stored_nodes = 0, run.stored_edges = 0, run.complete = false,
                run.created_unix_ms = timestamp()
SET run.workflow = r.workflow, run.started_unix_ms = r.started, run.application_id = r.app
"""

_RUN_COMPLETE = """
UNWIND $rows AS r
MERGE (run:Run {run_id: r.run})
  ON CREATE SET run.stored_nodes = 0, run.stored_edges = 0, run.complete = false,
                run.created_unix_ms = timestamp()
SET run.workflow = r.workflow, run.expected_nodes = r.nodes, run.expected_edges = r.edges,
    run.failed = r.failed, run.error = r.error, run.finished_unix_ms = r.finished
SET run += r.files
"""

_RUN_COUNTS = """
UNWIND $rows AS r
MERGE (run:Run {run_id: r.run})
  ON CREATE SET run.stored_nodes = 0, run.stored_edges = 0, run.complete = false,
                run.created_unix_ms = timestamp()
SET run.workflow = coalesce(run.workflow, r.workflow),
    run.stored_nodes = run.stored_nodes + r.nodes,
    run.stored_edges = run.stored_edges + r.edges
"""

_RUN_CHECK = """
MATCH (run:Run)
WHERE run.run_id IN $runs AND NOT run.complete AND run.expected_nodes IS NOT NULL
  AND run.stored_nodes >= run.expected_nodes AND run.stored_edges >= run.expected_edges
SET run.complete = true, run.completed_unix_ms = timestamp()
WITH run
OPTIONAL MATCH (ghost:Node {pending_run: run.run_id})
WITH run, count(ghost) AS dangling
SET run.dangling_nodes = dangling
RETURN run.run_id AS run, run.stored_nodes AS nodes, run.expected_nodes AS expected_nodes,
       run.stored_edges AS edges, run.expected_edges AS expected_edges, dangling
"""


class StoreError(Exception):
    """Root of the errors a write raises."""


class StoreUnavailable(StoreError):
    """Neo4j cannot be reached or keeps failing: pause, retry later, commit nothing."""


class IndexCallTooLarge(StoreUnavailable):
    """An index call refused because the sets its writes grow past theta would have it re-read
    more edges than its bound allows (the plugin's RefinementTooLarge): it rolled back, and a call
    with fewer edges will pass. No outage: the indexer calls again at once."""


class RecordRejected(StoreError):
    """Neo4j refused what the write holds, and would refuse it again: dead-letter the record(s)
    at fault. ``reason`` is the dead-letter reason, ``neo4j:<status code>``."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(f"{reason}: {detail}")
        self.reason = reason
        self.detail = detail


# Status codes (prefixes) of errors the written data causes. Any other error that retrying cannot
# fix (security, a missing procedure, a read-only database) is the operator's, and is retried.
_DATA_FAULTS = (
    "Neo.ClientError.Statement.",
    "Neo.ClientError.Schema.",
    "Neo.ClientError.Procedure.ProcedureCallFailed",
    # "Property value is too large to index" comes as this (an internal error) from Cypher.
    "Neo.DatabaseError.Statement.ExecutionFailed",
)


def _classify(error: Exception) -> StoreError:
    code = getattr(error, "code", None) or ""
    if INDEX_CALL_TOO_LARGE in str(error):
        return IndexCallTooLarge(str(error)[:1000])
    retryable = isinstance(error, neo4j.exceptions.Neo4jError | neo4j.exceptions.DriverError) and (
        error.is_retryable()
    )
    if not retryable and code.startswith(_DATA_FAULTS):
        message = getattr(error, "message", None) or str(error)
        return RecordRejected(f"neo4j:{code}", message[:1000])
    if isinstance(error, neo4j.exceptions.Neo4jError) and not retryable:
        log.error("Neo4j refused a write (%s) for a reason retrying will not fix: %s", code, error)
    return StoreUnavailable(f"{type(error).__name__}: {error}")


@dataclass
class Flush:
    """What one flush writes: the node and edge columns of many batches, plus run markers.
    Duplicates (at-least-once delivery) are removed by the procedure, not here."""

    blocks: list[NodeBlock] = field(default_factory=list)
    edges: list[EdgeBlock] = field(default_factory=list)
    members: list[MemberBlock] = field(default_factory=list)
    started: list[RunStarted] = field(default_factory=list)
    completed: list[RunComplete] = field(default_factory=list)
    workflows: dict[str, str] = field(default_factory=dict)
    events: int = 0
    rows: int = 0

    @classmethod
    def of(cls, events: Iterable[Batch | RunStarted | RunComplete]) -> Flush:
        flush = cls()
        for event in events:
            flush.add(event)
        return flush

    def add(self, event: Batch | RunStarted | RunComplete) -> None:
        self.events += 1
        self.workflows.setdefault(event.run_id, event.workflow)
        if isinstance(event, Batch):
            self.blocks.extend(event.blocks)
            if event.edges["src"]:
                self.edges.append(event.edges)
            self.members.extend(member_block(event.run_id, m) for m in event.members)
            self.rows += event.node_count + event.edge_count
        elif isinstance(event, RunStarted):
            self.started.append(event)
        else:
            self.completed.append(event)

    def split(self, max_rows: int) -> list[Flush]:
        """Parts of at most about ``max_rows`` nodes+edges each (whole node blocks, edge columns
        cut to fit; nodes first, markers last), so one huge message never becomes one huge
        transaction. Parts are written in order; the offsets are committed after the last, and a
        retry of any part is harmless (idempotent writes)."""
        if self.rows <= max_rows:
            return [self]
        parts = [Flush(workflows=self.workflows, events=1)]
        for block in self.blocks:
            if parts[-1].rows and parts[-1].rows + len(block["ids"]) > max_rows:
                parts.append(Flush(workflows=self.workflows, events=1))
            parts[-1].blocks.append(block)
            parts[-1].rows += len(block["ids"])
        for edges in self.edges:
            for start in range(0, len(edges["src"]), max_rows):
                size = len(edges["src"][start : start + max_rows])
                if parts[-1].rows and parts[-1].rows + size > max_rows:
                    parts.append(Flush(workflows=self.workflows, events=1))
                parts[-1].edges.append(
                    {
                        "run": edges["run"],
                        "src": edges["src"][start : start + max_rows],
                        "dst": edges["dst"][start : start + max_rows],
                    }
                )
                parts[-1].rows += size
        for record in self.members:
            if parts[-1].rows and parts[-1].rows + len(record["members"]) > max_rows:
                parts.append(Flush(workflows=self.workflows, events=1))
            parts[-1].members.append(record)
            parts[-1].rows += len(record["members"])
        parts[-1].started = self.started
        parts[-1].completed = self.completed
        return parts

    def __bool__(self) -> bool:
        return self.events > 0


@dataclass(frozen=True)
class IndexResult:
    """One call of the indexer: the writes it finished indexing, the edges it joined (a page of a
    hub's edges finishes no write), the components merged away, the writes still waiting, and
    the runs it left with no id work."""

    items: int
    edges: int
    merges: int
    remaining: int
    indexed_runs: list[str]

    @classmethod
    def of(cls, row: IndexedRow) -> IndexResult:
        """The result one row of sparkprov.index says."""
        return cls(
            items=row["items"],
            edges=row["edges"],
            merges=row["merges"],
            remaining=row["remaining"],
            indexed_runs=list(row["indexed_runs"]),
        )


@dataclass(frozen=True)
class FlushResult:
    nodes_created: int
    edges_created: int
    components_merged: int
    completed_runs: list[str]
    # Runs completed by this flush whose edges reference nodes they never stored: run -> count.
    dangling: dict[str, int] = field(default_factory=dict)
    # Nodes already stored with other content (op, label, relation or run), kept as stored:
    # (position of the block in ``Flush.blocks``, node id).
    conflicts: list[tuple[int, int]] = field(default_factory=list)


# Two writers that create the same node (or member key) at once: the one that commits second
# fails on the unique constraint. The write is idempotent, so it is run again and finds the node.
_RACE = "Neo.ClientError.Schema.ConstraintValidationFailed"
_RACE_RETRIES = 8
# A deadlock detected inside the procedure reaches the client as the procedure's failure (a
# client error), not as the transient error it is: it is run again too, never dead-lettered.
_PROCEDURE_FAILED = "Neo.ClientError.Procedure.ProcedureCallFailed"


def _transient_race(error: Exception) -> bool:
    code = getattr(error, "code", None)
    if code == _RACE:
        return True
    message = getattr(error, "message", None) or str(error)
    return code == _PROCEDURE_FAILED and (
        "DeadlockDetected" in message
        or "already exists with label" in message
        # The unique index refused a node a parallel writer created first (same race).
        or "IndexEntryConflictException" in message
    )


class Store:
    def __init__(
        self,
        driver: neo4j.Driver,
        theta: int = DEFAULT_THETA,
        *,
        defer_ids: bool = True,
        tx_records: int = 0,
    ) -> None:
        self._driver = driver
        self._theta = theta
        self._defer_ids = defer_ids
        # Above 0, the procedure commits a write's data in transactions of this many records,
        # each with its runs' counts (IngestSettings.tx_records); 0: all in the write's own.
        self._tx_records = tx_records

    @classmethod
    def connect(
        cls,
        uri: str,
        user: str = "",
        password: str = "",
        theta: int = DEFAULT_THETA,
        *,
        tls_ca: str = "",
        database: str = "",
        tx_records: int = 0,
    ) -> Store:
        driver = neo4j_driver(
            uri, user, password, tls_ca=tls_ca, database=database, max_transaction_retry_time=15.0
        )
        return cls(driver, theta, tx_records=tx_records)

    @property
    def driver(self) -> neo4j.Driver:
        """The driver, shared with the service's other writers of the same database
        (ingest_service.retention)."""
        return self._driver

    def close(self) -> None:
        self._driver.close()

    def ensure_schema(self) -> None:
        try:
            for statement in SCHEMA:
                self._driver.execute_query(statement)
        except neo4j.exceptions.DriverError as e:
            raise StoreUnavailable(str(e)) from e

    def write(self, flush: Flush) -> FlushResult:
        """One transaction (the driver retries transient errors for a while, and a race with
        another writer on a new node is run again). Raises :class:`StoreUnavailable` or
        :class:`RecordRejected`."""
        for attempt in range(_RACE_RETRIES + 1):
            try:
                with self._driver.session() as session:
                    return session.execute_write(
                        _write, flush, self._theta, self._defer_ids, self._tx_records
                    )
            except (neo4j.exceptions.DriverError, neo4j.exceptions.Neo4jError) as e:
                if _transient_race(e) and attempt < _RACE_RETRIES:
                    log.debug("a race with another writer (%s); again", getattr(e, "code", e))
                    time.sleep(random.uniform(0.01, 0.05) * (attempt + 1))
                    continue
                raise _classify(e) from e
        raise AssertionError("unreachable")  # the last attempt returns or raises

    def index(self, max_edges: int, quiet_s: float = 0.0, timeout_s: float = 120.0) -> IndexResult:
        """One call of the indexer (ingest_service.indexer): keeps the ids of the oldest
        deferred writes, about ``max_edges`` edges of them, in one transaction that no write
        runs beside; with ``quiet_s``, nothing while any writer recorded work that recently
        (data first). Raises :class:`StoreUnavailable` or :class:`RecordRejected`."""
        quiet_ms = int(quiet_s * 1000)
        try:
            # One attempt, no driver retries: a call can be long (a placeholder hub filled at
            # last makes all its edges known at once), and a retry on a timed-out connection
            # would start the same work beside the first, whose transaction still runs until
            # its termination is noticed. The indexer's loop backs off and calls again.
            # Bounded inside Neo4j too (the procedure heeds termination): a call that runs past
            # ``timeout_s`` ends, and its exclusive lock no longer holds the writers back.
            with (
                self._driver.session() as session,
                session.begin_transaction(timeout=timeout_s) as tx,
            ):
                record = tx.run(_INDEX, max_edges=max_edges, quiet_ms=quiet_ms).single(strict=True)
                tx.commit()
        except (neo4j.exceptions.DriverError, neo4j.exceptions.Neo4jError) as e:
            raise _classify(e) from e
        return IndexResult.of(cast(IndexedRow, record))

    def drain_ids(self, max_edges: int = 50_000) -> int:
        """Index until no write's ids wait (tests, backfills); the calls made."""
        calls = 0
        while True:
            calls += 1
            if not self.index(max_edges).remaining:
                return calls


def _source_properties(complete: RunComplete) -> dict[str, list[Any]]:
    """The run's ``files_<relation>`` lists and, where the marker has them, ``masks_<relation>``
    (the TOKEN id masks that tell an unstored source row's id: docs/graph-schema.md)."""
    properties: dict[str, list[Any]] = {}
    for f in complete.source_files:
        properties[source_files_key(f.relation)] = list(f.files)
        if f.masks:
            properties[source_masks_key(f.relation)] = list(f.masks)
    return properties


def _write(
    tx: neo4j.ManagedTransaction, flush: Flush, theta: int, defer_ids: bool, tx_records: int
) -> FlushResult:
    per_run: dict[str, dict[str, int]] = {}
    nodes_created = edges_created = merged = 0
    conflicts: list[tuple[int, int]] = []
    # An empty flush (the consumer's probe of whether Neo4j still takes writes) calls the
    # procedure too: one that is missing or answers other columns is not the data's fault.
    if flush.blocks or flush.edges or flush.members or not flush:
        records = tx.run(
            _WRITE,
            blocks=flush.blocks,
            edges=flush.edges,
            theta=theta,
            members=flush.members,
            defer=defer_ids,
            tx_records=tx_records,
        )
        for row in records:
            written = cast(WrittenRow, row)
            counts = per_run.setdefault(written["run"], {"nodes": 0, "edges": 0})
            counts["nodes"] += written["nodes"]
            counts["edges"] += written["edges"]
            nodes_created += written["nodes"]
            edges_created += written["edges"]
            merged = written["merges"]
            conflicts.extend(zip(written["conflict_blocks"], written["conflict_ids"], strict=True))

    if flush.started:
        rows = [
            {
                "run": s.run_id,
                "workflow": s.workflow,
                "started": s.started_unix_ms,
                "app": s.application_id,
            }
            for s in sorted(flush.started, key=lambda s: s.run_id)
        ]
        tx.run(_RUN_STARTED, rows=rows).consume()
    if flush.completed:
        rows = [
            {
                "run": c.run_id,
                "workflow": c.workflow,
                "nodes": c.node_count,
                "edges": c.edge_count,
                "failed": c.failed,
                "error": c.error,
                "finished": c.finished_unix_ms,
                "files": _source_properties(c),
            }
            for c in sorted(flush.completed, key=lambda c: c.run_id)
        ]
        tx.run(_RUN_COMPLETE, rows=rows).consume()
        versions.write_versions(tx, flush.completed)
        versions.write_reuses(tx, flush.completed)
    if per_run:
        # In one order (by run) in every writer: two writers never wait for each other's runs.
        # The procedure's own transactions counted what they committed (tx_records): here
        # only the run's record and workflow.
        rows = [
            {
                "run": run,
                "workflow": flush.workflows.get(run, ""),
                **({"nodes": 0, "edges": 0} if tx_records > 0 else counts),
            }
            for run, counts in sorted(per_run.items())
        ]
        tx.run(_RUN_COUNTS, rows=rows).consume()

    completed = []
    dangling: dict[str, int] = {}
    for record in tx.run(_RUN_CHECK, runs=sorted(flush.workflows)):
        if record["dangling"]:
            dangling[record["run"]] = record["dangling"]
            log.error(
                "run %s is complete but its edges reference %d nodes it never stored: its "
                "lineage is wrong (a capture defect); ListRuns shows it COMPLETE_WITH_DANGLING",
                record["run"],
                record["dangling"],
            )
        if (
            record["nodes"] != record["expected_nodes"]
            or record["edges"] != record["expected_edges"]
        ):
            log.warning(
                "run %s stored more than its marker counted: nodes %d/%d, edges %d/%d",
                record["run"],
                record["nodes"],
                record["expected_nodes"],
                record["edges"],
                record["expected_edges"],
            )
        completed.append(record["run"])
    return FlushResult(nodes_created, edges_created, merged, completed, dangling, conflicts)
