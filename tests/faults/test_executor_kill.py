"""An executor killed mid-job on a real Spark cluster (issue: adoption on a real cluster): a
standalone master and two workers of this machine (tests/faults/standalone.py), executors in
JVMs of their own publishing to Kafka; partition 0's first attempt SIGKILLs its own executor
after part of its lineage was sent. Spark re-runs the lost tasks elsewhere; ingest stores each
node and edge once, the run's counts are the successful attempts' only, and the graph equals,
node by node, that of the same job run without the kill."""

from __future__ import annotations

from pathlib import Path

from tests.faults.jobs import run_on_cluster, same_as_clean


def test_a_killed_executors_tasks_rerun_elsewhere_and_the_lineage_is_exact(  # type: ignore[no-untyped-def]
    stack, client, neo4j_driver, standalone_master: str, tmp_path: Path
) -> None:
    bootstrap = stack.settings.kafka_bootstrap
    out = run_on_cluster("tests.faults.executor_kill_job", tmp_path, standalone_master, bootstrap)
    assert out["victim"], "no executor was killed"
    # The killed attempt had sent part of partition 0's source lineage before it died, and the
    # re-run sent all of it again; node by node, the graph is the run's without the kill.
    same_as_clean(client, neo4j_driver, bootstrap, out, "killed")
