"""The CSProv paper's person example through the real pipeline: capture -> Kafka -> ingest ->
Neo4j -> gRPC, asserting the exact lineage and the component ids. The run is the session's
(tests/stack_fixtures.py ``people_run``), which the modules that query a people run share."""

from __future__ import annotations

import networkx as nx

from sparkprov.query_model import Op

from .graph import own_nodes, rows_of, run_graph


def test_workflow_result_is_untouched_by_capture(people_run) -> None:  # type: ignore[no-untyped-def]
    _, rows, _ = people_run
    assert sorted((r["City"], r["Age"]) for r in rows) == [("LA", 40.0), ("NY", 35.0)]
    assert all(set(r.asDict()) == {"City", "Age"} for r in rows)


def test_run_complete_with_exact_counts(people_run, neo4j_driver) -> None:  # type: ignore[no-untyped-def]
    run_id, _, run = people_run
    graph = run_graph(neo4j_driver, run_id)
    assert run.complete and not run.failed
    # 4 tokens, 3 Person2 rows, 2 AvgAge rows, 2 AVG aggregates, 3 tensors and 3 values.
    assert run.expected_node_count == run.node_count == own_nodes(graph) == 17
    assert run.expected_edge_count == run.edge_count == graph.number_of_edges() == 17
    assert all(m == 1 for _, _, m in graph.edges(data="multiplicity"))


def test_exact_lineage_of_avgage_ny(people_run, client, neo4j_driver) -> None:  # type: ignore[no-untyped-def]
    run_id, _, _ = people_run
    graph = run_graph(neo4j_driver, run_id)
    person1, person2 = rows_of(graph, "Person1"), rows_of(graph, "Person2")
    avg = rows_of(graph, "AvgAge")
    assert set(person1) == {"Steve", "Mark", "Shane", "Mary"}
    assert set(person2) == {"Steve", "Mark", "Shane"}
    assert set(avg) == {"NY", "LA"}

    ny = client.find_nodes(run_id, "AvgAge", {"City": "NY"})
    assert [n.id for n in ny] == [str(avg["NY"])]
    assert ny[0].op == Op.DELTA and ny[0].attributes == {"City": "NY", "Age": "35.0"}

    trace = client.backward_trace([ny[0].id])
    ids = {int(n.id) for n in trace.nodes}
    assert ids == nx.ancestors(graph, avg["NY"]) | {avg["NY"]}
    by_relation = {(n.relation, n.attributes.get("Name")) for n in trace.nodes if n.relation}
    assert by_relation == {
        ("AvgAge", None),
        ("Person2", "Steve"),
        ("Person2", "Mark"),
        ("Person1", "Steve"),
        ("Person1", "Mark"),
    }
    edges = {(int(e.src), int(e.dst)) for e in trace.edges}
    # Person2 Steve/Mark derive from Person1 Steve/Mark, and feed the NY group directly.
    for name in ("Steve", "Mark"):
        assert (person1[name], person2[name]) in edges
        assert (person2[name], avg["NY"]) in edges
    # The AVG aggregate over exactly two members, with the values 30 and 40.
    aggregates = [n for n in trace.nodes if n.op == Op.AGGREGATE]
    assert [(a.label, a.value) for a in aggregates] == [("AVG", "35.0")]
    values = sorted(n.value for n in trace.nodes if n.op == Op.VALUE)
    assert values == ["30", "40"]
    assert sum(1 for n in trace.nodes if n.op == Op.TENSOR) == 2


def test_mary_reaches_no_output(people_run, client, neo4j_driver) -> None:  # type: ignore[no-untyped-def]
    run_id, _, _ = people_run
    graph = run_graph(neo4j_driver, run_id)
    mary = rows_of(graph, "Person1")["Mary"]
    forward = client.forward_trace([str(mary)])
    assert [n.id for n in forward.nodes] == [str(mary)]
    assert list(forward.edges) == []
    shane = rows_of(graph, "Person1")["Shane"]
    reached = {n.relation for n in client.forward_trace([str(shane)]).nodes if n.relation}
    assert reached == {"Person1", "Person2", "AvgAge"}


def test_component_ids_group_exactly_the_weakly_connected_parts(people_run, neo4j_driver) -> None:  # type: ignore[no-untyped-def]
    run_id, _, _ = people_run
    graph = run_graph(neo4j_driver, run_id)
    expected = {frozenset(c) for c in nx.weakly_connected_components(graph)}
    by_id: dict[int, set[int]] = {}
    for node, component in graph.nodes(data="component"):
        by_id.setdefault(component, set()).add(node)
    assert {frozenset(c) for c in by_id.values()} == expected
    # Three parts: {Steve, Mark, NY}, {Shane, LA} and Mary alone.
    assert sorted(len(c) for c in expected) == [1, 6, 10]


def test_strategies_agree(people_run, client, neo4j_driver) -> None:  # type: ignore[no-untyped-def]
    run_id, _, _ = people_run
    graph = run_graph(neo4j_driver, run_id)
    for node in graph.nodes:
        for direction in (client.backward_trace, client.forward_trace):
            results = []
            for strategy in (0, 1, 2):
                reply = direction([str(node)], strategy=strategy)
                results.append(({n.id for n in reply.nodes}, {(e.src, e.dst) for e in reply.edges}))
            assert results[0] == results[1] == results[2]
