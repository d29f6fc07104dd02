from __future__ import annotations

import pytest

from sparkprov import events
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


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (None, "empty"),
        (b"\xff\xff\xff", "undecodable"),
        (_event(schema_version=3, run_id="r"), "schema_version"),
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
    assert sorted(events.READABLE_SCHEMA_VERSIONS) == [1, 2]
