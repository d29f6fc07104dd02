"""Speculative execution (issue: lineage sized to the data, "retries lose and duplicate
nothing"): on a standalone cluster of this machine (a master, two workers under two host
names, executors in JVMs of their own: tests/faults/standalone.py), partition 0's first
attempt stalls after part of its lineage was sent, Spark runs a speculative copy that finishes
first and kills the stalled attempt. Both attempts sent lineage; ingest stores each node and
edge once, the run's counts are the successful attempts' only, and the graph equals, node by
node, that of the same job run without the stall."""

from __future__ import annotations

from pathlib import Path

from tests.faults.jobs import run_on_cluster, same_as_clean


def test_a_speculative_copy_and_its_killed_original_store_the_lineage_once(  # type: ignore[no-untyped-def]
    stack, client, neo4j_driver, standalone_master: str, tmp_path: Path
) -> None:
    bootstrap = stack.settings.kafka_bootstrap
    out = run_on_cluster("tests.faults.speculation_job", tmp_path, standalone_master, bootstrap)
    # Partition 0 ran twice: the attempt that stalled after sending part of its lineage, and the
    # other (the speculative copy, or the original its copy overtook).
    attempts = out["attempts"]
    assert "stalled" in attempts and len([a for a in attempts if a != "stalled"]) >= 2, attempts

    # Both attempts of partition 0 sent its source rows' lineage (the clean run, too, may have
    # had a copy of a slow task); node by node, the graph is the run's without the stall.
    same_as_clean(client, neo4j_driver, bootstrap, out, "stalled")
