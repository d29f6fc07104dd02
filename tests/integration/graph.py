"""Reads a run's graph straight from Neo4j, for assertions independent of the services: the
stored graph with its member edges expanded into the derived TENSOR and VALUE nodes they stand
for (docs/graph-schema.md, "Group members"; the same expansion as the query service's), and its
folded member edges into the TIMES nodes of their joined rows ("A join's rows folded into their
member edges"), i.e. the logical graph of ../shared/MODEL.md."""

from __future__ import annotations

from collections import Counter
from typing import Any, cast

import neo4j
import networkx as nx

from query_service.members import MemberEdge, expand

# A node's current ids, resolved by the ingest plugin (docs/graph-schema.md, "Component and set
# ids"); its component_id and s0..s2 properties are the ids it was born with, which merges leave
# behind, so they are left out of the graph and cannot be mistaken for current ones.
_IDS = "sparkprov.component(n) AS component, sparkprov.set(n) AS set"
_BIRTHS = ("component_id", "s0", "s1", "s2")


# Every edge with an end in the run (a.run_id = $run OR b.run_id = $run), found from the run's
# nodes by the id index instead of by a scan of every DERIVES edge of the database (no index
# holds run_id alone): the edges leaving a node of the run, and those entering one from a node
# of another run or of none (a placeholder), so each edge is counted once.
_EDGES = """
UNWIND $ids AS i
MATCH (n:Node {id: i})
CALL (n) {
  MATCH (n)-[e:DERIVES]->(b:Node)
  RETURN n AS a, e, b
  UNION ALL
  MATCH (a:Node)-[e:DERIVES]->(n)
  WHERE a.run_id IS NULL OR a.run_id <> $run
  RETURN a, e, n AS b
}
RETURN a.id AS src, b.id AS dst, count(e) AS n, collect(e.member_key)[0] AS key,
  collect(e.member_values)[0] AS vals, collect(e.member_nulls)[0] AS nulls,
  collect(e.times)[0] AS times, collect(e.partner)[0] AS partner
"""
# The PARTNER relationships touching the run's nodes (not logical edges: kept beside the graph
# for stored_part, as Cypher sees them).
_PARTNERS = """
UNWIND $ids AS i
MATCH (n:Node {id: i})
CALL (n) {
  MATCH (n)-[:PARTNER]->(b:Node)
  RETURN n AS a, b
  UNION
  MATCH (a:Node)-[:PARTNER]->(n)
  RETURN a, n AS b
}
RETURN DISTINCT a.id AS src, b.id AS dst
"""


def _props(record: neo4j.Record) -> dict[str, object]:
    props = {k: v for k, v in dict(record["n"]).items() if k not in _BIRTHS}
    return {**props, "component": record["component"], "set": record["set"]}


def run_graph(driver: neo4j.Driver, run_id: str, *, dangling_ok: bool = False) -> nx.DiGraph:
    """The run's nodes (with all properties but the birth ids, and their current ids as
    ``component`` and ``set``) and every edge touching them. Ends of those edges that belong to
    another run (shared state tokens) get their properties too, but are not counted by
    :func:`own_nodes`. Asserts (unless ``dangling_ok``) that every edge's ends are
    stored nodes: an end with no op is a placeholder for a node that never arrived, i.e. wrong
    lineage (e.g. an id rounded on its way)."""
    graph = nx.DiGraph()
    records, _, _ = driver.execute_query(
        f"MATCH (n:Node {{run_id: $run}}) RETURN n, {_IDS}", run=run_id
    )
    for record in records:
        props = _props(record)
        graph.add_node(props["id"], **props)
    own = list(graph.nodes)
    records, _, _ = driver.execute_query(_EDGES, ids=own, run=run_id)
    member_edges = []
    stored_only: list[tuple[int, int]] = []  # stored edges that are no logical edge
    for record in records:
        edge = None
        if record["key"] is not None:
            edge = MemberEdge.of(
                record["src"],
                record["dst"],
                record["key"],
                record["vals"],
                record["nulls"],
                record["times"],
                record["partner"],
            )
            member_edges.append(edge)
        if edge is not None and edge.folded:
            stored_only.append((record["src"], record["dst"]))
            for end in (edge.start, cast(int, edge.partner)):
                graph.add_node(end)  # its properties are read below if it is not the run's
        else:
            graph.add_edge(record["src"], record["dst"], multiplicity=record["n"])
    records, _, _ = driver.execute_query(_PARTNERS, ids=own)
    stored_only += [(r["src"], r["dst"]) for r in records]
    graph.graph["stored_only"] = stored_only
    foreign = [n for n, data in graph.nodes(data=True) if not data]
    records, _, _ = driver.execute_query(
        f"UNWIND $ids AS i MATCH (n:Node {{id: i}}) RETURN n, {_IDS}", ids=foreign
    )
    for record in records:
        props = _props(record)
        graph.add_node(props["id"], foreign=True, **props)
    _add_derived(graph, member_edges)
    if not dangling_ok:
        ghosts = [n for n, data in graph.nodes(data=True) if "op" not in data]
        assert not ghosts, f"run {run_id}: edges reference {len(ghosts)} never-stored nodes"
    return graph


def _add_derived(graph: nx.DiGraph, member_edges: list[MemberEdge]) -> None:
    """The TENSOR and VALUE nodes of member edges, with their member's run and ids, and the
    TIMES nodes of folded ones, which like their TENSOR and VALUE nodes have their group's run,
    split and ids (a TIMES node also stored keeps its stored properties)."""
    nodes, edges = expand(member_edges)
    for node_id, node in nodes.items():
        if graph.nodes.get(node_id, {}).get("op"):
            continue  # stored: the stored node wins
        member = graph.nodes[node.edge.owner]
        props: dict[str, object] = {
            "id": node_id,
            "op": node.op,
            "label": node.label,
            "derived": True,
        }
        if node.op == "VALUE":
            props["value"] = node.text
        for key in ("run_id", "split", "component", "set", "foreign"):
            if key in member:
                props[key] = member[key]
        graph.add_node(node_id, **props)
    for src, dst in edges:
        graph.add_edge(src, dst, multiplicity=1)


def stored_part(graph: nx.DiGraph) -> nx.DiGraph:
    """The graph as Neo4j stores it: without the nodes derived from member edges, with folded
    member edges (l -> g) and PARTNER relationships (r -> g) as stored edges."""
    stored = graph.subgraph(n for n, d in graph.nodes(data=True) if not d.get("derived")).copy()
    stored.add_edges_from(graph.graph.get("stored_only", ()), multiplicity=1)
    return stored


def own_nodes(graph: nx.DiGraph) -> int:
    """Nodes the run's counts cover: its own, not state tokens shared with other runs."""
    return sum(1 for _, d in graph.nodes(data=True) if not d.get("foreign") and not d.get("shared"))


def rows_of(graph: nx.DiGraph, relation: str) -> dict[str, int]:
    """Node id of each row of a relation, keyed by its Name (or City) attribute."""
    out = {}
    for node, data in graph.nodes(data=True):
        if data.get("relation") == relation:
            out[data.get("a_Name") or data.get("a_City")] = node
    return out


def canon(graph: nx.DiGraph, node: int) -> tuple[object, ...]:
    """A node with its whole ancestry as a nested tuple: op, label, relation, attributes, value
    and the sorted canons of its parents. Source tokens leave out their label (it names the
    partition and offset, which depend on Spark's partitioning)."""
    data = graph.nodes[node]
    op = data.get("op", "")
    label = "" if op == "TOKEN" else data.get("label", "")
    attributes = tuple(sorted((k[2:], v) for k, v in data.items() if k.startswith("a_")))
    parents = tuple(sorted(canon(graph, p) for p in graph.predecessors(node)))
    return (op, label, data.get("relation") or "", attributes, data.get("value") or "", parents)


def shape(graph: nx.DiGraph) -> Counter[tuple[object, ...]]:
    """The graph as the multiset of the canons of its sinks (with the node and edge counts this
    pins the graph down: every node is an ancestor of a sink)."""
    return Counter(canon(graph, n) for n in graph if graph.out_degree(n) == 0)


def node(
    op: str,
    label: str = "",
    relation: str = "",
    attributes: dict[str, str] | None = None,
    value: str = "",
    parents: tuple[tuple[object, ...], ...] | list[tuple[object, ...]] = (),
) -> tuple[object, ...]:
    """The canon :func:`canon` gives a node of that description (for expected graphs)."""
    attrs = tuple(sorted((attributes or {}).items()))
    return (op, label, relation, attrs, value, tuple(sorted(parents)))


def token(relation: str, **attributes: str) -> tuple[object, ...]:
    return node("TOKEN", relation=relation, attributes=attributes)


def times(
    *parents: tuple[object, ...], relation: str = "", **attributes: str
) -> tuple[object, ...]:
    return node("TIMES", "·", relation, attributes, parents=parents)


def delta(
    *parents: tuple[object, ...], relation: str = "", **attributes: str
) -> tuple[object, ...]:
    return node("DELTA", "δ", relation, attributes, parents=parents)


def aggregate(
    function: str, value: str, members: list[tuple[tuple[object, ...], str]]
) -> tuple[object, ...]:
    """An AGGREGATE over (member p-node, member value) pairs: a TENSOR per member."""
    tensors = [node("TENSOR", "⊗", parents=(m, node("VALUE", v, value=v))) for m, v in members]
    return node("AGGREGATE", function, value=value, parents=tensors)


def assert_traces_are_the_graphs(
    client: Any, graph: nx.DiGraph, outputs: list[str], source: str, strategies: list[Any]
) -> None:
    """Every strategy's backward trace of each output row and forward trace of the source row
    is exactly that row's ancestors (descendants) in the logical graph, with their edges."""
    for out in outputs:
        expected = nx.ancestors(graph, int(out)) | {int(out)}
        for strategy in strategies:
            trace = client.backward_trace([out], strategy=strategy)
            assert {int(n.id) for n in trace.nodes} == expected, strategy
            edges = {(int(e.src), int(e.dst)) for e in trace.edges}
            assert edges == set(graph.subgraph(expected).edges), strategy
    for strategy in strategies:
        trace = client.forward_trace([source], strategy=strategy)
        expected = nx.descendants(graph, int(source)) | {int(source)}
        assert {int(n.id) for n in trace.nodes} == expected, strategy
