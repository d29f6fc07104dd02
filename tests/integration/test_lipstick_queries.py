"""Lipstick's queries (section 4) through gRPC on the real stack, on the car dealership's dealer1
invocation of Example 2.3 (Cars C1 Accord, C2 Civic, C3 Civic; request B1 for a Civic):
Example 4.3 (deleting C2 keeps the Civic count, now 1), Example 4.4 (deleting the request deletes
everything but state tuples and module invocations), Example 4.5 (the count depends on the
request, not on C2), ZoomOut of dealer1 hiding its intermediate computations and ZoomIn undoing
it, Subgraph, and provenance polynomials agreeing with deletion propagation."""

from __future__ import annotations

import uuid

import networkx as nx
import pytest

from capture_agent import ProvenanceSession
from examples.cars import DealerState, dealer
from sparkprov.query_model import Op, Semiring

from .graph import run_graph


@pytest.fixture(scope="module")
def example(spark, client, neo4j_driver):  # type: ignore[no-untyped-def]
    state = DealerState(cars=[("C1", "Accord"), ("C2", "Civic"), ("C3", "Civic")])
    with ProvenanceSession(spark, workflow=f"lipstick-4-{uuid.uuid4().hex[:6]}") as prov:
        request = prov.source(
            spark.createDataFrame(
                [("P1", "B1", "Civic")], "UserId string, BidId string, Model string"
            ),
            "BidRequest",
        )
        bids, num_cars = dealer(prov, "dealer1", request, state)
        num_cars.collect()
        bids.collect()
    client.wait_for_run(prov.run_id)
    graph = run_graph(neo4j_driver, prov.run_id)
    ids = {}
    for node, data in graph.nodes(data=True):
        key = data.get("a_CarId") or data.get("a_BidId")
        if data["op"] == "TOKEN" and key:
            ids[key] = str(node)
    (civic,) = client.find_nodes(prov.run_id, "NumCarsByModel", {"Model": "Civic"})
    (bid,) = client.find_nodes(prov.run_id, "Bids")
    count = [
        str(p) for p in graph.predecessors(int(civic.id)) if graph.nodes[p]["op"] == "AGGREGATE"
    ]
    return {
        "run": prov.run_id,
        "graph": graph,
        "C1": ids["C1"],
        "C2": ids["C2"],
        "C3": ids["C3"],
        "I1": ids["B1"],
        "civic": civic.id,
        "count": count[0],
        "bid": bid.id,
    }


def _delete(client, ids, **kw):  # type: ignore[no-untyped-def]
    return client.propagate_deletion(ids, **kw)


def _depends(client, node, on, **kw):  # type: ignore[no-untyped-def]
    return client.depends_on(node, on, **kw)


def test_example_4_3_deleting_c2_keeps_the_civic_count_now_1(client, example) -> None:  # type: ignore[no-untyped-def]
    reply = _delete(client, [example["C2"]])
    deleted = set(reply.deleted_node_ids)
    assert reply.deleted_node_ids[0] == example["C2"]
    assert example["civic"] not in deleted and example["count"] not in deleted
    assert example["bid"] not in deleted and example["C3"] not in deleted
    (count,) = [r for r in reply.recomputed if r.node_id == example["count"]]
    assert (count.function, count.old_value, count.new_value, count.inputs) == (
        "COUNT",
        "2",
        "1",
        1,
    )
    # exactly C2, its state node, its Inventory join row and that row's TENSOR go
    graph = example["graph"]
    ops = sorted(graph.nodes[int(i)]["op"] for i in deleted)
    assert ops == ["TENSOR", "TIMES", "TIMES", "TOKEN"]


def test_example_4_4_deleting_the_request_leaves_only_state_and_invocations(
    client, example
) -> None:  # type: ignore[no-untyped-def]
    graph = example["graph"]
    reply = _delete(client, [example["I1"]])
    deleted = {int(i) for i in reply.deleted_node_ids}
    assert reply.recomputed == ()

    def is_state_or_invocation(n: int) -> bool:
        data = graph.nodes[n]
        if data["op"] == "MODULE":
            return True
        if data["op"] == "TOKEN" and data.get("relation") == "Cars":
            return True  # a state tuple
        parents = [graph.nodes[p] for p in graph.predecessors(n)]
        return data["op"] == "TIMES" and any(p.get("relation") == "Cars" for p in parents)

    # VALUE nodes (values fed to the aggregate) have no incoming edges: Definition 4.2 keeps them.
    survivors = {
        n for n in graph.nodes if is_state_or_invocation(n) or graph.nodes[n]["op"] == "VALUE"
    }
    assert deleted == set(graph.nodes) - survivors
    assert int(example["bid"]) in deleted and int(example["civic"]) in deleted
    assert {graph.nodes[n]["op"] for n in survivors} == {"MODULE", "TOKEN", "TIMES", "VALUE"}


def test_example_4_5_the_count_depends_on_the_request_not_on_c2(client, example) -> None:  # type: ignore[no-untyped-def]
    for node in (example["count"], example["civic"], example["bid"]):
        assert _depends(client, node, [example["I1"]])
        assert not _depends(client, node, [example["C2"]])
    # jointly, C2 and C3 are every Civic: without them the count goes
    assert _depends(client, example["count"], [example["C2"], example["C3"]])
    assert not _depends(client, example["count"], [example["C1"]])


def test_zoom_out_of_dealer1_hides_its_intermediate_computations(client, example) -> None:  # type: ignore[no-untyped-def]
    view = client.zoom_out(example["run"], ["dealer1"])
    graph = example["graph"]
    (module,) = [n for n, d in graph.nodes(data=True) if d["op"] == "MODULE"]
    (inp,) = [n for n, d in graph.nodes(data=True) if d.get("relation") == "Requests"]
    assert {n.id for n in view.nodes} == {example["I1"], str(inp), str(module), example["bid"]}
    assert {(e.src, e.dst) for e in view.edges} == {
        (example["I1"], str(inp)),
        (str(inp), str(module)),
        (str(module), example["bid"]),
    }
    assert list(view.zoomed_node_ids) == [str(module)]
    assert list(view.zoomed_out_modules) == ["dealer1"]
    # traces and deletion can be asked on the view
    trace = client.backward_trace([example["bid"]], zoomed_out_modules=["dealer1"])  # type: ignore[arg-type]
    assert {n.id for n in trace.nodes} == {n.id for n in view.nodes}
    on_view = _delete(client, [example["I1"]], zoomed_out_modules=["dealer1"])
    # the zoomed node loses its only input, then the output its zoomed node: all four go
    assert set(on_view.deleted_node_ids) == {n.id for n in view.nodes}
    # the stored graph is unchanged
    assert run_graph_equal(client, example)


def run_graph_equal(client, example) -> bool:  # type: ignore[no-untyped-def]
    back = client.zoom_in(example["run"], ["dealer1"], zoomed_out_modules=["dealer1"])
    graph = example["graph"]
    return {int(n.id) for n in back.nodes} == set(graph.nodes) and {
        (int(e.src), int(e.dst)) for e in back.edges
    } == set(graph.edges)


def test_zoom_in_of_zoom_out_is_the_stored_graph(client, example) -> None:  # type: ignore[no-untyped-def]
    assert run_graph_equal(client, example)
    out = client.zoom_out(example["run"], ["dealer1"])
    assert len(out.nodes) < example["graph"].number_of_nodes()


def test_subgraph_of_c2(client, example) -> None:  # type: ignore[no-untyped-def]
    graph: nx.DiGraph = example["graph"]
    n = int(example["C2"])
    descendants = nx.descendants(graph, n)
    siblings = {s for d in descendants for p in graph.predecessors(d) for s in graph.successors(p)}
    expected = {n} | nx.ancestors(graph, n) | descendants | siblings
    reply = client.subgraph(example["C2"])
    assert reply.nodes[0].id == example["C2"]
    assert {int(x.id) for x in reply.nodes} == expected
    assert {(int(e.src), int(e.dst)) for e in reply.edges} == set(graph.subgraph(expected).edges)
    # C1's state node is a sibling (the dealer1 MODULE feeds it and C2's state node)
    (c1_state,) = graph.successors(int(example["C1"]))
    assert c1_state in expected and c1_state not in descendants


def _provenance(client, node, semiring, **kw):  # type: ignore[no-untyped-def]
    return client.provenance(node, semiring=semiring, **kw)


def test_provenance_of_the_civic_count(client, example) -> None:  # type: ignore[no-untyped-def]
    c2, c3, i1 = example["C2"], example["C3"], example["I1"]
    why = _provenance(client, example["civic"], Semiring.WHY)
    (module,) = [t.id for t in why.tokens if t.op == Op.MODULE]
    assert {frozenset(w) for w in why.witnesses} == {
        frozenset({c2, module, i1}),
        frozenset({c3, module, i1}),
    }
    assert why.polynomial.startswith("δ(") and "Cars" in why.polynomial
    assert why.terms[0].id == example["civic"] and why.terms[0].op == "DELTA"
    # N[X]: two derivations under δ; the aggregate itself counts both
    assert _provenance(client, example["civic"], Semiring.COUNTING).count == 1
    assert _provenance(client, example["count"], Semiring.COUNTING).count == 2
    prob = _provenance(
        client, example["civic"], Semiring.PROBABILITY,
        token_probabilities={c2: 0.5, c3: 0.4, i1: 0.9},
    )  # fmt: skip
    assert prob.probability == pytest.approx(0.9 * (1 - 0.5 * 0.6))
    assert prob.method.startswith("exact")
    cost = _provenance(
        client, example["civic"], Semiring.TROPICAL,
        token_costs={c2: 10, c3: 3, i1: 1, module: 0},
    )  # fmt: skip
    # the state node and the request's module-input node both use the invocation: module twice
    assert cost.cost == pytest.approx(3 + 1)


def test_deletion_and_boolean_evaluation_agree(client, example) -> None:  # type: ignore[no-untyped-def]
    for gone in ([example["C2"]], [example["I1"]], [example["C2"], example["C3"]]):
        deleted = set(_delete(client, gone).deleted_node_ids)
        for node in example["graph"].nodes:
            reply = _provenance(client, str(node), Semiring.BOOLEAN, false_tokens=gone)
            assert reply.boolean == (str(node) not in deleted), (node, gone)


def test_zoom_out_applies_to_every_invocation_of_the_workflow(spark, client, neo4j_driver) -> None:  # type: ignore[no-untyped-def]
    from examples.cars import run as run_cars

    with ProvenanceSession(spark, workflow=f"zoom-all-{uuid.uuid4().hex[:6]}") as prov:
        executions, _ = run_cars(prov, num_cars=16, num_exec=2, seed=5)
    client.wait_for_run(prov.run_id, timeout_s=300)
    graph = run_graph(neo4j_driver, prov.run_id)
    modules = {n: d["label"] for n, d in graph.nodes(data=True) if d["op"] == "MODULE"}
    dealer1 = {n for n, label in modules.items() if label == "dealer1"}
    assert len(dealer1) == executions
    view = client.zoom_out(prov.run_id, ["dealer1"])
    kept = {int(n.id) for n in view.nodes}
    assert {int(i) for i in view.zoomed_node_ids} == dealer1
    # every dealer1 invocation's inside (state and intermediate nodes: all it derives but its
    # Requests input, its Bids output and what derives from that) is hidden; other dealers' stay
    for module, label in modules.items():
        if not label.startswith("dealer"):
            continue
        below = nx.descendants(graph, module)
        outputs = {n for n in graph.successors(module) if graph.nodes[n].get("relation") == "Bids"}
        inputs = {
            n for n in graph.successors(module) if graph.nodes[n].get("relation") == "Requests"
        }
        after = outputs.union(*(nx.descendants(graph, o) for o in outputs))
        inside = below - inputs - after
        assert inside and inputs, label  # a dealer without the model makes no bid: no output
        if label == "dealer1":
            assert inside & kept == set()
            assert outputs | inputs <= kept
        else:
            assert inside <= kept, label
    # each zoomed node is fed by its Requests input and feeds its Bids output, nothing else
    edges = {(int(e.src), int(e.dst)) for e in view.edges}
    for module in dealer1:
        ins = {a for a, b in edges if b == module}
        outs = {b for a, b in edges if a == module}
        assert {graph.nodes[n].get("relation") for n in ins} == {"Requests"}
        assert {graph.nodes[n].get("relation") for n in outs} <= {"Bids"}
        assert {(module, o) for o in graph.successors(module)} & edges == {
            (module, o) for o in outs
        }
    back = client.zoom_in(prov.run_id, ["dealer1"], zoomed_out_modules=view.zoomed_out_modules)
    assert {int(n.id) for n in back.nodes} == set(graph.nodes)
    assert {(int(e.src), int(e.dst)) for e in back.edges} == set(graph.edges)
