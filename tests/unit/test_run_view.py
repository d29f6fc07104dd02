"""ListRuns reports a run complete only with the counts that made it complete: a read that
meets the completing commit half applied (Neo4j reads are read-committed) shows it running."""

from __future__ import annotations

from query_service.store import run_view

_DONE = {
    "run_id": "r1",
    "workflow": "w",
    "complete": True,
    "stored_nodes": 10,
    "stored_edges": 12,
    "expected_nodes": 10,
    "expected_edges": 12,
    "dangling_nodes": 2,
}


def test_a_completed_run_reads_with_its_counts() -> None:
    run = run_view(_DONE)
    assert run.complete and run.state == "COMPLETE_WITH_DANGLING"
    assert (run.expected_node_count, run.expected_edge_count) == (10, 12)
    assert run.dangling_node_count == 2


def test_complete_without_the_properties_its_completion_writes_reads_as_running() -> None:
    for missing in ("expected_nodes", "expected_edges", "dangling_nodes"):
        torn = {k: v for k, v in _DONE.items() if k != missing}
        run = run_view(torn)
        assert not run.complete and run.state == "RUNNING", missing


def test_complete_with_older_stored_counts_reads_as_running() -> None:
    run = run_view({**_DONE, "stored_edges": 11})
    assert not run.complete and run.edge_count == 11


def test_a_run_without_its_marker_reports_unknown_expected_counts() -> None:
    run = run_view({"run_id": "r2", "complete": False, "stored_nodes": 3, "stored_edges": 0})
    assert (run.expected_node_count, run.expected_edge_count) == (-1, -1)
    assert run.state == "RUNNING" and run.workflow == ""


def test_reuses_are_listed_by_sink() -> None:
    reuses = [
        {"sink": "wordcloud", "version": "v2", "run_id": "a"},
        {"sink": "ca", "version": "v1", "run_id": "a"},
    ]
    run = run_view(_DONE, reuses)
    assert [(u.sink, u.version, u.run_id) for u in run.reuses] == [
        ("ca", "v1", "a"),
        ("wordcloud", "v2", "a"),
    ]
    assert run_view(_DONE).reuses == ()
