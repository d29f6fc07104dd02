"""Split levels and theta: the part of the connected-set definition the ingest service runs on.

A node's split path (split, sub-split, ...) gives it a *part* at every level k: the first k+1
names of the path (a path shorter than k+1 keeps its full path, so a split without sub-splits is
never refined). Its connected set is the set of the first level whose set holds fewer than theta
nodes, else of its deepest level (:func:`effective`). ``tests/reference/sets.py`` states the whole
definition from scratch; this module holds only what the services import, so that they never
load its reference implementation's dev-only dependencies (networkx).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from sparkprov.events import MAX_SPLIT_DEPTH

__all__ = ["DEFAULT_THETA", "LEVELS", "effective", "level_count", "part"]

DEFAULT_THETA = 25000
# split, sub-split, sub-sub-split: lineage.proto's SplitDepth, as the plugin's Schema.LEVELS
LEVELS = MAX_SPLIT_DEPTH


def level_count(split: Sequence[str]) -> int:
    """Levels at which a node with this split path has a set of its own."""
    return max(1, min(len(split), LEVELS))


def part(split: Sequence[str], level: int) -> tuple[str, ...]:
    return tuple(split[: level + 1])


def effective(
    level_ids: Sequence[int], sizes: Mapping[tuple[int, int], int], theta: int
) -> tuple[int, int]:
    """(level, set id) of the connected set: the first level whose set is below theta."""
    for level, set_id in enumerate(level_ids):
        if sizes.get((level, set_id), 1) < theta:
            return level, set_id
    return len(level_ids) - 1, level_ids[-1]
