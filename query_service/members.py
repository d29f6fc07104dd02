"""Group members as stored and as queried: the logical layer over member edges.

Neo4j stores each group member as one member edge ``m -[:DERIVES {member_key, member_values,
member_nulls, pair}]-> g`` (sparkprov.blocks.MemberBlock; docs/graph-schema.md, "Group
members"). The logical graph every query answers over (../shared/MODEL.md section 6) has, per
member and aggregated column with a value, a TENSOR and a VALUE node and the edges m -> TENSOR,
VALUE -> TENSOR, TENSOR -> AGGREGATE. They are derived here with the capture agent's own
definition (``sparkprov.derived``), so their ids, labels and values are those it computed.

A *folded* member edge ``l -[:DERIVES {..., times, partner}]-> g`` stands for a joined row too
(docs/graph-schema.md, "A join's rows folded into their member edges"): its logical member is
the TIMES node ``times``, derived here with the edges l -> times, partner -> times (one edge when
partner is l) and times -> g; the stored l -> g is no logical edge. The TIMES node and its
TENSOR and VALUE nodes lie in g's component and set, and have g's run.

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
from typing import cast

import numpy as np

from sparkprov.derived import MemberColumns, derive, salt_of, underive

__all__ = [
    "KINDS",
    "TIMES_LABEL",
    "Derived",
    "DerivedCache",
    "MemberEdge",
    "aggregate_column",
    "candidates",
    "expand",
]

TENSOR_LABEL = "⊗"
TIMES_LABEL = "·"
KINDS = ("tensor", "value")


@dataclass(frozen=True)
class MemberEdge:
    """One stored member edge: member ``member`` of group ``group`` under ``key``, with its
    aggregated values (None where null). A folded edge (``left`` set) starts at the joined row's
    left parent ``left``, and its logical member ``member`` is the joined row's TIMES node, whose
    right parent is ``partner``."""

    member: int
    group: int
    key: str
    values: tuple[str | None, ...]
    left: int | None = None
    partner: int | None = None

    @classmethod
    def of(
        cls,
        start: int,
        group: int,
        key: str,
        values: Sequence[str],
        nulls: Sequence[int] | None,
        times: int | None = None,
        partner: int | None = None,
    ) -> MemberEdge:
        """The member edge stored from ``start`` to ``group`` (folded when ``times`` is set)."""
        texts: list[str | None] = list(values)
        for i in nulls or ():
            texts[i] = None
        if times is None:
            return cls(start, group, key, tuple(texts))
        if partner is None:
            raise ValueError(f"folded member edge {start} -> {group} has no partner")
        return cls(times, group, key, tuple(texts), start, partner)

    @property
    def folded(self) -> bool:
        return self.left is not None

    @property
    def start(self) -> int:
        """The stored edge's start node (the left row of a folded edge, else the member)."""
        return self.member if self.left is None else self.left

    @property
    def owner(self) -> int:
        """The stored node whose run, component and set the derived nodes take: the group for
        a folded edge, else the member."""
        return self.member if self.left is None else self.group

    def fold_edges(self) -> list[tuple[int, int]]:
        """The logical edges of a folded edge's TIMES node: l -> times, partner -> times (once
        when partner is l), times -> g; none for an unfolded edge."""
        if self.left is None:
            return []
        out = [(self.left, self.member)]
        if self.partner != self.left:
            out.append((cast(int, self.partner), self.member))
        return [*out, (self.member, self.group)]


@dataclass(frozen=True)
class Derived:
    """A derived node: the TENSOR (``op``) or VALUE of column ``column`` of member edge ``edge``;
    ``tensor`` and ``aggregate`` are the ids of the TENSOR it is or feeds and of the AGGREGATE
    that TENSOR feeds. Or the TIMES node of a folded member edge (``column`` -1, ``tensor``,
    ``value`` and ``aggregate`` 0), whose member TENSORs are ``tensors``."""

    id: int
    op: str
    edge: MemberEdge
    column: int
    tensor: int
    value: int
    aggregate: int
    tensors: tuple[int, ...] = ()

    @property
    def label(self) -> str:
        if self.op == "TIMES":
            return TIMES_LABEL
        return TENSOR_LABEL if self.op == "TENSOR" else self.text

    @property
    def text(self) -> str:
        return "" if self.op == "TIMES" else self.edge.values[self.column] or ""

    def parents(self) -> list[tuple[int, int]]:
        if self.op == "TIMES":
            return [e for e in self.edge.fold_edges() if e[1] == self.id]
        if self.op == "TENSOR":
            return [(self.edge.member, self.id), (self.value, self.id)]
        return []

    def children(self) -> list[tuple[int, int]]:
        if self.op == "TIMES":
            return [(self.id, self.edge.group)] + [(self.id, t) for t in self.tensors]
        if self.op == "TENSOR":
            return [(self.id, self.aggregate)]
        return [(self.id, self.tensor)]


def expand(
    edges: Iterable[MemberEdge],
    columns: Mapping[tuple[int, str], Collection[int]] | None = None,
) -> tuple[dict[int, Derived], list[tuple[int, int]]]:
    """The derived nodes of member edges and the logical edges they stand for beside the stored
    ones: m -> TENSOR, VALUE -> TENSOR and TENSOR -> AGGREGATE, and for a folded edge its TIMES
    node (the member m) and l -> m, partner -> m, m -> g (an unfolded edge's m -> g is stored and
    logical, so not among them; a folded edge's stored l -> g is no logical edge). With
    ``columns`` ((group, key) -> columns), only the TENSOR and VALUE nodes of those columns of the
    edges of those groups, and their edges."""
    by_key: dict[str, list[MemberEdge]] = defaultdict(list)
    for e in edges:
        by_key[e.key].append(e)
    nodes: dict[int, Derived] = {}
    out: list[tuple[int, int]] = []
    tensors: dict[MemberEdge, list[int]] = defaultdict(list)
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
                if edge.folded:
                    tensors[edge].append(t)
    if columns is None:
        for group in by_key.values():
            for edge in group:
                if edge.folded:
                    nodes[edge.member] = Derived(
                        edge.member, "TIMES", edge, -1, 0, 0, 0, tuple(tensors.get(edge, ()))
                    )
                    out += edge.fold_edges()
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
