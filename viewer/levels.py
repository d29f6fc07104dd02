"""Cutting a trace to its first levels, so a large trace is drawn a few levels at a time.

``cut(roots, edges, backward, depth)`` measures each node's level (its fewest steps from a root
along the trace's direction: towards parents for a backward trace, children for a forward one)
and keeps the nodes within ``depth`` levels. The *frontier* is the kept nodes at the last level
that have a further neighbour in the trace: the page marks them and traces on from them when
clicked. Asked for one level more than it draws, the viewer knows its frontier exactly.
"""

from __future__ import annotations

from collections import defaultdict, deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

__all__ = ["Cut", "cut"]


@dataclass(frozen=True)
class Cut:
    levels: dict[str, int]  # kept node id -> its level (the roots are 0)
    frontier: frozenset[str]


def cut(roots: Sequence[str], edges: Iterable[tuple[str, str]], backward: bool, depth: int) -> Cut:
    """``edges`` are (parent, child) pairs; ``depth`` 0 keeps every level."""
    step: dict[str, list[str]] = defaultdict(list)
    for parent, child in edges:
        if backward:
            step[child].append(parent)
        else:
            step[parent].append(child)
    levels = dict.fromkeys(roots, 0)
    queue = deque(roots)
    frontier: set[str] = set()
    while queue:
        node = queue.popleft()
        level = levels[node]
        for following in step[node]:
            if following in levels:
                continue
            # Breadth first: every node within ``depth`` is known before the last level is
            # walked, so what is unknown here lies beyond the cut.
            if depth and level == depth:
                frontier.add(node)
            else:
                levels[following] = level + 1
                queue.append(following)
    return Cut(levels, frozenset(frontier))
