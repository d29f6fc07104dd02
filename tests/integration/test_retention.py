"""Retention on the real stack: DeleteRun, ``sparkprov runs delete`` and the age limit remove a
run's lineage (nodes, edges, the id records they name, the run) and leave every other run's
nodes, ids and answers exactly as they were; a run tied to another (shared lineage) is refused
unless followed, an incomplete one unless forced, an unknown one is NOT_FOUND."""

from __future__ import annotations

import random
import time
import uuid

import neo4j
import pytest
from click.testing import CliRunner
from kafka import KafkaProducer

from ingest_service import retention
from sparkprov import defaults
from sparkprov.cli import main as cli
from sparkprov.events import EdgeColumns, NodeColumns, encode_batch, encode_run_complete
from sparkprov.query_errors import FailedPrecondition, NotFound

WORKFLOW = "retention"


def _events(run_id: str, ids: list[int], edges: list[tuple[int, int]], *, marker: bool = True):
    """A run's events: its nodes as TOKENs split in two relations, its edges, its marker."""
    events = []
    for k, relation in enumerate(("A", "B")):
        chunk = ids[k::2]
        block = NodeColumns("TOKEN", chunk, label="t", relation=relation, split=[relation])
        events.append(encode_batch(run_id, WORKFLOW, "t", 0, k, [block], None))
    if edges:
        columns = EdgeColumns([s for s, _ in edges], [d for _, d in edges])
        events.append(encode_batch(run_id, WORKFLOW, "e", 0, 2, [], columns))
    if marker:
        events.append(encode_run_complete(run_id, WORKFLOW, len(ids), len(edges)))
    return events


def _run(rng: random.Random, nodes: int, foreign: list[int] = ()):
    """A random DAG over fresh ids; edges from ``foreign`` nodes (another run's) tie it."""
    base = random.SystemRandom().getrandbits(60) + 1
    ids = [base + i for i in range(nodes)]
    edges = {(ids[rng.randrange(k)], ids[k]) for k in range(1, nodes) for _ in range(2)}
    edges |= {(f, ids[rng.randrange(nodes)]) for f in foreign}
    return ids, sorted(edges)


def _state(driver: neo4j.Driver, run_id: str) -> dict[int, tuple]:
    """Each of the run's nodes with its op, its current ids and its parents."""
    records, _, _ = driver.execute_query(
        "MATCH (n:Node {run_id: $run}) OPTIONAL MATCH (p:Node)-[:DERIVES]->(n) "
        "RETURN n.id AS id, n.op AS op, sparkprov.component(n) AS c, sparkprov.set(n) AS s, "
        "collect(p.id) AS parents",
        run=run_id,
    )
    return {r["id"]: (r["op"], r["c"], r["s"], sorted(r["parents"])) for r in records}


def _leftovers(driver: neo4j.Driver, run_id: str, ids: list[int]) -> dict[str, int]:
    records, _, _ = driver.execute_query(
        "OPTIONAL MATCH (n:Node) WHERE n.id IN $ids OR n.run_id = $run "
        "WITH count(n) AS nodes "
        "OPTIONAL MATCH (c:Component) WHERE c.id IN $ids WITH nodes, count(c) AS components "
        "OPTIONAL MATCH (s:ConnectedSet) WHERE s.component_id IN $ids "
        "WITH nodes, components, count(s) AS sets "
        "OPTIONAL MATCH (l:LevelSet) WHERE l.key IN $keys "
        "WITH nodes, components, sets, count(l) AS levels "
        "OPTIONAL MATCH (r:Run {run_id: $run}) "
        "RETURN nodes, components, sets, levels, count(r) AS runs",
        ids=ids,
        run=run_id,
        keys=[f"{k}:{i}" for i in ids for k in range(3)],
    )
    return dict(records[0])


@pytest.fixture(scope="module")
def runs(stack, client):  # type: ignore[no-untyped-def]
    """Five runs on the stack: kept (indexed), gone (indexed), tied_a <- tied_b (b's edges
    leave a's nodes), aged (indexed), and dead (no marker)."""
    rng = random.Random(20261126)
    suffix = uuid.uuid4().hex[:8]
    made = {}
    kept = _run(rng, 60)
    gone = _run(rng, 60)
    tied_a = _run(rng, 40)
    tied_b = _run(rng, 40, foreign=tied_a[0][:3])
    aged = _run(rng, 30)
    dead = _run(rng, 20)
    producer = KafkaProducer(bootstrap_servers=stack.settings.kafka_bootstrap)
    for name, (ids, edges) in {
        "kept": kept,
        "gone": gone,
        "tied_a": tied_a,
        "tied_b": tied_b,
        "aged": aged,
        "dead": dead,
    }.items():
        run_id = f"retention-{name}-{suffix}"
        made[name] = (run_id, ids, edges)
        for value in _events(run_id, ids, edges, marker=name != "dead"):
            producer.send(defaults.TOPIC, value=value)
    producer.flush()
    producer.close()
    for name, (run_id, _, _) in made.items():
        if name != "dead":
            client.wait_for_run(run_id, timeout_s=120)
    return made


def _wait_indexed_without_marker(driver: neo4j.Driver, run_id: str, nodes: int) -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        records, _, _ = driver.execute_query(
            "MATCH (r:Run {run_id: $run}) OPTIONAL MATCH (w:IdWork) WHERE $run IN w.runs "
            "RETURN r.stored_nodes AS stored, count(w) AS pending",
            run=run_id,
        )
        if records and records[0]["stored"] == nodes and records[0]["pending"] == 0:
            return
        time.sleep(0.5)
    raise AssertionError(f"{run_id} was not stored and indexed in time")


def test_delete_run_removes_its_lineage_and_leaves_the_others_exact(  # type: ignore[no-untyped-def]
    runs, client, neo4j_driver
) -> None:
    kept_run, kept_ids, _ = runs["kept"]
    gone_run, gone_ids, gone_edges = runs["gone"]
    before = _state(neo4j_driver, kept_run)
    trace = client.backward_trace([str(kept_ids[-1])])
    assert len(before) == len(kept_ids)
    assert _leftovers(neo4j_driver, gone_run, gone_ids)["components"] > 0  # ids were kept

    deleted = client.delete_run(gone_run)

    assert deleted.run_ids == (gone_run,)
    assert (deleted.nodes, deleted.relationships) == (len(gone_ids), len(gone_edges))
    assert _leftovers(neo4j_driver, gone_run, gone_ids) == {
        "nodes": 0,
        "components": 0,
        "sets": 0,
        "levels": 0,
        "runs": 0,
    }
    assert gone_run not in {r.run_id for r in client.runs(WORKFLOW)}
    assert _state(neo4j_driver, kept_run) == before
    again = client.backward_trace([str(kept_ids[-1])])
    assert {n.id for n in again.nodes} == {n.id for n in trace.nodes}
    with pytest.raises(NotFound):
        client.delete_run(gone_run)
    with pytest.raises(NotFound):
        client.backward_trace([str(gone_ids[-1])])


def test_a_tied_run_is_refused_unless_followed(runs, client, neo4j_driver) -> None:  # type: ignore[no-untyped-def]
    a_run, a_ids, _ = runs["tied_a"]
    b_run, b_ids, _ = runs["tied_b"]
    for asked, other in ((a_run, b_run), (b_run, a_run)):
        with pytest.raises(FailedPrecondition) as refused:
            client.delete_run(asked)
        assert other in refused.value.details and "follow" in refused.value.details
    assert len(_state(neo4j_driver, a_run)) == len(a_ids)  # nothing deleted on refusal
    deleted = client.delete_run(a_run, follow=True)
    assert set(deleted.run_ids) == {a_run, b_run}
    for run_id, ids in ((a_run, a_ids), (b_run, b_ids)):
        assert set(_leftovers(neo4j_driver, run_id, ids).values()) == {0}


def test_an_incomplete_run_needs_force_and_the_cli_deletes(  # type: ignore[no-untyped-def]
    stack, runs, neo4j_driver
) -> None:
    dead_run, dead_ids, _ = runs["dead"]
    _wait_indexed_without_marker(neo4j_driver, dead_run, len(dead_ids))
    address = ["--address", stack.settings.grpc_addr]
    refused = CliRunner().invoke(cli, [*address, "runs", "delete", dead_run])
    assert refused.exit_code == 7, refused.output
    assert "not complete" in refused.output
    done = CliRunner().invoke(cli, [*address, "runs", "delete", dead_run, "--force"])
    assert done.exit_code == 0, done.output
    assert f"deleted 1 run(s): {dead_run}" in done.output
    assert set(_leftovers(neo4j_driver, dead_run, dead_ids).values()) == {0}
    unknown = CliRunner().invoke(cli, [*address, "runs", "delete", "no-such-run"])
    assert unknown.exit_code == 3


def test_the_age_limit_deletes_only_runs_past_it(runs, client, neo4j_driver) -> None:  # type: ignore[no-untyped-def]
    aged_run, aged_ids, _ = runs["aged"]
    kept_run, kept_ids, _ = runs["kept"]
    # The aged run completed at 1970-01-01T00:00:00.5: past an age limit of 9 s measured from
    # 00:00:10; every other run of the stack completed, started or was first stored after it.
    neo4j_driver.execute_query(
        "MATCH (r:Run {run_id: $run}) SET r.completed_unix_ms = 500", run=aged_run
    )
    deleted = retention.expire(neo4j_driver, max_age_s=9.0, now_ms=10_000)
    assert deleted.runs == [aged_run]
    assert set(_leftovers(neo4j_driver, aged_run, aged_ids).values()) == {0}
    assert len(_state(neo4j_driver, kept_run)) == len(kept_ids)
    assert client.backward_trace([str(kept_ids[-1])]).nodes
