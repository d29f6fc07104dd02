"""Faults that must not need an operator (the reliability issue, point 3), on the real stack:
the query service fails fast while Neo4j is away and serves again when it returns; ingest stops
within 10 s of a SIGTERM under load, and what it abandoned comes again after its restart."""

from __future__ import annotations

import signal
import time
from pathlib import Path

import grpc

from sparkprov.query_errors import QueryError, Unavailable

from .streams import publish_chain_run, wait_until_storing


def _gone(pid: int) -> bool:
    try:
        return " Z " in Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True


def test_query_service_answers_unavailable_fast_while_neo4j_is_away(stack, client) -> None:  # type: ignore[no-untyped-def]
    query_pid = stack.pid("query")
    client.runs()  # serving
    stack.down(("neo4j",))
    try:
        started = time.monotonic()
        try:
            client.runs()
            raise AssertionError("ListRuns answered with Neo4j down")
        except Unavailable as e:
            assert e.code == grpc.StatusCode.UNAVAILABLE, e
        assert time.monotonic() - started < 10, "UNAVAILABLE took longer than 10 s"
    finally:
        stack.up(("neo4j",))
    deadline = time.monotonic() + 60
    while True:  # the same query process serves again, with no restart
        try:
            client.runs()
            break
        except QueryError:
            assert time.monotonic() < deadline, "the query service did not recover"
            time.sleep(0.5)
    assert stack.pid("query") == query_pid


def test_ingest_stops_within_10s_of_sigterm_under_load_and_loses_nothing(stack, client) -> None:  # type: ignore[no-untyped-def]
    run = publish_chain_run(stack.settings.kafka_bootstrap, "sigterm", batches=40, rows=1500)
    wait_until_storing(client, run.run_id)
    pid = stack.pid("ingest")
    started = time.monotonic()
    stack.kill("ingest", signal.SIGTERM)
    while not _gone(pid):
        assert time.monotonic() - started < 10, "ingest ignored SIGTERM for 10 s"
        time.sleep(0.1)
    assert time.monotonic() - started < 10, "ingest took over 10 s to stop after SIGTERM"
    stack.up(("ingest",))
    stored = client.wait_for_run(run.run_id, timeout_s=600)
    assert (stored.node_count, stored.edge_count) == (run.nodes, run.edges)
