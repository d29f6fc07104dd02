"""A task that fails on its first attempt after part of its lineage was sent (issue: lineage sized
to the data, "retries lose and duplicate nothing"): the retry sends that part again, ingest
stores each node and edge once, and the run's graph equals, node by node, that of the same job
run without the fault. The failed attempt counts nothing (its accumulator updates are dropped),
so the run marker's counts are exact."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from sparkprov import defaults
from tests.integration.graph import own_nodes, run_graph, shape
from tests.integration.kafka_tools import read_all

ROOT = Path(__file__).resolve().parents[2]


def _messages(bootstrap: str, run_id: str) -> int:
    return sum(1 for r in read_all(bootstrap, defaults.TOPIC) if r.key and run_id.encode() in r.key)


def test_a_task_retried_after_sending_part_of_its_lineage_stores_it_once(  # type: ignore[no-untyped-def]
    stack, client, neo4j_driver, tmp_path: Path
) -> None:
    bootstrap = stack.settings.kafka_bootstrap
    env = dict(os.environ, **{defaults.ENV_KAFKA_BOOTSTRAP: bootstrap})
    done = subprocess.run(
        [sys.executable, "-m", "tests.faults.retry_job", str(tmp_path)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["failed_attempts"] >= 1, "the fault was not injected"

    graphs = {}
    for which in ("faulty", "clean"):
        run_id = out[which]
        nodes, edges = out[f"{which}_counts"]
        run = client.wait_for_run(run_id, timeout_s=300)
        graph = run_graph(neo4j_driver, run_id)
        assert run.complete and (run.node_count, run.edge_count) == (nodes, edges)
        assert (run.expected_node_count, run.expected_edge_count) == (nodes, edges)
        assert own_nodes(graph) == nodes and graph.number_of_edges() == edges
        assert all(m == 1 for _, _, m in graph.edges(data="multiplicity"))
        graphs[which] = graph
    assert out["faulty_counts"] == out["clean_counts"]
    # The failed attempt had sent messages of its own before it failed: more on the topic.
    assert _messages(bootstrap, out["faulty"]) > _messages(bootstrap, out["clean"])
    # Node by node: every output row with its whole ancestry, as the fault-free run stored it.
    assert shape(graphs["faulty"]) == shape(graphs["clean"])
