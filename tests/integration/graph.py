"""Reads a run's stored graph straight from Neo4j, for assertions independent of the services."""

from __future__ import annotations

import neo4j
import networkx as nx


def run_graph(driver: neo4j.Driver, run_id: str) -> nx.DiGraph:
    """The run's nodes (with all properties) and every edge touching them. Ends of those edges
    that belong to another run (shared state tokens) get their properties too, but are not
    counted by :func:`own_nodes`."""
    graph = nx.DiGraph()
    records, _, _ = driver.execute_query("MATCH (n:Node {run_id: $run}) RETURN n", run=run_id)
    for record in records:
        props = dict(record["n"])
        graph.add_node(props["id"], **props)
    records, _, _ = driver.execute_query(
        "MATCH (a:Node)-[e:DERIVES]->(b:Node) WHERE a.run_id = $run OR b.run_id = $run "
        "RETURN a.id AS src, b.id AS dst, count(e) AS n",
        run=run_id,
    )
    for record in records:
        graph.add_edge(record["src"], record["dst"], multiplicity=record["n"])
    foreign = [n for n, data in graph.nodes(data=True) if not data]
    records, _, _ = driver.execute_query(
        "UNWIND $ids AS i MATCH (n:Node {id: i}) RETURN n", ids=foreign
    )
    for record in records:
        props = dict(record["n"])
        graph.add_node(props["id"], foreign=True, **props)
    return graph


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
