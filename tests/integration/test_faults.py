"""Faults that must not need an operator (the reliability issue, point 3), on the real stack:
the query service fails fast while Neo4j is away and serves again when it returns; ingest stops
within 10 s of a SIGTERM under load, and what it abandoned comes again after its restart."""

from __future__ import annotations

import signal
import time
import uuid
from pathlib import Path

import grpc
import numpy as np
from kafka import KafkaProducer

from sparkprov import defaults
from sparkprov.events import (
    EdgeColumns,
    NodeColumns,
    encode_batch,
    encode_run_complete,
    encode_run_started,
)


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
        except grpc.RpcError as e:
            assert e.code() == grpc.StatusCode.UNAVAILABLE, e
        assert time.monotonic() - started < 10, "UNAVAILABLE took longer than 10 s"
    finally:
        stack.up(("neo4j",))
    deadline = time.monotonic() + 60
    while True:  # the same query process serves again, with no restart
        try:
            client.runs()
            break
        except grpc.RpcError:
            assert time.monotonic() < deadline, "the query service did not recover"
            time.sleep(0.5)
    assert stack.pid("query") == query_pid


def test_ingest_stops_within_10s_of_sigterm_under_load_and_loses_nothing(stack, client) -> None:  # type: ignore[no-untyped-def]
    run_id = f"sigterm-{uuid.uuid4().hex}"
    base = int(uuid.uuid4().int >> 66)
    batches, rows = 40, 1500  # ~120k records: a backlog of minutes on this machine
    producer = KafkaProducer(bootstrap_servers=stack.settings.kafka_bootstrap)
    key = run_id.encode()
    producer.send(defaults.TOPIC, value=encode_run_started(run_id, "sigterm", 1, ""), key=key)
    for b in range(batches):
        ids = np.arange(base + b * rows, base + (b + 1) * rows, dtype=np.int64)
        nodes = NodeColumns("TOKEN", ids, label="t")
        edges = EdgeColumns(ids[:-1], ids[1:])  # a chain per batch
        producer.send(
            defaults.TOPIC,
            value=encode_batch(run_id, "sigterm", "t", 0, b, [nodes], edges),
            key=key,
        )
    expected_nodes, expected_edges = batches * rows, batches * (rows - 1)
    producer.send(
        defaults.TOPIC,
        value=encode_run_complete(run_id, "sigterm", expected_nodes, expected_edges),
        key=key,
    )
    producer.flush()
    producer.close()

    deadline = time.monotonic() + 120
    while True:  # until ingest is busy with the run
        run = next((r for r in client.runs() if r.run_id == run_id), None)
        if run is not None and run.node_count > 0:
            break
        assert time.monotonic() < deadline, "ingest stored nothing of the run"
        time.sleep(0.1)
    assert not run.complete
    pid = stack.pid("ingest")
    started = time.monotonic()
    stack.kill("ingest", signal.SIGTERM)
    while not _gone(pid):
        assert time.monotonic() - started < 10, "ingest ignored SIGTERM for 10 s"
        time.sleep(0.1)
    assert time.monotonic() - started < 10, "ingest took over 10 s to stop after SIGTERM"
    stack.up(("ingest",))
    run = client.wait_for_run(run_id, timeout_s=600)
    assert (run.node_count, run.edge_count) == (expected_nodes, expected_edges)
