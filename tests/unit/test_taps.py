"""What each capture point emits for a batch, without Spark (plain pandas in, columns out)."""

from __future__ import annotations

import datetime

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from capture_agent.taps import (
    AntiJoinSpec,
    GroupSpec,
    JoinSpec,
    MemberSpec,
    PlusSpec,
    SemiJoinSpec,
    SourceSpec,
    derive,
    null_flag,
)

# Ids that a float64 does not represent (the held-out check's Orders tokens and neighbours).
BIG = [-8189563609426987398, -252003656256316311, (1 << 62) + 1, -(1 << 53) - 1]


def test_source_tokens_carry_labels_and_values() -> None:
    spec = SourceSpec(key="s", relation="P", attributes=("name",))
    pdf = pd.DataFrame({"id": [11, 12], "rowno": [0, (1 << 33) + 5], "a0": ["ann", None]})
    (nodes,), edges = spec.emit(pdf)
    assert edges is None
    assert nodes.op == "TOKEN" and list(nodes.ids) == [11, 12]
    assert list(nodes.labels) == ["P#0.0", "P#1.5"]
    assert nodes.attributes == {"name": ["ann", None]}


def test_plus_and_join_edges() -> None:
    (plus,), edges = PlusSpec(key="p", relation="R").emit(pd.DataFrame({"id": [5], "parent": [1]}))
    assert plus.op == "PLUS" and (list(edges.src), list(edges.dst)) == ([1], [5])
    (times,), edges = JoinSpec(key="j").emit(
        pd.DataFrame({"id": [7, 8], "left": [1, 2], "right": [3, 4]})
    )
    assert times.op == "TIMES"
    assert sorted(zip(edges.src, edges.dst, strict=True)) == [(1, 7), (2, 8), (3, 7), (4, 8)]


def test_outer_join_ids_above_2_53_survive_with_their_null_flags() -> None:
    """The sides of an outer join arrive with nulls as 0 plus a flag; no id is rounded."""
    pdf = pd.DataFrame(
        {
            "id": [BIG[0], BIG[1], BIG[2]],
            "left": [BIG[3], 0, BIG[1] + 1],
            "right": [0, BIG[2] - 1, BIG[0] + 3],
            null_flag("left"): [False, True, False],
            null_flag("right"): [True, False, False],
        }
    )
    (times,), edges = JoinSpec(key="j").emit(pdf)
    assert list(times.ids) == BIG[:3]
    assert sorted(zip(edges.src.tolist(), edges.dst.tolist(), strict=True)) == sorted(
        [(BIG[3], BIG[0]), (BIG[2] - 1, BIG[1]), (BIG[1] + 1, BIG[2]), (BIG[0] + 3, BIG[2])]
    )


def test_an_id_column_that_came_as_float_is_refused_not_rounded() -> None:
    """What Arrow makes of a nullable int64 column: float64. The tap must fail loudly."""
    column = pa.array([BIG[0], None], type=pa.int64()).to_pandas()
    assert column.dtype == np.float64  # the defect's cause, as pandas/Arrow behave
    pdf = pd.DataFrame({"id": [1, 2], "left": [3, 4], "right": column})
    with pytest.raises(TypeError, match="never pass through a float"):
        JoinSpec(key="j").emit(pdf)


def test_a_null_id_where_every_row_needs_one_is_refused() -> None:
    pdf = pd.DataFrame({"id": [5, 6], "parent": [0, 1], null_flag("parent"): [True, False]})
    with pytest.raises(ValueError, match="holds nulls"):
        PlusSpec(key="p", relation="R").emit(pdf)


def test_semi_join_row_is_times_of_its_row_and_the_sum_of_its_matches() -> None:
    pdf = pd.DataFrame(
        {"id": [10, 20], "left": [1, 2], "witnesses": [np.array([5, 6, 7]), np.array([8])]}
    )
    (times, plus), edges = SemiJoinSpec(key="s").emit(pdf)
    assert times.op == "TIMES" and list(times.ids) == [10, 20]
    (p,) = plus.ids  # only the row with several matches needs a PLUS
    assert plus.op == "PLUS" and p not in {1, 2, 5, 6, 7, 8, 10, 20}
    assert sorted(zip(edges.src.tolist(), edges.dst.tolist(), strict=True)) == sorted(
        [(1, 10), (p, 10), (5, p), (6, p), (7, p), (2, 20), (8, 20)]
    )


def test_a_row_joined_with_itself_has_one_edge_from_it() -> None:
    """One source read on both sides (a self join, IN over the same files): a row matching itself
    is both parents of its node, one edge as readers store it (the JVM's EmissionTest alike)."""
    join = pd.DataFrame({"id": [7, 8], "left": [1, 1], "right": [1, 2]})
    _, edges = JoinSpec(key="j").emit(join)
    assert sorted(zip(edges.src.tolist(), edges.dst.tolist(), strict=True)) == [
        (1, 7),
        (1, 8),
        (2, 8),
    ]
    semi = pd.DataFrame(
        {"id": [10, 20], "left": [1, 2], "witnesses": [np.array([1]), np.array([3])]}
    )
    _, edges = SemiJoinSpec(key="s").emit(semi)
    assert sorted(zip(edges.src.tolist(), edges.dst.tolist(), strict=True)) == [
        (1, 10),
        (2, 20),
        (3, 20),
    ]
    anti = pd.DataFrame({"id": [30, 40], "left": [1, 2], "right": [1, 5]})
    (excluded,), edges = AntiJoinSpec(key="a").emit(anti)
    assert list(excluded.values) == ["1", "5"]  # the match still named
    assert sorted(zip(edges.src.tolist(), edges.dst.tolist(), strict=True)) == [
        (1, 30),
        (2, 40),
        (5, 40),
    ]


def test_members_skip_null_values_but_stay_members() -> None:
    pdf = pd.DataFrame({"id": [1, 2], "group": [9, 9], "x0": ["5", None]})
    nodes, edges = MemberSpec(key="g:members", aggregates=1, group_key="g").emit(pdf)
    tensor, value = nodes
    assert len(tensor.ids) == len(value.ids) == 1 and list(value.values) == ["5"]
    (t,), (v,) = tensor.ids, value.ids
    # the AGGREGATE id the group side derives for the same group
    (_, aggregate), _ = GroupSpec(key="g", functions=("SUM",)).emit(
        pd.DataFrame({"id": [9], "x0": ["5"]})
    )
    (a,) = aggregate.ids
    assert len({1, 2, 9, t, v, a}) == 6
    assert sorted(zip(edges.src, edges.dst, strict=True)) == sorted(
        [(1, 9), (2, 9), (1, t), (v, t), (t, a)]
    )


def test_derived_ids_are_deterministic_and_distinct() -> None:
    ids = np.arange(-5000, 5000, dtype=np.int64)
    first = derive(ids, np.uint64(7))
    assert (first == derive(ids.copy(), np.uint64(7))).all()
    assert len(set(first.tolist()) | set(derive(ids, np.uint64(8)).tolist())) == 20000


def test_groups_feed_aggregates_into_the_row() -> None:
    pdf = pd.DataFrame({"id": [9], "x0": ["3.5"], "a0": ["NY"]})
    nodes, edges = GroupSpec(
        key="g", relation="Avg", attributes=("City",), functions=("AVG",)
    ).emit(pdf)
    delta, aggregate = nodes
    assert delta.op == "DELTA" and delta.relation == "Avg" and delta.attributes == {"City": ["NY"]}
    assert aggregate.label == "AVG" and list(aggregate.values) == ["3.5"]
    assert (list(edges.src), list(edges.dst)) == (list(aggregate.ids), [9])


def test_black_box_group_rows_are_fed_by_their_group() -> None:
    from capture_agent.taps import BlackBoxGroupSpec

    pdf = pd.DataFrame({"id": [7, 8, 9], "members": [[1, 2], [1, 2], [3]]})
    (box,), edges = BlackBoxGroupSpec(key="b", label="totals").emit(pdf)
    assert box.op == "BLACK_BOX" and box.label == "totals" and list(box.ids) == [7, 8, 9]
    assert sorted(zip(edges.src, edges.dst, strict=True)) == [
        (1, 7),
        (1, 8),
        (2, 7),
        (2, 8),
        (3, 9),
    ]


def test_window_rows_share_their_partitions_aggregate() -> None:
    from capture_agent.taps import WindowRowSpec

    spec = WindowRowSpec(key="w", functions=("SUM",), group_key="w")
    pdf = pd.DataFrame(
        {
            "id": [11, 12],
            "parent": [1, 2],
            "group": [5, 5],
            "first": [True, False],
            "x0": ["3", "3"],
        }
    )
    (times, aggregate), edges = spec.emit(pdf)
    assert times.op == "TIMES" and list(times.ids) == [11, 12]
    (a,) = aggregate.ids  # published once, by the partition's first row
    assert aggregate.op == "AGGREGATE" and list(aggregate.values) == ["3"]
    members = MemberSpec(key="w:members", aggregates=1, group_key="w", delta=False)
    nodes, member_edges = members.emit(pd.DataFrame({"id": [1], "group": [5], "x0": ["3"]}))
    assert (5, 5) not in zip(member_edges.src, member_edges.dst, strict=True)
    assert a in set(member_edges.dst)  # the members' tensors feed the same AGGREGATE
    assert sorted(zip(edges.src, edges.dst, strict=True)) == sorted(
        [(1, 11), (2, 12), (a, 11), (a, 12)]
    )
    assert 1 not in set(member_edges.dst) and 5 not in set(member_edges.dst)


def test_chunks_end_at_their_rows_or_their_texts_bound() -> None:
    """A batch of large values makes more chunks (each within a message's bound), short ones
    the rows' chunks; every row in exactly one chunk, at least one row each."""
    from capture_agent.taps import MAX_CHUNK_TEXT_CHARS, chunk_bounds
    from sparkprov import limits

    big = "x" * (limits.MAX_TEXT_BYTES + 10)  # counted as the text kept
    n = 3 * MAX_CHUNK_TEXT_CHARS // limits.MAX_TEXT_BYTES
    pdf = pd.DataFrame({"id": range(n), "a0": [big] * n, "ids": [[1, 2]] * n})
    bounds = chunk_bounds(pdf, 8192)
    assert bounds[0] == (0, 0 + MAX_CHUNK_TEXT_CHARS // limits.MAX_TEXT_BYTES)
    assert [e for _, e in bounds[:-1]] == [s for s, _ in bounds[1:]] and bounds[-1][1] == n
    assert len(bounds) == 3  # each chunk's last row reaches the bound
    short = pd.DataFrame({"id": range(10_000), "a0": ["y"] * 10_000})
    assert chunk_bounds(short, 4096) == [(0, 4096), (4096, 8192), (8192, 10_000)]
    assert chunk_bounds(short.iloc[:0], 4096) == []
    dates = pd.DataFrame({"id": [1, 2], "d": [datetime.date(2024, 1, 1), None]})  # not texts
    assert chunk_bounds(dates, 1) == [(0, 1), (1, 2)]
