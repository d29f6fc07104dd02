"""query_service.source_rows (LocateSourceRows) over a fake reader: a row by file where its run
lists the relation's files, by partition and offset where it does not, and each refusal."""

from __future__ import annotations

from typing import Any

import pytest

from query_service.model import FailedPrecondition, InvalidArgument, NotFound
from query_service.source_rows import SourceRowView, locate

FILES = ["file:/lake/o/part-0.parquet", "file:/lake/o/part-1.parquet"]


def _row(i: int, label: str, *, op: str = "TOKEN", files: Any = None, marked: bool = True) -> Any:
    relation = label.rsplit("#", 1)[0] if "#" in label else None
    return {"id": i, "op": op, "run": "r1", "relation": relation, "label": label,
            "marked": marked, "files": files}  # fmt: skip


class Reader:
    def __init__(self, *rows: Any) -> None:
        self.rows = rows
        self.asked: list[int] = []

    def read(self, query: str, **params: Any) -> list[Any]:
        assert params["prefix"] == "files_" and "$prefix + n.relation" in query
        self.asked = params["ids"]
        return [r for r in self.rows if r["id"] in params["ids"]]


def test_rows_by_file_and_by_partition_in_the_order_asked() -> None:
    reader = Reader(_row(7, "Orders#1.42", files=FILES), _row(9, "a#b#3.5"))
    assert locate(reader, [9, 7]) == [
        SourceRowView(9, "r1", "a#b", by_file=False, partition=3, offset=5),
        SourceRowView(7, "r1", "Orders", by_file=True, file=FILES[1], file_index=1, row=42),
    ]


def test_refusals_name_the_ids() -> None:
    with pytest.raises(NotFound, match="unknown node ids: 8"):
        locate(Reader(_row(7, "Orders#0.1", files=FILES)), [7, 8])
    with pytest.raises(InvalidArgument, match="not source rows .*: 5"):
        locate(Reader(_row(5, "Out#0.0", op="DELTA")), [5])
    with pytest.raises(FailedPrecondition, match="run r1 has no run marker"):
        locate(Reader(_row(7, "Orders#0.1", marked=False)), [7])
    with pytest.raises(FailedPrecondition, match="file 2 of a source of 2 files"):
        locate(Reader(_row(7, "Orders#2.1", files=FILES)), [7])
    with pytest.raises(FailedPrecondition, match="not <relation>#<n>.<n>"):
        locate(Reader(_row(7, "Orders#x", files=FILES)), [7])
    many = Reader()
    with pytest.raises(NotFound, match="1, 2, 3, 4, 5 and 2 more"):
        locate(many, list(range(1, 8)))


def _signed(x: int) -> int:
    x &= (1 << 64) - 1
    return x - (1 << 64) if x >= 1 << 63 else x


def test_unstored_rows_are_told_by_their_runs_masks_and_files() -> None:
    from query_service.source_rows import unstored

    mask, other = _signed(0x9E37_79B9_7F4A_7C15), _signed(0x1234_5678_9ABC_DEF1)
    runs = [
        {"run": "r1", "props": {"run_id": "r1", "files_Orders": FILES, "masks_Orders": [mask]}},
        {"run": "r2", "props": {"run_id": "r2", "files_Parts": FILES[:1], "masks_Parts": [other]}},
    ]
    in_file_1 = _signed((1 << 33 | 42) ^ mask)
    in_parts = _signed(7 ^ other)
    past_files = _signed((2 << 33 | 1) ^ mask)  # Orders has 2 files; Parts 1
    found = unstored(runs, [in_file_1, in_parts, past_files, 12345])
    assert sorted(found) == sorted([in_file_1, in_parts])
    row = found[in_file_1]
    assert (row.op, row.run_id, row.relation, row.label) == ("TOKEN", "r1", "Orders", "Orders#1.42")
    assert (row.attributes, row.component_id) == ({}, None)
    assert found[in_parts].label == "Parts#0.7" and found[in_parts].run_id == "r2"
    # A run without masks (the Python taps, an older writer) tells nothing apart.
    assert unstored([{"run": "r3", "props": {"files_Orders": FILES}}], [in_file_1]) == {}
