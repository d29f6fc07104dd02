"""docs/graph-schema.md's Cypher examples, run against the people demo's stored run and checked
against what the gRPC service answers for the same question: the documented schema cannot drift
from what ingest stores. Every example in the page must have a check here, and every check an
example."""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import neo4j
import networkx as nx
import pytest

from sparkprov.query_model import Op, Strategy

from .graph import run_graph, stored_part

DOC = Path(__file__).resolve().parents[2] / "docs" / "graph-schema.md"
_EXAMPLE = re.compile(r"<!-- example: ([a-z-]+) -->\s*```cypher\n(.*?)```", re.S)


@functools.cache
def examples() -> dict[str, str]:
    found = _EXAMPLE.findall(DOC.read_text())
    names = [name for name, _ in found]
    assert len(names) == len(set(names)), f"duplicate example names in {DOC}: {names}"
    return dict(found)


@pytest.fixture(scope="module")
def people(people_run, client):  # type: ignore[no-untyped-def]
    run_id, _, _ = people_run
    ny = client.find_nodes(run_id, "AvgAge", {"City": "NY"})
    assert len(ny) == 1
    return run_id, ny[0]


def _run(driver: neo4j.Driver, name: str, **params: Any) -> list[dict[str, Any]]:
    with driver.session() as session:
        return [r.data() for r in session.run(examples()[name], **params)]


def check_find_rows(driver, client, run_id, ny) -> None:  # type: ignore[no-untyped-def]
    (row,) = _run(driver, "find-rows", run=run_id)
    assert str(row["id"]) == ny.id and row["op"] == "DELTA" and row["age"] == ny.attributes["Age"]


def check_source_rows(driver, client, run_id, ny) -> None:  # type: ignore[no-untyped-def]
    rows = _run(driver, "source-rows", run=run_id)
    trace = client.backward_trace([ny.id])
    tokens = sorted((n.relation, n.attributes.get("Name")) for n in trace.nodes if n.op == Op.TOKEN)
    assert (
        [(r["relation"], r["name"]) for r in rows]
        == tokens
        == [
            ("Person1", "Mark"),
            ("Person1", "Steve"),
        ]
    )


def check_reached_outputs(driver, client, run_id, ny) -> None:  # type: ignore[no-untyped-def]
    rows = _run(driver, "reached-outputs", run=run_id)
    (steve,) = client.find_nodes(run_id, "Person1", {"Name": "Steve"})
    forward = client.forward_trace([steve.id])
    cities = {n.attributes["City"] for n in forward.nodes if n.relation == "AvgAge"}
    assert {r["city"] for r in rows} == cities == {"NY"}


def check_aggregate_inputs(driver, client, run_id, ny) -> None:  # type: ignore[no-untyped-def]
    rows = _run(driver, "aggregate-inputs", run=run_id)
    trace = client.backward_trace([ny.id])
    (aggregate,) = [n for n in trace.nodes if n.op == Op.AGGREGATE]
    values = sorted(n.value for n in trace.nodes if n.op == Op.VALUE)
    assert [r["value"] for r in rows] == values == ["30", "40"]
    assert {(r["function"], r["result"]) for r in rows} == {(aggregate.label, aggregate.value)}
    # each tensor pairs a value with the Person2 row it came from
    assert sorted(r["member"] for r in rows) == ["Mark", "Steve"]


def check_aggregates_fed(driver, client, run_id, ny) -> None:  # type: ignore[no-untyped-def]
    rows = _run(driver, "aggregates-fed", run=run_id)
    (steve,) = client.find_nodes(run_id, "Person1", {"Name": "Steve"})
    forward = client.forward_trace([steve.id])
    fed = {(n.label, n.value) for n in forward.nodes if n.op == Op.AGGREGATE}
    assert {(r["function"], r["result"]) for r in rows} == fed == {("AVG", "35.0")}
    assert {(r["relation"], r["city"]) for r in rows} == {("AvgAge", "NY")}


def check_components_by_size(driver, client, run_id, ny) -> None:  # type: ignore[no-untyped-def]
    rows = _run(driver, "components-by-size", run=run_id)
    graph = stored_part(run_graph(driver, run_id))  # Cypher sees the stored graph
    own = graph.subgraph(n for n, d in graph.nodes(data=True) if d.get("run_id") == run_id)
    sizes = sorted((len(c) for c in nx.weakly_connected_components(own)), reverse=True)
    assert [r["nodes"] for r in rows] == sizes
    # NY's row, its 2 people, their tokens and aggregate (members are edges); LA's; Mary's token
    assert sizes[-1] == 1 and len(sizes) == 3


def check_sets_of_relation(driver, client, run_id, ny) -> None:  # type: ignore[no-untyped-def]
    rows = _run(driver, "sets-of-relation", run=run_id)
    person2 = client.find_nodes(run_id, "Person2", {})
    assert sum(r["rows"] for r in rows) == len(person2) == 3
    assert {str(r["set"]) for r in rows} == {p.set_id for p in person2}
    assert all(r["size"] >= r["rows"] for r in rows)
    with driver.session() as session:
        stored = {
            r["set"]: r["n"]
            for r in session.run(
                "UNWIND $sets AS s CALL sparkprov.setNodes(s) YIELD node "
                "RETURN s AS set, count(node) AS n",
                sets=[r["set"] for r in rows],
            )
        }
    # a ConnectedSet's size is the number of nodes in it (theta is far away: no set is refined,
    # so a set is its whole level set); a lone node's set is 1
    assert {r["set"]: r["size"] for r in rows} == stored


def check_runs_by_workflow(driver, client, run_id, ny) -> None:  # type: ignore[no-untyped-def]
    rows = _run(driver, "runs-by-workflow")
    listed = {r.run_id: (r.complete, r.node_count) for r in client.runs("people")}
    assert {r["run"]: (r["complete"], r["nodes"]) for r in rows} == listed
    assert run_id in listed


# Ops of the nodes the query service derives from member edges (not stored, so not in Cypher).
_DERIVED = (Op.TENSOR, Op.VALUE)


def check_component(driver, client, run_id, ny) -> None:  # type: ignore[no-untyped-def]
    (row,) = _run(driver, "component", id=int(ny.id))
    assert str(row["component"]) == ny.component_id
    whole = client.backward_trace([ny.id], strategy=Strategy.COMPONENT)
    graph = stored_part(run_graph(driver, run_id))  # Cypher sees the stored graph
    (part,) = [c for c in nx.weakly_connected_components(graph) if int(ny.id) in c]
    traced = [n for n in whole.nodes if n.op not in _DERIVED]
    assert row["size"] == row["nodes"] == len(part) >= len(traced) > 1


def _sets_of(driver: neo4j.Driver, ids: list[int]) -> dict[int, int]:
    with driver.session() as session:
        return {
            r["id"]: r["set"]
            for r in session.run(
                "UNWIND $ids AS i MATCH (n:Node {id: i}) "
                "RETURN n.id AS id, sparkprov.set(n) AS set",
                ids=ids,
            )
        }


def check_set_lineage(driver, client, run_id, ny) -> None:  # type: ignore[no-untyped-def]
    (row,) = _run(driver, "set-lineage", id=int(ny.id))
    sets = set(row["sets"])
    assert str(row["sets"][0]) == ny.set_id
    trace = client.backward_trace([ny.id])
    held = _sets_of(driver, [int(n.id) for n in trace.nodes])
    # MODEL.md section 5: every ancestor lies in the set-lineage
    assert held and set(held.values()) <= sets


def check_set_lineage_edges(driver, client, run_id, ny) -> None:  # type: ignore[no-untyped-def]
    rows = _run(driver, "set-lineage-edges", id=int(ny.id))
    edges = {(r["src"], r["dst"]) for r in rows}
    (lineage,) = _run(driver, "set-lineage", id=int(ny.id))
    # only edges into the set-lineage, and among them every edge of the backward trace
    assert set(_sets_of(driver, [d for _, d in edges]).values()) <= set(lineage["sets"])
    trace = client.backward_trace([ny.id])
    derived = {int(n.id) for n in trace.nodes if n.op in _DERIVED}
    traced = {(int(e.src), int(e.dst)) for e in trace.edges}
    assert {(s, d) for s, d in traced if s not in derived and d not in derived} <= edges


def check_run_status(driver, client, run_id, ny) -> None:  # type: ignore[no-untyped-def]
    (row,) = _run(driver, "run-status", run=run_id)
    (run,) = [r for r in client.runs("people") if r.run_id == run_id]
    assert row["complete"] is True and run.complete
    assert row["nodes"] == row["expected"] == run.node_count
    assert row["dangling"] == run.dangling_node_count == 0


CHECKS: dict[str, Callable[..., None]] = {
    "find-rows": check_find_rows,
    "source-rows": check_source_rows,
    "reached-outputs": check_reached_outputs,
    "aggregate-inputs": check_aggregate_inputs,
    "aggregates-fed": check_aggregates_fed,
    "components-by-size": check_components_by_size,
    "sets-of-relation": check_sets_of_relation,
    "runs-by-workflow": check_runs_by_workflow,
    "component": check_component,
    "set-lineage": check_set_lineage,
    "set-lineage-edges": check_set_lineage_edges,
    "run-status": check_run_status,
}


def test_every_example_is_checked() -> None:
    assert set(examples()) == set(CHECKS)


@pytest.mark.parametrize("name", sorted(CHECKS))
def test_example(name, people, neo4j_driver, client) -> None:  # type: ignore[no-untyped-def]
    run_id, ny = people
    CHECKS[name](neo4j_driver, client, run_id, ny)
