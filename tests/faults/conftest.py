"""Fixtures of the fault suite."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.faults.standalone import standalone_cluster


@pytest.fixture(scope="session")
def standalone_master(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """One standalone cluster (tests/faults/standalone.py) for the tests that run a job on one:
    its master's URL. Each job is a Spark application of its own, with executors of its own that
    the workers stop and clean up when it ends, so the jobs share only the master and workers;
    starting those three JVMs again for each test cost about half a minute."""
    with standalone_cluster(tmp_path_factory.mktemp("standalone")) as master:
        yield master
