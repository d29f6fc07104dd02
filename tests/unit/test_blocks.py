"""The block contract of sparkprov.write (sparkprov.blocks) against the example payload that the
procedure's Java tests read too (BlockContractTest), and against what ingest really sends."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from ingest_service.store import Flush
from sparkprov import events
from sparkprov.blocks import (
    EdgeBlock,
    MalformedBlock,
    MemberBlock,
    NodeBlock,
    check_edge_block,
    check_member_block,
    check_node_block,
)
from sparkprov.derived import MemberColumns
from sparkprov.events import EdgeColumns, NodeColumns

PAYLOAD = Path(__file__).resolve().parents[2] / "neo4j_plugin/src/test/resources/write-payload.json"


def _payload() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(PAYLOAD.read_text())
    return data


def _shape(value: object) -> object:
    """A value's kind, as the contract sees it: lists by their elements' kinds."""
    if isinstance(value, list):
        return ("list", sorted({repr(_shape(v)) for v in value}))
    return type(value).__name__


def test_the_example_payload_follows_the_contract() -> None:
    payload = _payload()
    blocks = [check_node_block(b, i) for i, b in enumerate(payload["blocks"])]
    edges = [check_edge_block(e, i) for i, e in enumerate(payload["edges"])]
    assert [b["op"] for b in blocks] == ["TOKEN", "AGGREGATE"]
    assert blocks[0]["null_rows"] == [[], [1]]
    assert blocks[1]["relation"] is None
    assert edges[0]["src"][1] == -(2**62)


def _flush() -> Flush:
    """What ingest sends for a captured batch: encoded as the capture agent does, decoded as
    ingest does, gathered into a flush (cut in parts, as large flushes are)."""
    data = events.encode_batch(
        "run-contract",
        "people",
        "tap",
        0,
        0,
        [
            NodeColumns(
                "TOKEN",
                [101, -(2**62)],
                label="Person1",
                labels=["Person1#0.0", "Person1#0.1"],
                relation="Person1",
                attributes={"Name": ["Steve", "Mark"], "Age": ["30", None]},
                split=["people"],
            ),
            NodeColumns("AGGREGATE", [103], label="AVG", values=["35.0"], split=["people", "avg"]),
        ],
        EdgeColumns([101, -(2**62)], [103, 103]),
    )
    batch = events.decode(data)
    assert isinstance(batch, events.Batch)
    return Flush.of([batch])


def test_what_ingest_sends_follows_the_contract_and_matches_the_example() -> None:
    flush = _flush()
    payload = _payload()
    for position, (sent, example) in enumerate(zip(flush.blocks, payload["blocks"], strict=True)):
        check_node_block(sent, position)
        assert set(sent) == set(example) == set(NodeBlock.__annotations__)
        assert {k: _shape(v) for k, v in sent.items()} == {k: _shape(v) for k, v in example.items()}
    # The example is what this batch decodes to, field for field.
    assert flush.blocks == payload["blocks"]
    assert flush.edges == payload["edges"]
    for position, edges in enumerate(flush.edges):
        check_edge_block(edges, position)
        assert set(edges) == set(EdgeBlock.__annotations__)
    # The edge blocks split() cuts are blocks of the contract too.
    for part in flush.split(1):
        for position, edges in enumerate(part.edges):
            check_edge_block(edges, position)


def _block(**changes: object) -> dict[str, Any]:
    block: dict[str, Any] = dict(_payload()["blocks"][0])
    block.update(changes)
    return block


# The same malformations and messages as the procedure's BlockContractTest.
@pytest.mark.parametrize(
    ("block", "message"),
    [
        (
            {k: v for k, v in _block().items() if k != "split"},
            "node block 1: field 'split' is missing",
        ),
        (_block(shared="false"), "node block 1: field 'shared' must be a boolean, got str"),
        (_block(ids=[1, "2"]), "node block 1: field 'ids[1]' must be an integer, got str"),
        (_block(ids=[1, True]), "node block 1: field 'ids[1]' must be an integer, got bool"),
        (
            _block(attribute_values=[["a", "b"], ["c", 3]]),
            "node block 1: field 'attribute_values[1][1]' must be a string, got int",
        ),
        (_block(relation=7), "node block 1: field 'relation' must be a string, got int"),
        (
            _block(labels=["only one"]),
            "node block 1: field 'labels' has 1 entries for 2 ids",
        ),
        (
            _block(attribute_values=[["Steve", "Mark"], ["30"]]),
            "node block 1: field 'attribute_values[1]' has 1 values for 2 ids",
        ),
        (_block(ids=[2**63]), "node block 1: field 'ids[0]' is out of the signed 64-bit range"),
        (_block(extra=1), "node block 1: unknown fields ['extra']"),
    ],
)
def test_a_malformed_node_block_is_refused_naming_the_field(
    block: dict[str, Any], message: str
) -> None:
    with pytest.raises(MalformedBlock) as error:
        check_node_block(block, 1)
    assert str(error.value).startswith(message)


def test_a_ragged_edge_block_is_refused() -> None:
    edges = dict(_payload()["edges"][0], dst=[103])
    with pytest.raises(MalformedBlock, match=r"edge block 0: field 'dst' has 1 ids for 2 in src"):
        check_edge_block(edges, 0)


def test_a_null_relation_is_allowed() -> None:
    assert check_node_block(_block(relation=None))["relation"] is None


def test_what_ingest_sends_for_members_follows_the_contract_and_matches_the_example() -> None:
    (example,) = _payload()["members"]
    check_member_block(example, 0)
    values: list[list[str | None]] = [list(column) for column in example["values"]]
    for column, rows in zip(values, example["null_rows"], strict=True):
        for row in rows:
            column[row] = None
    compact = MemberColumns(
        group_key=example["group_key"],
        members=np.array(example["members"], dtype=np.int64),
        groups=np.array(example["groups"], dtype=np.int64),
        values=values,
        split=example["split"],
    )
    data = events.encode_batch(example["run"], "people", "tap", 0, 0, [], None, members=[compact])
    batch = events.decode(data)
    assert isinstance(batch, events.Batch)
    flush = Flush.of([batch])
    assert flush.members == [example]  # pairs included: the example's are the real ones
    assert set(example) == set(MemberBlock.__annotations__)
    for part in flush.split(1):
        for position, block in enumerate(part.members):
            check_member_block(block, position)


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"pairs": [1]}, "member block 0: field 'pairs' has 1 ids for"),
        ({"group_key": ""}, "member block 0: field 'group_key' is empty"),
        ({"aggregates": 1}, "member block 0: field 'values' has"),
        ({"null_rows": [[99], []]}, "member block 0: field 'null_rows[0]' has a row out of range"),
        ({"members": [1, "2"]}, "member block 0: field 'members[1]' must be an integer, got str"),
    ],
)
def test_a_malformed_member_block_is_refused_naming_the_field(
    changes: dict[str, Any], message: str
) -> None:
    block = dict(_payload()["members"][0], **changes)
    with pytest.raises(MalformedBlock) as error:
        check_member_block(block, 0)
    assert str(error.value).startswith(message)
