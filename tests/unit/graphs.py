"""What capture tests share: the logical graph a captured job emitted through the in-memory
emitter (capture_agent.emitters.MemoryEmitter), as node rows by id and a networkx DiGraph."""

from __future__ import annotations

from typing import Any

import networkx as nx

from capture_agent.emitters import MemoryEmitter
from sparkprov.events import ATTRIBUTE_PREFIX, Batch, decode


def emitted_graph(emitter: MemoryEmitter) -> tuple[dict[int, dict[str, Any]], nx.DiGraph]:
    """Every emitted node (its expanded row) by id, and the graph of every emitted edge."""
    batches = [e.expanded() for _, v in emitter.messages() if isinstance(e := decode(v), Batch)]
    nodes = {n["id"]: n for b in batches for n in b.rows()}
    graph = nx.DiGraph()
    graph.add_nodes_from(nodes)
    for b in batches:
        graph.add_edges_from(zip(b.edges["src"], b.edges["dst"], strict=True))
    return nodes, graph


def witness(
    nodes: dict[int, dict[str, Any]], graph: nx.DiGraph, node_id: int
) -> dict[str, list[dict[str, str]]]:
    """The witness of an output node in an emitted graph, as ``QueryClient.witness`` gives it
    from the stored one: the TOKEN rows its backward trace reaches, per relation, as the values
    they kept, closed under anti joins' exclusions (an EXCLUDED node whose left parent the
    witness reaches brings its right row's sources in)."""
    tokens = {a for a in nx.ancestors(graph, node_id) | {node_id} if nodes[a]["op"] == "TOKEN"}
    matches: set[int] = set()
    fresh = set(tokens)
    while fresh:
        reached = set().union(*(nx.descendants(graph, t) for t in fresh))
        found: set[int] = set()
        for e in reached:
            if nodes[e]["op"] == "EXCLUDED":
                right = int(nodes[e]["value"])
                if right not in matches and any(p != right for p in graph.predecessors(e)):
                    found.add(right)
        if not found:
            break
        matches |= found
        more = {a for r in found for a in nx.ancestors(graph, r) | {r} if nodes[a]["op"] == "TOKEN"}
        fresh = more - tokens
        tokens |= more
    rows: dict[str, list[dict[str, str]]] = {}
    for t in tokens:
        props = nodes[t]["props"]
        rows.setdefault(nodes[t]["relation"], []).append(
            {
                k[len(ATTRIBUTE_PREFIX) :]: v
                for k, v in props.items()
                if k.startswith(ATTRIBUTE_PREFIX)
            }
        )
    return rows
