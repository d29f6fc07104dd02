"""The rows the Neo4j plugin's procedures yield, as the services read them: one TypedDict per
procedure (its Java output class in neo4j_plugin has the same public fields) and the maps nested in
rows. ``neo4j_plugin/src/test/resources/procedure-rows.json`` holds an example of each, which
both suites check: ProcedureRowsContractTest the Java fields, tests/unit/test_procedure_rows.py
these types and the decoders of query_service.store and ingest_service.store.
"""

from __future__ import annotations

from typing import TypedDict

__all__ = [
    "INDEX_CALL_TOO_LARGE",
    "ROWS",
    "AggregateMap",
    "DeletionRow",
    "IndexedRow",
    "NodeMap",
    "SubgraphRow",
    "TraceRow",
    "WrittenRow",
]


# What ``sparkprov.index`` says when the sets its writes grow past theta would have it re-read
# more edges than its bound allows: the call rolled back, and one with fewer edges will pass
# (RefinementTooLarge.MARK in the plugin; procedure-rows.json "errors").
INDEX_CALL_TOO_LARGE = "call again with fewer edges"


class WrittenRow(TypedDict):
    """``sparkprov.write``: per run of a flush, what it created."""

    run: str
    nodes: int
    edges: int
    merges: int
    conflict_blocks: list[int]  # per id conflict: the block it was in, and the id
    conflict_ids: list[int]


class IndexedRow(TypedDict):
    """``sparkprov.index``: one call of the id indexer."""

    items: int
    edges: int
    merges: int
    remaining: int
    indexed_runs: list[str]


class NodeMap(TypedDict):
    """A node view in a trace's or subgraph's ``nodes`` (its ids current; null: none)."""

    id: int
    op: str
    label: str
    relation: str
    value: str
    attributes: dict[str, str]
    run_id: str
    component: int | None
    set: int | None


class _WalkRow(TypedDict):
    """What a trace's and a subgraph's rows share: the nodes reached, the edges among them, and
    how the walk went."""

    missing: list[int]
    ids: list[int]
    nodes: list[NodeMap]
    sources: list[int]
    targets: list[int]
    truncated: bool
    strategy: str
    levels: int
    reached: int
    fetched: int
    sets: int


class TraceRow(_WalkRow):
    """``sparkprov.trace``: the whole trace in one row (``response``: the encoded form's bytes)."""

    ids_pending: bool
    response: bytes | None


class SubgraphRow(_WalkRow):
    """``sparkprov.subgraph``: ``tooLarge`` names the part over the limit ("" when none)."""

    tooLarge: str  # noqa: N815 - the procedure's column name


class AggregateMap(TypedDict):
    """An aggregate a deletion touched: its surviving TENSOR inputs' values, in TENSOR id order."""

    id: int
    label: str
    value: str
    values: list[str]


class DeletionRow(TypedDict):
    """``sparkprov.propagateDeletion``."""

    missing: list[int]
    truncated: bool
    removed: list[int]
    aggregates: list[AggregateMap]


# Procedure name -> its row type (the example file's keys).
ROWS: dict[str, type] = {
    "sparkprov.write": WrittenRow,
    "sparkprov.index": IndexedRow,
    "sparkprov.trace": TraceRow,
    "sparkprov.subgraph": SubgraphRow,
    "sparkprov.propagateDeletion": DeletionRow,
}
