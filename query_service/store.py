"""Neo4j reads of the query service. All of its Cypher lives here, always parameterized.

A node's component and connected-set ids are kept by reference (docs/graph-schema.md, "Component
and set ids"): its properties hold the ids it was born with, which merges leave behind. Every
read here resolves them through the ingest plugin (``sparkprov.component(n)``,
``sparkprov.set(n)``, ``sparkprov.componentNodes``, ``sparkprov.setNodes``), never from the
node's properties.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import neo4j

from query_service.model import NodeView, RunView
from sparkprov.events import ATTRIBUTE_PREFIX
from sparkprov.runtime import neo4j_driver

__all__ = ["Store"]

# Every query that builds a NodeView returns its node with the current ids (see _node).
_IDS = "sparkprov.component(n) AS component, sparkprov.set(n) AS set"
_NODES = f"UNWIND $ids AS i MATCH (n:Node {{id: i}}) RETURN n, {_IDS}"
_PARENTS = (
    "UNWIND $ids AS i MATCH (p:Node)-[:DERIVES]->(:Node {id: i}) RETURN p.id AS src, i AS dst"
)
_CHILDREN = (
    "UNWIND $ids AS i MATCH (:Node {id: i})-[:DERIVES]->(c:Node) RETURN i AS src, c.id AS dst"
)
_COMPONENT_EDGES = """
CALL sparkprov.componentNodes($component) YIELD node AS a
MATCH (a)-[:DERIVES]->(b:Node)
RETURN a.id AS src, b.id AS dst
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
RETURN r ORDER BY coalesce(r.started_unix_ms, 0) DESC, r.run_id
"""
_RUN_EXISTS = "MATCH (r:Run {run_id: $run}) RETURN count(r) AS n"

# CSProv: the set-dependency graph, one level per call, and the edges by their end's set.
_SET_PARENTS = """
UNWIND $ids AS s
MATCH (a:ConnectedSet)-[:SET_DEP]->(:ConnectedSet {id: s})
RETURN a.id AS src, s AS dst
"""
_SET_CHILDREN = """
UNWIND $ids AS s
MATCH (:ConnectedSet {id: s})-[:SET_DEP]->(b:ConnectedSet)
RETURN s AS src, b.id AS dst
"""
_EDGES_INTO_SETS = """
UNWIND $ids AS s
CALL sparkprov.setNodes(s) YIELD node AS b
MATCH (a:Node)-[:DERIVES]->(b)
RETURN a.id AS src, b.id AS dst
"""
_EDGES_OUT_OF_SETS = """
UNWIND $ids AS s
CALL sparkprov.setNodes(s) YIELD node AS a
MATCH (a)-[:DERIVES]->(b:Node)
RETURN a.id AS src, b.id AS dst
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
_RUN_EDGES = """
MATCH (a:Node {run_id: $run})-[:DERIVES]->(b:Node)
RETURN a.id AS src, b.id AS dst
UNION
MATCH (a:Node)-[:DERIVES]->(b:Node {run_id: $run})
RETURN a.id AS src, b.id AS dst
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


class Store:
    def __init__(self, driver: neo4j.Driver) -> None:
        self._driver = driver

    @classmethod
    def connect(
        cls,
        uri: str,
        user: str = "",
        password: str = "",
        *,
        timeout_s: float = 5.0,
        tls_ca: str = "",
    ) -> Store:
        """A store whose calls fail within about ``timeout_s`` while Neo4j is away (the driver's
        defaults wait for a connection up to 60 s, then retry for 30 s)."""
        driver = neo4j_driver(
            uri,
            user,
            password,
            tls_ca=tls_ca,
            connection_timeout=timeout_s / 2,
            connection_acquisition_timeout=timeout_s,
            max_transaction_retry_time=timeout_s / 2,
        )
        return cls(driver)

    def close(self) -> None:
        self._driver.close()

    def _read(self, query: str, **params: Any) -> list[neo4j.Record]:
        records, _, _ = self._driver.execute_query(
            query, parameters_=params, routing_=neo4j.RoutingControl.READ
        )
        return records

    def nodes(self, ids: Iterable[int]) -> dict[int, NodeView]:
        found = (_node(r) for r in self._read(_NODES, ids=list(ids)))
        return {n.id: n for n in found}

    def parents(self, ids: list[int]) -> list[tuple[int, int]]:
        return [(r["src"], r["dst"]) for r in self._read(_PARENTS, ids=ids)]

    def children(self, ids: list[int]) -> list[tuple[int, int]]:
        return [(r["src"], r["dst"]) for r in self._read(_CHILDREN, ids=ids)]

    def component_edges(self, component: int) -> list[tuple[int, int]]:
        return [(r["src"], r["dst"]) for r in self._read(_COMPONENT_EDGES, component=component)]

    def set_parents(self, ids: list[int]) -> list[tuple[int, int]]:
        return [(r["src"], r["dst"]) for r in self._read(_SET_PARENTS, ids=ids)]

    def set_children(self, ids: list[int]) -> list[tuple[int, int]]:
        return [(r["src"], r["dst"]) for r in self._read(_SET_CHILDREN, ids=ids)]

    def edges_into_sets(self, ids: list[int]) -> list[tuple[int, int]]:
        return [(r["src"], r["dst"]) for r in self._read(_EDGES_INTO_SETS, ids=ids)]

    def edges_out_of_sets(self, ids: list[int]) -> list[tuple[int, int]]:
        return [(r["src"], r["dst"]) for r in self._read(_EDGES_OUT_OF_SETS, ids=ids)]

    def component_sizes(self, ids: list[int]) -> dict[int, int]:
        return {r["id"]: r["size"] for r in self._read(_COMPONENT_SIZES, ids=ids)}

    def set_sizes(self, ids: list[int]) -> dict[int, int]:
        return {r["id"]: r["size"] for r in self._read(_SET_SIZES, ids=ids)}

    def run_graph(self, run_id: str) -> tuple[dict[int, NodeView], list[tuple[int, int]]]:
        """The run's nodes, every edge touching them, and the views of those edges' other ends."""
        nodes = {n.id: n for n in (_node(r) for r in self._read(_RUN_NODES, run=run_id))}
        edges = [(r["src"], r["dst"]) for r in self._read(_RUN_EDGES, run=run_id)]
        foreign = {i for edge in edges for i in edge} - nodes.keys()
        if foreign:
            nodes.update(self.nodes(sorted(foreign)))
        return nodes, edges

    def closure_inputs(self, ids: list[int]) -> tuple[dict[int, NodeView], list[tuple[int, int]]]:
        """Light views (id, run, op, label, value) of the nodes and every edge into them."""
        views: dict[int, NodeView] = {}
        edges: list[tuple[int, int]] = []
        for r in self._read(_CLOSURE_INPUTS, ids=ids):
            node_id = r["id"]
            views[node_id] = NodeView(
                node_id, r["run"] or "", r["op"] or "", r["label"] or "", "", {},
                r["value"] or "", None, None,
            )  # fmt: skip
            edges.extend((p, node_id) for p in r["parents"])
        return views, edges

    def tensor_values(self, aggregates: list[int]) -> dict[int, str]:
        """TENSOR id -> value, for the TENSOR inputs of the given AGGREGATE nodes."""
        records = self._read(_TENSOR_VALUES, ids=aggregates)
        return {r["tensor"]: r["value"] or "" for r in records}

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
        out = []
        for record in self._read(_RUNS, workflow=workflow):
            r = record["r"]
            out.append(
                RunView(
                    run_id=r["run_id"],
                    workflow=r.get("workflow") or "",
                    complete=bool(r.get("complete")),
                    node_count=r.get("stored_nodes") or 0,
                    edge_count=r.get("stored_edges") or 0,
                    expected_node_count=r.get("expected_nodes", -1),
                    expected_edge_count=r.get("expected_edges", -1),
                    failed=bool(r.get("failed")),
                    started_unix_ms=r.get("started_unix_ms") or 0,
                    dangling_node_count=r.get("dangling_nodes") or 0,
                )
            )
        return out
