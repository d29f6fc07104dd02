"""The procedures' rows as the services read them, against the example rows the plugin's
ProcedureRowsContractTest checks its output classes with (procedure-rows.json): the TypedDicts of
sparkprov.procedures have exactly the examples' keys, and the decoders read the examples."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, cast, get_type_hints

import pytest

from ingest_service.store import IndexResult
from query_service.model import Strategy
from query_service.store import node_view, propagated, trace_result
from sparkprov import procedures

FIXTURE = (
    Path(__file__).resolve().parents[2] / "neo4j_plugin/src/test/resources/procedure-rows.json"
)
EXAMPLES = json.loads(FIXTURE.read_text(encoding="utf-8"))


def _row(name: str) -> dict[str, Any]:
    """The example row with its nested maps filled in (the file names them by their key)."""
    maps = EXAMPLES["maps"]
    row = dict(EXAMPLES["procedures"][name])
    for key in ("nodes", "aggregates"):
        if key in row:
            row[key] = [maps[v] for v in row[key]]
    return row


@pytest.mark.parametrize("name", sorted(procedures.ROWS))
def test_each_row_type_has_the_examples_keys(name: str) -> None:
    assert set(get_type_hints(procedures.ROWS[name])) == set(EXAMPLES["procedures"][name])


def test_every_procedure_has_a_row_type() -> None:
    assert set(procedures.ROWS) == set(EXAMPLES["procedures"])


def test_nested_maps_have_the_examples_keys() -> None:
    assert set(get_type_hints(procedures.NodeMap)) == set(EXAMPLES["maps"]["node"])
    assert set(get_type_hints(procedures.AggregateMap)) == set(EXAMPLES["maps"]["aggregate"])


def test_the_decoders_read_the_examples() -> None:
    trace = trace_result(cast(procedures.TraceRow, _row("sparkprov.trace")))
    assert trace.ids == [11, 12] and trace.strategy is Strategy.RECURSIVE and trace.ids_pending
    assert [(e.src, e.dst) for e in trace.edges] == [(11, 12)]
    assert trace.edges_fetched == 1 and trace.extra == {"nodes_reached": 2}
    node = trace.nodes[0]
    assert node == node_view(cast(procedures.NodeMap, EXAMPLES["maps"]["node"]))
    assert (node.id, node.op, node.relation, node.attributes) == (
        12,
        "TIMES",
        "Orders",
        {"city": "Oslo"},
    )
    assert (node.component_id, node.set_id) == (7, None)

    sub = trace_result(cast(procedures.SubgraphRow, _row("sparkprov.subgraph")))
    assert sub.strategy is Strategy.COMPONENT and sub.sets_visited == 1 and not sub.ids_pending

    done = propagated(cast(procedures.DeletionRow, _row("sparkprov.propagateDeletion")))
    assert done.removed == [11, 12] and not done.truncated
    assert [(t.node_id, t.label, t.value, t.values) for t in done.touched] == [
        (9, "SUM", "10", ["4", "6"])
    ]

    indexed = IndexResult.of(cast(procedures.IndexedRow, _row("sparkprov.index")))
    assert (indexed.items, indexed.remaining, indexed.indexed_runs) == (2, 0, ["run-1"])


def test_the_index_calls_refusal_is_the_one_the_plugin_says() -> None:
    assert EXAMPLES["errors"]["index_call_too_large"] == procedures.INDEX_CALL_TOO_LARGE
