"""Neo4j writes of the ingest service. All of its Cypher lives here, always parameterized.

One flush is one write transaction (``execute_write`` retries it on transient errors, so it is
idempotent by construction): MERGE the nodes and edges, count what was new per run, merge
component ids (union by size), then record run markers and mark runs whose counts are complete.
A lock node serialises writers, so concurrent consumers never interleave component relabels.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import neo4j

from ingest_service.components import plan_merges
from sparkprov.events import Batch, RunComplete, RunStarted
from sparkprov.runtime import neo4j_driver

__all__ = ["Flush", "FlushResult", "Store", "StoreUnavailable"]

log = logging.getLogger(__name__)

_SCHEMA = [
    "CREATE CONSTRAINT sp_node_id IF NOT EXISTS FOR (n:Node) REQUIRE n.id IS UNIQUE",
    "CREATE CONSTRAINT sp_run_id IF NOT EXISTS FOR (r:Run) REQUIRE r.run_id IS UNIQUE",
    "CREATE CONSTRAINT sp_component_id IF NOT EXISTS FOR (c:Component) REQUIRE c.id IS UNIQUE",
    "CREATE INDEX sp_node_component IF NOT EXISTS FOR (n:Node) ON (n.component_id)",
    "CREATE INDEX sp_node_relation IF NOT EXISTS FOR (n:Node) ON (n.run_id, n.relation)",
    "CREATE INDEX sp_run_workflow IF NOT EXISTS FOR (r:Run) ON (r.workflow)",
]

_LOCK = "MERGE (l:IngestLock {name: 'ingest'}) SET l.flushes = coalesce(l.flushes, 0) + 1"

# A node first seen as an edge end is a placeholder (no op) until its own record arrives; it
# counts as stored for its run only then.
_WRITE_NODES = """
UNWIND $rows AS r
MERGE (n:Node {id: r.id})
  ON CREATE SET n.component_id = r.id
WITH n, r, n.op IS NULL AS fresh
SET n.run_id = CASE WHEN r.shared AND n.run_id IS NOT NULL THEN n.run_id ELSE r.run END,
    n.op = r.op, n.label = r.label, n.relation = r.relation, n.value = r.value,
    n.shared = CASE WHEN r.shared THEN true END
SET n += r.props
RETURN r.run AS run, sum(CASE WHEN fresh AND NOT r.shared THEN 1 ELSE 0 END) AS created
"""

_WRITE_EDGES = """
UNWIND $rows AS r
MERGE (a:Node {id: r.src})
  ON CREATE SET a.component_id = r.src
MERGE (b:Node {id: r.dst})
  ON CREATE SET b.component_id = r.dst
WITH a, b, r
OPTIONAL MATCH (a)-[old:DERIVES]->(b)
WITH a, b, r, old IS NULL AS fresh
MERGE (a)-[:DERIVES]->(b)
WITH r.run AS run, fresh, a.component_id AS ca, b.component_id AS cb
RETURN run, sum(CASE WHEN fresh THEN 1 ELSE 0 END) AS created,
       collect(DISTINCT CASE WHEN ca <> cb THEN [ca, cb] END) AS crossing
"""

_COMPONENT_SIZES = """
UNWIND $ids AS c
OPTIONAL MATCH (k:Component {id: c})
RETURN c AS id, coalesce(k.size, 1) AS size
"""

_RELABEL = """
UNWIND $moves AS m
MATCH (n:Node {component_id: m.old})
SET n.component_id = m.new
WITH DISTINCT m
OPTIONAL MATCH (k:Component {id: m.old})
DELETE k
"""

_RESIZE = """
UNWIND $sizes AS s
MERGE (k:Component {id: s.id})
SET k.size = s.size
"""

_RUN_STARTED = """
UNWIND $rows AS r
MERGE (run:Run {run_id: r.run})
  ON CREATE SET run.stored_nodes = 0, run.stored_edges = 0, run.complete = false
SET run.workflow = r.workflow, run.started_unix_ms = r.started, run.application_id = r.app
"""

_RUN_COMPLETE = """
UNWIND $rows AS r
MERGE (run:Run {run_id: r.run})
  ON CREATE SET run.stored_nodes = 0, run.stored_edges = 0, run.complete = false
SET run.workflow = r.workflow, run.expected_nodes = r.nodes, run.expected_edges = r.edges,
    run.failed = r.failed, run.error = r.error, run.finished_unix_ms = r.finished
"""

_RUN_COUNTS = """
UNWIND $rows AS r
MERGE (run:Run {run_id: r.run})
  ON CREATE SET run.stored_nodes = 0, run.stored_edges = 0, run.complete = false
SET run.workflow = coalesce(run.workflow, r.workflow),
    run.stored_nodes = run.stored_nodes + r.nodes,
    run.stored_edges = run.stored_edges + r.edges
"""

_RUN_CHECK = """
MATCH (run:Run)
WHERE run.run_id IN $runs AND NOT run.complete AND run.expected_nodes IS NOT NULL
  AND run.stored_nodes >= run.expected_nodes AND run.stored_edges >= run.expected_edges
SET run.complete = true, run.completed_unix_ms = timestamp()
RETURN run.run_id AS run, run.stored_nodes AS nodes, run.expected_nodes AS expected_nodes,
       run.stored_edges AS edges, run.expected_edges AS expected_edges
"""


class StoreUnavailable(Exception):
    """Neo4j cannot be reached or keeps failing: pause, retry later, commit nothing."""


@dataclass
class Flush:
    """What one flush writes: deduplicated rows from many batches, plus run markers."""

    nodes: dict[int, dict[str, Any]] = field(default_factory=dict)
    edges: dict[tuple[int, int], dict[str, Any]] = field(default_factory=dict)
    started: list[RunStarted] = field(default_factory=list)
    completed: list[RunComplete] = field(default_factory=list)
    workflows: dict[str, str] = field(default_factory=dict)
    events: int = 0

    def add(self, event: Batch | RunStarted | RunComplete) -> None:
        self.events += 1
        self.workflows.setdefault(event.run_id, event.workflow)
        if isinstance(event, Batch):
            for node in event.nodes:
                self.nodes.setdefault(node["id"], node)
            for edge in event.edges:
                self.edges.setdefault((edge["src"], edge["dst"]), edge)
        elif isinstance(event, RunStarted):
            self.started.append(event)
        else:
            self.completed.append(event)

    def split(self, max_rows: int) -> list[Flush]:
        """Parts of at most ``max_rows`` nodes+edges each (nodes first, markers last), so one huge
        message never becomes one huge transaction. Parts are written in order; the offsets are
        committed after the last, and a retry of any part is harmless (idempotent writes)."""
        if self.rows <= max_rows:
            return [self]
        parts: list[Flush] = []
        rows: list[tuple[str, Any, dict[str, Any]]] = [
            *(("node", k, v) for k, v in self.nodes.items()),
            *(("edge", k, v) for k, v in self.edges.items()),
        ]
        for start in range(0, len(rows), max_rows):
            part = Flush(workflows=self.workflows)
            for kind, key, row in rows[start : start + max_rows]:
                (part.nodes if kind == "node" else part.edges)[key] = row
            part.events = 1
            parts.append(part)
        parts[-1].started = self.started
        parts[-1].completed = self.completed
        return parts

    @property
    def rows(self) -> int:
        return len(self.nodes) + len(self.edges)

    def __bool__(self) -> bool:
        return self.events > 0


@dataclass(frozen=True)
class FlushResult:
    nodes_created: int
    edges_created: int
    components_merged: int
    completed_runs: list[str]


class Store:
    def __init__(self, driver: neo4j.Driver) -> None:
        self._driver = driver

    @classmethod
    def connect(cls, uri: str, user: str = "", password: str = "") -> Store:
        return cls(neo4j_driver(uri, user, password, max_transaction_retry_time=15.0))

    def close(self) -> None:
        self._driver.close()

    def ensure_schema(self) -> None:
        try:
            for statement in _SCHEMA:
                self._driver.execute_query(statement)
        except neo4j.exceptions.DriverError as e:
            raise StoreUnavailable(str(e)) from e

    def write(self, flush: Flush) -> FlushResult:
        try:
            with self._driver.session() as session:
                return session.execute_write(_write, flush)
        except (neo4j.exceptions.DriverError, neo4j.exceptions.Neo4jError) as e:
            if isinstance(e, neo4j.exceptions.ClientError):
                raise  # a bug of ours, not an outage: let it surface
            raise StoreUnavailable(f"{type(e).__name__}: {e}") from e


def _write(tx: neo4j.ManagedTransaction, flush: Flush) -> FlushResult:
    tx.run(_LOCK).consume()
    per_run: dict[str, dict[str, int]] = {}

    def credit(records: Iterable[neo4j.Record], kind: str) -> int:
        total = 0
        for record in records:
            counts = per_run.setdefault(record["run"], {"nodes": 0, "edges": 0})
            counts[kind] += record["created"]
            total += record["created"]
        return total

    nodes_created = credit(tx.run(_WRITE_NODES, rows=list(flush.nodes.values())), "nodes")
    edge_rows = list(flush.edges.values())
    edge_records = list(tx.run(_WRITE_EDGES, rows=edge_rows))
    edges_created = credit(edge_records, "edges")
    # Pairs of distinct components that the new edges connect (union-find input).
    pairs = {(a, b) for record in edge_records for a, b in record["crossing"]}

    merged = 0
    if pairs:
        ids = sorted({c for pair in pairs for c in pair})
        sizes = {r["id"]: r["size"] for r in tx.run(_COMPONENT_SIZES, ids=ids)}
        merges, grown = plan_merges(pairs, sizes)
        tx.run(_RELABEL, moves=[{"old": m.old, "new": m.new} for m in merges]).consume()
        tx.run(_RESIZE, sizes=[{"id": c, "size": s} for c, s in grown.items()]).consume()
        merged = len(merges)

    if flush.started:
        rows = [
            {
                "run": s.run_id,
                "workflow": s.workflow,
                "started": s.started_unix_ms,
                "app": s.application_id,
            }
            for s in flush.started
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
            }
            for c in flush.completed
        ]
        tx.run(_RUN_COMPLETE, rows=rows).consume()
    if per_run:
        rows = [
            {"run": run, "workflow": flush.workflows.get(run, ""), **counts}
            for run, counts in per_run.items()
        ]
        tx.run(_RUN_COUNTS, rows=rows).consume()

    completed = []
    for record in tx.run(_RUN_CHECK, runs=sorted(flush.workflows)):
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
    return FlushResult(nodes_created, edges_created, merged, completed)
