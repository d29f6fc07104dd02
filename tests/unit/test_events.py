from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sparkprov import events
from sparkprov.derived import derive, xxhash64_longs
from sparkprov.events import EdgeColumns, MalformedEvent, NodeColumns
from sparkprov.v1 import lineage_pb2


def test_batch_round_trip_keeps_columns_nulls_and_values() -> None:
    data = events.encode_batch(
        "run1",
        "wf",
        "tap#1",
        3,
        7,
        [
            NodeColumns(
                "TOKEN",
                [1, -2],
                labels=["R#0.0", "R#0.1"],
                relation="R",
                attributes={"name": ["ann", None], "age": ["3", "4"]},
                split=("sp3", "sp4"),
            ),
            NodeColumns("AGGREGATE", [9], label="SUM", values=["7"]),
        ],
        EdgeColumns([1, -2], [9, 9]),
    )
    batch = events.decode(data)
    assert isinstance(batch, events.Batch)
    assert (batch.run_id, batch.workflow, batch.tap, batch.partition, batch.sequence) == (
        "run1",
        "wf",
        "tap#1",
        3,
        7,
    )
    rows = batch.rows()
    assert rows[0] == {
        "id": 1,
        "run": "run1",
        "op": "TOKEN",
        "label": "R#0.0",
        "relation": "R",
        "value": None,
        "shared": False,
        "split": ["sp3", "sp4"],
        "props": {"a_name": "ann", "a_age": "3"},
    }
    assert rows[2]["split"] == []
    assert rows[1]["props"] == {"a_age": "4"}  # null attribute: absent
    assert rows[2]["label"] == "SUM" and rows[2]["value"] == "7"
    assert rows[2]["relation"] is None
    assert batch.edges == {"run": "run1", "src": [1, -2], "dst": [9, 9]}
    assert (batch.node_count, batch.edge_count) == (3, 2)


def test_markers_round_trip() -> None:
    started = events.decode(events.encode_run_started("r", "wf", 5, "app"))
    assert started == events.RunStarted("r", "wf", 5, "app")
    done = events.decode(events.encode_run_complete("r", "wf", 3, 4, failed=True, error="boom"))
    assert isinstance(done, events.RunComplete)
    assert (done.node_count, done.edge_count, done.failed, done.error) == (3, 4, True, "boom")


def _event(**fields: object) -> bytes:
    return lineage_pb2.LineageEvent(**fields).SerializeToString()  # type: ignore[arg-type]


def _ragged() -> bytes:
    event = lineage_pb2.LineageEvent(schema_version=1, run_id="r")
    block = event.batch.nodes.add()
    block.op = lineage_pb2.OP_TOKEN
    block.ids.extend([1, 2])
    block.labels.append("only one")
    return event.SerializeToString()


def _deep_split() -> bytes:
    event = lineage_pb2.LineageEvent(schema_version=1, run_id="r")
    block = event.batch.nodes.add()
    block.op = lineage_pb2.OP_TOKEN
    block.ids.append(1)
    block.split.extend(["a", "b", "c", "d"])
    return event.SerializeToString()


def _derived_event(**derived: Any) -> bytes:
    """A version-3 batch of one TIMES block whose ids are derived (lineage.proto DerivedIds)."""
    event = lineage_pb2.LineageEvent(schema_version=3, run_id="r")
    block = event.batch.nodes.add()
    block.op = lineage_pb2.OP_TIMES
    block.relation = "R"
    ids = derived.pop("ids", None)
    if ids:
        block.ids.extend(ids)
    block.derived.CopyFrom(lineage_pb2.DerivedIds(seed=42, **derived))
    return event.SerializeToString()


# Spark's own answers: SELECT xxhash64(a, b) over these rows (seed 42).
_SPARK_PAIRS = {
    (1, 2): -8198029865082835910,
    (0, -1): -3422729216832164903,
    (None, 5): 6251837290343458373,
    (2**62, None): 8973626371093010265,
}


def test_positions_decode_to_sparks_ids_and_labels() -> None:
    positions = [0, 1, 2**62]
    deltas = [positions[0]] + [b - a for a, b in zip(positions, positions[1:], strict=False)]
    batch = events.decode(_derived_event(position_deltas=deltas))
    assert isinstance(batch, events.Batch)
    (block,) = batch.blocks
    assert block["ids"] == [p ^ 42 for p in positions]  # the source's TOKEN ids
    assert block["labels"] == ["R#0.0", "R#0.1", f"R#{2**29}.0"]
    assert batch.edges["src"] == []


def test_pairs_decode_to_sparks_ids_and_both_edges() -> None:
    pairs = list(_SPARK_PAIRS)
    batch = events.decode(
        _derived_event(
            left=[0 if a is None else a for a, _ in pairs],
            right=[0 if b is None else b for _, b in pairs],
            left_null_rows=[2],
            right_null_rows=[3],
        )
    )
    assert isinstance(batch, events.Batch)
    ids = [_SPARK_PAIRS[p] for p in pairs]
    assert batch.blocks[0]["ids"] == ids
    assert batch.edges["src"] == [1, 0, 2**62, 2, -1, 5]
    assert batch.edges["dst"] == [ids[0], ids[1], ids[3], ids[0], ids[1], ids[2]]


def test_a_side_of_source_tokens_decodes_from_its_positions() -> None:
    """The left ids 5^m, 5^m (a null row: the position repeats), 9^m travel as 5, 0, 4."""
    m = -1234567890123
    batch = events.decode(
        _derived_event(left_mask=m, left_deltas=[5, 0, 4], right=[2, 4, 7], left_null_rows=[1])
    )
    assert isinstance(batch, events.Batch)
    expected = xxhash64_longs(
        42,
        np.array([5 ^ m, 0, 9 ^ m], dtype=np.int64),
        np.array([2, 4, 7], dtype=np.int64),
        nulls=[np.array([False, True, False]), None],
    ).tolist()
    assert batch.blocks[0]["ids"] == expected
    assert batch.edges["src"] == [5 ^ m, 9 ^ m, 2, 4, 7]


def test_derived_members_decode_to_the_same_member_ids() -> None:
    """Members sent as a join's pairs read back as the pairs' hashes; no edges come with them
    (the join's own block has those)."""
    event = lineage_pb2.LineageEvent(schema_version=3, run_id="r")
    block = event.batch.members.add()
    block.groups.extend([7, 7])
    block.group_key = "g#1"
    block.delta = True
    block.derived_members.CopyFrom(lineage_pb2.DerivedIds(seed=42, left=[1, 0], right=[2, -1]))
    batch = events.decode(event.SerializeToString())
    assert isinstance(batch, events.Batch)
    # No aggregated column (a distinct): the members are stored as their member -> group edges.
    assert not batch.members
    assert batch.edges["src"] == [_SPARK_PAIRS[(1, 2)], _SPARK_PAIRS[(0, -1)]]
    assert batch.edges["dst"] == [7, 7]


def _grouped_event(**fields: list[int]) -> bytes:
    """Three members of one aggregated column, their groups as ``fields`` give them."""
    event = lineage_pb2.LineageEvent(schema_version=7, run_id="r")
    block = event.batch.members.add(group_key="g#1", delta=True, aggregates=1, **fields)
    block.members.extend([1, 2, 3])
    block.values.add().longs.extend([10, 20, 30])
    return event.SerializeToString()


def test_member_groups_as_a_dictionary_read_as_the_groups_sent_plainly() -> None:
    """Schema version 7: MemberBlock.group_ids indexed by group_index are the members' groups."""
    plain = events.decode(_grouped_event(groups=[7, -9, 7]))
    dictionary = events.decode(_grouped_event(group_ids=[7, -9], group_index=[0, 1, 0]))
    assert isinstance(plain, events.Batch) and isinstance(dictionary, events.Batch)
    assert list(dictionary.members[0].groups) == [7, -9, 7]
    assert events.member_block("r", dictionary.members[0]) == events.member_block(
        "r", plain.members[0]
    )


@pytest.mark.parametrize(
    "fields",
    [
        {"group_ids": [7], "group_index": [0, 1, 0]},  # an index past the ids
        {"groups": [7, 7, 7], "group_ids": [7], "group_index": [0, 0, 0]},  # both forms
        {"group_ids": [7], "group_index": [0, 0]},  # two groups for three members
    ],
)
def test_a_bad_group_dictionary_is_refused_as_ragged(fields: dict[str, list[int]]) -> None:
    with pytest.raises(MalformedEvent) as info:
        events.decode(_grouped_event(**fields))
    assert info.value.reason == "ragged"


def _shared_event(aggregates: int, columns: list[list[int]], value_of: list[int]) -> bytes:
    """Two members, ``columns`` of values, aggregates reading them as ``value_of`` says."""
    event = lineage_pb2.LineageEvent(schema_version=9, run_id="r")
    block = event.batch.members.add(
        group_key="g#1", delta=True, aggregates=aggregates, groups=[7, 7], value_of=value_of
    )
    block.members.extend([1, 2])
    for longs in columns:
        block.values.add().longs.extend(longs)
    return event.SerializeToString()


def test_aggregates_sharing_a_value_column_read_as_columns_of_their_own() -> None:
    """Schema version 9: sum(x), count(y), avg(x) send x once; each aggregate reads its own."""
    shared = events.decode(_shared_event(3, [[10, 20], [5, 6]], [0, 1, 0]))
    plain = events.decode(_shared_event(3, [[10, 20], [5, 6], [10, 20]], []))
    assert isinstance(shared, events.Batch) and isinstance(plain, events.Batch)
    assert shared.members[0].values == [["10", "20"], ["5", "6"], ["10", "20"]]
    assert events.member_block("r", shared.members[0]) == events.member_block("r", plain.members[0])
    assert shared.expanded().rows() == plain.expanded().rows()


@pytest.mark.parametrize(
    ("aggregates", "columns", "value_of"),
    [
        (3, [[1, 2], [3, 4]], [0, 2, 0]),  # a column past those sent
        (3, [[1, 2], [3, 4]], [0, 0]),  # fewer entries than aggregates
        (2, [[1, 2], [3, 4]], [0, 0]),  # a column sent that no aggregate reads
        (3, [[1, 2], [3, 4]], []),  # no value_of and fewer columns than aggregates
    ],
)
def test_a_bad_value_of_is_refused_as_ragged(
    aggregates: int, columns: list[list[int]], value_of: list[int]
) -> None:
    with pytest.raises(MalformedEvent) as info:
        events.decode(_shared_event(aggregates, columns, value_of))
    assert info.value.reason == "ragged"


def _join_rows_event(
    left: list[int], right: list[int], aggregates: int = 1, **derived: list[int]
) -> bytes:
    """A member block whose members are a join's rows (MemberBlock.join_rows), seed 42."""
    event = lineage_pb2.LineageEvent(schema_version=6, run_id="r")
    block = event.batch.members.add()
    block.groups.extend([7] * len(left))
    block.group_key = "g#1"
    block.delta = True
    block.split.append("main")
    block.aggregates = aggregates
    for _ in range(aggregates):
        block.values.add().values.extend(str(i) for i in range(len(left)))
    block.derived_members.CopyFrom(
        lineage_pb2.DerivedIds(seed=42, left=left, right=right, **derived)
    )
    block.join_rows = True
    return event.SerializeToString()


def test_join_rows_travel_as_their_members_left_and_right_parents() -> None:
    """A member block with its join's rows: the members are the TIMES ids of the pairs, and the
    stored form names each member's parents (folded into the member edges by the writer)."""
    batch = events.decode(_join_rows_event([1, 0], [2, 0]))
    assert isinstance(batch, events.Batch)
    assert not batch.blocks and not batch.edges["src"]  # nothing but the members
    (m,) = batch.members
    times = [_SPARK_PAIRS[(1, 2)], xxhash64_longs(42, np.array([0]), np.array([0])).tolist()[0]]
    assert m.members.tolist() == times
    stored = events.member_block("r", m)
    assert (stored["lefts"], stored["partners"], stored["split"]) == ([1, 0], [2, 0], ["main"])
    # The logical records it stands for: 2 TIMES nodes, 3 join edges (the self pair has one),
    # 2 member edges, a TENSOR and a VALUE per member and their 3 edges.
    assert (m.node_count, m.edge_count) == (2 + 4, 3 + 2 + 6)


def test_join_rows_of_members_stored_as_edges_come_as_times_nodes_and_edges() -> None:
    """Members with no aggregated column are stored expanded: the join's TIMES block and its
    edges come with them, as the join's own capture point would have sent them."""
    batch = events.decode(_join_rows_event([1], [2], aggregates=0))
    assert isinstance(batch, events.Batch)
    assert not batch.members
    (times,) = batch.blocks
    t = _SPARK_PAIRS[(1, 2)]
    assert (times["op"], times["ids"], times["label"], times["split"]) == (
        "TIMES",
        [t],
        "·",
        ["main"],
    )
    assert sorted(zip(batch.edges["src"], batch.edges["dst"], strict=True)) == sorted(
        [(1, t), (2, t), (t, 7)]
    )


@pytest.mark.parametrize(
    "derived",
    [{"left_null_rows": [0]}, {"right_null_rows": [0]}],
)
def test_join_rows_with_a_missing_side_are_refused(derived: dict[str, list[int]]) -> None:
    with pytest.raises(events.MalformedEvent) as error:
        events.decode(_join_rows_event([1], [2], **derived))
    assert error.value.reason == "bad_derived"


def test_join_rows_without_pairs_are_refused() -> None:
    event = lineage_pb2.LineageEvent(schema_version=6, run_id="r")
    block = event.batch.members.add()
    block.members.append(5)
    block.groups.append(7)
    block.group_key = "g#1"
    block.delta = True
    block.join_rows = True
    with pytest.raises(events.MalformedEvent) as error:
        events.decode(event.SerializeToString())
    assert error.value.reason == "bad_derived"


def test_parents_decode_to_sparks_ids_and_their_edges() -> None:
    m = 987654321
    batch = events.decode(_derived_event(parent_mask=m, parent_deltas=[1, 1]))  # parents 1, 2
    assert isinstance(batch, events.Batch)
    parents = [1 ^ m, 2 ^ m]
    ids = xxhash64_longs(42, np.array(parents, dtype=np.int64)).tolist()
    assert batch.blocks[0]["ids"] == ids
    assert (batch.edges["src"], batch.edges["dst"]) == (parents, ids)
    plain = events.decode(_derived_event(parents=[1, 0]))
    assert isinstance(plain, events.Batch)
    assert plain.blocks[0]["ids"] == [_spark_one(1), _spark_one(0)]


def _matched_event(op: int, **derived: Any) -> bytes:
    """A version-8 batch of one block of ``op`` whose rows are a semi or an anti join's left
    rows with their matches (DerivedIds "With matches"), split ["main"]."""
    event = lineage_pb2.LineageEvent(schema_version=8, run_id="r")
    block = event.batch.nodes.add()
    block.op = op
    block.label = "·" if op == lineage_pb2.OP_TIMES else "▷"
    block.split.append("main")
    block.derived.CopyFrom(lineage_pb2.DerivedIds(seed=42, **derived))
    return event.SerializeToString()


def test_a_semi_joins_matches_decode_to_its_times_and_plus_nodes_and_edges() -> None:
    """Rows 0 and 1 (left rows 1 and 0): row 0 matches 5 alone, row 1 matches 1, 5 and 0 (a
    PLUS of them, itself among them), and a third row (left 2) matches only itself."""
    m = 1000
    batch = events.decode(
        _matched_event(
            lineage_pb2.OP_TIMES,
            parents=[1, 0, 2],
            match_counts=[1, 3, 1],
            match_mask=m,
            match_deltas=[
                5 ^ m,
                (1 ^ m) - (5 ^ m),
                (5 ^ m) - (1 ^ m),
                (0 ^ m) - (5 ^ m),
                (2 ^ m) - (0 ^ m),
            ],
            plus_salt=-7,
        )
    )
    assert isinstance(batch, events.Batch)
    times, plus = batch.blocks
    t = [_spark_one(1), _spark_one(0), xxhash64_longs(42, np.array([2])).tolist()[0]]
    p = derive(np.array([t[1]], dtype=np.int64), np.uint64(2**64 - 7)).tolist()[0]
    assert (times["op"], times["ids"], times["label"]) == ("TIMES", t, "·")
    assert (plus["op"], plus["ids"], plus["label"], plus["split"]) == ("PLUS", [p], "+", ["main"])
    expected = [(1, t[0]), (0, t[1]), (2, t[2]), (5, t[0]), (p, t[1]), (1, p), (5, p), (0, p)]
    assert list(zip(batch.edges["src"], batch.edges["dst"], strict=True)) == expected


def test_an_anti_joins_matches_decode_to_excluded_nodes_named_by_their_match() -> None:
    batch = events.decode(_matched_event(lineage_pb2.OP_EXCLUDED, parents=[1, 0], matches=[-5, 0]))
    assert isinstance(batch, events.Batch)
    (excluded,) = batch.blocks
    e = [_spark_one(1), _spark_one(0)]
    assert (excluded["op"], excluded["ids"], excluded["values"]) == ("EXCLUDED", e, ["-5", "0"])
    # the second row is excluded by itself: one edge from it
    assert list(zip(batch.edges["src"], batch.edges["dst"], strict=True)) == [
        (1, e[0]),
        (0, e[1]),
        (-5, e[0]),
    ]


@pytest.mark.parametrize(
    ("op", "derived", "reason"),
    [
        (lineage_pb2.OP_TIMES, {"parents": [1], "match_counts": [0]}, "bad_derived"),
        (lineage_pb2.OP_TIMES, {"parents": [1], "match_counts": [2], "matches": [3]}, "ragged"),
        (lineage_pb2.OP_TIMES, {"parents": [1, 2], "match_counts": [1], "matches": [3]}, "ragged"),
        (
            lineage_pb2.OP_EXCLUDED,
            {"parents": [1], "match_counts": [2], "matches": [3, 4]},
            "bad_derived",
        ),
        (lineage_pb2.OP_PLUS, {"parents": [1], "matches": [3]}, "bad_derived"),
        (
            lineage_pb2.OP_TIMES,
            {"parents": [1], "matches": [3], "match_deltas": [3]},
            "bad_derived",
        ),
    ],
)
def test_malformed_matches_name_their_reason(op: int, derived: dict[str, Any], reason: str) -> None:
    with pytest.raises(MalformedEvent) as info:
        events.decode(_matched_event(op, **derived))
    assert info.value.reason == reason


def _spark_one(value: int) -> int:
    """Spark's SELECT xxhash64(value) (seed 42) for the values 0 and 1."""
    return {0: -5252525462095825812, 1: -7001672635703045582}[value]


@pytest.mark.parametrize(
    ("derived", "reason"),
    [
        ({}, "bad_derived"),
        ({"position_deltas": [1], "left": [1], "right": [2]}, "bad_derived"),
        ({"position_deltas": [1, -2]}, "bad_derived"),
        ({"position_deltas": [1], "left_null_rows": [0]}, "bad_derived"),
        ({"left": [1, 2], "right": [3]}, "ragged"),
        ({"left": [1], "right": [3], "right_null_rows": [1]}, "ragged"),
        ({"left": [1], "right": [3], "left_null_rows": [0], "right_null_rows": [0]}, "bad_derived"),
        ({"position_deltas": [1], "ids": [7]}, "ragged"),
        ({"left": [1], "left_deltas": [1], "right": [2]}, "bad_derived"),
        ({"left_deltas": [1, 2], "right": [2]}, "ragged"),
        ({"parents": [1], "position_deltas": [1]}, "bad_derived"),
        ({"parents": [1], "parent_deltas": [1]}, "bad_derived"),
        ({"parents": [1], "left_null_rows": [0]}, "bad_derived"),
        ({"position_deltas": [1] * 100_001}, "limit:ids_per_block"),
    ],
)
def test_malformed_derived_ids_name_their_reason(derived: dict[str, Any], reason: str) -> None:
    with pytest.raises(MalformedEvent) as info:
        events.decode(_derived_event(**derived))
    assert info.value.reason == reason


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (None, "empty"),
        (b"\xff\xff\xff", "undecodable"),
        (_event(schema_version=10, run_id="r"), "schema_version"),
        (_event(schema_version=0, run_id="r"), "schema_version"),
        (_event(schema_version=1), "no_run_id"),
        (_event(schema_version=1, run_id="r"), "no_body"),
        (_ragged(), "ragged"),
        (_deep_split(), "bad_split"),
        (b"\x00" * (events.MAX_EVENT_BYTES + 1), "oversized"),
    ],
)
def test_malformed_events_name_their_reason(data: bytes | None, reason: str) -> None:
    with pytest.raises(MalformedEvent) as info:
        events.decode(data)
    assert info.value.reason == reason


def test_version_1_events_from_older_capture_agents_are_still_read() -> None:
    """Version 2 added member blocks; a version-1 event (an agent not yet upgraded) decodes."""
    event = lineage_pb2.LineageEvent(schema_version=1, run_id="r", workflow="wf")
    block = event.batch.nodes.add()
    block.op = lineage_pb2.OP_TOKEN
    block.ids.extend([5, 6])
    block.label = "T"
    batch = events.decode(event.SerializeToString())
    assert isinstance(batch, events.Batch) and list(batch.blocks[0]["ids"]) == [5, 6]
    assert events.SCHEMA_VERSION == 2
    assert sorted(events.READABLE_SCHEMA_VERSIONS) == [1, 2, 3, 4, 5, 6, 7, 8, 9]


_TEXT = st.text(alphabet=st.sampled_from(["a", "Z", "é", "北", "🙂", " ", "0", "\x00"]), max_size=6)
_ID = st.integers(min_value=-(2**63), max_value=2**63 - 1)


@st.composite
def _node_columns(draw: st.DrawFn) -> NodeColumns:
    n = draw(st.integers(0, 4))
    names = draw(st.lists(st.sampled_from(["a", "b", "c"]), unique=True, max_size=3))
    return NodeColumns(
        draw(st.sampled_from(sorted(events.OP_NAMES.values()))),
        draw(st.lists(_ID, min_size=n, max_size=n)),
        label=draw(_TEXT),
        labels=draw(st.one_of(st.just([]), st.lists(_TEXT, min_size=n, max_size=n))),
        relation=draw(_TEXT),
        attributes={
            name: draw(st.lists(st.one_of(st.none(), _TEXT), min_size=n, max_size=n))
            for name in names
        },
        values=draw(st.one_of(st.just([]), st.lists(_TEXT, min_size=n, max_size=n))),
        shared=draw(st.booleans()),
        split=draw(st.lists(_TEXT, max_size=3)),
    )


def _generated_node_block(cols: NodeColumns) -> lineage_pb2.NodeBlock:
    return lineage_pb2.NodeBlock(
        op=lineage_pb2.Op.Value(f"OP_{cols.op}"),
        ids=list(cols.ids),
        label=cols.label,
        labels=list(cols.labels),
        relation=cols.relation,
        attribute_names=list(cols.attributes),
        attribute_values=[
            lineage_pb2.StringColumn(
                values=["" if v is None else v for v in column],
                null_rows=[i for i, v in enumerate(column) if v is None],
            )
            for column in cols.attributes.values()
        ],
        values=list(cols.values),
        shared=cols.shared,
        split=list(cols.split),
    )


@settings(max_examples=300, deadline=None)
@given(
    nodes=st.lists(_node_columns(), max_size=3),
    edges=st.one_of(
        st.none(),
        st.integers(0, 4).flatmap(
            lambda n: st.tuples(
                st.lists(_ID, min_size=n, max_size=n), st.lists(_ID, min_size=n, max_size=n)
            )
        ),
    ),
    partition=st.integers(0, 2**31 - 1),
    sequence=st.integers(0, 2**31 - 1),
    workflow=_TEXT,
)
def test_the_hand_encoder_writes_the_generated_modules_bytes(  # type: ignore[no-untyped-def]
    nodes, edges, partition, sequence, workflow
) -> None:
    """What travels is defined once (lineage.proto): encode_batch writes its id columns by hand,
    and its bytes must be exactly those of the generated module for the same message (the JVM's
    Wire.java is held to the same, by capture_jar's WireContractTest)."""
    columns = None if edges is None else EdgeColumns(*edges)
    expected = lineage_pb2.LineageEvent(
        schema_version=events.SCHEMA_VERSION,
        run_id="run",
        workflow=workflow,
        batch=lineage_pb2.LineageBatch(
            tap="tap#1",
            partition=partition,
            sequence=sequence,
            nodes=[_generated_node_block(cols) for cols in nodes],
            edges=None if edges is None else lineage_pb2.EdgeBlock(src=edges[0], dst=edges[1]),
        ),
    ).SerializeToString()
    data = events.encode_batch("run", workflow, "tap#1", partition, sequence, nodes, columns)
    assert data == expected


def _typed_event(**column: Any) -> bytes:
    """A version-4 batch: one TOKEN block of 3 rows with one attribute column, and one member
    block of 3 members with that column as its aggregated values."""
    event = lineage_pb2.LineageEvent(schema_version=4, run_id="r")
    block = event.batch.nodes.add()
    block.op = lineage_pb2.OP_TOKEN
    block.relation = "R"
    block.ids.extend([1, 2, 3])
    block.attribute_names.append("x")
    block.attribute_values.add().CopyFrom(lineage_pb2.StringColumn(**column))
    members = event.batch.members.add()
    members.members.extend([1, 2, 3])
    members.groups.extend([9, 9, 9])
    members.group_key = "g#1"
    members.delta = True
    members.aggregates = 1
    members.values.add().CopyFrom(lineage_pb2.StringColumn(**column))
    return event.SerializeToString()


@pytest.mark.parametrize(
    ("column", "texts"),
    [
        ({"longs": [-(2**63), 0, 7], "null_rows": [1]}, [str(-(2**63)), None, "7"]),
        ({"doubles": [1e7, float("nan"), -0.0]}, ["1.0E7", "NaN", "-0.0"]),
        ({"doubles": [0.001, 1e-5, 0.0], "null_rows": [2]}, ["0.001", "1.0E-5", None]),
        ({"decimals": [523, -1, 0], "decimal_scale": 1, "null_rows": [2]}, ["52.3", "-0.1", None]),
        ({"decimals": [3, 10**7, 0]}, ["3.0", "1.0E7", "0.0"]),
        ({"values": ["a", "", "c"], "null_rows": [1]}, ["a", None, "c"]),
        ({"dates": [0, -719_529, 2_932_897]}, ["1970-01-01", "-0001-12-31", "+10000-01-01"]),
        (
            {"unscaled": [-150, 0, 7], "unscaled_scale": 4, "null_rows": [1]},
            ["-0.0150", None, "0.0007"],
        ),
        ({"unscaled": [10**18 - 1, -5, 0]}, [str(10**18 - 1), "-5", "0"]),
    ],
)
def test_numbers_are_read_as_the_texts_spark_writes(
    column: dict[str, Any], texts: list[Any]
) -> None:
    """Schema versions 4 and 5: a value column of numbers, dates or decimals is stored as Spark's
    text of each value."""
    batch = events.decode(_typed_event(**column))
    (row_block,) = batch.blocks
    nulls = set(row_block["null_rows"][0])
    attribute = [None if r in nulls else v for r, v in enumerate(row_block["attribute_values"][0])]
    assert attribute == texts
    (members,) = batch.members
    assert members.values == [texts]


@pytest.mark.parametrize(
    "column",
    [
        {"longs": [1, 2], "doubles": [1.0, 2.0, 3.0]},
        {"values": ["a", "b", "c"], "longs": [1, 2, 3]},
        {"longs": [1, 2]},
        {"doubles": [1.0, 2.0, 3.0, 4.0]},
        {"decimals": [1, 2, 3], "doubles": [1.0, 2.0, 3.0]},
        {"values": ["a", "b", "c"], "decimal_scale": 2},
        {"decimals": [1, 2, 3], "decimal_scale": 23},
        {"decimals": [1, 2**53 + 1, 3]},
        {"dates": [1, 2, 3], "longs": [1, 2, 3]},
        {"dates": [1, 2]},
        {"unscaled": [1, 2, 3], "dates": [1, 2, 3]},
        {"values": ["a", "b", "c"], "unscaled_scale": 2},
        {"unscaled": [1, 2, 3], "unscaled_scale": 19},
        {"unscaled": [1, 10**18, 3]},
    ],
)
def test_ragged_number_columns_are_dead_lettered(column: dict[str, Any]) -> None:
    with pytest.raises(MalformedEvent) as info:
        events.decode(_typed_event(**column))
    assert info.value.reason == "ragged"
