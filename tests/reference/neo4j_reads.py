"""The graph reads the Python reference strategies (tests/reference/traces.py and store.py) run
over a real Neo4j: parents, children, a component's edges, the CSProv set reads, and a closure's
inputs, each expanding member edges as the service's Store does. The service itself never reads
these: its traces, subgraphs and deletions run inside the plugin.

A folded member edge l -> g (docs/graph-schema.md, "A join's rows folded into their member
edges") is read as its TIMES node T and the edges l -> T, partner -> T, T -> g: g's parents give
T where the stored edge starts at l, and a right row's children are the TIMES nodes of the folded
edges naming it as partner (found from its PARTNER relationships)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from query_service import members
from query_service.members import Derived
from query_service.model import NodeView
from query_service.store import EDGE_COLUMNS, Store, is_folded, member_edge

__all__ = ["Neo4jReads"]

# Parents of stored nodes; ids that are no stored node come back with stored = false (derived
# nodes, or unknown ids). A folded member edge's parent is its TIMES node, not its start.
_PARENTS = """
UNWIND $ids AS i
OPTIONAL MATCH (n:Node {id: i})
OPTIONAL MATCH (p:Node)-[r:DERIVES]->(n)
RETURN i AS id, n IS NOT NULL AS stored, n.op AS op, collect(coalesce(r.times, p.id)) AS parents
"""
# The edges out of stored nodes, the folded member edges naming them as partner (through the
# PARTNER relationship to the group, then the edges' indexed partner property), and those naming
# them as their TIMES node (a TIMES node stored by one aggregation's join and folded by another's).
_EDGE_MAP = """{src: %s.id, dst: b.id, key: r.member_key, vals: r.member_values,
                nulls: r.member_nulls, times: r.times, partner: r.partner}"""
_CHILDREN = f"""
UNWIND $ids AS i
OPTIONAL MATCH (n:Node {{id: i}})
RETURN i AS id, n IS NOT NULL AS stored,
       CASE WHEN n IS NULL THEN [] ELSE
         [(n)-[r:DERIVES]->(b:Node) | {_EDGE_MAP % "n"}] +
         [(n)-[:PARTNER]->(b:Node)<-[r:DERIVES]-(a:Node) WHERE r.partner = i | {_EDGE_MAP % "a"}] +
         [(a:Node)-[r:DERIVES]->(b:Node) WHERE r.times = i | {_EDGE_MAP % "a"}]
       END AS out
"""
_COMPONENT_EDGES = f"""
CALL sparkprov.componentNodes($component) YIELD node AS a
MATCH (a)-[r:DERIVES]->(b:Node)
RETURN {EDGE_COLUMNS}
"""
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
# The stored nodes of the sets. The logical edges with an end in them come from: the stored
# edges into and out of them, the member edges out of them (an unfolded member's derived nodes lie
# in its set), the folded member edges into them (a folded edge's TIMES node and its derived nodes
# lie in its group's set) and the folded edges naming one of them as partner (partner -> TIMES).
_SET_NODES = """
UNWIND $ids AS s
CALL sparkprov.setNodes(s) YIELD node
RETURN node.id AS id
"""
_EDGES_INTO_SETS = f"""
UNWIND $ids AS s
CALL sparkprov.setNodes(s) YIELD node AS b
MATCH (a:Node)-[r:DERIVES]->(b)
RETURN {EDGE_COLUMNS}
"""
_MEMBERS_OF_SETS = f"""
UNWIND $ids AS s
CALL sparkprov.setNodes(s) YIELD node AS a
MATCH (a)-[r:DERIVES]->(b:Node)
WHERE r.member_key IS NOT NULL
RETURN {EDGE_COLUMNS}
"""
_EDGES_OUT_OF_SETS = f"""
UNWIND $ids AS s
CALL sparkprov.setNodes(s) YIELD node AS a
MATCH (a)-[r:DERIVES]->(b:Node)
RETURN {EDGE_COLUMNS}
"""
_FOLDED_INTO_SETS = f"""
UNWIND $ids AS s
CALL sparkprov.setNodes(s) YIELD node AS b
MATCH (a:Node)-[r:DERIVES]->(b)
WHERE r.times IS NOT NULL
RETURN {EDGE_COLUMNS}
"""
_PARTNERED_IN_SETS = f"""
UNWIND $ids AS s
CALL sparkprov.setNodes(s) YIELD node AS p
MATCH (p)-[:PARTNER]->(b:Node)<-[r:DERIVES]-(a:Node)
WHERE r.partner = p.id
RETURN {EDGE_COLUMNS}
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
       [(p:Node)-[r:DERIVES]->(n) | coalesce(r.times, p.id)] AS parents
"""


class Neo4jReads(Store):
    """The service's Store with the reads of the reference strategies (its own answers stay the
    plugin's: wrap it in tests.reference.store.Neo4jReference for the reference's)."""

    def parents(self, ids: list[int]) -> list[tuple[int, int]]:
        """Logical edges into the nodes (distinct: a TIMES node both stored and folded gives
        its edge into its group once)."""
        out: list[tuple[int, int]] = []
        aggregates, unknown = [], []
        for r in self.read(_PARENTS, ids=ids):
            if r["stored"]:
                out += [(p, r["id"]) for p in r["parents"]]
                if r["op"] == "AGGREGATE":
                    aggregates.append(r["id"])
            else:
                unknown.append(r["id"])
        if aggregates:
            out += [(t, a) for t, a, _ in self.aggregate_inputs(aggregates)]
        for node in self.resolve(unknown).values():
            out += node.parents()
        return list(dict.fromkeys(out))

    def children(self, ids: list[int]) -> list[tuple[int, int]]:
        """Logical edges out of the nodes: a stored node's stored edges but folded ones, the
        derived edges starting at it (m -> TENSOR; l -> TIMES of the folded edges it starts or
        is the partner of), and a derived node's own."""
        records: list[Mapping[str, Any]] = []
        unknown = []
        for r in self.read(_CHILDREN, ids=ids):
            if not r["stored"]:
                unknown.append(r["id"])
            records += r["out"]
        asked = set(ids)
        out = [(s, d) for s, d in self.logical_edges(records) if s in asked]
        for node in self.resolve(unknown).values():
            out += node.children()
        return list(dict.fromkeys(out))

    def component_edges(self, component: int) -> list[tuple[int, int]]:
        return self.logical_edges(self.read(_COMPONENT_EDGES, component=component))

    def set_parents(self, ids: list[int]) -> list[tuple[int, int]]:
        return [(r["src"], r["dst"]) for r in self.read(_SET_PARENTS, ids=ids)]

    def set_children(self, ids: list[int]) -> list[tuple[int, int]]:
        return [(r["src"], r["dst"]) for r in self.read(_SET_CHILDREN, ids=ids)]

    def edges_into_sets(self, ids: list[int]) -> list[tuple[int, int]]:
        """Logical edges whose destination lies in the sets: stored ones (not folded), the
        derived edges of member edges into them (TENSOR -> AGGREGATE; every edge of a folded
        one), and m -> TENSOR, VALUE -> TENSOR of unfolded member edges out of them."""
        inside = self._set_nodes(ids)
        records = [*self.read(_EDGES_INTO_SETS, ids=ids), *self.read(_MEMBERS_OF_SETS, ids=ids)]
        edges, derived = self._logical(records)
        return [(s, d) for s, d in edges if _in_sets(d, inside, derived)]

    def edges_out_of_sets(self, ids: list[int]) -> list[tuple[int, int]]:
        """Logical edges whose source lies in the sets: an unfolded member's derived nodes lie
        in its set, so every edge of its member edge's expansion starts there; a folded edge's
        TIMES node and its derived nodes lie in its group's set, its start's and partner's edge
        to the TIMES node in theirs."""
        inside = self._set_nodes(ids)
        records = [
            *self.read(_EDGES_OUT_OF_SETS, ids=ids),
            *self.read(_FOLDED_INTO_SETS, ids=ids),
            *self.read(_PARTNERED_IN_SETS, ids=ids),
        ]
        edges, derived = self._logical(records)
        return [(s, d) for s, d in edges if _in_sets(s, inside, derived)]

    def _set_nodes(self, ids: list[int]) -> set[int]:
        return {r["id"] for r in self.read(_SET_NODES, ids=ids)}

    def _logical(
        self, records: Sequence[Mapping[str, Any]]
    ) -> tuple[list[tuple[int, int]], dict[int, Derived]]:
        """The logical edges of stored ones (``EDGE_COLUMNS``), distinct, and the derived nodes
        of their member edges."""
        stored = [(r["src"], r["dst"]) for r in records if not is_folded(r)]
        nodes, derived = members.expand(member_edge(r) for r in records if r["key"] is not None)
        self.derived.add(nodes)
        return list(dict.fromkeys(stored + derived)), nodes

    def component_sizes(self, ids: list[int]) -> dict[int, int]:
        return {r["id"]: r["size"] for r in self.read(_COMPONENT_SIZES, ids=ids)}

    def set_sizes(self, ids: list[int]) -> dict[int, int]:
        return {r["id"]: r["size"] for r in self.read(_SET_SIZES, ids=ids)}

    def closure_inputs(self, ids: list[int]) -> tuple[dict[int, NodeView], list[tuple[int, int]]]:
        """Light views (id, run, op, label, value) of the nodes and every edge into them."""
        views: dict[int, NodeView] = {}
        edges: list[tuple[int, int]] = []
        aggregates = []
        for r in self.read(_CLOSURE_INPUTS, ids=ids):
            node_id = r["id"]
            views[node_id] = NodeView(
                node_id, r["run"] or "", r["op"] or "", r["label"] or "", "", {},
                r["value"] or "", None, None,
            )  # fmt: skip
            # distinct: a TIMES node both stored and folded is a parent once
            edges.extend((p, node_id) for p in dict.fromkeys(r["parents"]))
            if r["op"] == "AGGREGATE":
                aggregates.append(node_id)
        if aggregates:
            edges += [(t, a) for t, a, _ in self.aggregate_inputs(aggregates)]
        derived = self.resolve([i for i in ids if i not in views])
        for view in self.derived_views(derived).values():
            views[view.id] = replace(view, component_id=None, set_id=None)
            edges += derived[view.id].parents()
        return views, edges


def _in_sets(node_id: int, inside: set[int], derived: Mapping[int, Derived]) -> bool:
    """Whether a node lies in the sets whose stored nodes are ``inside``: a stored node if it is
    one of them, a derived one if the stored node it takes its ids from is."""
    if node_id in inside:
        return True
    node = derived.get(node_id)
    return node is not None and node.edge.owner in inside
