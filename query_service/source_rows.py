"""LocateSourceRows: where each source row (TOKEN node) lives.

A source row's label is ``<relation>#<high>.<low>``. When its run lists the relation's files
(``(:Run).files_<relation>``, from the run marker: capture_agent.sources), ``high`` is the file's
index in that sorted list and ``low`` the row's index in the file; otherwise they are Spark's
partition and offset (``monotonically_increasing_id``). The list arrives with the run marker,
so before it a row's kind is not known: FAILED_PRECONDITION, ask again.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from query_service.model import FailedPrecondition, InvalidArgument, NodeView, NotFound
from sparkprov.events import SOURCE_ROW_BITS, source_files_key, source_masks_key

__all__ = ["SourceRowView", "locate", "unstored", "unstored_rows"]

_LOCATE = """
UNWIND $ids AS id
MATCH (n:Node {id: id})
OPTIONAL MATCH (r:Run {run_id: n.run_id})
RETURN n.id AS id, n.op AS op, n.run_id AS run, n.relation AS relation, n.label AS label,
       r IS NOT NULL AND r.expected_nodes IS NOT NULL AS marked, r[$prefix + n.relation] AS files
"""

_SHOWN = 5  # ids named in an error

# The runs whose marker lists TOKEN id masks of file sources.
_MASKED_RUNS = """
MATCH (r:Run) WHERE any(k IN keys(r) WHERE k STARTS WITH $prefix)
RETURN r.run_id AS run, properties(r) AS props
"""


class Reader(Protocol):
    def read(self, query: str, **params: Any) -> Sequence[Any]: ...


@dataclass(frozen=True)
class SourceRowView:
    node_id: int
    run_id: str
    relation: str
    by_file: bool
    file: str = ""
    file_index: int = 0
    row: int = 0
    partition: int = 0
    offset: int = 0


def locate(store: Reader, ids: list[int]) -> list[SourceRowView]:
    """The source rows ``ids`` (distinct), in order."""
    prefix = source_files_key("")
    found = {r["id"]: r for r in store.read(_LOCATE, ids=ids, prefix=prefix)}
    missing = [i for i in ids if i not in found]
    if missing:
        raise NotFound(f"unknown node ids: {_listed(missing)}")
    others = [i for i in ids if found[i]["op"] != "TOKEN" or not found[i]["relation"]]
    if others:
        raise InvalidArgument(f"not source rows (TOKEN nodes of a relation): {_listed(others)}")
    unmarked = sorted({found[i]["run"] for i in ids if not found[i]["marked"]})
    if unmarked:
        raise FailedPrecondition(
            f"run {unmarked[0]} has no run marker stored yet, which lists its sources' files: "
            "ask again once it is complete"
        )
    return [_view(found[i]) for i in ids]


def _view(record: Any) -> SourceRowView:
    high, low = _numbers(record["label"])
    files = record["files"]
    common = {"node_id": record["id"], "run_id": record["run"], "relation": record["relation"]}
    if files:
        if high >= len(files):
            raise FailedPrecondition(
                f"node {record['id']}: file {high} of a source of {len(files)} files"
            )
        return SourceRowView(**common, by_file=True, file=files[high], file_index=high, row=low)
    return SourceRowView(**common, by_file=False, partition=high, offset=low)


def _numbers(label: str) -> tuple[int, int]:
    """``<relation>#<high>.<low>``'s two numbers."""
    try:
        high, low = label.rsplit("#", 1)[1].split(".")
        return int(high), int(low)
    except (IndexError, ValueError) as e:
        raise FailedPrecondition(f"a source row's label {label!r} is not <relation>#<n>.<n>") from e


def _listed(ids: list[int]) -> str:
    shown = ", ".join(str(i) for i in ids[:_SHOWN])
    return shown + (f" and {len(ids) - _SHOWN} more" if len(ids) > _SHOWN else "")


def unstored(runs: Sequence[Any], ids: Sequence[int]) -> dict[int, NodeView]:
    """Of ``ids`` (none of them stored), the rows of file sources that a filter over the source
    dropped before its capture point (io.sparkprov.capture.SourceFiltersFirst): such a row's id
    is its position XOR one of its run's ``masks_<relation>``, the position naming a file of the
    run's ``files_<relation>``. Each is the TOKEN node it would have been, with no edges: it
    reaches nothing. ``runs``: the rows of ``_MASKED_RUNS``. An id that is no such row is left
    out (an unknown id: NOT_FOUND). The row index is not checked against the file's length
    (the capture agent does not read it); a random 64-bit id passes as a row of one of a run's
    n files with odds n / 2^31 per mask."""
    found: dict[int, NodeView] = {}
    prefix = source_masks_key("")
    row_mask = (1 << SOURCE_ROW_BITS) - 1
    for record in runs:
        props = record["props"]
        for key, masks in props.items():
            if not key.startswith(prefix):
                continue
            relation = key[len(prefix) :]
            files = props.get(source_files_key(relation)) or []
            for node_id in ids:
                if node_id in found:
                    continue
                for mask in masks:
                    position = (node_id ^ mask) & 0xFFFF_FFFF_FFFF_FFFF
                    file_index, row = position >> SOURCE_ROW_BITS, position & row_mask
                    if file_index < len(files):
                        found[node_id] = NodeView(
                            id=node_id,
                            run_id=record["run"],
                            op="TOKEN",
                            label=f"{relation}#{file_index}.{row}",
                            relation=relation,
                            attributes={},
                            value="",
                            component_id=None,
                            set_id=None,
                        )
                        break
    return found


def unstored_rows(store: Reader, ids: Sequence[int]) -> dict[int, NodeView]:
    """:func:`unstored` over the store's runs."""
    return unstored(store.read(_MASKED_RUNS, prefix=source_masks_key("")), ids)
