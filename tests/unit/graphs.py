"""What capture tests share: the logical graph a captured job emitted through the in-memory
emitter (capture_agent.emitters.MemoryEmitter), as node rows by id and a networkx DiGraph."""

from __future__ import annotations

from typing import Any

import networkx as nx

from capture_agent.emitters import MemoryEmitter
from sparkprov.events import Batch, decode


def emitted_graph(emitter: MemoryEmitter) -> tuple[dict[int, dict[str, Any]], nx.DiGraph]:
    """Every emitted node (its expanded row) by id, and the graph of every emitted edge."""
    batches = [e.expanded() for _, v in emitter.messages() if isinstance(e := decode(v), Batch)]
    nodes = {n["id"]: n for b in batches for n in b.rows()}
    graph = nx.DiGraph()
    graph.add_nodes_from(nodes)
    for b in batches:
        graph.add_edges_from(zip(b.edges["src"], b.edges["dst"], strict=True))
    return nodes, graph
