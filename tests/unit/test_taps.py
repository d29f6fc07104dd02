"""What each capture point emits for a batch, without Spark (plain pandas in, columns out)."""

from __future__ import annotations

import pandas as pd

from capture_agent.taps import GroupSpec, JoinSpec, MemberSpec, PlusSpec, SourceSpec


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


def test_members_skip_null_values_but_stay_members() -> None:
    pdf = pd.DataFrame(
        {
            "id": [1, 2],
            "group": [9, 9],
            "t0": [21, 22],
            "v0": [31, 32],
            "g0": [40, 40],
            "x0": ["5", None],
        }
    )
    nodes, edges = MemberSpec(key="m", aggregates=1).emit(pdf)
    tensor, value = nodes
    assert list(tensor.ids) == [21] and list(value.ids) == [31] and list(value.values) == ["5"]
    assert sorted(zip(edges.src, edges.dst, strict=True)) == sorted(
        [(1, 9), (2, 9), (1, 21), (31, 21), (21, 40)]
    )


def test_groups_feed_aggregates_into_the_row() -> None:
    pdf = pd.DataFrame({"id": [9], "g0": [40], "x0": ["3.5"], "a0": ["NY"]})
    nodes, edges = GroupSpec(
        key="g", relation="Avg", attributes=("City",), functions=("AVG",)
    ).emit(pdf)
    delta, aggregate = nodes
    assert delta.op == "DELTA" and delta.relation == "Avg" and delta.attributes == {"City": ["NY"]}
    assert aggregate.label == "AVG" and list(aggregate.values) == ["3.5"]
    assert (list(edges.src), list(edges.dst)) == ([40], [9])
