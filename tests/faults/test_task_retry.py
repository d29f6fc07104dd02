"""A task that fails on its first attempt after part of its lineage was sent (issue: lineage sized
to the data, "retries lose and duplicate nothing"): the retry sends that part again, ingest
stores each node and edge once, and the run's graph equals, node by node, that of the same job
run without the fault. The failed attempt counts nothing (its accumulator updates are dropped),
so the run marker's counts are exact."""

from __future__ import annotations

from pathlib import Path

from sparkprov import defaults
from tests.faults.jobs import run_job, stored_once
from tests.integration.graph import shape
from tests.integration.kafka_tools import read_all


def _messages(bootstrap: str, *run_ids: str) -> list[int]:
    """The messages on the topic of each run, from one read of the topic."""
    keys = [r.key for r in read_all(bootstrap, defaults.TOPIC) if r.key]
    return [sum(1 for key in keys if run_id.encode() in key) for run_id in run_ids]


def test_a_task_retried_after_sending_part_of_its_lineage_stores_it_once(  # type: ignore[no-untyped-def]
    stack, client, neo4j_driver, tmp_path: Path
) -> None:
    bootstrap = stack.settings.kafka_bootstrap
    out = run_job("tests.faults.retry_job", str(tmp_path), bootstrap=bootstrap)
    assert out["failed_attempts"] >= 1, "the fault was not injected"

    graphs = {
        which: stored_once(client, neo4j_driver, out[which], out[f"{which}_counts"])
        for which in ("faulty", "clean")
    }
    assert out["faulty_counts"] == out["clean_counts"]
    # The failed attempt had sent messages of its own before it failed: more on the topic.
    faulty, clean = _messages(bootstrap, out["faulty"], out["clean"])
    assert faulty > clean, (faulty, clean)
    # Node by node: every output row with its whole ancestry, as the fault-free run stored it.
    assert shape(graphs["faulty"]) == shape(graphs["clean"])
