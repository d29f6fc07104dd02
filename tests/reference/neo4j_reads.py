"""The graph reads the Python reference strategies (tests/reference/traces.py and store.py) run
over a real Neo4j: parents, children, a component's edges, the CSProv set reads, and a closure's
inputs, each expanding member edges as the service's Store does. The service itself never reads
these: its traces, subgraphs and deletions run inside the plugin."""

from __future__ import annotations

from dataclasses import replace

from query_service import members
from query_service.members import MemberEdge
from query_service.model import NodeView
from query_service.store import EDGE_COLUMNS, Store, member_edge

__all__ = ["Neo4jReads"]

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
# Edges into the sets; then the member edges out of them, whose members' derived nodes lie in
# the sets (m -> TENSOR and VALUE -> TENSOR end there).
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


class Neo4jReads(Store):
    """The service's Store with the reads of the reference strategies (its own answers stay the
    plugin's: wrap it in tests.reference.store.Neo4jReference for the reference's)."""

    def parents(self, ids: list[int]) -> list[tuple[int, int]]:
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
        return out

    def children(self, ids: list[int]) -> list[tuple[int, int]]:
        out: list[tuple[int, int]] = []
        member_edges, unknown = [], []
        for r in self.read(_CHILDREN, ids=ids):
            if not r["stored"]:
                unknown.append(r["id"])
            for e in r["out"]:
                out.append((e["src"], e["dst"]))
                if e["key"] is not None:
                    member_edges.append(member_edge(e))
        asked = set(ids)
        out += [(s, d) for s, d in self.expand_members(member_edges) if s in asked]
        for node in self.resolve(unknown).values():
            out += node.children()
        return out

    def component_edges(self, component: int) -> list[tuple[int, int]]:
        return self.logical_edges(self.read(_COMPONENT_EDGES, component=component))

    def set_parents(self, ids: list[int]) -> list[tuple[int, int]]:
        return [(r["src"], r["dst"]) for r in self.read(_SET_PARENTS, ids=ids)]

    def set_children(self, ids: list[int]) -> list[tuple[int, int]]:
        return [(r["src"], r["dst"]) for r in self.read(_SET_CHILDREN, ids=ids)]

    def edges_into_sets(self, ids: list[int]) -> list[tuple[int, int]]:
        """Logical edges whose destination lies in the sets: stored ones, TENSOR -> AGGREGATE of
        member edges into them, and m -> TENSOR, VALUE -> TENSOR of member edges out of them."""
        out: list[tuple[int, int]] = []
        into_members: list[MemberEdge] = []
        for r in self.read(_EDGES_INTO_SETS, ids=ids):
            out.append((r["src"], r["dst"]))
            if r["key"] is not None:
                into_members.append(member_edge(r))
        nodes, edges = members.expand(into_members)
        out += [(t, a) for t, a in edges if t in nodes and nodes[t].op == "TENSOR"]
        self.derived.add(nodes)
        records = self.read(_MEMBERS_OF_SETS, ids=ids)
        nodes, edges = members.expand(member_edge(r) for r in records)
        out += [(x, t) for x, t in edges if t in nodes and nodes[t].op == "TENSOR"]
        self.derived.add(nodes)
        return out

    def edges_out_of_sets(self, ids: list[int]) -> list[tuple[int, int]]:
        """Logical edges whose source lies in the sets (a member's derived nodes lie in its
        set, so every edge of its member edge's expansion starts there)."""
        return self.logical_edges(self.read(_EDGES_OUT_OF_SETS, ids=ids))

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
            edges.extend((p, node_id) for p in r["parents"])
            if r["op"] == "AGGREGATE":
                aggregates.append(node_id)
        if aggregates:
            edges += [(t, a) for t, a, _ in self.aggregate_inputs(aggregates)]
        derived = self.resolve([i for i in ids if i not in views])
        for view in self.derived_views(derived).values():
            views[view.id] = replace(view, component_id=None, set_id=None)
            edges += derived[view.id].parents()
        return views, edges
