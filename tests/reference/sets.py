"""Connected sets (CSProv), kept apart from the database so they are testable.

A node's split path (split, sub-split, ...) gives it a *part* at every level k: the first k+1
names of the path (a path shorter than k+1 keeps its full path, so a split without sub-splits is
never refined). The level-k set of a node is its weakly connected component among the edges whose
two ends share their level-k part. Its *connected set* is the level-k set of the smallest k
whose set holds fewer than theta nodes, or of its deepest level: Algorithm 3 of the paper (a set
that grows past theta is partitioned by the sub-splits), stated so that it depends only on the
graph, never on the order in which batches arrived. The ingest service keeps every level's sets
incrementally, in union-finds beside the data (union by size, per level), and a node's current
component and set are resolved from them when read (``sparkprov.component(n)``,
``sparkprov.set(n)``: docs/graph-schema.md); :func:`recompute` is the from-scratch definition
that those ids must equal (up to renaming).

The pieces the service itself runs on (levels, parts, theta, :func:`effective`) live in
``ingest_service.levels`` and are re-exported here; networkx, a dev-only dependency, is imported
only when :func:`recompute` runs, so importing this module never needs it.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping, Sequence

from ingest_service.levels import DEFAULT_THETA, LEVELS, effective, level_count, part

__all__ = [
    "DEFAULT_THETA",
    "LEVELS",
    "dependencies",
    "effective",
    "level_count",
    "part",
    "recompute",
    "same_partition",
]


def dependencies(
    edges: Iterable[tuple[int, int]], set_of: Mapping[int, int]
) -> set[tuple[int, int]]:
    """Set dependencies of the given edges: (src set, dst set) where the two differ."""
    deps = set()
    for src, dst in edges:
        a, b = set_of[src], set_of[dst]
        if a != b:
            deps.add((a, b))
    return deps


def recompute(
    splits: Mapping[int, Sequence[str]], edges: Iterable[tuple[int, int]], theta: int
) -> tuple[dict[int, int], dict[int, tuple[int, int]]]:
    """Component and connected-set labels of every node, from scratch (a component's label is its
    smallest node id, a connected set's is (level, smallest node id), since one node can head
    sets at several levels; compare with :func:`same_partition`)."""
    import networkx as nx  # a dev dependency: only tests and checks call the reference

    edge_list = [(a, b) for a, b in edges if a in splits and b in splits]
    graph = nx.Graph()
    graph.add_nodes_from(splits)
    graph.add_edges_from(edge_list)
    component = {n: min(c) for c in nx.connected_components(graph) for n in c}

    level_sets: list[dict[int, int]] = []
    sizes: dict[tuple[int, int], int] = {}
    for level in range(LEVELS):
        g = nx.Graph()
        g.add_nodes_from(splits)
        g.add_edges_from(
            (a, b) for a, b in edge_list if part(splits[a], level) == part(splits[b], level)
        )
        labels = {}
        for members in nx.connected_components(g):
            label = min(members)
            sizes[(level, label)] = len(members)
            labels.update(dict.fromkeys(members, label))
        level_sets.append(labels)
    connected: dict[int, tuple[int, int]] = {}
    for n, split in splits.items():
        ids = [level_sets[k][n] for k in range(level_count(split))]
        connected[n] = effective(ids, sizes, theta)
    return component, connected


def same_partition(a: Mapping[int, Hashable], b: Mapping[int, Hashable]) -> bool:
    """Whether two labellings of the same nodes group them identically (up to renaming)."""
    if a.keys() != b.keys():
        return False
    forward: dict[Hashable, Hashable] = {}
    backward: dict[Hashable, Hashable] = {}
    for node, label in a.items():
        other = b[node]
        if forward.setdefault(label, other) != other or backward.setdefault(other, label) != label:
            return False
    return True
