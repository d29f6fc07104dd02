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
from typing import Any, NamedTuple

import neo4j

from ingest_service.components import plan_merges
from ingest_service.sets import DEFAULT_THETA, LEVELS, dependencies, effective, part
from sparkprov.events import Batch, RunComplete, RunStarted
from sparkprov.runtime import neo4j_driver

__all__ = ["Flush", "FlushResult", "Store", "StoreUnavailable"]

log = logging.getLogger(__name__)

_SCHEMA = [
    "CREATE CONSTRAINT sp_node_id IF NOT EXISTS FOR (n:Node) REQUIRE n.id IS UNIQUE",
    "CREATE CONSTRAINT sp_run_id IF NOT EXISTS FOR (r:Run) REQUIRE r.run_id IS UNIQUE",
    "CREATE CONSTRAINT sp_component_id IF NOT EXISTS FOR (c:Component) REQUIRE c.id IS UNIQUE",
    "CREATE CONSTRAINT sp_level_set_key IF NOT EXISTS FOR (s:LevelSet) REQUIRE s.key IS UNIQUE",
    "CREATE CONSTRAINT sp_set_id IF NOT EXISTS FOR (s:ConnectedSet) REQUIRE s.id IS UNIQUE",
    "CREATE INDEX sp_node_component IF NOT EXISTS FOR (n:Node) ON (n.component_id)",
    "CREATE INDEX sp_node_set IF NOT EXISTS FOR (n:Node) ON (n.set_id)",
    *(f"CREATE INDEX sp_node_s{k} IF NOT EXISTS FOR (n:Node) ON (n.s{k})" for k in range(LEVELS)),
    "CREATE INDEX sp_set_component IF NOT EXISTS FOR (s:ConnectedSet) ON (s.component_id)",
    "CREATE INDEX sp_node_relation IF NOT EXISTS FOR (n:Node) ON (n.run_id, n.relation)",
    "CREATE INDEX sp_run_workflow IF NOT EXISTS FOR (r:Run) ON (r.workflow)",
]

_LOCK = "MERGE (l:IngestLock {name: 'ingest'}) SET l.flushes = coalesce(l.flushes, 0) + 1"

# Every node starts as its own component and its own set at every level.
_INIT = "component_id = {v}, {n}.set_id = {v}, " + ", ".join(
    f"{{n}}.s{k} = {{v}}" for k in range(LEVELS)
)


def _init(n: str, v: str) -> str:
    return f"{n}." + _INIT.format(n=n, v=v)


# A node first seen as an edge end is a placeholder (no op, no split) until its own record
# arrives; it counts as stored for its run only then, and its edges join sets only then.
_WRITE_NODES = f"""
UNWIND $rows AS r
MERGE (n:Node {{id: r.id}})
  ON CREATE SET {_init("n", "r.id")}
WITH n, r, n.op IS NULL AS fresh
SET n.run_id = CASE WHEN r.shared AND n.run_id IS NOT NULL THEN n.run_id ELSE r.run END,
    n.op = r.op, n.label = r.label, n.relation = r.relation, n.value = r.value,
    n.shared = CASE WHEN r.shared THEN true END,
    n.split = CASE WHEN fresh THEN r.split ELSE n.split END
SET n += r.props
WITH r, fresh, n
RETURN r.run AS run, sum(CASE WHEN fresh AND NOT r.shared THEN 1 ELSE 0 END) AS created,
       collect(CASE WHEN fresh THEN n.id END) AS fresh
"""

_WRITE_EDGES = f"""
UNWIND $rows AS r
MERGE (a:Node {{id: r.src}})
  ON CREATE SET {_init("a", "r.src")}
MERGE (b:Node {{id: r.dst}})
  ON CREATE SET {_init("b", "r.dst")}
WITH a, b, r
OPTIONAL MATCH (a)-[old:DERIVES]->(b)
WITH a, b, r, old IS NULL AS fresh
MERGE (a)-[:DERIVES]->(b)
RETURN r.run AS run, sum(CASE WHEN fresh THEN 1 ELSE 0 END) AS created
"""

# Edges already stored at nodes whose record (and so split) arrived only now.
_INCIDENT = """
UNWIND $ids AS i
MATCH (n:Node {id: i})
MATCH (n)-[e:DERIVES]-(m:Node)
RETURN DISTINCT startNode(e).id AS src, endNode(e).id AS dst
"""

_NODE_INFO = f"""
UNWIND $ids AS i
MATCH (n:Node {{id: i}})
RETURN n.id AS id, n.op IS NOT NULL AS known, n.split AS split, n.component_id AS component,
       n.set_id AS set_id, [{", ".join(f"n.s{k}" for k in range(LEVELS))}] AS levels
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
WITH DISTINCT m
MATCH (s:ConnectedSet {component_id: m.old})
SET s.component_id = m.new
"""

_RESIZE = """
UNWIND $sizes AS s
MERGE (k:Component {id: s.id})
SET k.size = s.size
"""

_LEVEL_SIZES = """
UNWIND $keys AS key
OPTIONAL MATCH (s:LevelSet {key: key})
RETURN key, coalesce(s.size, 1) AS size
"""

_LEVEL_RELABEL = [
    f"""
UNWIND $moves AS m
MATCH (n:Node {{s{k}: m.old}})
SET n.s{k} = m.new
RETURN n.id AS id
"""
    for k in range(LEVELS)
]

_LEVEL_MEMBERS = [
    f"""
UNWIND $ids AS i
MATCH (n:Node {{s{k}: i}})
RETURN n.id AS id
"""
    for k in range(LEVELS)
]

_LEVEL_RESIZE = """
UNWIND $gone AS key
OPTIONAL MATCH (s:LevelSet {key: key})
DELETE s
WITH count(*) AS _
UNWIND $sizes AS r
MERGE (s:LevelSet {key: r.key})
SET s.size = r.size
"""

_SET_IDS = """
UNWIND $rows AS r
MATCH (n:Node {id: r.id})
SET n.set_id = r.set_id
"""

_SETS = """
UNWIND $rows AS r
MERGE (s:ConnectedSet {id: r.id})
SET s.level = r.level, s.size = r.size, s.component_id = r.component
"""

_SET_DEPS = """
UNWIND $pairs AS p
MATCH (a:ConnectedSet {id: p[0]})
MATCH (b:ConnectedSet {id: p[1]})
MERGE (a)-[:SET_DEP]->(b)
"""

# A set id none of whose nodes still carries it (merged into another, or refined): gone, with
# its dependencies (the edges that made them were re-read under their new sets).
_SETS_GONE = """
UNWIND $ids AS i
MATCH (s:ConnectedSet {id: i})
WHERE NOT EXISTS { MATCH (:Node {set_id: i}) }
DETACH DELETE s
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
    def __init__(self, driver: neo4j.Driver, theta: int = DEFAULT_THETA) -> None:
        self._driver = driver
        self._theta = theta

    @classmethod
    def connect(
        cls, uri: str, user: str = "", password: str = "", theta: int = DEFAULT_THETA
    ) -> Store:
        return cls(neo4j_driver(uri, user, password, max_transaction_retry_time=15.0), theta)

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
                return session.execute_write(_write, flush, self._theta)
        except (neo4j.exceptions.DriverError, neo4j.exceptions.Neo4jError) as e:
            if isinstance(e, neo4j.exceptions.ClientError):
                raise  # a bug of ours, not an outage: let it surface
            raise StoreUnavailable(f"{type(e).__name__}: {e}") from e


def _write(tx: neo4j.ManagedTransaction, flush: Flush, theta: int) -> FlushResult:
    tx.run(_LOCK).consume()
    per_run: dict[str, dict[str, int]] = {}
    fresh: set[int] = set()

    def credit(records: Iterable[neo4j.Record], kind: str) -> int:
        total = 0
        for record in records:
            counts = per_run.setdefault(record["run"], {"nodes": 0, "edges": 0})
            counts[kind] += record["created"]
            total += record["created"]
            if kind == "nodes":
                fresh.update(i for i in record["fresh"] if i is not None)
        return total

    nodes_created = credit(tx.run(_WRITE_NODES, rows=list(flush.nodes.values())), "nodes")
    edges_created = credit(tx.run(_WRITE_EDGES, rows=list(flush.edges.values())), "edges")
    merged = _maintain_ids(tx, set(flush.edges), fresh, theta)
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


def _maintain_ids(
    tx: neo4j.ManagedTransaction, edges: set[tuple[int, int]], fresh: set[int], theta: int
) -> int:
    """Keep component ids, per-level set ids, connected sets and set dependencies exact after
    this flush's edges and nodes (see ingest_service.sets). Returns the component merges."""
    # The edges to (re)consider: this flush's, and the stored edges of nodes that became known.
    work = set(edges)
    if fresh:
        work.update((r["src"], r["dst"]) for r in tx.run(_INCIDENT, ids=sorted(fresh)))
    if not work and not fresh:
        return 0
    info = _node_info(tx, {i for edge in work for i in edge} | fresh)

    # Components: every edge counts, known ends or not.
    pairs = {
        (info[a].component, info[b].component)
        for a, b in work
        if info[a].component != info[b].component
    }
    merged = 0
    if pairs:
        ids = sorted({c for pair in pairs for c in pair})
        sizes = {r["id"]: r["size"] for r in tx.run(_COMPONENT_SIZES, ids=ids)}
        merges, grown = plan_merges(pairs, sizes)
        tx.run(_RELABEL, moves=[{"old": m.old, "new": m.new} for m in merges]).consume()
        tx.run(_RESIZE, sizes=[{"id": c, "size": s} for c, s in grown.items()]).consume()
        merged = len(merges)

    # Sets, level by level: edges whose two known ends share their part at that level.
    known = [(a, b) for a, b in work if info[a].known and info[b].known]
    touched: set[int] = set(i for i in fresh if info[i].known)
    for level in range(LEVELS):
        level_pairs = {
            (info[a].levels[level], info[b].levels[level])
            for a, b in known
            if part(info[a].split or (), level) == part(info[b].split or (), level)
            and info[a].levels[level] != info[b].levels[level]
        }
        if not level_pairs:
            continue
        ids = sorted({c for pair in level_pairs for c in pair})
        sizes = _level_sizes(tx, [(level, c) for c in ids])
        level_sizes = {c: sizes[(level, c)] for c in ids}
        merges, grown = plan_merges(level_pairs, level_sizes)
        moved = tx.run(_LEVEL_RELABEL[level], moves=[{"old": m.old, "new": m.new} for m in merges])
        touched.update(r["id"] for r in moved)
        tx.run(
            _LEVEL_RESIZE,
            gone=[_key(level, m.old) for m in merges],
            sizes=[{"key": _key(level, c), "size": s} for c, s in grown.items()],
        ).consume()
        # A set that crossed theta is refined: every member's connected set is recomputed.
        crossed = [c for c, s in grown.items() if level_sizes.get(c, 1) < theta <= s]
        if crossed:
            touched.update(r["id"] for r in tx.run(_LEVEL_MEMBERS[level], ids=crossed))
    if not touched:
        return merged

    # Connected sets of the touched nodes, from their (new) level ids and the set sizes.
    info.update(_node_info(tx, touched))
    sizes = _level_sizes(
        tx, sorted({(k, info[i].levels[k]) for i in touched for k in range(LEVELS)})
    )
    changed: dict[int, int] = {}
    old_sets: set[int] = set()
    sets: dict[int, dict[str, int]] = {}
    for i in touched:
        row = _set_row(info[i], sizes, theta)
        sets[row["id"]] = row
        if row["id"] != info[i].set_id:
            changed[i] = row["id"]
            old_sets.add(info[i].set_id)
    if changed:
        tx.run(_SET_IDS, rows=[{"id": i, "set_id": s} for i, s in changed.items()]).consume()
        for i, s in changed.items():
            info[i] = info[i]._replace(set_id=s)
        # The stored edges of nodes that changed set get their dependencies re-read.
        extra = {(r["src"], r["dst"]) for r in tx.run(_INCIDENT, ids=sorted(changed))}
        extra -= work
        if extra:
            info.update(_node_info(tx, {i for e in extra for i in e} - set(info)))
            known += [(a, b) for a, b in extra if info[a].known and info[b].known]
        old_sets -= set(changed.values())

    deps = dependencies(known, {i: n.set_id for i, n in info.items()})
    ends = {s for d in deps for s in d}
    # Sets at the ends of dependencies need their ConnectedSet node even when untouched.
    owners = {info[i].set_id: info[i] for edge in known for i in edge if info[i].set_id in ends}
    missing = [owners[s] for s in ends if s not in sets]
    if missing:
        sizes = _level_sizes(tx, sorted({(k, n.levels[k]) for n in missing for k in range(LEVELS)}))
        for node in missing:
            row = _set_row(node, sizes, theta)
            sets[row["id"]] = row
    # Only sets of more than one node or with dependencies get a ConnectedSet node.
    rows = [row for row in sets.values() if row["size"] > 1 or row["id"] in ends]
    if rows:
        tx.run(_SETS, rows=rows).consume()
    if deps:
        tx.run(_SET_DEPS, pairs=[list(d) for d in sorted(deps)]).consume()
    if old_sets:
        tx.run(_SETS_GONE, ids=sorted(old_sets)).consume()
    return merged


class _Info(NamedTuple):
    known: bool
    split: list[str] | None
    component: int
    set_id: int
    levels: list[int]


def _node_info(tx: neo4j.ManagedTransaction, ids: set[int]) -> dict[int, _Info]:
    return {
        r["id"]: _Info(r["known"], r["split"], r["component"], r["set_id"], r["levels"])
        for r in tx.run(_NODE_INFO, ids=sorted(ids))
    }


def _set_row(node: _Info, sizes: dict[tuple[int, int], int], theta: int) -> dict[str, int]:
    ids = node.levels[: max(1, min(len(node.split or ()), LEVELS))]
    level, set_id = effective(ids, sizes, theta)
    return {
        "id": set_id,
        "level": level,
        "size": sizes.get((level, set_id), 1),
        "component": node.component,
    }


def _key(level: int, set_id: int) -> str:
    return f"{level}:{set_id}"


def _level_sizes(
    tx: neo4j.ManagedTransaction, sets: Iterable[tuple[int, int]]
) -> dict[tuple[int, int], int]:
    keys = {_key(k, s): (k, s) for k, s in sets}
    return {keys[r["key"]]: r["size"] for r in tx.run(_LEVEL_SIZES, keys=sorted(keys))}
