"""What the fault tests that run a captured job in a process of its own share: running the job
(``python -m <module> <args>``, its last stdout line a JSON object) and checking one of its runs
as stored (complete, the counts the job reported, every node and edge once)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import networkx as nx

from sparkprov import defaults
from tests.faults.cluster_jobs import PARTITIONS, ROWS, ROWS_PER_MESSAGE
from tests.integration.graph import own_nodes, run_graph, shape
from tests.integration.kafka_tools import read_all

ROOT = Path(__file__).resolve().parents[2]


def run_job(module: str, *args: str, bootstrap: str) -> dict[str, Any]:
    """Runs ``module`` against the Kafka at ``bootstrap``; its JSON report."""
    env = dict(os.environ, **{defaults.ENV_KAFKA_BOOTSTRAP: bootstrap})
    done = subprocess.run(
        [sys.executable, "-m", module, *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    report: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return report


def stored_once(client: Any, neo4j_driver: Any, run_id: str, counts: list[int]) -> nx.DiGraph:
    """Run ``run_id`` as stored, after checking it is complete with the job's ``counts`` (nodes,
    edges) and holds every node and edge once."""
    nodes, edges = counts
    run = client.wait_for_run(run_id, timeout_s=300)
    graph = run_graph(neo4j_driver, run_id)
    assert run.complete and (run.node_count, run.edge_count) == (nodes, edges)
    assert (run.expected_node_count, run.expected_edge_count) == (nodes, edges)
    assert own_nodes(graph) == nodes and graph.number_of_edges() == edges
    assert all(m == 1 for _, _, m in graph.edges(data="multiplicity"))
    return graph


def same_as_clean(
    client: Any, neo4j_driver: Any, bootstrap: str, out: dict[str, Any], faulted: str
) -> None:
    """A cluster job's two runs (tests/faults/cluster_jobs.py): the one with the fault
    (``out[faulted]``) and the clean one (``out["clean"]``), each stored once with its counts;
    the faulted run re-sent part of partition 0's source lineage (more messages than one attempt
    sends) and its graph equals the clean run's node by node."""
    graphs = {
        which: stored_once(client, neo4j_driver, out[which], out[f"{which}_counts"])
        for which in (faulted, "clean")
    }
    assert out[f"{faulted}_counts"] == out["clean_counts"]
    one_attempt = -(-ROWS // PARTITIONS // ROWS_PER_MESSAGE)
    key = f"{out[faulted]}/source:Numbers#0/0".encode()
    sent = sum(1 for r in read_all(bootstrap, defaults.TOPIC) if r.key == key)
    assert sent > one_attempt, (sent, one_attempt)
    assert shape(graphs[faulted]) == shape(graphs["clean"])


def run_on_cluster(module: str, work: Path, master: str, bootstrap: str) -> dict[str, Any]:
    """Runs the cluster job ``module`` (tests/faults/cluster_jobs.py) on the standalone cluster
    of this machine at ``master`` (tests/faults/conftest.py), with a markers folder in
    ``work``; its JSON report."""
    markers = work / "markers"
    markers.mkdir()
    return run_job(module, str(markers), master, bootstrap=bootstrap)
