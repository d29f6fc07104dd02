"""Neo4j reads of the query service. All of its Cypher lives here, always parameterized."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import neo4j

from query_service.model import NodeView, RunView
from sparkprov.events import ATTRIBUTE_PREFIX
from sparkprov.runtime import neo4j_driver

__all__ = ["Store"]

_NODES = "UNWIND $ids AS i MATCH (n:Node {id: i}) RETURN n"
_PARENTS = (
    "UNWIND $ids AS i MATCH (p:Node)-[:DERIVES]->(:Node {id: i}) RETURN p.id AS src, i AS dst"
)
_CHILDREN = (
    "UNWIND $ids AS i MATCH (:Node {id: i})-[:DERIVES]->(c:Node) RETURN i AS src, c.id AS dst"
)
_COMPONENT_EDGES = """
MATCH (a:Node {component_id: $component})-[:DERIVES]->(b:Node)
RETURN a.id AS src, b.id AS dst
"""
# Attribute names come from the caller: they are looked up as map keys, never spliced into text.
_FIND = """
MATCH (n:Node {run_id: $run, relation: $relation})
WHERE all(k IN keys($equals) WHERE n[$prefix + k] = $equals[k])
RETURN n ORDER BY n.id LIMIT $limit
"""
_RUNS = """
MATCH (r:Run)
WHERE $workflow = '' OR r.workflow = $workflow
RETURN r ORDER BY coalesce(r.started_unix_ms, 0) DESC, r.run_id
"""
_RUN_EXISTS = "MATCH (r:Run {run_id: $run}) RETURN count(r) AS n"


def _node(props: Mapping[str, Any]) -> NodeView:
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
        component_id=props.get("component_id"),
        set_id=props.get("set_id"),
    )


class Store:
    def __init__(self, driver: neo4j.Driver) -> None:
        self._driver = driver

    @classmethod
    def connect(cls, uri: str, user: str = "", password: str = "") -> Store:
        return cls(neo4j_driver(uri, user, password))

    def close(self) -> None:
        self._driver.close()

    def _read(self, query: str, **params: Any) -> list[neo4j.Record]:
        records, _, _ = self._driver.execute_query(
            query, parameters_=params, routing_=neo4j.RoutingControl.READ
        )
        return records

    def nodes(self, ids: Iterable[int]) -> dict[int, NodeView]:
        found = (_node(r["n"]) for r in self._read(_NODES, ids=list(ids)))
        return {n.id: n for n in found}

    def parents(self, ids: list[int]) -> list[tuple[int, int]]:
        return [(r["src"], r["dst"]) for r in self._read(_PARENTS, ids=ids)]

    def children(self, ids: list[int]) -> list[tuple[int, int]]:
        return [(r["src"], r["dst"]) for r in self._read(_CHILDREN, ids=ids)]

    def component_edges(self, component: int) -> list[tuple[int, int]]:
        return [(r["src"], r["dst"]) for r in self._read(_COMPONENT_EDGES, component=component)]

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
        return [_node(r["n"]) for r in records]

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
                )
            )
        return out
