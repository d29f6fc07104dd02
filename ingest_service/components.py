"""Union-by-size planning of component merges, kept apart from the database so it is testable.

Given the pairs of distinct component ids that new edges connect and the size of each component,
:func:`plan_merges` says which component ids to relabel into which: every group of connected
components becomes the largest of them, so a node is relabelled O(log n) times over its life.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

__all__ = ["Merge", "plan_merges"]


@dataclass(frozen=True)
class Merge:
    old: int
    new: int


def plan_merges(
    pairs: Iterable[tuple[int, int]], sizes: Mapping[int, int]
) -> tuple[list[Merge], dict[int, int]]:
    """Relabels to apply and the resulting size of each surviving component that grew."""
    parent: dict[int, int] = {}

    def find(x: int) -> int:
        parent.setdefault(x, x)
        root = x
        while parent[root] != root:
            root = parent[root]
        while parent[x] != root:
            parent[x], x = root, parent[x]
        return root

    for a, b in pairs:
        ra, rb = find(a), find(b)
        if ra != rb:
            parent[ra] = rb

    groups: dict[int, list[int]] = {}
    for c in parent:
        groups.setdefault(find(c), []).append(c)

    merges: list[Merge] = []
    grown: dict[int, int] = {}
    for members in groups.values():
        if len(members) < 2:
            continue
        # Largest keeps its id (ties broken by id, so the plan is deterministic).
        target = max(members, key=lambda c: (sizes.get(c, 1), c))
        grown[target] = sum(sizes.get(c, 1) for c in members)
        merges.extend(Merge(c, target) for c in members if c != target)
    return merges, grown
