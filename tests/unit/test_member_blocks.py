"""Group members on the wire (sparkprov.derived, sparkprov.events): one compact MemberBlock per
chunk, which the decoder expands into exactly the node blocks and edges the capture agent sent
before, one TENSOR and VALUE per member, column and group."""

from __future__ import annotations

import random
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

from capture_agent.taps import GroupSpec, JoinSpec, MemberSpec, derive, salt_of
from sparkprov import events, limits
from sparkprov.blocks import check_edge_block, check_member_block, check_node_block
from sparkprov.derived import MemberColumns
from sparkprov.events import EdgeColumns, MalformedEvent, NodeColumns
from sparkprov.limits import LimitExceeded
from sparkprov.v1 import lineage_pb2

SPLIT = ("people", "avg")


def _old_emit(spec: MemberSpec, pdf: pd.DataFrame) -> tuple[list[NodeColumns], EdgeColumns | None]:
    """MemberSpec.emit as it was before member blocks (commit c69fcea), kept as the oracle."""
    members = pdf["id"].to_numpy(dtype=np.int64)
    groups = pdf["group"].to_numpy(dtype=np.int64)
    src = [members] if spec.delta else []
    dst = [groups] if spec.delta else []
    nodes: list[NodeColumns] = []
    pairs = members ^ derive(groups, salt_of(spec.group_key, "member"))
    for i in range(spec.aggregates):
        column = pdf[f"x{i}"]
        present = column.notna().to_numpy()
        if present.all():
            kept, pair, in_groups = members, pairs, groups
        else:
            kept, pair, in_groups = members[present], pairs[present], groups[present]
            column = column[present]
        tensors = derive(pair, salt_of(spec.group_key, i, "tensor"))
        values = derive(pair, salt_of(spec.group_key, i, "value"))
        aggregates = derive(in_groups, salt_of(spec.group_key, i, "aggregate"))
        texts = column.tolist() if column.dtype == object else column.astype(str).tolist()
        nodes.append(NodeColumns("TENSOR", tensors, label="⊗"))
        nodes.append(NodeColumns("VALUE", values, labels=texts, values=texts))
        src += [kept, values, tensors]
        dst += [tensors, tensors, aggregates]
    if not src:
        return nodes, None
    return nodes, EdgeColumns(np.concatenate(src), np.concatenate(dst))


def _members_frame(rng: random.Random, n: int, aggregates: int, *, rollup: bool) -> pd.DataFrame:
    """Random members (ids across the whole int64 range), groups and values with nulls; with
    ``rollup``, members that belong to several groups (grouping sets)."""
    ids = [rng.randrange(-(1 << 63), 1 << 63) for _ in range(n)]
    if rollup:  # every member again in a coarser group, and some a third time
        ids = ids + ids + ids[: n // 3]
    groups = [rng.randrange(-(1 << 63), 1 << 63) for _ in range(4)]
    frame: dict[str, object] = {
        "id": np.array(ids, dtype=np.int64),
        "group": np.array([rng.choice(groups) for _ in ids], dtype=np.int64),
    }
    for i in range(aggregates):
        nulls = rng.choice([0.0, 0.3, 1.0]) if i else 0.2
        frame[f"x{i}"] = [
            None if rng.random() < nulls else rng.choice(["123", "4.5", "", "é ⊗", "null"])
            for _ in ids
        ]
    return pd.DataFrame(frame)


def _compact(nodes: list[NodeColumns], edges: EdgeColumns | None, **kw: object) -> events.Batch:
    """The batch as ingest decodes it (delta members compact, as they are stored)."""
    data = events.encode_batch("run", "wf", "g:members", 2, 5, nodes, edges, **kw)  # type: ignore[arg-type]
    batch = events.decode(data)
    assert isinstance(batch, events.Batch)
    return batch


def _decoded(nodes: list[NodeColumns], edges: EdgeColumns | None, **kw: object) -> events.Batch:
    """The logical batch: members expanded, as readers see them."""
    return _compact(nodes, edges, **kw).expanded()


def _with_split(nodes: list[NodeColumns]) -> list[NodeColumns]:
    return [replace(b, split=SPLIT) for b in nodes]


CASES = [
    # (seed, members, aggregates, delta, rollup)
    (1, 2048, 3, True, False),
    (2, 500, 1, True, True),
    (3, 700, 3, False, False),  # a window partition's members
    (4, 300, 2, False, True),
    (5, 100, 0, True, False),  # distinct: member -> DELTA edges only
    (6, 100, 0, False, False),  # nothing at all
    (7, 0, 2, True, False),
]


@pytest.mark.parametrize(("seed", "n", "aggregates", "delta", "rollup"), CASES)
def test_the_member_block_decodes_to_what_the_expanded_form_did(
    seed: int, n: int, aggregates: int, delta: bool, rollup: bool
) -> None:
    pdf = _members_frame(random.Random(seed), n, aggregates, rollup=rollup)
    spec = MemberSpec(key="g:members", aggregates=aggregates, group_key="g", delta=delta)
    old_nodes, old_edges = _old_emit(spec, pdf)
    before = _decoded(_with_split(old_nodes), old_edges)

    (compact,) = spec.wire(pdf)[2]
    assert spec.wire(pdf)[:2] == ([], None)  # nothing else travels
    after = _decoded([], None, members=[replace(compact, split=SPLIT)])

    assert after.blocks == before.blocks  # ids, ops, labels, values, split, in order
    for position, block in enumerate(after.blocks):  # the procedure's contract holds
        assert check_node_block(block, position) is block
    check_edge_block(after.edges)
    assert after.edges == before.edges  # the same edges in the same order
    assert (compact.node_count, compact.edge_count) == (before.node_count, before.edge_count)


@pytest.mark.parametrize(("seed", "n", "aggregates", "delta", "rollup"), CASES)
def test_emit_is_the_expansion(
    seed: int, n: int, aggregates: int, delta: bool, rollup: bool
) -> None:
    pdf = _members_frame(random.Random(seed), n, aggregates, rollup=rollup)
    spec = MemberSpec(key="g:members", aggregates=aggregates, group_key="g", delta=delta)
    (old, old_edges), (new, new_edges) = _old_emit(spec, pdf), spec.emit(pdf)

    def fields(blocks: list[NodeColumns]) -> list[tuple[object, ...]]:
        return [(b.op, np.asarray(b.ids).tolist(), b.label, b.labels, b.values) for b in blocks]

    assert fields(new) == fields(old)
    if old_edges is None:
        assert new_edges is None
    else:
        assert new_edges is not None
        assert np.asarray(new_edges.src).tolist() == np.asarray(old_edges.src).tolist()
        assert np.asarray(new_edges.dst).tolist() == np.asarray(old_edges.dst).tolist()


def test_values_that_are_not_text_are_written_as_before() -> None:
    """Spark casts the values to string; a float or int column (as tests and pandas may hand
    over) is written as its str, NaN as null, exactly as the expanded form did."""
    pdf = pd.DataFrame(
        {"id": [1, 2, 3], "group": [9, 9, 8], "x0": [1.5, np.nan, 2.0], "x1": [123, 4, 5]}
    )
    spec = MemberSpec(key="g:members", aggregates=2, group_key="g")
    (compact,) = spec.wire(pdf)[2]
    assert compact.values == [["1.5", None, "2.0"], ["123", "4", "5"]]
    before = _decoded(*_old_emit(spec, pdf))
    assert _decoded([], None, members=[compact]).blocks == before.blocks


def test_members_and_nodes_in_one_batch_keep_their_order() -> None:
    """Expanded blocks and edges come after those sent expanded, as the proto says."""
    pdf = _members_frame(random.Random(9), 50, 2, rollup=False)
    spec = MemberSpec(key="g:members", aggregates=2, group_key="g")
    (compact,) = spec.wire(pdf)[2]
    token = NodeColumns("TOKEN", [77], label="t")
    batch = _decoded([token], EdgeColumns([77], [78]), members=[compact, compact])
    old_nodes, old_edges = _old_emit(spec, pdf)
    assert old_edges is not None
    expected = _decoded([token, *old_nodes, *old_nodes], None)
    assert batch.blocks == expected.blocks
    assert batch.edges["src"] == [77] + 2 * np.asarray(old_edges.src).tolist()
    assert batch.edges["dst"] == [78] + 2 * np.asarray(old_edges.dst).tolist()


def test_the_tensor_feeds_the_aggregate_the_group_side_derives() -> None:
    pdf = pd.DataFrame({"id": [1, 2], "group": [9, 9], "x0": ["5", None]})
    (compact,) = MemberSpec(key="g:members", aggregates=1, group_key="g").wire(pdf)[2]
    batch = _decoded([], None, members=[compact])
    tensor, value = batch.blocks
    (t,), (v,) = tensor["ids"], value["ids"]
    assert (tensor["op"], tensor["label"], value["op"], value["values"]) == (
        "TENSOR",
        "⊗",
        "VALUE",
        ["5"],
    )
    (_, aggregate), _ = GroupSpec(key="g", functions=("SUM",)).emit(
        pd.DataFrame({"id": [9], "x0": ["5"]})
    )
    (a,) = aggregate.ids
    pairs = set(zip(batch.edges["src"], batch.edges["dst"], strict=True))
    assert pairs == {(1, 9), (2, 9), (1, t), (v, t), (t, a)}


def test_other_specs_travel_as_before() -> None:
    pdf = pd.DataFrame({"id": [7], "left": [1], "right": [3]})
    nodes, edges, members = JoinSpec(key="j").wire(pdf)
    assert members == [] and nodes[0].op == "TIMES" and edges is not None


def _event_with(*blocks: lineage_pb2.MemberBlock, nodes: int = 0) -> lineage_pb2.LineageEvent:
    batch = lineage_pb2.LineageBatch(tap="g:members", partition=2, sequence=5)
    for i in range(nodes):
        batch.nodes.add(op=lineage_pb2.OP_TOKEN, ids=[i], label="t")
    batch.members.extend(blocks)
    return lineage_pb2.LineageEvent(
        schema_version=events.SCHEMA_VERSION, run_id="run", workflow="wf", batch=batch
    )


def test_the_fast_encoder_writes_what_protobuf_writes() -> None:
    pdf = _members_frame(random.Random(11), 300, 3, rollup=True)
    (compact,) = MemberSpec(key="g:members", aggregates=3, group_key="g").wire(pdf)[2]
    window = MemberColumns(
        "w", np.array([5, -6]), np.array([1, 1]), delta=False, values=[["1", None]]
    )
    empty = MemberColumns("d", np.array([], dtype=np.int64), np.array([], dtype=np.int64))
    blocks = [
        lineage_pb2.MemberBlock(
            members=m.members.tolist(),
            groups=m.groups.tolist(),
            group_key=m.group_key,
            delta=m.delta,
            aggregates=m.aggregates,
            values=[
                lineage_pb2.StringColumn(
                    values=["" if v is None else v for v in column],
                    null_rows=[i for i, v in enumerate(column) if v is None],
                )
                for column in m.values
            ],
            split=list(split),
        )
        for m, split in ((compact, SPLIT), (window, ()), (empty, ()))
    ]
    expected = _event_with(*blocks, nodes=1).SerializeToString()
    data = events.encode_batch(
        "run",
        "wf",
        "g:members",
        2,
        5,
        [NodeColumns("TOKEN", [0], label="t")],
        None,
        members=[replace(compact, split=SPLIT), window, empty],
    )
    assert data == expected


def test_a_member_takes_a_fraction_of_the_expanded_bytes() -> None:
    """2,048 members, 3 aggregates of values like "123": the encode-level wire size."""
    rng = np.random.default_rng(3)
    pdf = pd.DataFrame(
        {
            "id": rng.integers(-(1 << 63), (1 << 63) - 1, 2048, dtype=np.int64),
            "group": rng.integers(-(1 << 63), (1 << 63) - 1, 2048, dtype=np.int64) % 37,
            **{f"x{i}": [str(v) for v in rng.integers(100, 1000, 2048)] for i in range(3)},
        }
    )
    spec = MemberSpec(key="g:members", aggregates=3, group_key="g")
    before = len(events.encode_batch("run", "wf", "g:members", 0, 0, *_old_emit(spec, pdf)))
    nodes, edges, members = spec.wire(pdf)
    after = len(events.encode_batch("run", "wf", "g:members", 0, 0, nodes, edges, members=members))
    assert before / 2048 > 150  # 6 nodes and 10 edges a member
    # 2 ids (16 bytes) and 3 texts of 3 bytes, each with its key and length (15 bytes) a member
    assert after / 2048 < 32


def test_the_encoder_holds_member_blocks_to_the_limits() -> None:
    def encode(m: MemberColumns) -> bytes:
        return events.encode_batch("r", "wf", "t", 0, 0, [], None, members=[m])

    one = (np.array([1]), np.array([2]))
    cases = [
        (MemberColumns("k" * 2000, *one), "group_key"),
        (MemberColumns("g", *one, values=[["y" * 70_000]]), "values"),
        (MemberColumns("g", *one, split=["x" * 600]), "split"),
        (MemberColumns("g", *one, values=[["1"]] * 300), "aggregates_per_block"),
        (
            MemberColumns(
                "g",
                np.arange(limits.MAX_IDS_PER_BLOCK + 1),
                np.zeros(limits.MAX_IDS_PER_BLOCK + 1, dtype=np.int64),
            ),
            "ids_per_block",
        ),
        (  # 90k members, 4 columns: 90k + 12 x 90k expanded edges
            MemberColumns(
                "g",
                np.arange(90_000),
                np.zeros(90_000, dtype=np.int64),
                values=[["1"] * 90_000] * 4,
            ),
            "edges_per_batch",
        ),
    ]
    for block, field in cases:
        with pytest.raises(LimitExceeded) as caught:
            encode(block)
        assert caught.value.field == field
    with pytest.raises(ValueError, match="other lengths"):
        encode(MemberColumns("g", np.array([1, 2]), np.array([3]), values=[["1", "2"]]))


def _raw(**fields: object) -> bytes:
    base: dict[str, object] = {"members": [1, 2], "groups": [3, 3], "group_key": "g"}
    return _event_with(lineage_pb2.MemberBlock(**{**base, **fields})).SerializeToString()  # type: ignore[arg-type]


def _column(*values: str, null_rows: tuple[int, ...] = ()) -> lineage_pb2.StringColumn:
    return lineage_pb2.StringColumn(values=values, null_rows=null_rows)


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (_raw(group_key="k" * 2000), "limit:group_key"),
        (_raw(aggregates=1, values=[_column("1", "y" * 70_000)]), "limit:values"),
        (_raw(split=["main", "x" * 600]), "limit:split"),
        (_raw(aggregates=1 << 31), "limit:aggregates_per_block"),
        (_raw(groups=[3]), "ragged"),
        (_raw(aggregates=2, values=[_column("1", "2")]), "ragged"),
        (_raw(aggregates=1, values=[_column("1")]), "ragged"),
        (_raw(aggregates=1, values=[_column("1", "", null_rows=(2,))]), "ragged"),
        (_raw(split=["a", "b", "c", "d"]), "bad_split"),
        (_raw(split=["a", ""]), "bad_split"),
        (
            _event_with(
                lineage_pb2.MemberBlock(
                    members=range(90_000),
                    groups=[0] * 90_000,
                    group_key="g",
                    aggregates=4,
                    values=[_column(*["1"] * 90_000)] * 4,
                )
            ).SerializeToString(),
            "limit:edges_per_batch",
        ),
        (
            _event_with(
                *[lineage_pb2.MemberBlock(group_key="g", aggregates=200, values=[_column()] * 200)]
                * 3
            ).SerializeToString(),
            "limit:blocks_per_batch",
        ),
    ],
)
def test_the_decoder_refuses_malformed_member_blocks(data: bytes, reason: str) -> None:
    with pytest.raises(MalformedEvent) as caught:
        events.decode(data)
    assert caught.value.reason == reason


def test_null_rows_decode_as_absent_members_of_that_column() -> None:
    data = _raw(delta=True, aggregates=1, values=[_column("7", "", null_rows=(1,))])
    compact = events.decode(data)
    assert isinstance(compact, events.Batch)
    assert events.member_block("run", compact.members[0])["null_rows"] == [[1]]
    batch = compact.expanded()
    tensor, value = batch.blocks
    assert len(tensor["ids"]) == 1 and value["values"] == ["7"]
    assert (batch.node_count, batch.edge_count) == (2, 2 + 3)


def test_delta_members_stay_compact_and_are_stored_as_member_blocks() -> None:
    rng = random.Random(11)
    spec = MemberSpec(key="g:members", aggregates=2, group_key="g")
    pdf = _members_frame(rng, 50, 2, rollup=True)
    compact = spec.members(pdf)
    batch = _compact([], None, members=[compact])
    assert batch.blocks == [] and batch.edges["src"] == []  # nothing expanded on the way in
    (kept,) = batch.members
    block = check_member_block(events.member_block("run", kept))
    assert block["members"] == compact.members.tolist()
    assert block["groups"] == compact.groups.tolist()
    assert block["aggregates"] == 2
    # a member's pair is what its TENSOR and VALUE ids derive from
    pairs = np.asarray(block["pairs"], dtype=np.int64)
    tensors = set(derive(pairs, salt_of("g", 0, "tensor")).tolist())
    expanded = batch.expanded()
    assert {i for b in expanded.blocks if b["op"] == "TENSOR" for i in b["ids"]} >= tensors - {
        t
        for t, v in zip(
            derive(pairs, salt_of("g", 0, "tensor")).tolist(), compact.values[0], strict=True
        )
        if v is None
    }
    for column, nulls, texts in zip(
        block["values"], block["null_rows"], compact.values, strict=True
    ):
        assert nulls == [k for k, v in enumerate(texts) if v is None]
        assert column == ["" if v is None else v for v in texts]
    assert batch.node_count == len(compact.members)  # one stored record per member


def test_window_members_are_stored_expanded() -> None:
    rng = random.Random(12)
    spec = MemberSpec(key="w:members", aggregates=1, group_key="w", delta=False)
    compact = spec.members(_members_frame(rng, 20, 1, rollup=False))
    batch = _compact([], None, members=[compact])
    assert batch.members == []
    assert {b["op"] for b in batch.blocks} == {"TENSOR", "VALUE"}
