"""An executor killed mid-job on a real Spark cluster (issue: adoption on a real cluster): a
standalone master and two workers of this machine (tests/faults/standalone.py), executors in
JVMs of their own publishing to Kafka; partition 0's first attempt SIGKILLs its own executor
after part of its lineage was sent. Spark re-runs the lost tasks elsewhere; ingest stores each
node and edge once, the run's counts are the successful attempts' only, and the graph equals,
node by node, that of the same job run without the kill."""

from __future__ import annotations

from pathlib import Path

from sparkprov import defaults
from tests.faults.executor_kill_job import PARTITIONS, ROWS, ROWS_PER_MESSAGE
from tests.faults.jobs import run_job, stored_once
from tests.faults.standalone import standalone_cluster
from tests.integration.graph import shape
from tests.integration.kafka_tools import read_all


def test_a_killed_executors_tasks_rerun_elsewhere_and_the_lineage_is_exact(  # type: ignore[no-untyped-def]
    stack, client, neo4j_driver, tmp_path: Path
) -> None:
    bootstrap = stack.settings.kafka_bootstrap
    markers = tmp_path / "markers"
    markers.mkdir()
    with standalone_cluster(tmp_path) as master:
        out = run_job("tests.faults.executor_kill_job", str(markers), master, bootstrap=bootstrap)
    assert out["victim"], "no executor was killed"
    graphs = {
        which: stored_once(client, neo4j_driver, out[which], out[f"{which}_counts"])
        for which in ("killed", "clean")
    }
    assert out["killed_counts"] == out["clean_counts"]
    # The killed attempt had sent part of partition 0's source lineage before it died, and the
    # re-run sent all of it again: more messages than one attempt sends.
    one_attempt = -(-ROWS // PARTITIONS // ROWS_PER_MESSAGE)
    key = f"{out['killed']}/source:Numbers#0/0".encode()
    sent = sum(1 for r in read_all(bootstrap, defaults.TOPIC) if r.key == key)
    assert sent > one_attempt, (sent, one_attempt)
    assert shape(graphs["killed"]) == shape(graphs["clean"])
