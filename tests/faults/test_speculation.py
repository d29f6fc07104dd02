"""Speculative execution (issue: lineage sized to the data, "retries lose and duplicate
nothing"): on a standalone cluster of this machine (a master, two workers under two host
names, executors in JVMs of their own: tests/faults/standalone.py), partition 0's first
attempt stalls after part of its lineage was sent, Spark runs a speculative copy that finishes
first and kills the stalled attempt. Both attempts sent lineage; ingest stores each node and
edge once, the run's counts are the successful attempts' only, and the graph equals, node by
node, that of the same job run without the stall."""

from __future__ import annotations

from pathlib import Path

from sparkprov import defaults
from tests.faults.jobs import run_job, stored_once
from tests.faults.speculation_job import PARTITIONS, ROWS, ROWS_PER_MESSAGE
from tests.faults.standalone import standalone_cluster
from tests.integration.graph import shape
from tests.integration.kafka_tools import read_all


def test_a_speculative_copy_and_its_killed_original_store_the_lineage_once(  # type: ignore[no-untyped-def]
    stack, client, neo4j_driver, tmp_path: Path
) -> None:
    bootstrap = stack.settings.kafka_bootstrap
    markers = tmp_path / "markers"
    markers.mkdir()
    with standalone_cluster(tmp_path) as master:
        out = run_job("tests.faults.speculation_job", str(markers), master, bootstrap=bootstrap)
    # Partition 0 ran twice: the first attempt, stalled after sending part of its lineage, and
    # the speculative copy.
    assert out["attempts"] == ["attempt-0", "attempt-1", "stalled"], out["attempts"]

    graphs = {
        which: stored_once(client, neo4j_driver, out[which], out[f"{which}_counts"])
        for which in ("stalled", "clean")
    }
    assert out["stalled_counts"] == out["clean_counts"]
    # Both attempts of partition 0 sent its source rows' lineage: more messages than one
    # attempt sends (the clean run, too, may have had a copy of a slow task).
    one_attempt = -(-ROWS // PARTITIONS // ROWS_PER_MESSAGE)
    key = f"{out['stalled']}/source:Numbers#0/0".encode()
    sent = sum(1 for r in read_all(bootstrap, defaults.TOPIC) if r.key == key)
    assert sent > one_attempt, (sent, one_attempt)
    # Node by node: every output row with its whole ancestry, as the run without the stall.
    assert shape(graphs["stalled"]) == shape(graphs["clean"])
