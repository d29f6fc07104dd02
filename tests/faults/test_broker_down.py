"""A Kafka broker that is down: the job waits and retries within the bound, then the run fails
loudly with a PublishError that carries the counts of what was delivered."""

from __future__ import annotations

import socket
import time
from dataclasses import replace

import pytest
from pyspark.sql import functions as F

from capture_agent import ProvenanceSession, PublishError
from capture_agent.emitters import KafkaEmitter

BOUND_S = 3.0


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_broker_down_from_the_start_fails_the_run_after_the_bound(spark) -> None:  # type: ignore[no-untyped-def]
    address = f"127.0.0.1:{_closed_port()}"
    df = spark.createDataFrame([("a", 1)], ["k", "x"])
    started = time.monotonic()
    session = ProvenanceSession(
        spark, workflow="broker-down", bootstrap=address, publish_timeout_s=BOUND_S
    )
    with pytest.raises(PublishError) as failure, session as prov:  # noqa: PT012
        prov.source(df, "T").collect()
    waited = time.monotonic() - started
    assert BOUND_S * 0.9 <= waited < BOUND_S + 20  # waited for the broker, within the bound
    message = str(failure.value)
    assert address in message and "0 nodes, 0 edges" in message
    assert (failure.value.nodes, failure.value.edges) == (0, 0)


def test_broker_lost_during_the_run_fails_the_job_with_counts(spark, client) -> None:  # type: ignore[no-untyped-def]
    df = spark.createDataFrame([("a", 1), ("b", 2)], ["k", "x"])
    address = f"127.0.0.1:{_closed_port()}"
    session = ProvenanceSession(spark, workflow="broker-lost", publish_timeout_s=BOUND_S)
    started = waited = 0.0
    with pytest.raises(PublishError) as failure, session as prov:  # noqa: PT012
        t = prov.source(df, "T")
        t.groupBy("k").agg(F.sum("x").alias("s")).named("S").collect()
        delivered = prov.counts()
        assert delivered[0] > 0
        # The broker goes away for the executors (the driver still reaches it, so the run is
        # marked failed in the store).
        lost = KafkaEmitter(replace(prov.emitter.config, bootstrap=address))  # type: ignore[attr-defined]
        prov.capture.redirect_capture_points(lost)
        started = time.monotonic()
        try:
            t.named("Again").collect()
        finally:
            waited = time.monotonic() - started
    assert BOUND_S * 0.9 <= waited < BOUND_S + 60
    error = failure.value
    assert (error.nodes, error.edges) == delivered == prov.counts()
    assert f"{delivered[0]} nodes and {delivered[1]} edges" in str(error)
    assert "lineage could not be delivered" in str(error)
    assert address in str(error.__cause__)  # the task's own error, chained
    run = next(r for r in client.runs("broker-lost") if r.run_id == prov.run_id)
    deadline = time.monotonic() + 60
    while not run.failed and time.monotonic() < deadline:
        time.sleep(0.5)
        run = next(r for r in client.runs("broker-lost") if r.run_id == prov.run_id)
    assert run.failed and run.expected_node_count == delivered[0]
