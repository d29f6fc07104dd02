"""Fixtures on the real stack: Kafka (KRaft), Neo4j, ingest and query services, for the
integration and fault suites (a plugin of tests/conftest.py, so defined once for both).

The stack is the one ``make up`` manages (same folder, same addresses): if it is already up the
tests reuse it, otherwise they start it and, at the end, stop exactly what they started.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import neo4j
import pytest

from localstack import Stack, StackSettings
from sparkprov import defaults
from sparkprov.client import QueryClient
from sparkprov.query_model import Run, RunState

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="session")
def stack() -> Iterator[Stack]:
    directory = Path(os.environ.get("SPARKPROV_STACK_DIR", ROOT / ".stack"))
    stack = Stack(StackSettings.from_env(directory, os.environ))
    started = stack.up()
    yield stack
    if started:
        stack.down(tuple(started))


@pytest.fixture(scope="session")
def neo4j_driver(stack: Stack) -> Iterator[neo4j.Driver]:
    driver = neo4j.GraphDatabase.driver(
        stack.settings.neo4j_uri, auth=None, notifications_min_severity="OFF"
    )
    yield driver
    driver.close()


class CheckedClient(QueryClient):
    """The query client, asserting of every run a test waits for that its lineage is whole:
    every edge it stored ends at nodes it stored (no COMPLETE_WITH_DANGLING). A test of the
    dangling state itself passes ``dangling_ok=True``. Tests read component and set ids after
    the wait, so it waits until the run is indexed as well as complete (queryable); a test of
    the queryable state alone passes ``indexed=False``. It polls every 0.1 s rather than the
    client's 0.5 s: a test waits for a run a few hundred times in a CI session, each time for
    half the interval on average after the run is ready."""

    def wait_for_run(
        self,
        run_id: str,
        timeout_s: float = 120.0,
        *,
        dangling_ok: bool = False,
        indexed: bool = True,
        poll_s: float = 0.1,
    ) -> Run:
        run = super().wait_for_run(run_id, timeout_s, indexed=indexed, poll_s=poll_s)
        if not dangling_ok:
            assert run.dangling_node_count == 0, (
                f"run {run_id}: {run.dangling_node_count} edge ends were never stored"
            )
            assert run.state in (RunState.COMPLETE, RunState.FAILED)
        return run


@pytest.fixture(scope="session")
def client(stack: Stack) -> Iterator[QueryClient]:
    with CheckedClient(stack.settings.grpc_addr) as c:
        yield c


@pytest.fixture(scope="session")
def spark(stack: Stack) -> Iterator[object]:
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ[defaults.ENV_KAFKA_BOOTSTRAP] = stack.settings.kafka_bootstrap
    from examples.spark import local_spark

    session = local_spark("sparkprov-tests")
    yield session
    session.stop()


@pytest.fixture(scope="session")
def people_run(spark: Any, client: QueryClient) -> tuple[str, list[Any], Run]:
    """The example workflow (examples.people) captured once for the session: its run id, its
    AvgAge rows and the run as stored. The modules that read and query a people run share it
    (none of them changes a run it did not make); test_people checks the capture itself."""
    from examples.people import run_workflow

    run_id, rows = run_workflow(spark)
    return run_id, rows, client.wait_for_run(run_id)
