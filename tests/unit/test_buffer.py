"""When a flush is due, alone: by rows, or by the wait of the first record (a record
dead-lettered on arrival counts: the flush's commit passes it)."""

from __future__ import annotations

from ingest_service.buffer import Buffer, Taken
from sparkprov.events import EdgeColumns, NodeColumns, decode, encode_batch
from tests.unit.fakes import Rec


def entry(offset: int, nodes: int, edges: int = 0) -> Taken:
    ids = list(range(offset * 1000, offset * 1000 + nodes))
    cut = EdgeColumns([ids[0]] * edges, ids[:1] * edges) if edges else None
    value = encode_batch("run", "wf", "tap", 0, offset, [NodeColumns("TOKEN", ids)], cut)
    return Taken("p", Rec("t", 0, offset, None, value), decode(value))


def test_an_empty_buffer_is_never_due() -> None:
    buffer = Buffer(batch_rows=100, batch_ms=250)
    assert not buffer and len(buffer) == 0
    assert not buffer.due(10**9)
    assert not buffer.full


def test_due_once_the_first_record_waited_batch_ms() -> None:
    buffer = Buffer(batch_rows=100, batch_ms=250)
    buffer.add(entry(0, 10), now=5.0)
    buffer.add(entry(1, 10), now=5.2)  # a later record does not restart the wait
    assert not buffer.due(5.249)
    assert buffer.due(5.25)
    assert [e.record.offset for e in buffer.entries] == [0, 1]
    assert buffer.flush.events == 2 and buffer.flush.rows == 20


def test_full_and_due_at_batch_rows_nodes_and_edges() -> None:
    buffer = Buffer(batch_rows=100, batch_ms=250)
    buffer.add(entry(0, 60), now=0.0)
    assert not buffer.full and not buffer.due(0.0)
    buffer.add(entry(1, 20, edges=20), now=0.0)
    assert buffer.full and buffer.due(0.0)


def test_a_record_dead_lettered_on_arrival_starts_the_wait_and_is_covered() -> None:
    buffer = Buffer(batch_rows=100, batch_ms=250)
    buffer.skip(now=1.0)
    assert len(buffer) == 1 and buffer.flush.events == 0 and buffer.entries == []
    buffer.add(entry(1, 10), now=1.2)
    assert len(buffer) == 2
    assert buffer.due(1.25)
