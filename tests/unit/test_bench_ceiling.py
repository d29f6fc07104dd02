"""bench.neo4j_ceiling builds what it measures honestly: every edge it sends can be created (its
ends are nodes of the graph, some arriving after the edge), and the bare writers give nodes the
real store's properties (FlushWriter.fill)."""

from __future__ import annotations

import io
import struct

from bench.neo4j_ceiling import (
    GROUPS,
    FlushFile,
    Shape,
    bare_flush,
    flushes,
    node_properties,
)
from sparkprov.blocks import NodeBlock

SHAPE = Shape(rows=5000, dim=500)


def _graph(full: bool = False) -> tuple[list[int], list[tuple[int, int]], int]:
    nodes: list[int] = []
    edges: list[tuple[int, int]] = []
    rows = 0
    for flush in flushes(SHAPE, full, 4000):
        rows += flush.rows
        for b in flush.blocks:
            nodes.extend(b["ids"])
        for e in flush.edges:
            edges.extend(zip(e["src"], e["dst"], strict=True))
        for m in flush.members:
            edges.extend(zip(m["members"], m["groups"], strict=True))
    return nodes, edges, rows


def test_every_edge_end_is_a_node_and_the_rows_sent_are_the_records_to_create() -> None:
    nodes, edges, rows = _graph()
    assert len(set(nodes)) == len(nodes)
    assert len(set(edges)) == len(edges)
    assert {end for edge in edges for end in edge} <= set(nodes)
    kept = SHAPE.rows * 4 // 5  # status 0, one order in five, is filtered out
    assert len(nodes) == SHAPE.rows + SHAPE.dim + kept + GROUPS * 4
    assert len(edges) == 3 * kept + 3 * GROUPS
    assert rows == len(nodes) + len(edges)


def test_group_nodes_arrive_after_their_member_edges() -> None:
    """The case a writer that only MATCHes edge ends gets wrong (issue 27)."""
    first_member = first_delta = None
    for position, flush in enumerate(flushes(SHAPE, False, 4000)):
        if flush.members and first_member is None:
            first_member = position
        if any(b["op"] == "DELTA" for b in flush.blocks):
            first_delta = position
    assert first_member is not None and first_delta is not None
    assert first_member < first_delta


def _block(**fields: object) -> NodeBlock:
    block: NodeBlock = {
        "run": "r",
        "op": "TOKEN",
        "ids": [11, 12],
        "label": "",
        "labels": ["Orders#0.0", "Orders#0.1"],
        "relation": "Orders",
        "values": [],
        "shared": False,
        "split": ["main", "Orders"],
        "attribute_names": ["order_id", "amount"],
        "attribute_values": [["0", "1"], ["", "2.5"]],
        "null_rows": [[], [0]],
    }
    block.update(fields)  # type: ignore[typeddict-item]
    return block


def test_node_properties_are_the_real_stores() -> None:
    assert node_properties(_block(), 0) == {
        "run_id": "r",
        "op": "TOKEN",
        "label": "Orders#0.0",
        "relation": "Orders",
        "split": ["main", "Orders"],
        "a_order_id": "0",
    }
    assert node_properties(_block(), 1)["a_amount"] == "2.5"
    aggregate = _block(
        op="AGGREGATE",
        label="SUM",
        labels=[],
        relation=None,
        values=["7", "8"],
        split=["main"],
        attribute_names=[],
        attribute_values=[],
        null_rows=[],
    )
    assert node_properties(aggregate, 1) == {
        "run_id": "r",
        "op": "AGGREGATE",
        "label": "SUM",
        "value": "8",
        "split": ["main"],
    }


def test_the_pipelines_nodes_carry_6_to_10_properties_as_stored() -> None:
    # A node born alone stores no birth ids (component_id, s0..s2): merges write them.
    counts: dict[str, set[int]] = {}
    for flush in flushes(SHAPE, False, 20_000):
        for row in bare_flush(flush).nodes:
            counts.setdefault(row["p"]["op"], set()).add(len(row["p"]) + 1)  # + id
    assert counts == {"TOKEN": {8, 10}, "TIMES": {10}, "DELTA": {10}, "AGGREGATE": {6}}


def test_bare_member_rows_carry_the_member_edge_properties() -> None:
    members = [m for flush in flushes(SHAPE, False, 20_000) for m in bare_flush(flush).members]
    _, key, rows = members[0]
    assert key == "bench-group"
    member, group, pair, values, nulls = rows[0]
    assert isinstance(pair, int) and len(values) == 3 and nulls == []


def test_flush_file_frames_what_the_java_reader_reads() -> None:
    out = io.BytesIO()
    writer = FlushFile(out)
    writer.schema(["CREATE INDEX x"])
    writer.end()
    data = out.getvalue()
    # texts: count, then writeUTF (2-byte length + bytes); the end marker 0
    assert data == struct.pack(">iH", 1, 14) + b"CREATE INDEX x" + struct.pack(">i", 0)
