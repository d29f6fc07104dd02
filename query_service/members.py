"""Group members as stored and as queried: the logical layer over member edges.

Neo4j stores each group member as one member edge ``m -[:DERIVES {member_key, member_values,
member_nulls, pair}]-> g`` (sparkprov.blocks.MemberBlock; docs/graph-schema.md, "Group
members"). The logical graph every query answers over (../shared/MODEL.md section 6) has, per
member and aggregated column with a value, a TENSOR and a VALUE node and the edges m -> TENSOR,
VALUE -> TENSOR, TENSOR -> AGGREGATE. They are derived here with the capture agent's own
definition (``sparkprov.derived``), so their ids, labels and values are those it computed.

A derived node lies in its member's component and connected set: its edges m -> TENSOR and
VALUE -> TENSOR stay inside the member's set, and TENSOR -> AGGREGATE crosses to the group's set
exactly where the stored edge m -> g does (an AGGREGATE and its DELTA row share their set), so
the set dependencies of the stored graph are those of the logical one.
"""

from __future__ import annotations

import threading
from collections import OrderedDict, defaultdict
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from sparkprov.derived import MemberColumns, derive, salt_of, underive

__all__ = [
    "KINDS",
    "Derived",
    "DerivedCache",
    "MemberEdge",
    "aggregate_column",
    "candidates",
    "expand",
]

TENSOR_LABEL = "⊗"
KINDS = ("tensor", "value")


@dataclass(frozen=True)
class MemberEdge:
    """One stored member edge: member ``member`` of group ``group`` under ``key``, with its
    aggregated values (None where null)."""

    member: int
    group: int
    key: str
    values: tuple[str | None, ...]

    @classmethod
    def of(
        cls, member: int, group: int, key: str, values: Sequence[str], nulls: Sequence[int] | None
    ) -> MemberEdge:
        texts: list[str | None] = list(values)
        for i in nulls or ():
            texts[i] = None
        return cls(member, group, key, tuple(texts))


@dataclass(frozen=True)
class Derived:
    """A derived node: the TENSOR (``op``) or VALUE of column ``column`` of member edge ``edge``;
    ``tensor`` and ``aggregate`` are the ids of the TENSOR it is or feeds and of the AGGREGATE
    that TENSOR feeds."""

    id: int
    op: str
    edge: MemberEdge
    column: int
    tensor: int
    value: int
    aggregate: int

    @property
    def label(self) -> str:
        return TENSOR_LABEL if self.op == "TENSOR" else self.text

    @property
    def text(self) -> str:
        return self.edge.values[self.column] or ""

    def parents(self) -> list[tuple[int, int]]:
        if self.op == "TENSOR":
            return [(self.edge.member, self.id), (self.value, self.id)]
        return []

    def children(self) -> list[tuple[int, int]]:
        if self.op == "TENSOR":
            return [(self.id, self.aggregate)]
        return [(self.id, self.tensor)]


def expand(
    edges: Iterable[MemberEdge],
    columns: Mapping[tuple[int, str], Collection[int]] | None = None,
) -> tuple[dict[int, Derived], list[tuple[int, int]]]:
    """The derived nodes of member edges and the logical edges m -> TENSOR, VALUE -> TENSOR and
    TENSOR -> AGGREGATE (not m -> g, which is stored). With ``columns`` ((group, key) ->
    columns), only those columns of the edges of those groups."""
    by_key: dict[str, list[MemberEdge]] = defaultdict(list)
    for e in edges:
        by_key[e.key].append(e)
    nodes: dict[int, Derived] = {}
    out: list[tuple[int, int]] = []
    for key, group in by_key.items():
        record = MemberColumns(
            group_key=key,
            members=np.array([e.member for e in group], dtype=np.int64),
            groups=np.array([e.group for e in group], dtype=np.int64),
            delta=False,
            values=[[e.values[i] for e in group] for i in range(len(group[0].values))],
        )
        for c in record.derived_columns():
            for k, row in enumerate(c.rows.tolist()):
                edge = group[row]
                if columns is not None and c.index not in columns.get((edge.group, key), ()):
                    continue
                t, v, a = int(c.tensors[k]), int(c.values[k]), int(c.aggregates[k])
                nodes[t] = Derived(t, "TENSOR", edge, c.index, t, v, a)
                nodes[v] = Derived(v, "VALUE", edge, c.index, t, v, a)
                out += [(edge.member, t), (v, t), (t, a)]
    return nodes, out


def aggregate_column(aggregate: int, group: int, key: str, columns: int) -> int | None:
    """Which aggregated column of ``key``'s groups the AGGREGATE node ``aggregate`` of ``group``
    is (None: none of them)."""
    for i in range(columns):
        derived = _derive_one(group, salt_of(key, i, "aggregate"))
        if derived == aggregate:
            return i
    return None


def candidates(ids: Sequence[int], keys: Mapping[str, int]) -> dict[int, list[tuple[int, str]]]:
    """For ids that may be derived, the pair ids they would come from: pair -> [(id, key)] over
    every registered key (key -> its number of aggregated columns), column and kind."""
    out: dict[int, list[tuple[int, str]]] = defaultdict(list)
    array = np.asarray(ids, dtype=np.int64)
    for key, columns in keys.items():
        for i in range(columns):
            for kind in KINDS:
                for node_id, pair in zip(
                    ids, underive(array, salt_of(key, i, kind)).tolist(), strict=True
                ):
                    out[pair].append((node_id, key))
    return out


def _derive_one(node_id: int, salt: np.uint64) -> int:
    return int(derive(np.array([node_id], dtype=np.int64), salt)[0])


class DerivedCache:
    """The derived nodes met lately, so that a traversal that expanded them need not look them
    up again by pair (bounded: the least recently used are forgotten)."""

    def __init__(self, size: int = 200_000) -> None:
        self._size = size
        self._nodes: OrderedDict[int, Derived] = OrderedDict()
        self._lock = threading.Lock()  # the gRPC server's threads share one store

    def add(self, nodes: Mapping[int, Derived]) -> None:
        with self._lock:
            for node_id, node in nodes.items():
                self._nodes[node_id] = node
                self._nodes.move_to_end(node_id)
            while len(self._nodes) > self._size:
                self._nodes.popitem(last=False)

    def get(self, node_id: int) -> Derived | None:
        with self._lock:
            return self._nodes.get(node_id)
