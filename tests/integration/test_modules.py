"""Lipstick's module model on the real stack: Example 2.3 of the car dealership (dealer1's
NumCarsByModel Civic = 2 derives from C2, C3 and the request, not from C1), module nodes, state
tokens shared across invocations and runs, and the whole dealership workflow."""

from __future__ import annotations

import networkx as nx
from pyspark.sql import functions as F

from capture_agent import ProvenanceSession
from examples.cars import DealerState, dealer, run
from sparkprov.query_model import Op

from .graph import own_nodes, run_graph


def _example_2_3(spark, workflow):  # type: ignore[no-untyped-def]
    state = DealerState(cars=[("C1", "Accord"), ("C2", "Civic"), ("C3", "Civic")])
    with ProvenanceSession(spark, workflow=workflow) as prov:
        request = prov.source(
            spark.createDataFrame(
                [("P1", "B1", "Civic")], "UserId string, BidId string, Model string"
            ),
            "BidRequest",
        )
        bids, num_cars = dealer(prov, "dealer1", request, state)
        counts = num_cars.collect()
        amounts = bids.collect()
    return prov, counts, amounts


def test_example_2_3_num_cars_by_model(spark, client, neo4j_driver) -> None:  # type: ignore[no-untyped-def]
    prov, counts, amounts = _example_2_3(spark, "cars-example-2.3")
    assert [(r["Model"], r["NumAvail"]) for r in counts] == [("Civic", 2)]
    assert len(amounts) == 1 and amounts[0]["Dealer"] == "dealer1"
    client.wait_for_run(prov.run_id)

    (civic,) = client.find_nodes(prov.run_id, "NumCarsByModel", {"Model": "Civic"})
    assert civic.op == Op.DELTA and civic.attributes["NumAvail"] == "2"
    trace = client.backward_trace([civic.id])
    tokens = {
        (n.relation, n.attributes.get("CarId") or n.attributes.get("BidId"))
        for n in trace.nodes
        if n.op == Op.TOKEN
    }
    assert tokens == {("Cars", "C2"), ("Cars", "C3"), ("BidRequest", "B1")}
    assert ("Cars", "C1") not in tokens
    count = [n for n in trace.nodes if n.op == Op.AGGREGATE]
    assert [(a.label, a.value) for a in count] == [("COUNT", "2")]
    modules = [n for n in trace.nodes if n.op == Op.MODULE]
    assert [m.label for m in modules] == ["dealer1"]

    graph = run_graph(neo4j_driver, prov.run_id)
    module = int(modules[0].id)
    civic_id = int(civic.id)
    # state nodes: TIMES of a Cars token and the invocation; one per car, C1 included
    state_nodes = [
        n
        for n in graph.successors(module)
        if any(graph.nodes.get(p, {}).get("relation") == "Cars" for p in graph.predecessors(n))
    ]
    assert len(state_nodes) == 3
    # the module-input node: TIMES of the request row and the invocation, named Requests
    (request_in,) = [n for n, d in graph.nodes(data=True) if d.get("relation") == "Requests"]
    assert set(graph.predecessors(request_in)) >= {module}
    assert graph.nodes[request_in]["op"] == "TIMES"
    # the module-output node, named Bids, depends on the black box calc_bid
    (bid_out,) = [n for n, d in graph.nodes(data=True) if d.get("relation") == "Bids"]
    assert any(graph.nodes[a].get("label") == "calc_bid" for a in nx.ancestors(graph, bid_out))

    # Split paths (CSProv's default: one split per module, relations as sub-splits); the
    # request, tracked outside any module, is in the workflow's own split "main".
    assert list(graph.nodes[module]["split"]) == ["dealer1"]
    assert list(graph.nodes[request_in]["split"]) == ["dealer1", "Requests"]
    assert list(graph.nodes[civic_id]["split"]) == ["dealer1", "NumCarsByModel"]
    (request,) = [n for n, d in graph.nodes(data=True) if d.get("relation") == "BidRequest"]
    assert list(graph.nodes[request]["split"]) == ["main", "BidRequest"]
    for n in state_nodes:
        assert list(graph.nodes[n]["split"]) == ["dealer1", "Cars"]
    # so the request's token and the module's nodes are in different connected sets, while
    # the dealer's nodes derived from one another share theirs (theta is far away)
    assert graph.nodes[request]["set"] != graph.nodes[request_in]["set"]
    assert graph.nodes[request]["component"] == graph.nodes[request_in]["component"]
    inside = {
        graph.nodes[n]["set"]
        for n in nx.ancestors(graph, civic_id) | {civic_id}
        if (graph.nodes[n].get("split") or [None])[0] == "dealer1"
    }
    assert len(inside) == 1


def test_state_tokens_are_shared_across_runs(spark, client, neo4j_driver) -> None:  # type: ignore[no-untyped-def]
    first, _, _ = _example_2_3(spark, "cars-shared-state")
    second, _, _ = _example_2_3(spark, "cars-shared-state")
    for prov in (first, second):
        run = client.wait_for_run(prov.run_id)
        assert run.node_count == run.expected_node_count == prov.counts()[0]
    tokens = []
    for prov in (first, second):
        (civic,) = client.find_nodes(prov.run_id, "NumCarsByModel", {"Model": "Civic"})
        trace = client.backward_trace([civic.id])
        tokens.append({n.id for n in trace.nodes if n.relation == "Cars"})
    assert len(tokens[0]) == 2 and tokens[0] == tokens[1]


def test_the_car_dealership_workflow_runs_end_to_end(spark, client, neo4j_driver) -> None:  # type: ignore[no-untyped-def]
    with ProvenanceSession(spark, workflow="car-dealerships-test") as prov:
        executions, _ = run(prov, num_cars=24, num_exec=2, seed=3)
    run_info = client.wait_for_run(prov.run_id, timeout_s=300)
    graph = run_graph(neo4j_driver, prov.run_id)
    assert run_info.node_count == own_nodes(graph) == prov.counts()[0]
    modules = [d["label"] for _, d in graph.nodes(data=True) if d["op"] == "MODULE"]
    per_execution = {"request", "dealer1", "dealer2", "dealer3", "dealer4", "agg", "choice"}
    assert per_execution <= set(modules)
    assert sum(1 for m in modules if m == "dealer1") == executions
    # every best bid derives from the MIN aggregate over all dealers' bids
    best = [n for n, d in graph.nodes(data=True) if d.get("relation") == "BestBid"]
    assert best
    for node in best:
        labels = {graph.nodes[a].get("label") for a in nx.ancestors(graph, node)}
        assert {"MIN", "calc_bid", "agg"} <= labels
    assert F  # the workflow uses pyspark functions; keep import for readers
