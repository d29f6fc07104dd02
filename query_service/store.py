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

from query_service import members
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

__all__ = ["GraphStore", "Store", "node_view", "propagated", "trace_result"]

# Every query that builds a NodeView returns its node with the current ids (see _node).
_IDS = "sparkprov.component(n) AS component, sparkprov.set(n) AS set"
_NODES = f"UNWIND $ids AS i MATCH (n:Node {{id: i}}) RETURN n, {_IDS}"
# A stored edge with the member record it carries, if it is a member edge (query_service.members).
_EDGE = (
    "a.id AS src, b.id AS dst, "
    "r.member_key AS key, r.member_values AS vals, r.member_nulls AS nulls"
)
# Parents of stored nodes; ids that are no stored node come back with stored = false (derived
# nodes, or unknown ids).
_PARENTS = """
UNWIND $ids AS i
OPTIONAL MATCH (n:Node {id: i})
OPTIONAL MATCH (p:Node)-[:DERIVES]->(n)
RETURN i AS id, n IS NOT NULL AS stored, n.op AS op, collect(p.id) AS parents
"""
_CHILDREN = """
UNWIND $ids AS i
OPTIONAL MATCH (a:Node {id: i})
OPTIONAL MATCH (a)-[r:DERIVES]->(b:Node)
RETURN i AS id, a IS NOT NULL AS stored,
       collect(CASE WHEN b IS NULL THEN null ELSE {src: a.id, dst: b.id, key: r.member_key,
               vals: r.member_values, nulls: r.member_nulls} END) AS out
"""
# The member edges into the groups of AGGREGATE nodes: their TENSOR parents are derived.
_AGGREGATE_MEMBERS = f"""
UNWIND $ids AS i
MATCH (c:Node {{id: i, op: 'AGGREGATE'}})-[:DERIVES]->(b:Node)<-[r:DERIVES]-(a:Node)
WHERE r.member_key IS NOT NULL
RETURN i AS aggregate, {_EDGE}
"""
_BY_PAIR = f"""
UNWIND $pairs AS p
MATCH (a:Node)-[r:DERIVES {{pair: p}}]->(b:Node)
RETURN {_EDGE}
"""
_MEMBER_KEYS = "MATCH (k:MemberKey) RETURN k.key AS key, k.aggregates AS aggregates"
_COMPONENT_EDGES = f"""
CALL sparkprov.componentNodes($component) YIELD node AS a
MATCH (a)-[r:DERIVES]->(b:Node)
RETURN {_EDGE}
"""
# Attribute names come from the caller: they are looked up as map keys, never spliced into text.
_FIND = f"""
MATCH (n:Node {{run_id: $run, relation: $relation}})
WHERE all(k IN keys($equals) WHERE n[$prefix + k] = $equals[k])
WITH n ORDER BY n.id LIMIT $limit
RETURN n, {_IDS} ORDER BY n.id
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

# CSProv: the set-dependency graph, one level per call (read from the sets' edges: SET_DEP is
# stored only between sets of more than one node), and the edges by their end's set.
_SET_PARENTS = """
UNWIND $ids AS s
CALL sparkprov.setDependencies(s, 'BACKWARD') YIELD set
RETURN set AS src, s AS dst
"""
_SET_CHILDREN = """
UNWIND $ids AS s
CALL sparkprov.setDependencies(s, 'FORWARD') YIELD set
RETURN s AS src, set AS dst
"""
# Edges into the sets; then the member edges out of them, whose members' derived nodes lie in
# the sets (m -> TENSOR and VALUE -> TENSOR end there).
_EDGES_INTO_SETS = f"""
UNWIND $ids AS s
CALL sparkprov.setNodes(s) YIELD node AS b
MATCH (a:Node)-[r:DERIVES]->(b)
RETURN {_EDGE}
"""
_MEMBERS_OF_SETS = f"""
UNWIND $ids AS s
CALL sparkprov.setNodes(s) YIELD node AS a
MATCH (a)-[r:DERIVES]->(b:Node)
WHERE r.member_key IS NOT NULL
RETURN {_EDGE}
"""
_EDGES_OUT_OF_SETS = f"""
UNWIND $ids AS s
CALL sparkprov.setNodes(s) YIELD node AS a
MATCH (a)-[r:DERIVES]->(b:Node)
RETURN {_EDGE}
"""
# Only a root's record holds the size (an id without a record is a root of one node); the ids
# asked for are current ones, resolved again so that a stale id still reads its root's size.
_COMPONENT_SIZES = """
UNWIND $ids AS c
WITH c, sparkprov.componentRoot(c) AS root
OPTIONAL MATCH (k:Component {id: root})
RETURN c AS id, coalesce(k.size, 1) AS size
"""
_SET_SIZES = """
UNWIND $ids AS s
OPTIONAL MATCH (k:ConnectedSet {id: s})
RETURN s AS id, coalesce(k.size, 1) AS size
"""
# What deletion propagation needs of each node of a closure: its op, label and value, and the
# ids of all its parents, in one round trip.
_CLOSURE_INPUTS = """
UNWIND $ids AS i
MATCH (n:Node {id: i})
RETURN i AS id, n.run_id AS run, n.op AS op, n.label AS label, n.value AS value,
       [(p:Node)-[:DERIVES]->(n) | p.id] AS parents
"""
# A run's own nodes, and the edges touching them (their other ends may be shared state tokens
# first stored by an earlier run).
_RUN_NODES = f"MATCH (n:Node {{run_id: $run}}) RETURN n, {_IDS}"
_RUN_EDGES = f"""
MATCH (a:Node {{run_id: $run}})-[r:DERIVES]->(b:Node)
RETURN {_EDGE}
UNION
MATCH (a:Node)-[r:DERIVES]->(b:Node {{run_id: $run}})
RETURN {_EDGE}
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


def _node(record: neo4j.Record) -> NodeView:
    """A node returned with its current ids (``RETURN n, ...`` + ``_IDS``); the node's own
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


def _member_edge(r: Mapping[str, Any]) -> MemberEdge:
    return MemberEdge.of(r["src"], r["dst"], r["key"], r["vals"] or [], r["nulls"])


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

    def run_graph(self, run_id: str) -> tuple[dict[int, NodeView], list[tuple[int, int]]]: ...

    def tensor_values(self, aggregates: list[int]) -> dict[int, str]: ...

    def find(
        self, run_id: str, relation: str, equals: Mapping[str, str], limit: int
    ) -> list[NodeView]: ...

    def run_exists(self, run_id: str) -> bool: ...

    def runs(self, workflow: str) -> list[RunView]: ...

    @property
    def driver(self) -> neo4j.Driver: ...


class Store:
    """The logical graph (../shared/MODEL.md section 6) read from the stored one: every method
    answers with the derived TENSOR and VALUE nodes of member edges as if they were stored
    (query_service.members)."""

    def __init__(self, driver: neo4j.Driver) -> None:
        self._driver = driver
        self._derived = DerivedCache()

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

    def _read(self, query: str, **params: Any) -> list[neo4j.Record]:
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
        return trace_result(cast(TraceRow, self._trace_row(_TRACE, parameters, timeout_s).data()))

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
        return trace_result(cast(SubgraphRow, r.data()))

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
        return propagated(cast(DeletionRow, r.data()))

    def nodes(self, ids: Iterable[int]) -> dict[int, NodeView]:
        wanted = list(ids)
        found = {n.id: n for n in (_node(r) for r in self._read(_NODES, ids=wanted))}
        missing = [i for i in wanted if i not in found]
        if missing:
            found.update(self._derived_views(self.resolve(missing)))
        return found

    def parents(self, ids: list[int]) -> list[tuple[int, int]]:
        out: list[tuple[int, int]] = []
        aggregates, unknown = [], []
        for r in self._read(_PARENTS, ids=ids):
            if r["stored"]:
                out += [(p, r["id"]) for p in r["parents"]]
                if r["op"] == "AGGREGATE":
                    aggregates.append(r["id"])
            else:
                unknown.append(r["id"])
        if aggregates:
            out += [(t, a) for t, a, _ in self._aggregate_inputs(aggregates)]
        for node in self.resolve(unknown).values():
            out += node.parents()
        return out

    def children(self, ids: list[int]) -> list[tuple[int, int]]:
        out: list[tuple[int, int]] = []
        member_edges, unknown = [], []
        for r in self._read(_CHILDREN, ids=ids):
            if not r["stored"]:
                unknown.append(r["id"])
            for e in r["out"]:
                out.append((e["src"], e["dst"]))
                if e["key"] is not None:
                    member_edges.append(_member_edge(e))
        asked = set(ids)
        out += [(s, d) for s, d in self._expand(member_edges) if s in asked]
        for node in self.resolve(unknown).values():
            out += node.children()
        return out

    def component_edges(self, component: int) -> list[tuple[int, int]]:
        return self._logical_edges(self._read(_COMPONENT_EDGES, component=component))

    def resolve(self, ids: Iterable[int]) -> dict[int, Derived]:
        """The derived nodes among ``ids`` (met lately, or found by their member edge's pair);
        ids that are neither stored nor derived are left out."""
        out: dict[int, Derived] = {}
        missing = []
        for i in ids:
            node = self._derived.get(i)
            if node is not None:
                out[i] = node
            else:
                missing.append(i)
        if not missing:
            return out
        keys = {r["key"]: r["aggregates"] or 0 for r in self._read(_MEMBER_KEYS)}
        pairs = members.candidates(missing, keys)
        if not pairs:
            return out
        records = self._read(_BY_PAIR, pairs=sorted(pairs))
        nodes, _ = members.expand(_member_edge(r) for r in records)
        self._derived.add(nodes)
        wanted = set(missing)
        out.update({i: n for i, n in nodes.items() if i in wanted})
        return out

    def _expand(self, member_edges: list[MemberEdge]) -> list[tuple[int, int]]:
        """The logical edges of member edges (m -> g, stored, not among them); their derived
        nodes are remembered for the next look-up."""
        if not member_edges:
            return []
        nodes, edges = members.expand(member_edges)
        self._derived.add(nodes)
        return edges

    def _logical_edges(self, records: Iterable[neo4j.Record]) -> list[tuple[int, int]]:
        """Stored edges and, for member edges among them, the edges they stand for."""
        out, member_edges = [], []
        for r in records:
            out.append((r["src"], r["dst"]))
            if r["key"] is not None:
                member_edges.append(_member_edge(r))
        return out + self._expand(member_edges)

    def _aggregate_inputs(self, aggregates: list[int]) -> list[tuple[int, int, str]]:
        """(TENSOR, AGGREGATE, value) of the derived TENSOR inputs of AGGREGATE nodes."""
        records = self._read(_AGGREGATE_MEMBERS, ids=aggregates)
        columns: dict[tuple[int, str], set[int]] = defaultdict(set)
        edges: dict[tuple[int, int], MemberEdge] = {}
        named: dict[tuple[int, int, str], int | None] = {}  # (aggregate, group, key) -> column
        for r in records:
            edge = _member_edge(r)
            edges[(edge.member, edge.group)] = edge
            slot = (r["aggregate"], edge.group, edge.key)
            if slot not in named:
                named[slot] = members.aggregate_column(*slot, len(edge.values))
            column = named[slot]
            if column is not None:
                columns[(edge.group, edge.key)].add(column)
        nodes, _ = members.expand(edges.values(), columns)
        self._derived.add(nodes)
        return [(n.id, n.aggregate, n.text) for n in nodes.values() if n.op == "TENSOR"]

    def _derived_views(self, derived: Mapping[int, Derived]) -> dict[int, NodeView]:
        """Views of derived nodes: op, label and value of their own, run and ids of their member."""
        if not derived:
            return {}
        owners = {n.edge.member for n in derived.values()}
        stored = {n.id: n for n in (_node(r) for r in self._read(_NODES, ids=sorted(owners)))}
        out = {}
        for node_id, d in derived.items():
            member = stored.get(d.edge.member)
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

    def set_parents(self, ids: list[int]) -> list[tuple[int, int]]:
        return [(r["src"], r["dst"]) for r in self._read(_SET_PARENTS, ids=ids)]

    def set_children(self, ids: list[int]) -> list[tuple[int, int]]:
        return [(r["src"], r["dst"]) for r in self._read(_SET_CHILDREN, ids=ids)]

    def edges_into_sets(self, ids: list[int]) -> list[tuple[int, int]]:
        """Logical edges whose destination lies in the sets: stored ones, TENSOR -> AGGREGATE of
        member edges into them, and m -> TENSOR, VALUE -> TENSOR of member edges out of them."""
        out: list[tuple[int, int]] = []
        into_members: list[MemberEdge] = []
        for r in self._read(_EDGES_INTO_SETS, ids=ids):
            out.append((r["src"], r["dst"]))
            if r["key"] is not None:
                into_members.append(_member_edge(r))
        nodes, edges = members.expand(into_members)
        out += [(t, a) for t, a in edges if t in nodes and nodes[t].op == "TENSOR"]
        self._derived.add(nodes)
        records = self._read(_MEMBERS_OF_SETS, ids=ids)
        nodes, edges = members.expand(_member_edge(r) for r in records)
        out += [(x, t) for x, t in edges if t in nodes and nodes[t].op == "TENSOR"]
        self._derived.add(nodes)
        return out

    def edges_out_of_sets(self, ids: list[int]) -> list[tuple[int, int]]:
        """Logical edges whose source lies in the sets (a member's derived nodes lie in its
        set, so every edge of its member edge's expansion starts there)."""
        return self._logical_edges(self._read(_EDGES_OUT_OF_SETS, ids=ids))

    def component_sizes(self, ids: list[int]) -> dict[int, int]:
        return {r["id"]: r["size"] for r in self._read(_COMPONENT_SIZES, ids=ids)}

    def set_sizes(self, ids: list[int]) -> dict[int, int]:
        return {r["id"]: r["size"] for r in self._read(_SET_SIZES, ids=ids)}

    def run_graph(self, run_id: str) -> tuple[dict[int, NodeView], list[tuple[int, int]]]:
        """The run's nodes, every edge touching them, and the views of those edges' other ends."""
        nodes = {n.id: n for n in (_node(r) for r in self._read(_RUN_NODES, run=run_id))}
        edges = sorted(set(self._logical_edges(self._read(_RUN_EDGES, run=run_id))))
        foreign = {i for edge in edges for i in edge} - nodes.keys()
        if foreign:
            nodes.update(self.nodes(sorted(foreign)))
        return nodes, edges

    def closure_inputs(self, ids: list[int]) -> tuple[dict[int, NodeView], list[tuple[int, int]]]:
        """Light views (id, run, op, label, value) of the nodes and every edge into them."""
        views: dict[int, NodeView] = {}
        edges: list[tuple[int, int]] = []
        aggregates = []
        for r in self._read(_CLOSURE_INPUTS, ids=ids):
            node_id = r["id"]
            views[node_id] = NodeView(
                node_id, r["run"] or "", r["op"] or "", r["label"] or "", "", {},
                r["value"] or "", None, None,
            )  # fmt: skip
            edges.extend((p, node_id) for p in r["parents"])
            if r["op"] == "AGGREGATE":
                aggregates.append(node_id)
        if aggregates:
            edges += [(t, a) for t, a, _ in self._aggregate_inputs(aggregates)]
        derived = self.resolve([i for i in ids if i not in views])
        for view in self._derived_views(derived).values():
            views[view.id] = replace(view, component_id=None, set_id=None)
            edges += derived[view.id].parents()
        return views, edges

    def tensor_values(self, aggregates: list[int]) -> dict[int, str]:
        """TENSOR id -> value, for the TENSOR inputs of the given AGGREGATE nodes."""
        records = self._read(_TENSOR_VALUES, ids=aggregates)  # stored TENSORs (windows)
        out = {r["tensor"]: r["value"] or "" for r in records}
        out.update({t: text for t, _, text in self._aggregate_inputs(aggregates)})
        return out

    def find(
        self, run_id: str, relation: str, equals: Mapping[str, str], limit: int
    ) -> list[NodeView]:
        records = self._read(
            _FIND,
            run=run_id,
            relation=relation,
            equals=dict(equals),
            prefix=ATTRIBUTE_PREFIX,
            limit=limit,
        )
        return [_node(r) for r in records]

    def run_exists(self, run_id: str) -> bool:
        return bool(self._read(_RUN_EXISTS, run=run_id)[0]["n"])

    def runs(self, workflow: str) -> list[RunView]:
        pending = {record["run"] for record in self._read(_RUNS_PENDING_IDS)}
        views = [
            run_view(record["r"], record["reuses"])
            for record in self._read(_RUNS, workflow=workflow)
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
