"""Neo4j reads of the query service. All of its Cypher lives here, always parameterized.

A node's component and connected-set ids are kept by reference (docs/graph-schema.md, "Component
and set ids"): its properties hold the ids it was born with, which merges leave behind. Every
read here resolves them through the ingest plugin (``sparkprov.component(n)``,
``sparkprov.set(n)``, ``sparkprov.componentNodes``, ``sparkprov.setNodes``), never from the
node's properties.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any, Protocol, cast

import neo4j

from query_service import members, source_rows
from query_service.deletion import Propagated, Touched
from query_service.members import Derived, DerivedCache, MemberEdge
from query_service.model import (
    Direction,
    EdgeView,
    InvalidArgument,
    NodeView,
    NotFound,
    RunReuse,
    RunView,
    Strategy,
    TraceResult,
)
from sparkprov.events import ATTRIBUTE_PREFIX
from sparkprov.procedures import DeletionRow, NodeMap, SubgraphRow, TraceRow
from sparkprov.runtime import neo4j_driver

__all__ = [
    "EDGE_COLUMNS",
    "ID_COLUMNS",
    "GraphStore",
    "Store",
    "is_folded",
    "member_edge",
    "node_of",
    "node_view",
    "propagated",
    "trace_result",
]

# Every query that builds a NodeView returns its node with the current ids (see node_of).
ID_COLUMNS = "sparkprov.component(n) AS component, sparkprov.set(n) AS set"
_NODES = f"UNWIND $ids AS i MATCH (n:Node {{id: i}}) RETURN n, {ID_COLUMNS}"
# A stored edge with the member record it carries, if it is a member edge (query_service.members),
# and the joined row it stands for if it is a folded one (times and partner: else null).
EDGE_COLUMNS = (
    "a.id AS src, b.id AS dst, "
    "r.member_key AS key, r.member_values AS vals, r.member_nulls AS nulls, "
    "r.times AS times, r.partner AS partner"
)
# The member edges into the groups of AGGREGATE nodes: their TENSOR parents are derived.
_AGGREGATE_MEMBERS = f"""
UNWIND $ids AS i
MATCH (c:Node {{id: i, op: 'AGGREGATE'}})-[:DERIVES]->(b:Node)<-[r:DERIVES]-(a:Node)
WHERE r.member_key IS NOT NULL
RETURN i AS aggregate, {EDGE_COLUMNS}
"""
_BY_PAIR = f"""
UNWIND $pairs AS p
MATCH (a:Node)-[r:DERIVES {{pair: p}}]->(b:Node)
RETURN {EDGE_COLUMNS}
"""
# The folded member edges of TIMES ids (DERIVES.times is indexed).
_BY_TIMES = f"""
UNWIND $ids AS t
MATCH (a:Node)-[r:DERIVES {{times: t}}]->(b:Node)
RETURN {EDGE_COLUMNS}
"""
_MEMBER_KEYS = "MATCH (k:MemberKey) RETURN k.key AS key, k.aggregates AS aggregates"
# Attribute names come from the caller: they are looked up as map keys, never spliced into text.
_FIND = f"""
MATCH (n:Node {{run_id: $run, relation: $relation}})
WHERE all(k IN keys($equals) WHERE n[$prefix + k] = $equals[k])
WITH n ORDER BY n.id LIMIT $limit
RETURN n, {ID_COLUMNS} ORDER BY n.id
"""
_RUNS = """
MATCH (r:Run)
WHERE $workflow = '' OR r.workflow = $workflow
OPTIONAL MATCH (r)-[u:REUSES]->(earlier:Run)
WITH r, collect(CASE WHEN u IS NULL THEN null
                     ELSE {sink: u.sink, version: u.version, run_id: earlier.run_id} END) AS reuses
RETURN r, reuses ORDER BY coalesce(r.started_unix_ms, 0) DESC, r.run_id
"""
_RUN_EXISTS = "MATCH (r:Run {run_id: $run}) RETURN count(r) AS n"
# Runs some of whose writes still wait for the indexer (ingest_service.indexer): not indexed.
_RUNS_PENDING_IDS = "MATCH (w:IdWork) UNWIND w.runs AS run RETURN DISTINCT run"

# A run's own nodes, and the edges touching them (their other ends may be shared state tokens
# first stored by an earlier run).
_RUN_NODES = f"MATCH (n:Node {{run_id: $run}}) RETURN n, {ID_COLUMNS}"
_RUN_EDGES = f"""
MATCH (a:Node {{run_id: $run}})-[r:DERIVES]->(b:Node)
RETURN {EDGE_COLUMNS}
UNION
MATCH (a:Node)-[r:DERIVES]->(b:Node {{run_id: $run}})
RETURN {EDGE_COLUMNS}
"""
# A whole trace in one round trip: the plugin's traversal (neo4j_plugin, io.sparkprov.plugin.query
# .Traces) with the strategies of query_service.traces, views of the nodes included.
_TRACE = """
CALL sparkprov.trace($ids, $direction, $strategy, $depth, $limit, $views, $auto_max)
YIELD missing, ids, nodes, sources, targets, truncated, strategy, levels, reached, fetched, sets,
      ids_pending
RETURN missing, ids, nodes, sources, targets, truncated, strategy, levels, reached, fetched, sets,
       ids_pending
"""
# The same trace as the bytes of query.proto's TraceResponse, written by the plugin
# (TraceMessage.java): the service passes them on without rebuilding each node in Python.
_TRACE_ENCODED = """
CALL sparkprov.trace($ids, $direction, $strategy, $depth, $limit, true, $auto_max, true)
YIELD missing, response
RETURN missing, response
"""
# Subgraph(n) in one round trip (Subgraphs.java).
_SUBGRAPH = """
CALL sparkprov.subgraph($id, $limit, $max_nodes, $auto_max)
YIELD missing, tooLarge, ids, nodes, sources, targets, truncated, strategy, levels, reached,
      fetched, sets
RETURN missing, tooLarge, ids, nodes, sources, targets, truncated, strategy, levels, reached,
       fetched, sets
"""
# Deletion propagation in one round trip (Deletions.java).
_PROPAGATE = """
CALL sparkprov.propagateDeletion($ids, $limit, $auto_max)
YIELD missing, truncated, removed, aggregates
RETURN missing, truncated, removed, aggregates
"""
# The value each surviving member contributes to an aggregate: its TENSOR's VALUE parent.
_TENSOR_VALUES = """
UNWIND $ids AS i
MATCH (v:Node {op: 'VALUE'})-[:DERIVES]->(t:Node {op: 'TENSOR'})-[:DERIVES]->(:Node {id: i})
RETURN t.id AS tensor, v.value AS value
"""


def node_of(record: neo4j.Record) -> NodeView:
    """A node returned with its current ids (``RETURN n, ...`` + ``ID_COLUMNS``); the node's own
    component_id and s0..s2 properties are the ids it was born with, and are not read."""
    props: Mapping[str, Any] = record["n"]
    attributes = {
        key[len(ATTRIBUTE_PREFIX) :]: str(value)
        for key, value in props.items()
        if key.startswith(ATTRIBUTE_PREFIX)
    }
    return NodeView(
        id=props["id"],
        run_id=props.get("run_id") or "",
        op=props.get("op") or "",
        label=props.get("label") or "",
        relation=props.get("relation") or "",
        attributes=attributes,
        value=props.get("value") or "",
        component_id=record["component"],
        set_id=record["set"],
    )


def node_view(m: NodeMap) -> NodeView:
    """A node view as sparkprov.trace and sparkprov.subgraph yield it (ids current)."""
    return NodeView(
        id=m["id"],
        run_id=m["run_id"],
        op=m["op"],
        label=m["label"],
        relation=m["relation"],
        attributes=dict(m["attributes"]),
        value=m["value"],
        component_id=m["component"],
        set_id=m["set"],
    )


def trace_result(r: TraceRow | SubgraphRow) -> TraceResult:
    """The TraceResult of one row of sparkprov.trace or sparkprov.subgraph (one round trip)."""
    return TraceResult(
        nodes=[node_view(m) for m in r["nodes"]],
        ids=list(r["ids"]),
        edges=[EdgeView(s, d) for s, d in zip(r["sources"], r["targets"], strict=True)],
        truncated=r["truncated"],
        strategy=Strategy[r["strategy"]],
        levels=r["levels"],
        queries=1,
        edges_fetched=r["fetched"],
        sets_visited=r["sets"],
        extra={"nodes_reached": r["reached"]},
        ids_pending=bool(r.get("ids_pending", False)),
    )


def propagated(r: DeletionRow) -> Propagated:
    """What one row of sparkprov.propagateDeletion says (its ``missing`` checked by the caller)."""
    touched = [Touched(a["id"], a["label"], a["value"], list(a["values"])) for a in r["aggregates"]]
    return Propagated(list(r["removed"]), touched, r["truncated"])


def member_edge(r: Mapping[str, Any]) -> MemberEdge:
    """The member edge of a record with ``EDGE_COLUMNS`` (folded when it has ``times``)."""
    return MemberEdge.of(
        r["src"], r["dst"], r["key"], r["vals"] or [], r["nulls"], r.get("times"), r.get("partner")
    )


def is_folded(r: Mapping[str, Any]) -> bool:
    """Whether a record with ``EDGE_COLUMNS`` is a folded member edge, whose stored edge
    l -> g is no logical edge (its TIMES node's edges stand for it)."""
    return r.get("times") is not None


class GraphStore(Protocol):
    """What the service asks of its store: :class:`Store` over Neo4j and its plugin in
    production; the unit tests' fake graphs, whose answers come from the Python reference
    (tests/reference/store.py). The service never asks which one it has."""

    def trace(
        self,
        node_ids: list[int],
        direction: Direction,
        strategy: Strategy,
        max_depth: int,
        limit: int,
        *,
        views: bool = True,
        auto_fetch_max: int,
        timeout_s: float | None = None,
    ) -> TraceResult: ...

    def trace_encoded(
        self,
        node_ids: list[int],
        direction: Direction,
        strategy: Strategy,
        max_depth: int,
        limit: int,
        *,
        auto_fetch_max: int,
        timeout_s: float | None = None,
    ) -> bytes: ...

    def subgraph(
        self,
        node_id: int,
        limit: int,
        max_nodes: int,
        auto_fetch_max: int,
        timeout_s: float | None = None,
    ) -> TraceResult: ...

    def propagate_deletion(
        self, ids: list[int], limit: int, auto_fetch_max: int, timeout_s: float | None = None
    ) -> Propagated: ...

    def nodes(self, ids: Iterable[int]) -> dict[int, NodeView]: ...

    def unstored_source_rows(self, ids: Sequence[int]) -> dict[int, NodeView]: ...

    def run_graph(self, run_id: str) -> tuple[dict[int, NodeView], list[tuple[int, int]]]: ...

    def tensor_values(self, aggregates: list[int]) -> dict[int, str]: ...

    def find(
        self, run_id: str, relation: str, equals: Mapping[str, str], limit: int
    ) -> list[NodeView]: ...

    def run_exists(self, run_id: str) -> bool: ...

    def read(self, query: str, **params: Any) -> list[neo4j.Record]: ...

    def runs(self, workflow: str) -> list[RunView]: ...

    @property
    def driver(self) -> neo4j.Driver: ...


class Store:
    """The logical graph (../shared/MODEL.md section 6) read from the stored one: every method
    answers with the derived TENSOR and VALUE nodes of member edges, and the TIMES nodes of
    folded ones, as if they were stored (query_service.members)."""

    def __init__(self, driver: neo4j.Driver) -> None:
        self._driver = driver
        self.derived = DerivedCache()

    @classmethod
    def connect(
        cls,
        uri: str,
        user: str = "",
        password: str = "",
        *,
        timeout_s: float = 5.0,
        tls_ca: str = "",
        database: str = "",
    ) -> Store:
        """A store whose calls fail within about ``timeout_s`` while Neo4j is away (the driver's
        defaults wait for a connection up to 60 s, then retry for 30 s)."""
        driver = neo4j_driver(
            uri,
            user,
            password,
            tls_ca=tls_ca,
            database=database,
            connection_timeout=timeout_s / 2,
            connection_acquisition_timeout=timeout_s,
            max_transaction_retry_time=timeout_s / 2,
        )
        return cls(driver)

    def close(self) -> None:
        self._driver.close()

    @property
    def driver(self) -> neo4j.Driver:
        """The driver, shared with the other readers of the same database (version_store)."""
        return self._driver

    def read(self, query: str, **params: Any) -> list[neo4j.Record]:
        return self._bounded(query, params, None)

    def _bounded(
        self, query: str, parameters: dict[str, Any], timeout_s: float | None
    ) -> list[neo4j.Record]:
        """A read whose transaction Neo4j ends after ``timeout_s`` (None: the server's bound)."""
        records, _, _ = self._driver.execute_query(
            neo4j.Query(query, timeout=timeout_s),
            parameters_=parameters,
            routing_=neo4j.RoutingControl.READ,
        )
        return records

    def trace(
        self,
        node_ids: list[int],
        direction: Direction,
        strategy: Strategy,
        max_depth: int,
        limit: int,
        *,
        views: bool = True,
        auto_fetch_max: int,
        timeout_s: float | None = None,
    ) -> TraceResult:
        """A whole trace inside Neo4j (``sparkprov.trace``), in one round trip; ``timeout_s``
        bounds its transaction. Raises NotFound for unknown seeds."""
        parameters = _trace_parameters(
            node_ids, direction, strategy, max_depth, limit, auto_fetch_max
        )
        parameters["views"] = views
        return trace_result(cast(TraceRow, self._trace_row(_TRACE, parameters, timeout_s)))

    def trace_encoded(
        self,
        node_ids: list[int],
        direction: Direction,
        strategy: Strategy,
        max_depth: int,
        limit: int,
        *,
        auto_fetch_max: int,
        timeout_s: float | None = None,
    ) -> bytes:
        """:meth:`trace` as the serialized ``TraceResponse`` (its ``stats.millis`` unset)."""
        parameters = _trace_parameters(
            node_ids, direction, strategy, max_depth, limit, auto_fetch_max
        )
        return bytes(self._trace_row(_TRACE_ENCODED, parameters, timeout_s)["response"])

    def _trace_row(
        self, cypher: str, parameters: dict[str, Any], timeout_s: float | None
    ) -> neo4j.Record:
        """The one row of a sparkprov.trace call, its transaction bounded by ``timeout_s``;
        NotFound for unknown seeds."""
        r = self._bounded(cypher, parameters, timeout_s)[0]
        if r["missing"]:
            shown = ", ".join(str(i) for i in r["missing"][:10])
            raise NotFound(f"unknown node id(s): {shown}")
        return r

    def subgraph(
        self,
        node_id: int,
        limit: int,
        max_nodes: int,
        auto_fetch_max: int,
        timeout_s: float | None = None,
    ) -> TraceResult:
        """Lipstick's Subgraph(n) inside Neo4j (``sparkprov.subgraph``), its transaction bounded
        by ``timeout_s``; raises NotFound for an unknown node and InvalidArgument when its
        ancestry or descendants exceed ``max_nodes``."""
        parameters = {
            "id": node_id,
            "limit": limit,
            "max_nodes": max_nodes,
            "auto_max": auto_fetch_max,
        }
        r = self._bounded(_SUBGRAPH, parameters, timeout_s)[0]
        if r["missing"]:
            raise NotFound(f"unknown node id(s): {node_id}")
        if r["tooLarge"]:
            raise InvalidArgument(f"{r['tooLarge']} has more than {max_nodes} nodes")
        return trace_result(cast(SubgraphRow, r))

    def propagate_deletion(
        self, ids: list[int], limit: int, auto_fetch_max: int, timeout_s: float | None = None
    ) -> Propagated:
        """Definition 4.2 inside Neo4j (``sparkprov.propagateDeletion``) over the forward
        closure of ``ids``, found with AUTO's strategy, its transaction bounded by
        ``timeout_s``; raises NotFound for unknown ids."""
        parameters = {"ids": ids, "limit": limit, "auto_max": auto_fetch_max}
        r = self._bounded(_PROPAGATE, parameters, timeout_s)[0]
        if r["missing"]:
            shown = ", ".join(str(i) for i in r["missing"][:10])
            raise NotFound(f"unknown node id(s): {shown}")
        return propagated(cast(DeletionRow, r))

    def unstored_source_rows(self, ids: Sequence[int]) -> dict[int, NodeView]:
        """Of ``ids`` (not stored), the file source rows a filter dropped before capture, as
        their TOKEN nodes (query_service.source_rows.unstored)."""
        return source_rows.unstored_rows(self, ids)

    def nodes(self, ids: Iterable[int]) -> dict[int, NodeView]:
        wanted = list(ids)
        found = {n.id: n for n in (node_of(r) for r in self.read(_NODES, ids=wanted))}
        missing = [i for i in wanted if i not in found]
        if missing:
            found.update(self.derived_views(self.resolve(missing)))
        return found

    def resolve(self, ids: Iterable[int]) -> dict[int, Derived]:
        """The derived nodes among ``ids`` (met lately, or found by their member edge's pair, or
        a folded TIMES node by its member edge's ``times``); ids that are neither stored nor
        derived are left out."""
        out: dict[int, Derived] = {}
        missing = []
        for i in ids:
            node = self.derived.get(i)
            if node is not None:
                out[i] = node
            else:
                missing.append(i)
        if not missing:
            return out
        keys = {r["key"]: r["aggregates"] or 0 for r in self.read(_MEMBER_KEYS)}
        pairs = members.candidates(missing, keys)
        wanted = set(missing)
        if pairs:
            records = self.read(_BY_PAIR, pairs=sorted(pairs))
            nodes, _ = members.expand(member_edge(r) for r in records)
            self.derived.add(nodes)
            out.update({i: n for i, n in nodes.items() if i in wanted})
        rest = [i for i in missing if i not in out]
        if rest:
            records = self.read(_BY_TIMES, ids=rest)
            nodes, _ = members.expand(member_edge(r) for r in records)
            self.derived.add(nodes)
            out.update({i: n for i, n in nodes.items() if i in wanted and i not in out})
        return out

    def expand_members(self, member_edges: list[MemberEdge]) -> list[tuple[int, int]]:
        """The logical edges of member edges beside the stored ones (an unfolded m -> g, stored,
        not among them; a folded edge's l -> T, partner -> T and T -> g among them); their
        derived nodes are remembered for the next look-up."""
        if not member_edges:
            return []
        nodes, edges = members.expand(member_edges)
        self.derived.add(nodes)
        return edges

    def logical_edges(self, records: Iterable[Mapping[str, Any]]) -> list[tuple[int, int]]:
        """Stored edges (``EDGE_COLUMNS``) and, for member edges among them, the edges they
        stand for; a folded member edge's stored l -> g is left out (no logical edge). Distinct,
        in order: a TIMES node both stored and folded gives its edges once."""
        out, member_edges = [], []
        for r in records:
            if not is_folded(r):
                out.append((r["src"], r["dst"]))
            if r["key"] is not None:
                member_edges.append(member_edge(r))
        return list(dict.fromkeys(out + self.expand_members(member_edges)))

    def aggregate_inputs(self, aggregates: list[int]) -> list[tuple[int, int, str]]:
        """(TENSOR, AGGREGATE, value) of the derived TENSOR inputs of AGGREGATE nodes."""
        records = self.read(_AGGREGATE_MEMBERS, ids=aggregates)
        columns: dict[tuple[int, str], set[int]] = defaultdict(set)
        edges: dict[tuple[int, int], MemberEdge] = {}
        named: dict[tuple[int, int, str], int | None] = {}  # (aggregate, group, key) -> column
        for r in records:
            edge = member_edge(r)
            edges[(edge.member, edge.group)] = edge
            slot = (r["aggregate"], edge.group, edge.key)
            if slot not in named:
                named[slot] = members.aggregate_column(*slot, len(edge.values))
            column = named[slot]
            if column is not None:
                columns[(edge.group, edge.key)].add(column)
        nodes, _ = members.expand(edges.values(), columns)
        self.derived.add(nodes)
        return [(n.id, n.aggregate, n.text) for n in nodes.values() if n.op == "TENSOR"]

    def derived_views(self, derived: Mapping[int, Derived]) -> dict[int, NodeView]:
        """Views of derived nodes: op, label and value of their own, run and ids of their member
        (of a folded edge's group, for its TIMES node and that node's TENSOR and VALUE nodes)."""
        if not derived:
            return {}
        owners = {n.edge.owner for n in derived.values()}
        stored = {n.id: n for n in (node_of(r) for r in self.read(_NODES, ids=sorted(owners)))}
        out = {}
        for node_id, d in derived.items():
            member = stored.get(d.edge.owner)
            out[node_id] = NodeView(
                id=node_id,
                run_id=member.run_id if member else "",
                op=d.op,
                label=d.label,
                relation="",
                attributes={},
                value=d.text if d.op == "VALUE" else "",
                component_id=member.component_id if member else None,
                set_id=member.set_id if member else None,
            )
        return out

    def run_graph(self, run_id: str) -> tuple[dict[int, NodeView], list[tuple[int, int]]]:
        """The run's logical graph: its nodes, every edge touching them, and the views of those
        edges' other ends (the derived TENSOR, VALUE and folded TIMES nodes among them; a stored
        node wins over a derived one of the same id)."""
        nodes = {n.id: n for n in (node_of(r) for r in self.read(_RUN_NODES, run=run_id))}
        edges = sorted(set(self.logical_edges(self.read(_RUN_EDGES, run=run_id))))
        foreign = {i for edge in edges for i in edge} - nodes.keys()
        if foreign:
            nodes.update(self.nodes(sorted(foreign)))
        return nodes, edges

    def tensor_values(self, aggregates: list[int]) -> dict[int, str]:
        """TENSOR id -> value, for the TENSOR inputs of the given AGGREGATE nodes."""
        records = self.read(_TENSOR_VALUES, ids=aggregates)  # stored TENSORs (windows)
        out = {r["tensor"]: r["value"] or "" for r in records}
        out.update({t: text for t, _, text in self.aggregate_inputs(aggregates)})
        return out

    def find(
        self, run_id: str, relation: str, equals: Mapping[str, str], limit: int
    ) -> list[NodeView]:
        records = self.read(
            _FIND,
            run=run_id,
            relation=relation,
            equals=dict(equals),
            prefix=ATTRIBUTE_PREFIX,
            limit=limit,
        )
        return [node_of(r) for r in records]

    def run_exists(self, run_id: str) -> bool:
        return bool(self.read(_RUN_EXISTS, run=run_id)[0]["n"])

    def runs(self, workflow: str) -> list[RunView]:
        pending = {record["run"] for record in self.read(_RUNS_PENDING_IDS)}
        views = [
            run_view(record["r"], record["reuses"])
            for record in self.read(_RUNS, workflow=workflow)
        ]
        return [replace(v, indexed=v.complete and v.run_id not in pending) for v in views]


def _trace_parameters(
    node_ids: list[int],
    direction: Direction,
    strategy: Strategy,
    max_depth: int,
    limit: int,
    auto_fetch_max: int,
) -> dict[str, Any]:
    """The parameters both sparkprov.trace calls (plain and encoded) take."""
    return {
        "ids": node_ids,
        "direction": direction.name,
        "strategy": strategy.name,
        "depth": max_depth,
        "limit": limit,
        "auto_max": auto_fetch_max,
    }


def run_view(r: Mapping[str, Any], reuses: Sequence[Mapping[str, str]] = ()) -> RunView:
    """A Run node's properties as a view, complete only with the counts that made it complete.

    Neo4j reads are read-committed and a read can meet a commit half applied: the ingest's
    completing transaction updates ``complete`` in place but links ``expected_nodes``,
    ``expected_edges`` and ``dangling_nodes`` as new properties, and a ListRuns between the two
    saw ``complete`` without them (CI, after a SIGKILLed ingest caught up in one flush). A run is
    reported complete only when the properties its completion writes are all there and agree;
    otherwise it still reads as running, and the next poll sees the whole commit."""
    expected_nodes = r.get("expected_nodes")
    expected_edges = r.get("expected_edges")
    stored_nodes = r.get("stored_nodes") or 0
    stored_edges = r.get("stored_edges") or 0
    complete = (
        bool(r.get("complete"))
        and expected_nodes is not None
        and expected_edges is not None
        and r.get("dangling_nodes") is not None
        and stored_nodes >= expected_nodes
        and stored_edges >= expected_edges
    )
    return RunView(
        run_id=r["run_id"],
        workflow=r.get("workflow") or "",
        complete=complete,
        node_count=stored_nodes,
        edge_count=stored_edges,
        expected_node_count=-1 if expected_nodes is None else expected_nodes,
        expected_edge_count=-1 if expected_edges is None else expected_edges,
        failed=bool(r.get("failed")),
        started_unix_ms=r.get("started_unix_ms") or 0,
        dangling_node_count=(r.get("dangling_nodes") or 0) if complete else 0,
        reuses=tuple(
            RunReuse(u["sink"], u["version"], u["run_id"])
            for u in sorted(reuses, key=lambda u: (u["sink"], u["run_id"]))
        ),
    )
