"""The query service's logical layer over member edges (query_service.members): the derived
TENSOR and VALUE nodes of a stored member edge are exactly those the capture agent's expansion
gives, and every derived id leads back to its member edge by its pair."""

from __future__ import annotations

import random

import numpy as np
import pytest

from query_service.members import MemberEdge, aggregate_column, candidates, expand
from sparkprov.derived import MemberColumns, derive, salt_of


def _edges(rng: random.Random, n: int, columns: int) -> list[MemberEdge]:
    groups = [rng.randrange(-(1 << 63), 1 << 63) for _ in range(3)]
    out = []
    for _ in range(n):
        values = tuple(
            None if rng.random() < 0.2 else str(rng.randrange(100)) for _ in range(columns)
        )
        out.append(
            MemberEdge(rng.randrange(-(1 << 63), 1 << 63), rng.choice(groups), "k#1", values)
        )
    return out


def test_the_expansion_is_the_capture_agents() -> None:
    rng = random.Random(3)
    edges = _edges(rng, 200, 3)
    nodes, logical = expand(edges)
    record = MemberColumns(
        group_key="k#1",
        members=np.array([e.member for e in edges], dtype=np.int64),
        groups=np.array([e.group for e in edges], dtype=np.int64),
        delta=False,
        values=[[e.values[i] for e in edges] for i in range(3)],
    ).expand()
    expected_nodes = {
        int(i): (d.op, d.label or text)
        for d in record.nodes
        for i, text in zip(d.ids, d.texts or [""] * len(d.ids), strict=True)
    }
    assert {i: (n.op, n.label) for i, n in nodes.items()} == expected_nodes
    assert sorted(logical) == sorted(zip(record.src.tolist(), record.dst.tolist(), strict=True))
    present = sum(v is not None for e in edges for v in e.values)
    assert len(nodes) == 2 * present and len(logical) == 3 * present


def test_every_derived_id_leads_back_to_its_member_edge() -> None:
    rng = random.Random(4)
    edges = _edges(rng, 50, 2)
    nodes, _ = expand(edges)
    pairs = candidates(sorted(nodes), {"k#1": 2, "other#2": 5})
    by_pair = {
        int(p): e
        for e in edges
        for p in (e.member ^ derive(np.array([e.group]), salt_of("k#1", "member"))).tolist()
    }
    for node_id, node in nodes.items():
        found = [p for p, owners in pairs.items() if (node_id, "k#1") in owners and p in by_pair]
        assert [by_pair[p] for p in found] == [node.edge]


def test_an_aggregate_names_its_column() -> None:
    group = 12345
    for i in range(4):
        aggregate = int(derive(np.array([group]), salt_of("k#1", i, "aggregate"))[0])
        assert aggregate_column(aggregate, group, "k#1", 4) == i
    assert aggregate_column(999, group, "k#1", 4) is None


def test_only_a_columns_tensors_feed_its_aggregate() -> None:
    rng = random.Random(5)
    edges = _edges(rng, 30, 3)
    columns = {(e.group, "k#1"): {1} for e in edges}
    nodes, logical = expand(edges, columns)
    assert {n.column for n in nodes.values()} == {1}
    for n in nodes.values():
        assert n.aggregate == int(
            derive(np.array([n.edge.group]), salt_of("k#1", 1, "aggregate"))[0]
        )
    assert all(
        (t, a) in logical
        for t, a in ((n.id, n.aggregate) for n in nodes.values() if n.op == "TENSOR")
    )


# -- folded member edges (docs/graph-schema.md, "A join's rows folded into their member edges")


def _joined_rows(
    rng: random.Random, n: int, columns: int
) -> list[tuple[int, int, int, int, tuple[str | None, ...]]]:
    """(left, right, times, group, values) of joined rows, some joined with themselves."""
    groups = [rng.randrange(-(1 << 63), 1 << 63) for _ in range(3)]
    rights = [rng.randrange(-(1 << 63), 1 << 63) for _ in range(4)]
    out = []
    for _ in range(n):
        left = rng.randrange(-(1 << 63), 1 << 63)
        right = left if rng.random() < 0.25 else rng.choice(rights)
        values = tuple(
            None if rng.random() < 0.2 else str(rng.randrange(100)) for _ in range(columns)
        )
        out.append((left, right, rng.randrange(-(1 << 63), 1 << 63), rng.choice(groups), values))
    return out


def _unfolded_layout(
    rows: list[tuple[int, int, int, int, tuple[str | None, ...]]],
) -> tuple[dict[int, tuple[str, str, str]], set[tuple[int, int]]]:
    """The logical graph of joined rows stored without the fold: each row's TIMES node with its
    edges from its parents and its member edge, expanded as any member edge."""
    edges = {e for left, right, t, g, _ in rows for e in ((left, t), (right, t), (t, g))}
    nodes, derived = expand(MemberEdge(t, g, "k#1", values) for _, _, t, g, values in rows)
    views = {i: (n.op, n.label, n.text) for i, n in nodes.items()}
    views.update({t: ("TIMES", "·", "") for _, _, t, _, _ in rows})
    return views, edges | set(derived)


def test_a_folded_edge_expands_into_the_unfolded_layout() -> None:
    rng = random.Random(6)
    rows = _joined_rows(rng, 120, 3)
    folded = [
        MemberEdge.of(left, g, "k#1", [v or "" for v in values], _nulls(values), t, right)
        for left, right, t, g, values in rows
    ]
    assert all(e.folded and e.member == t for e, (_, _, t, _, _) in zip(folded, rows, strict=True))
    nodes, logical = expand(folded)
    views, edges = _unfolded_layout(rows)
    assert {i: (n.op, n.label, n.text) for i, n in nodes.items()} == views
    assert len(logical) == len(set(logical))  # a self-pair's TIMES node has one edge from it
    assert set(logical) == edges
    assert not {(e.start, e.group) for e in folded} & set(logical)  # l -> g is no logical edge
    for e in folded:  # a derived TIMES node knows its own edges
        times = nodes[e.member]
        assert sorted(times.parents()) == sorted((s, d) for s, d in edges if d == e.member)
        assert sorted(times.children()) == sorted((s, d) for s, d in edges if s == e.member)
        assert times.edge.owner == e.group


def test_folded_and_unfolded_edges_expand_together() -> None:
    rng = random.Random(7)
    rows = _joined_rows(rng, 60, 2)
    members = [
        MemberEdge(t, g, "k#1", values) if k % 2 else MemberEdge(t, g, "k#1", values, left, right)
        for k, (left, right, t, g, values) in enumerate(rows)
    ]
    nodes, logical = expand(members)
    stored = {
        e
        for k, (left, right, t, g, _) in enumerate(rows)
        if k % 2
        for e in ((left, t), (right, t), (t, g))
    }
    views, edges = _unfolded_layout(rows)
    assert set(logical) | stored == edges
    assert {n.op for i, n in nodes.items() if i in {r[2] for r in rows}} == {"TIMES"}
    assert sum(n.op == "TIMES" for n in nodes.values()) == len(rows) // 2


def test_a_member_edge_with_times_needs_its_partner() -> None:
    with pytest.raises(ValueError, match="no partner"):
        MemberEdge.of(1, 2, "k#1", ["3"], None, 4, None)


def _nulls(values: tuple[str | None, ...]) -> list[int] | None:
    return [i for i, v in enumerate(values) if v is None] or None
