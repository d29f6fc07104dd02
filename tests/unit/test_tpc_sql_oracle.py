"""The compact emitted graph of bench/tpc_sql/oracle.py against the networkx one it replaced for
TPC queries: on hypothesis-made batches (nodes of several ops, a node sent twice, anti joins'
EXCLUDED nodes, null attributes), the same node and edge counts, the same rows, the same output
nodes and the same witness as the networkx witness below (the oracle's before it was compact)."""

from __future__ import annotations

from typing import Any

import networkx as nx
from hypothesis import given, settings
from hypothesis import strategies as st

from bench.tpc_sql.oracle import Compact, emitted_graph, witness
from sparkprov.events import ATTRIBUTE_PREFIX, EdgeColumns, NodeColumns, encode_batch

OPS = ["TOKEN", "PLUS", "TIMES", "EXCLUDED", "DELTA"]
RELATIONS = ["R", "S_1", "S_2", None]  # None: a node of no relation, "Out" for the last ones


class _Emitter:
    def __init__(self, messages: list[bytes]) -> None:
        self._messages = messages

    def messages(self) -> list[tuple[bytes, bytes]]:
        return [(b"k", m) for m in self._messages]


def reference_witness(
    nodes: dict[int, dict[str, Any]], graph: nx.DiGraph, node_id: int
) -> dict[str, list[dict[str, str]]]:
    """The oracle's witness over networkx, as it was before the compact graph."""
    tokens = {a for a in nx.ancestors(graph, node_id) | {node_id} if nodes[a]["op"] == "TOKEN"}
    matches: set[int] = set()
    reached: set[int] = set()
    fresh = set(tokens)
    while fresh:
        found: set[int] = set()
        for e in _visit(graph.successors, fresh, reached):
            if nodes[e]["op"] == "EXCLUDED":
                right = int(nodes[e]["value"])
                if right not in matches and any(p != right for p in graph.predecessors(e)):
                    found.add(right)
        if not found:
            break
        matches |= found
        above = _visit(graph.predecessors, found, set()) | found
        fresh = {a for a in above if nodes[a]["op"] == "TOKEN"} - tokens
        tokens |= fresh
    rows: dict[str, list[dict[str, str]]] = {}
    for t in tokens:
        props = nodes[t]["props"]
        rows.setdefault(nodes[t]["relation"], []).append(
            {k[len(ATTRIBUTE_PREFIX) :]: v for k, v in props.items() if k.startswith("a_")}
        )
    return rows


def _visit(step: Any, starts: set[int], seen: set[int]) -> set[int]:
    found: set[int] = set()
    stack = list(starts)
    while stack:
        for n in step(stack.pop()):
            if n not in seen:
                seen.add(n)
                found.add(n)
                stack.append(n)
    return found


@st.composite
def batches(draw: st.DrawFn) -> list[bytes]:
    """Batches of a DAG: node i's parents are among nodes < i; EXCLUDED nodes name a node as
    their right row; some nodes are sent again (with another op) in a later batch."""
    n = draw(st.integers(2, 24))
    ids = draw(st.lists(st.integers(-(2**63), 2**63 - 1), min_size=n, max_size=n, unique=True))
    ops = [draw(st.sampled_from(OPS)) for _ in range(n)]
    edges = [
        (ids[p], ids[i])
        for i in range(1, n)
        for p in draw(st.lists(st.integers(0, i - 1), max_size=3))
    ]
    parts = draw(st.integers(1, 3))
    where = [draw(st.integers(0, parts - 1)) for _ in range(n)]
    again = draw(st.lists(st.integers(0, n - 1), max_size=3, unique=True))
    messages = []
    for part in range(parts + 1):  # the last part holds the nodes sent again
        blocks = []
        for i in range(n):
            if (part < parts and where[i] != part) or (part == parts and i not in again):
                continue
            op = ops[i] if part < parts else draw(st.sampled_from(OPS))
            relation = "Out" if i >= n - 2 else draw(st.sampled_from(RELATIONS))
            values = [str(draw(st.sampled_from(ids)))] if op == "EXCLUDED" else []
            key = draw(st.one_of(st.none(), st.text("abc", max_size=2)))
            blocks.append(
                NodeColumns(
                    op,
                    [ids[i]],
                    relation=relation or "",
                    values=values,
                    attributes={"k": [key], "i": [str(i)]},
                )
            )
        mine = [(s, d) for k, (s, d) in enumerate(edges) if k % (parts + 1) == part]
        cols = EdgeColumns([s for s, _ in mine], [d for _, d in mine]) if mine else None
        messages.append(encode_batch("run", "wf", "tap", 0, part, blocks, cols))
    return messages


@settings(max_examples=300, deadline=None)
@given(batches())
def test_the_compact_graph_gives_the_networkx_witness(messages: list[bytes]) -> None:
    nodes, graph = emitted_graph(_Emitter(messages))  # type: ignore[arg-type]
    small = Compact.of(messages)
    assert (small.node_count, small.edge_count) == (len(nodes), graph.number_of_edges())
    assert small.rows(nodes) == nodes
    assert small.of_relation("Out") == sorted(i for i, n in nodes.items() if n["relation"] == "Out")
    for node_id in nodes:
        expected = reference_witness(nodes, graph, node_id)
        got = witness(small, node_id)
        assert {r: sorted(map(repr, v)) for r, v in got.items()} == {
            r: sorted(map(repr, v)) for r, v in expected.items()
        }
