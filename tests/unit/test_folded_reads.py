"""The query service's reads over folded member edges (docs/graph-schema.md, "A join's rows folded
into their member edges"), with the stored graph faked in Python: each of the store's Cypher
reads is answered here by what it asks of the stored layout, so what is checked is the readers'
expansion (query_service.store.Store and the reference's tests/reference/neo4j_reads.py), not
the Cypher itself (tests/integration/test_folded_rows.py runs that against Neo4j).

The stored graph mixes both forms: joined rows folded into their member edges (one joined with
a right row of another run, one with itself), one stored as a TIMES node with its member edge,
and one stored both ways. Every read must answer as over the same rows stored unfolded."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest

from query_service import store as store_module
from query_service.members import DerivedCache, MemberEdge, expand
from sparkprov.derived import derive, salt_of
from tests.reference import neo4j_reads
from tests.reference.neo4j_reads import Neo4jReads

KEY = "k#1"
RUN, OLD = "R", "old"
G = 500
L1, L2, L3, L4, L5 = 101, 102, 103, 104, 105
R1, R2 = 201, 202  # R2 is a row of an earlier run
T1, T2, T3, T4, T5 = 301, 302, 303, 304, 305
# (left, right, times, values, how it is stored)
ROWS = [
    (L1, R1, T1, ("1.5", "2"), "folded"),
    (L2, R2, T2, ("2.5", None), "folded"),
    (L3, L3, T3, (None, "7"), "folded"),  # joined with itself
    (L4, R1, T4, ("4.5", "1"), "stored"),
    (L5, R1, T5, ("5.5", "3"), "both"),  # rarely, the same TIMES node both ways
]
AGGREGATES = [int(derive(np.array([G]), salt_of(KEY, i, "aggregate"))[0]) for i in range(2)]
COMPONENT = 9
SETS = {G: 50, AGGREGATES[0]: 50, AGGREGATES[1]: 50, R1: 70, R2: 71, T4: 80, T5: 50}
SETS.update({left: 60 + k for k, left in enumerate((L1, L2, L3, L4, L5))})


@dataclass
class Stored:
    """The stored graph: nodes' properties, DERIVES relationships (src, dst, properties),
    PARTNER relationships, current component and set ids."""

    nodes: dict[int, dict[str, Any]] = field(default_factory=dict)
    derives: list[tuple[int, int, dict[str, Any]]] = field(default_factory=list)
    partners: set[tuple[int, int]] = field(default_factory=set)

    def node(self, node_id: int, run: str, op: str, label: str = "", **props: Any) -> None:
        self.nodes[node_id] = {"id": node_id, "run_id": run, "op": op, "label": label, **props}

    def record(self, src: int, dst: int, props: Mapping[str, Any]) -> dict[str, Any]:
        return {
            "src": src,
            "dst": dst,
            "key": props.get("member_key"),
            "vals": props.get("member_values"),
            "nulls": props.get("member_nulls"),
            "times": props.get("times"),
            "partner": props.get("partner"),
        }

    def view(self, node_id: int) -> dict[str, Any]:
        return {
            "n": self.nodes[node_id],
            "component": COMPONENT,
            "set": SETS[node_id],
        }


def _member_props(member: int, values: tuple[str | None, ...]) -> dict[str, Any]:
    nulls = [i for i, v in enumerate(values) if v is None]
    pair = member ^ int(derive(np.array([G]), salt_of(KEY, "member"))[0])
    props: dict[str, Any] = {
        "member_key": KEY,
        "member_values": [v or "" for v in values],
        "pair": pair,
    }
    if nulls:
        props["member_nulls"] = nulls
    return props


def _stored() -> Stored:
    s = Stored()
    for k, left in enumerate((L1, L2, L3, L4, L5)):
        s.node(left, RUN, "TOKEN", f"Left#0.{k}", relation="Left")
    s.node(R1, RUN, "TOKEN", "Right#0.0", relation="Right")
    s.node(R2, OLD, "TOKEN", "Right#0.1", relation="Right")
    s.node(G, RUN, "DELTA", "δ", relation="Out")
    for a, function in zip(AGGREGATES, ("SUM", "COUNT"), strict=True):
        s.node(a, RUN, "AGGREGATE", function, value="x")
        s.derives.append((a, G, {}))
    for left, right, times, values, how in ROWS:
        if how in ("stored", "both"):
            s.node(times, RUN, "TIMES", "·", a_note="stored")
            s.derives += [(left, times, {}), (right, times, {})]
            s.derives.append((times, G, _member_props(times, values)))
        if how in ("folded", "both"):
            props = {**_member_props(times, values), "times": times, "partner": right}
            s.derives.append((left, G, props))
            if right != left:
                s.partners.add((right, G))
    return s


def _expected() -> tuple[set[int], set[tuple[int, int]], dict[int, int]]:
    """The logical graph of the same rows stored unfolded: nodes, edges, and each node's set
    (a folded row's derived nodes lie in its group's set, an unfolded member's in its own)."""
    members = [MemberEdge(t, G, KEY, values) for _, _, t, values, _ in ROWS]
    derived, derived_edges = expand(members)
    edges = {(a, G) for a in AGGREGATES} | set(derived_edges)
    edges |= {e for left, right, t, _, _ in ROWS for e in ((left, t), (right, t), (t, G))}
    sets = dict(SETS)
    sets.update({t: SETS[G] for _, _, t, _, how in ROWS if how == "folded"})
    sets.update({i: sets[n.edge.member] for i, n in derived.items()})
    nodes = set(_stored().nodes) | {t for _, _, t, _, _ in ROWS} | set(derived)
    return nodes, edges, sets


class FakeReads(Neo4jReads):
    """Neo4jReads (the service's Store and the reference's reads) over :class:`Stored`: each
    Cypher read answered in Python by what it asks for."""

    def __init__(self, stored: Stored) -> None:
        self.s = stored
        self.derived = DerivedCache()
        self.queries: list[str] = []

    def read(self, query: str, **params: Any) -> list[Any]:
        s, q = self.s, store_module
        self.queries.append(query)
        ids = params.get("ids", [])
        rels = s.derives
        if query == q._NODES:
            return [s.view(i) for i in ids if i in s.nodes]
        if query == q._MEMBER_KEYS:
            return [{"key": KEY, "aggregates": 2}]
        if query == q._BY_PAIR:
            return [s.record(a, b, p) for a, b, p in rels if p.get("pair") in params["pairs"]]
        if query == q._BY_TIMES:
            return [s.record(a, b, p) for a, b, p in rels if p.get("times") in ids]
        if query == q._RUN_NODES:
            return [s.view(i) for i, n in s.nodes.items() if n["run_id"] == params["run"]]
        if query == q._RUN_EDGES:
            run = params["run"]
            return [
                s.record(a, b, p)
                for a, b, p in rels
                if run in (s.nodes[a]["run_id"], s.nodes[b]["run_id"])
            ]
        if query == q._AGGREGATE_MEMBERS:
            return [
                {"aggregate": i, **s.record(a, b, p)}
                for i in ids
                if s.nodes.get(i, {}).get("op") == "AGGREGATE"
                for c, b0, _ in rels
                if c == i
                for a, b, p in rels
                if b == b0 and "member_key" in p
            ]
        if query == q._TENSOR_VALUES:
            return []  # no stored TENSOR (windows only)
        r = neo4j_reads
        if query == r._PARENTS:
            return [
                {
                    "id": i,
                    "stored": i in s.nodes,
                    "op": s.nodes.get(i, {}).get("op"),
                    "parents": [p.get("times", a) for a, b, p in rels if b == i],
                }
                for i in ids
            ]
        if query == r._CHILDREN:
            return [
                {
                    "id": i,
                    "stored": i in s.nodes,
                    "out": [s.record(a, b, p) for a, b, p in rels if a == i]
                    + [
                        s.record(a, b, p)
                        for a, b, p in rels
                        if (i, b) in s.partners and p.get("partner") == i
                    ],
                }
                for i in ids
            ]
        if query == r._CLOSURE_INPUTS:
            return [
                {
                    "id": i,
                    "run": s.nodes[i]["run_id"],
                    "op": s.nodes[i]["op"],
                    "label": s.nodes[i]["label"],
                    "value": s.nodes[i].get("value"),
                    "parents": [p.get("times", a) for a, b, p in rels if b == i],
                }
                for i in ids
                if i in s.nodes
            ]
        if query == r._COMPONENT_EDGES:
            return [s.record(a, b, p) for a, b, p in rels]  # one component
        members = {i for i in s.nodes if SETS[i] in ids}  # sparkprov.setNodes
        if query == r._SET_NODES:
            return [{"id": i} for i in members]
        if query == r._EDGES_INTO_SETS:
            return [s.record(a, b, p) for a, b, p in rels if b in members]
        if query == r._MEMBERS_OF_SETS:
            return [s.record(a, b, p) for a, b, p in rels if a in members and "member_key" in p]
        if query == r._EDGES_OUT_OF_SETS:
            return [s.record(a, b, p) for a, b, p in rels if a in members]
        if query == r._FOLDED_INTO_SETS:
            return [s.record(a, b, p) for a, b, p in rels if b in members and "times" in p]
        if query == r._PARTNERED_IN_SETS:
            return [
                s.record(a, b, p)
                for a, b, p in rels
                if p.get("partner") in members and (p["partner"], b) in s.partners
            ]
        raise AssertionError(f"unexpected read: {query}")


FOLDED = [t for _, _, t, _, how in ROWS if how == "folded"]


def test_a_runs_graph_is_its_logical_graph() -> None:
    nodes, edges, sets = _expected()
    views, got = FakeReads(_stored()).run_graph(RUN)
    assert set(views) == nodes
    assert got == sorted(edges)
    assert (L1, G) not in got and (L3, G) not in got  # folded: no logical edge
    for t in FOLDED:  # derived, with the group's run and ids
        v = views[t]
        assert (v.op, v.label, v.relation, v.attributes, v.value) == ("TIMES", "·", "", {}, "")
        assert (v.run_id, v.component_id, v.set_id) == (RUN, COMPONENT, SETS[G])
    assert views[T5].attributes == {"note": "stored"}  # the stored node wins
    assert {i: v.set_id for i, v in views.items()} == sets


def test_a_folded_times_id_is_found_again() -> None:
    nodes, _, sets = _expected()
    fresh = FakeReads(_stored())
    views = fresh.nodes(FOLDED)
    assert store_module._BY_TIMES in fresh.queries  # not met before: found by its edge's times
    assert sorted(views) == FOLDED
    views = FakeReads(_stored()).nodes(sorted(nodes))  # TIMES ids found by pair beside TENSORs
    assert set(views) == nodes
    assert {i: v.set_id for i, v in views.items()} == sets
    assert {t: (views[t].op, views[t].run_id) for t in FOLDED} == {
        t: ("TIMES", RUN) for t in FOLDED
    }
    assert FakeReads(_stored()).nodes([999]) == {}


@pytest.mark.parametrize("fresh", [True, False])
def test_parents_and_children_are_the_logical_graphs(fresh: bool) -> None:
    nodes, edges, _ = _expected()
    reads = FakeReads(_stored())
    if not fresh:
        reads.run_graph(RUN)  # derived nodes met before
    for n in sorted(nodes):
        if fresh:
            reads = FakeReads(_stored())
        assert sorted(reads.parents([n])) == sorted(e for e in edges if e[1] == n), n
        if fresh:
            reads = FakeReads(_stored())
        assert sorted(reads.children([n])) == sorted(e for e in edges if e[0] == n), n
    everything = sorted(nodes)
    assert sorted(reads.parents(everything)) == sorted(edges)
    assert sorted(reads.children(everything)) == sorted(edges)


def test_a_right_rows_children_are_its_joined_rows() -> None:
    reads = FakeReads(_stored())
    assert sorted(reads.children([R1])) == sorted([(R1, T1), (R1, T4), (R1, T5)])
    assert sorted(reads.children([R2])) == [(R2, T2)]
    assert sorted(reads.children([L3])) == [(L3, T3)]  # joined with itself: one edge
    assert sorted(reads.parents([G])) == sorted(
        [*((t, G) for t in (T1, T2, T3, T4, T5)), *((a, G) for a in AGGREGATES)]
    )


def test_closure_inputs_and_aggregate_inputs() -> None:
    nodes, edges, _ = _expected()
    views, into = FakeReads(_stored()).closure_inputs(sorted(nodes))
    assert set(views) == nodes
    assert sorted(set(into)) == sorted(edges)
    assert len(into) == len(set(into))
    assert {t: (views[t].op, views[t].label) for t in FOLDED} == {t: ("TIMES", "·") for t in FOLDED}
    derived, derived_edges = expand(MemberEdge(t, G, KEY, v) for _, _, t, v, _ in ROWS)
    tensors = {i: n.text for i, n in derived.items() if n.op == "TENSOR"}
    assert FakeReads(_stored()).tensor_values(AGGREGATES) == tensors
    inputs = FakeReads(_stored()).aggregate_inputs(AGGREGATES)
    assert sorted((t, a) for t, a, _ in inputs) == sorted(
        (t, a) for t, a in derived_edges if t in tensors
    )


def test_component_and_set_edges() -> None:
    nodes, edges, sets = _expected()
    assert sorted(set(FakeReads(_stored()).component_edges(COMPONENT))) == sorted(edges)
    for set_id in sorted(set(sets.values())):
        into = FakeReads(_stored()).edges_into_sets([set_id])
        assert sorted(into) == sorted(e for e in edges if sets[e[1]] == set_id), set_id
        out = FakeReads(_stored()).edges_out_of_sets([set_id])
        assert sorted(out) == sorted(e for e in edges if sets[e[0]] == set_id), set_id
