"""ZoomOut/ZoomIn views (Lipstick 4.1) on a hand-built dealer invocation: what is hidden, what the
zoomed node connects, and ZoomIn(ZoomOut(G, M), M) = G without touching G."""

from __future__ import annotations

from query_service.graph import Graph
from query_service.model import NodeView
from query_service.zoom import invocations, zoom_in, zoom_out

# ids
REQ_MOD, REQ, REQ_OUT = 1, 2, 3  # module "request" publishing the source row REQ as output
DEALER, INPUT, C1, C2, S1, S2 = 10, 11, 12, 13, 14, 15
JOIN, GROUP, VALUE, TENSOR, COUNT, BID_ROW, OUTPUT = 16, 17, 18, 19, 20, 21, 22
AGG_MOD, AGG_IN, BEST, AGG_OUT = 30, 31, 32, 33


def v(i: int, op: str, label: str = "", relation: str = "") -> NodeView:
    return NodeView(i, "r", op, label or op, relation, {}, "", 0, 0)


def dealer_graph() -> Graph:
    nodes = [
        v(REQ_MOD, "MODULE", "request"), v(REQ, "TOKEN", "B1", "BidRequest"),
        v(REQ_OUT, "TIMES", "·", "Requests"),
        v(DEALER, "MODULE", "dealer1"), v(INPUT, "TIMES", "·", "Requests"),
        v(C1, "TOKEN", "C1", "Cars"), v(C2, "TOKEN", "C2", "Cars"),
        v(S1, "TIMES", "·"), v(S2, "TIMES", "·"),
        v(JOIN, "TIMES", "·", "Inventory"), v(GROUP, "DELTA", "δ", "NumCarsByModel"),
        v(VALUE, "VALUE", "C2"), v(TENSOR, "TENSOR", "⊗"), v(COUNT, "AGGREGATE", "COUNT"),
        v(BID_ROW, "BLACK_BOX", "calc_bid"), v(OUTPUT, "TIMES", "·", "Bids"),
        v(AGG_MOD, "MODULE", "agg"), v(AGG_IN, "TIMES", "·", "Bids"), v(BEST, "DELTA", "δ"),
        v(AGG_OUT, "TIMES", "·", "BestBid"),
    ]  # fmt: skip
    edges = [
        (REQ, REQ_OUT), (REQ_MOD, REQ_OUT),
        (REQ_OUT, INPUT), (DEALER, INPUT),
        (C1, S1), (DEALER, S1), (C2, S2), (DEALER, S2),
        (S2, JOIN), (INPUT, JOIN), (JOIN, GROUP), (JOIN, TENSOR), (VALUE, TENSOR),
        (TENSOR, COUNT), (COUNT, GROUP), (GROUP, BID_ROW), (INPUT, BID_ROW),
        (BID_ROW, OUTPUT), (DEALER, OUTPUT),
        (OUTPUT, AGG_IN), (AGG_MOD, AGG_IN), (AGG_IN, BEST), (BEST, AGG_OUT), (AGG_MOD, AGG_OUT),
    ]  # fmt: skip
    return Graph.of(edges, {n.id: n for n in nodes})


def test_roles_are_read_from_the_shape() -> None:
    by_name = {inv.name: inv for inv in invocations(dealer_graph())}
    dealer = by_name["dealer1"]
    assert (dealer.inputs, dealer.states, dealer.outputs) == ([INPUT], [S1, S2], [OUTPUT])
    request = by_name["request"]  # a pass-through output is an output, not an input
    assert (request.inputs, request.outputs) == ([], [REQ_OUT])
    assert by_name["agg"].outputs == [AGG_OUT] and by_name["agg"].inputs == [AGG_IN]


def test_zoom_out_hides_intermediate_computation_and_state() -> None:
    graph = dealer_graph()
    before = (graph.edges(), sorted(graph.ids()))
    view = zoom_out(graph, ["dealer1"])
    assert (graph.edges(), sorted(graph.ids())) == before  # a view: G untouched
    hidden = {C1, C2, S1, S2, JOIN, GROUP, VALUE, TENSOR, COUNT, BID_ROW}
    assert view.graph.ids() == graph.ids() - hidden
    assert view.zoomed_nodes == [DEALER] and view.hidden == len(hidden)
    assert set(view.graph.edges()) == {
        (REQ, REQ_OUT), (REQ_MOD, REQ_OUT), (REQ_OUT, INPUT),
        (INPUT, DEALER), (DEALER, OUTPUT),  # step 5: inputs -> M -> outputs
        (OUTPUT, AGG_IN), (AGG_MOD, AGG_IN), (AGG_IN, BEST), (BEST, AGG_OUT), (AGG_MOD, AGG_OUT),
    }  # fmt: skip


def test_zoom_in_inverts_zoom_out() -> None:
    graph = dealer_graph()
    for modules in (["dealer1"], ["agg"], ["dealer1", "agg", "request"]):
        out = zoom_out(graph, modules)
        assert out.graph.edges() != graph.edges()
        back = zoom_in(graph, modules, modules)
        assert back.graph.edges() == graph.edges() and back.graph.ids() == graph.ids()
    # zooming in on one of two zoomed-out modules leaves the other zoomed out
    both = zoom_in(graph, ["dealer1", "agg"], ["agg"])
    assert both.graph.edges() == zoom_out(graph, ["dealer1"]).graph.edges()


def test_shared_state_tokens_stay_while_another_module_uses_them() -> None:
    graph = dealer_graph()
    # module "car" also holds C2 as state
    graph.nodes[40] = v(40, "MODULE", "car")
    graph.nodes[41] = v(41, "TIMES", "·")
    graph.add_edge(C2, 41)
    graph.add_edge(40, 41)
    view = zoom_out(graph, ["dealer1"])
    assert C2 in view.graph.ids() and C1 not in view.graph.ids()
    assert (C2, 41) in view.graph.edges() and (C2, S2) not in view.graph.edges()


def test_a_dead_input_is_an_input() -> None:
    # a second dealer1 invocation that found no car: its Requests row has no children
    graph = dealer_graph()
    graph.nodes[50] = v(50, "MODULE", "dealer1")
    graph.nodes[51] = v(51, "TIMES", "·", "Requests")
    graph.add_edge(REQ_OUT, 51)
    graph.add_edge(50, 51)
    by_module = {inv.module: inv for inv in invocations(graph)}
    assert by_module[50].inputs == [51] and by_module[50].outputs == []
    view = zoom_out(graph, ["dealer1"])
    assert (51, 50) in view.graph.edges() and (50, 51) not in view.graph.edges()
    # alone (no other invocation to learn from), an unused row is still read as an input
    alone = Graph.of([(REQ, 51), (50, 51)], {n: graph.nodes[n] for n in (REQ, 50, 51)})
    assert invocations(alone)[0].inputs == [51]
