"""Two ingest processes of one consumer group write at once (no lock among writers), on runs
whose events both of them receive: every event is on one partition, and a third of them are
sent again on another (at-least-once), so both processes upsert the same nodes and edges at the
same moment. The stored graph must be exact node by node and edge by edge, each run's counts
exact, and, once the indexer has caught up, the component and set ids those of a recomputation
(tests/reference/sets.py). Small theta, so connected sets are refined."""

from __future__ import annotations

import os
import random
import uuid
from pathlib import Path

import neo4j
from kafka import KafkaProducer

from sparkprov import defaults
from sparkprov.events import EdgeColumns, NodeColumns, encode_batch, encode_run_complete
from tests.faults.streams import free_port, ingest_process, new_topic
from tests.reference.sets import recompute, same_partition

ROOT = Path(__file__).resolve().parents[2]
PARTITIONS = 4
THETA = 20
SPLITS = [("a",), ("a", "x"), ("a", "y"), ("b",), ("b", "z")]


def _run_events(rng: random.Random, run_id: str, nodes: int) -> tuple[list[bytes], dict, set]:
    """A random DAG run: its events (node chunks, edge chunks, in shuffled order, the marker
    last), each node's (op, split), and its edges."""
    base = random.SystemRandom().getrandbits(60) + 1  # ids new to the store, on every run
    ids = [base + i for i in range(nodes)]
    split_of = {i: rng.choice(SPLITS) for i in ids}
    edges = set()
    for k, dst in enumerate(ids[1:], start=1):
        for _ in range(rng.choice((0, 1, 1, 2))):
            edges.add((ids[rng.randrange(k)], dst))
    events = []
    for split in SPLITS:
        members = [i for i in ids if split_of[i] == split]
        for start in range(0, len(members), 25):
            chunk = members[start : start + 25]
            block = NodeColumns("TOKEN", chunk, label="t", relation="R", split=list(split))
            events.append(encode_batch(run_id, "parallel", "t", 0, len(events), [block], None))
    edge_list = sorted(edges)
    rng.shuffle(edge_list)
    for start in range(0, len(edge_list), 30):
        chunk = edge_list[start : start + 30]
        columns = EdgeColumns([s for s, _ in chunk], [d for _, d in chunk])
        events.append(encode_batch(run_id, "parallel", "e", 0, len(events), [], columns))
    rng.shuffle(events)
    events.append(encode_run_complete(run_id, "parallel", nodes, len(edges)))
    return events, split_of, edges


def test_two_ingest_processes_write_the_same_runs_at_once_exactly(  # type: ignore[no-untyped-def]
    stack, client, neo4j_driver: neo4j.Driver, tmp_path: Path
) -> None:
    bootstrap = stack.settings.kafka_bootstrap
    topic = new_topic(bootstrap, PARTITIONS, "parallel")
    rng = random.Random(20261126)
    runs = {}
    producer = KafkaProducer(bootstrap_servers=bootstrap)
    for r in range(3):
        run_id = f"parallel-{r}-{uuid.uuid4().hex[:8]}"
        events, split_of, edges = _run_events(rng, run_id, 400)
        runs[run_id] = (split_of, edges)
        for i, value in enumerate(events[:-1]):
            partition = (i + r) % PARTITIONS
            producer.send(topic, value=value, partition=partition)
            if rng.random() < 0.35:  # re-sent: the other process gets it too
                producer.send(topic, value=value, partition=(partition + 2) % PARTITIONS)
        producer.send(topic, value=events[-1], partition=r % PARTITIONS)
    producer.flush()
    producer.close()

    env = {
        **os.environ,
        defaults.ENV_KAFKA_BOOTSTRAP: bootstrap,
        defaults.ENV_NEO4J_URI: stack.settings.neo4j_uri,
        defaults.ENV_TOPIC: topic,
        "SPARKPROV_INGEST_GROUP": f"parallel-{uuid.uuid4().hex[:8]}",
        "SPARKPROV_SET_THETA": str(THETA),
        "SPARKPROV_INGEST_BATCH_ROWS": "120",  # many small flushes: many concurrent writes
        "SPARKPROV_INGEST_TX_RECORDS": "25",  # each in several transactions, counted by each
        "SPARKPROV_INGEST_MAX_POLL_RECORDS": "3",
    }
    log = tmp_path / "ingest.log"
    processes = []
    for _ in range(2):
        env[defaults.ENV_INGEST_HTTP_ADDR] = f"127.0.0.1:{free_port()}"
        processes.append(ingest_process(env, log))
    try:
        for run_id in runs:
            try:
                stored = client.wait_for_run(run_id, timeout_s=240)
            except Exception as e:
                raise AssertionError(f"{run_id} not indexed\n{log.read_text()[-4000:]}") from e
            split_of, edges = runs[run_id]
            assert (stored.node_count, stored.edge_count) == (len(split_of), len(edges))
    finally:
        for process in processes:
            process.terminate()
        for process in processes:
            assert process.wait(30) == 0, log.read_text()[-3000:]
    text = log.read_text()
    assert "Traceback" not in text, text[-3000:]

    all_splits = {n: s for split_of, _ in runs.values() for n, s in split_of.items()}
    all_edges = {e for _, edges in runs.values() for e in edges}
    ids = sorted(all_splits)
    records, _, _ = neo4j_driver.execute_query(
        "UNWIND $ids AS i MATCH (n:Node {id: i}) "
        "RETURN n.id AS id, n.op AS op, n.run_id AS run, n.split AS split, "
        "sparkprov.component(n) AS c, sparkprov.set(n) AS s",
        ids=ids,
    )
    assert len(records) == len(ids)  # each node once (the id is unique) and none missing
    run_of = {n: run for run, (split_of, _) in runs.items() for n in split_of}
    for r in records:
        assert (r["op"], r["run"], tuple(r["split"])) == (
            "TOKEN",
            run_of[r["id"]],
            all_splits[r["id"]],
        )
    stored_edges, _, _ = neo4j_driver.execute_query(
        "UNWIND $ids AS i MATCH (a:Node {id: i})-[d:DERIVES]->(b:Node) "
        "RETURN a.id AS src, b.id AS dst, count(d) AS n",
        ids=ids,
    )
    assert {(e["src"], e["dst"]) for e in stored_edges} == all_edges
    assert all(e["n"] == 1 for e in stored_edges)  # no edge twice
    expected_component, expected_set = recompute(all_splits, sorted(all_edges), THETA)
    assert same_partition({r["id"]: r["c"] for r in records}, expected_component)
    assert same_partition({r["id"]: r["s"] for r in records}, expected_set)
    assert len(set(expected_set.values())) > len(set(expected_component.values()))  # refined
