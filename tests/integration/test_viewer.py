"""The trace viewer in a real headless Chromium (Debian's, driven by Playwright) against the real
stack: after a captured run of examples/people.py, the page finds AvgAge City=NY, draws its
backward trace (checked node by node against the gRPC BackwardTrace), highlights what deleting
a source row removes (checked against PropagateDeletion), and leaves a screenshot in the test's
output and in docs/img/viewer.png (the README's)."""

from __future__ import annotations

import shutil
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest

from sparkprov.v1 import lineage_pb2, query_pb2, query_pb2_grpc

pytestmark = pytest.mark.integration

CHROMIUM = Path("/usr/bin/chromium")
README_SCREENSHOT = Path(__file__).resolve().parents[2] / "docs" / "img" / "viewer.png"
# Flags that work in containers and CI: no sandbox (root), no GPU, nothing fetched on the side.
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.fixture(scope="module")
def stub(stack) -> Iterator[query_pb2_grpc.ProvenanceQueryStub]:  # type: ignore[no-untyped-def]
    """The generated stub itself: the test compares the page with what gRPC answers."""
    with grpc.insecure_channel(stack.settings.grpc_addr) as channel:
        yield query_pb2_grpc.ProvenanceQueryStub(channel)


def _find(stub: Any, run_id: str, relation: str, **equals: str) -> list[Any]:
    request = query_pb2.FindNodesRequest(run_id=run_id, relation=relation, equals=equals)
    return list(stub.FindNodes(request, timeout=30).nodes)


def _backward(stub: Any, node_id: str, max_depth: int = 0) -> Any:
    request = query_pb2.TraceRequest(node_ids=[node_id], max_depth=max_depth)
    return stub.BackwardTrace(request, timeout=30)


@pytest.fixture()
def page(tmp_path: Path) -> Iterator[Any]:
    assert CHROMIUM.exists(), "Debian's chromium is missing: `make browser` installs it"
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        # A persistent context is how Playwright takes a fresh --user-data-dir of our choosing.
        context = playwright.chromium.launch_persistent_context(
            str(tmp_path / "profile"),
            executable_path=str(CHROMIUM),
            headless=True,
            args=CHROMIUM_FLAGS,
            viewport={"width": 1500, "height": 900},
        )
        try:
            yield context.new_page()
        finally:
            context.close()


def _drawn(page: Any) -> dict[str, dict[str, Any]]:
    nodes = page.evaluate(
        "() => window.viewer.cy.nodes().map(n => ({...n.data(), classes: n.classes()}))"
    )
    return {n["id"]: n for n in nodes}


def _drawn_edges(page: Any) -> set[tuple[str, str]]:
    edges = page.evaluate(
        "() => window.viewer.cy.edges().map(e => [e.source().id(), e.target().id()])"
    )
    return {(s, d) for s, d in edges}


def test_viewer_draws_the_grpc_trace_and_a_deletion(
    stack, stub, people_run, page, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    run_id, _, _ = people_run
    page.goto(f"http://{stack.settings.viewer_addr}/#run={run_id}")
    page.wait_for_function("window.viewer && window.viewer.ready")
    assert page.locator("#run").input_value() == run_id

    page.fill("#relation", "AvgAge")
    page.fill("#where", "City=NY")
    page.click("#search")
    rows = page.locator("tr.result")
    rows.first.wait_for()
    assert rows.count() == 1
    (ny,) = _find(stub, run_id, "AvgAge", City="NY")
    assert rows.first.get_attribute("data-node-id") == ny.id

    rows.first.click()
    page.wait_for_function(
        "(id) => window.viewer.state.roots[0] === id && window.viewer.cy.nodes().length > 1",
        arg=ny.id,
    )
    trace = _backward(stub, ny.id)
    drawn = _drawn(page)
    assert len(drawn) == len(trace.nodes) == 10
    for node in trace.nodes:
        shown = drawn[node.id]
        assert shown["op"] == lineage_pb2.Op.Name(node.op).removeprefix("OP_")
        assert shown["label"] == node.label
        assert shown["relation"] == node.relation
        assert shown["attributes"] == dict(node.attributes)
        assert shown["value"] == node.value
        assert "frontier" not in shown["classes"]  # the whole trace fits in the default levels
    assert _drawn_edges(page) == {(e.src, e.dst) for e in trace.edges}
    # What the user reads on the node: the relation and values, an aggregate's value.
    assert drawn[ny.id]["text"].splitlines() == ["DELTA · AvgAge", "Age=35.0", "City=NY"]
    (avg,) = [n for n in drawn.values() if n["op"] == "AGGREGATE"]
    assert "AVG = 35.0" in avg["text"]

    # Select Steve's source row with the mouse and ask what deleting it removes.
    steve = next(
        n.id
        for n in trace.nodes
        if n.op == lineage_pb2.OP_TOKEN and n.attributes.get("Name") == "Steve"
    )
    page.click("#graph", position=_position(page, steve))  # a real mouse click on the node
    assert page.evaluate("() => window.viewer.cy.nodes(':selected').map(n => n.id())") == [steve]
    # Its details say where it was read from (LocateSourceRows: the CSV's partition and offset).
    page.wait_for_function("() => document.querySelector('#details').innerText.includes('offset')")
    request = query_pb2.LocateSourceRowsRequest(node_ids=[steve])
    (where,) = stub.LocateSourceRows(request, timeout=30).rows
    shown = page.inner_text("#details").split()
    assert shown[shown.index("partition") + 1] == str(where.partition)
    assert shown[shown.index("offset") + 1] == str(where.offset)
    page.click("#delete")
    page.locator("#deletion .removed").wait_for()
    expected = stub.PropagateDeletion(query_pb2.DeletionRequest(node_ids=[steve]), timeout=30)
    deleted = set(expected.deleted_node_ids)
    drawn = _drawn(page)
    shown_deleted = {i for i, n in drawn.items() if "deleted" in n["classes"]}
    assert shown_deleted == deleted & set(drawn)
    assert len(shown_deleted) == 3  # Steve's token, his Person2 row, his tensor (not the value)
    assert ny.id not in shown_deleted
    (recomputed,) = expected.recomputed
    assert (recomputed.old_value, recomputed.new_value) == ("35.0", "40.0")
    assert "recomputed" in drawn[recomputed.node_id]["classes"]
    assert "35.0 → 40.0" in page.inner_text("#deletion")

    shot = tmp_path / "viewer.png"
    page.screenshot(path=str(shot))
    assert shot.stat().st_size > 10_000
    README_SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(shot, README_SCREENSHOT)


def test_viewer_opens_a_node_from_the_url_and_expands_level_by_level(
    stack, stub, people_run, page
) -> None:  # type: ignore[no-untyped-def]
    """``sparkprov open NODE_ID`` opens ``#node=ID``: with 2 levels, the sources lie beyond the
    cut, and a double-click on a dashed node draws the rest."""
    run_id, _, _ = people_run
    (ny,) = _find(stub, run_id, "AvgAge", City="NY")
    page.goto(f"http://{stack.settings.viewer_addr}/#node={ny.id}")
    page.wait_for_function("window.viewer && window.viewer.ready")
    assert page.locator("#run").input_value() == run_id  # the picker shows the node's run
    assert set(_drawn(page)) == {n.id for n in _backward(stub, ny.id).nodes}
    page.fill("#depth", "2")
    page.evaluate("(id) => window.viewer.drawTrace([id])", ny.id)
    trace = _backward(stub, ny.id, max_depth=2)
    drawn = _drawn(page)
    assert set(drawn) == {n.id for n in trace.nodes}
    frontier = sorted(i for i, n in drawn.items() if "frontier" in n["classes"])
    # Level 2: the two TENSORs (their Person2 rows and VALUEs lie beyond) and the Person2 rows
    # fed straight into the DELTA are at level 1; the PLUS rows lead on to their tokens.
    assert frontier and all(drawn[i]["level"] == 2 for i in frontier)
    page.dblclick("#graph", position=_position(page, frontier[0]))
    page.wait_for_function(
        "(id) => !window.viewer.cy.getElementById(id).hasClass('frontier')", arg=frontier[0]
    )
    assert len(_drawn(page)) > len(drawn)


@pytest.fixture(scope="module")
def dealer_run(spark, client):  # type: ignore[no-untyped-def]
    """Lipstick's Example 2.3: one invocation of the dealer1 module."""
    from capture_agent import ProvenanceSession
    from examples.cars import DealerState, dealer

    state = DealerState(cars=[("C1", "Accord"), ("C2", "Civic"), ("C3", "Civic")])
    with ProvenanceSession(spark, workflow="viewer-dealer") as prov:
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
    return prov.run_id


def test_viewer_collapses_a_module_to_its_zoomed_out_view(stack, stub, dealer_run, page) -> None:  # type: ignore[no-untyped-def]
    page.goto(f"http://{stack.settings.viewer_addr}/#run={dealer_run}")
    page.wait_for_function("window.viewer && window.viewer.ready")
    page.fill("#depth", "0")  # every level: the bid's trace runs deeper than the default
    page.fill("#relation", "Bids")
    page.click("#search")
    page.locator("tr.result").first.wait_for()
    (bid,) = _find(stub, dealer_run, "Bids")
    page.click(f"tr.result[data-node-id='{bid.id}']")
    page.wait_for_function("(id) => window.viewer.state.roots[0] === id", arg=bid.id)
    page.wait_for_function("() => window.viewer.cy.nodes().length > 4")
    whole = _drawn(page)
    assert set(whole) == {n.id for n in _backward(stub, bid.id).nodes}

    collapse = page.get_by_label("collapse dealer1")
    collapse.check()
    page.wait_for_function(
        "(n) => window.viewer.cy.nodes().length < n && window.viewer.state.zoomed.length === 1",
        arg=len(whole),
    )
    request = query_pb2.TraceRequest(node_ids=[bid.id], zoomed_out_modules=["dealer1"])
    zoomed = stub.BackwardTrace(request, timeout=30)
    view = stub.ZoomOut(query_pb2.ZoomRequest(run_id=dealer_run, modules=["dealer1"]), timeout=30)
    drawn = _drawn(page)
    assert set(drawn) == {n.id for n in zoomed.nodes} == {n.id for n in view.nodes}
    assert _drawn_edges(page) == {(e.src, e.dst) for e in zoomed.edges}
    (module,) = view.zoomed_node_ids
    assert drawn[module]["op"] == "MODULE" and drawn[module]["label"] == "dealer1"

    collapse.uncheck()
    page.wait_for_function("(n) => window.viewer.cy.nodes().length === n", arg=len(whole))
    assert set(_drawn(page)) == set(whole)


def _position(page: Any, node_id: str) -> dict[str, float]:
    x, y = page.evaluate(
        "(id) => { const p = window.viewer.cy.getElementById(id).renderedPosition();"
        " return [p.x, p.y]; }",
        node_id,
    )
    return {"x": x, "y": y}


def test_viewer_api_errors_are_clear(stack) -> None:  # type: ignore[no-untyped-def]
    base = f"http://{stack.settings.viewer_addr}"
    for path, status, text in [
        ("/api/trace?node=not-a-node", 400, "INVALID_ARGUMENT"),
        ("/api/trace?node=1&direction=sideways", 400, "direction"),
        ("/api/find?run=no-such-run&relation=AvgAge", 404, "NOT_FOUND"),
        ("/api/find?run=x", 400, "relation"),
    ]:
        with pytest.raises(urllib.error.HTTPError) as error:
            urllib.request.urlopen(base + path, timeout=10)  # noqa: S310 - loopback
        assert error.value.code == status, path
        assert text in error.value.read().decode(), path
