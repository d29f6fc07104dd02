"""The emission seam (capture_agent.emitters): a captured job's lineage through the in-memory
emitter, no broker; the kill switch; the emitters' contract.

Its sessions keep every source column (values="all"): the tests find source rows by values
the queries need not read.
"""

from __future__ import annotations

import pickle
from typing import Any

import networkx as nx
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from bench.tpc_sql.oracle import emitted_graph
from capture_agent import ProvenanceSession
from capture_agent.emitters import KafkaEmitter, MemoryEmitter, NoopEmitter
from capture_agent.publisher import PublisherConfig
from sparkprov.events import ATTRIBUTE_PREFIX, Batch, RunComplete, RunStarted, decode

PEOPLE = [
    (1, "Steve", 30, "NY"),
    (2, "Mark", 40, "NY"),
    (3, "Ann", 20, "LA"),
    (4, "Zoe", 50, "LA"),
    (5, "Bo", 25, "SF"),
    (6, "Al", 35, "XX"),  # no department: the join drops it
]
DEPTS = [("NY", "east"), ("LA", "west"), ("SF", "west")]


def _pipeline(prov: ProvenanceSession, spark: SparkSession) -> list[tuple[Any, ...]]:
    people = prov.source(spark.createDataFrame(PEOPLE, ["pid", "name", "age", "city"]), "People")
    depts = prov.source(spark.createDataFrame(DEPTS, ["city", "region"]), "Depts")
    adults = people.filter(F.col("age") >= 25)
    joined = adults.join(depts, "city")
    totals = joined.groupBy("region").agg(F.sum("age").alias("total")).named("Totals")
    return sorted(tuple(r) for r in totals.collect())


def test_a_captured_job_through_the_memory_emitter_gives_the_whole_graph(spark) -> None:  # type: ignore[no-untyped-def]
    emitter = MemoryEmitter(spark)
    with ProvenanceSession(spark, "emitters", values="all", emitter=emitter) as prov:
        rows = _pipeline(prov, spark)
    emitted = prov.counts()
    assert rows == [("east", 70), ("west", 75)]

    events = [decode(value) for _, value in emitter.messages()]
    assert isinstance(events[0], RunStarted)
    complete = [e for e in events if isinstance(e, RunComplete)]
    assert len(complete) == 1 and not complete[0].failed
    assert (complete[0].node_count, complete[0].edge_count) == emitted

    batches = [e.expanded() for e in events if isinstance(e, Batch)]  # the logical graph
    nodes = {n["id"]: n for b in batches for n in b.rows()}
    graph = nx.DiGraph()
    graph.add_nodes_from(nodes)
    for b in batches:
        graph.add_edges_from(zip(b.edges["src"], b.edges["dst"], strict=True))
    # Every emitted node and edge counted once by the marker, and no edge to a node never sent.
    assert (len(nodes), sum(b.edge_count for b in batches)) == emitted
    assert set(graph.nodes) == set(nodes)

    def tokens(relation: str, key: str) -> dict[int, str]:
        return {
            i: n["props"][ATTRIBUTE_PREFIX + key]
            for i, n in nodes.items()
            if n["op"] == "TOKEN" and n["relation"] == relation
        }

    people, depts = tokens("People", "name"), tokens("Depts", "city")
    assert sorted(people.values()) == sorted(p[1] for p in PEOPLE)
    region_of = dict(DEPTS)
    for node_id, node in nodes.items():
        if node["relation"] != "Totals":
            continue
        region = node["props"][ATTRIBUTE_PREFIX + "region"]
        ancestors = nx.ancestors(graph, node_id)
        expected = {p[1] for p in PEOPLE if p[2] >= 25 and region_of.get(p[3]) == region}
        assert {people[a] for a in ancestors if a in people} == expected
        assert {depts[a] for a in ancestors if a in depts} == {c for c, r in DEPTS if r == region}


def test_the_kill_switch_emits_nothing_and_computes_the_same(spark) -> None:  # type: ignore[no-untyped-def]
    emitter = MemoryEmitter(spark)
    with ProvenanceSession(spark, "emitters", emitter=emitter, enabled=False) as prov:
        rows = _pipeline(prov, spark)
        assert isinstance(prov.emitter, NoopEmitter) and not prov.enabled
    assert rows == [("east", 70), ("west", 75)]
    assert emitter.messages() == []


def test_emitters_travel_to_executors_and_describe_their_destination(spark) -> None:  # type: ignore[no-untyped-def]
    kafka = KafkaEmitter(PublisherConfig("127.0.0.1:9092", "t", timeout_s=7))
    assert pickle.loads(pickle.dumps(kafka)) == kafka
    assert kafka.timeout_s == 7 and "127.0.0.1:9092" in kafka.describe()
    noop = NoopEmitter()
    assert noop.describe() == "nowhere"
    sender = noop.sender(b"k")
    sender.send(b"x")
    sender.close()
    memory = MemoryEmitter(spark)
    copy = pickle.loads(pickle.dumps(memory))
    assert copy.describe() == "memory"


def test_a_projection_after_an_operator_leaves_its_fresh_rows_to_be_named(spark) -> None:  # type: ignore[no-untyped-def]
    """join -> withColumn -> select -> named: the join's TIMES rows carry the name and the
    projected values (no PLUS per row); groupBy -> withColumn -> named: the DELTA rows do."""
    emitter = MemoryEmitter(spark)
    with ProvenanceSession(spark, "named-after-projection", values="all", emitter=emitter) as prov:
        people = prov.source(
            spark.createDataFrame(PEOPLE, ["pid", "name", "age", "city"]), "People"
        )
        depts = prov.source(spark.createDataFrame(DEPTS, ["city", "region"]), "Depts")
        joined = people.join(depts, "city")
        enriched = (
            joined.withColumn("older", F.col("age") + 1)
            .select("name", "region", "older")
            .named("Enriched")
        )
        assert sorted(tuple(r) for r in enriched.collect())[0] == ("Ann", "west", 21)
        totals = (
            people.filter(F.col("age") >= 25)
            .join(depts, "city")
            .groupBy("region")
            .agg(F.sum("age").alias("total"))
            .withColumn("double", F.col("total") * 2)
            .named("Totals")
        )
        assert sorted(tuple(r) for r in totals.collect()) == [("east", 70, 140), ("west", 75, 150)]
    emitted = prov.counts()
    nodes, graph = emitted_graph(emitter)
    assert (len(nodes), graph.number_of_edges()) == emitted
    assert not [n for n in nodes.values() if n["op"] == "PLUS"]
    named = {i: n for i, n in nodes.items() if n["relation"] == "Enriched"}
    assert len(named) == 5 and {n["op"] for n in named.values()} == {"TIMES"}
    person = {
        i: n["props"][ATTRIBUTE_PREFIX + "name"]
        for i, n in nodes.items()
        if n["relation"] == "People"
    }
    city = {
        i: n["props"][ATTRIBUTE_PREFIX + "city"]
        for i, n in nodes.items()
        if n["relation"] == "Depts"
    }
    for i, n in named.items():
        props = n["props"]
        assert set(props) >= {ATTRIBUTE_PREFIX + c for c in ("name", "region", "older")}
        parents = set(graph.predecessors(i))
        assert len(parents) == 2 and {person.get(p) for p in parents} - {None} == {
            props[ATTRIBUTE_PREFIX + "name"]
        }
        assert len(parents & set(city)) == 1
    deltas = [n for n in nodes.values() if n["relation"] == "Totals"]
    assert len(deltas) == 2 and {n["op"] for n in deltas} == {"DELTA"}
    assert {n["props"][ATTRIBUTE_PREFIX + "double"] for n in deltas} == {"140", "150"}


def test_the_run_marker_waits_for_the_runs_jobs_that_still_run(spark) -> None:  # type: ignore[no-untyped-def]
    """A job of the run may outlive the action that started it (adaptive execution stops
    awaiting a broadcast whose join came out empty; TPC-DS q96 did). Here a job runs on in a
    thread the run started when the ``with`` block ends: the marker must count what it
    publishes, so the run's end waits for it."""
    import time

    from pyspark import InheritableThread

    @F.udf("boolean")
    def slow(x):  # type: ignore[no-untyped-def]
        import time

        time.sleep(1.5)
        return True

    emitter = MemoryEmitter(spark)
    tracker = spark.sparkContext.statusTracker()
    with ProvenanceSession(spark, "emitters", values="all", emitter=emitter) as prov:
        rows = spark.range(4, numPartitions=2).filter(slow(F.col("id")))
        late = prov.source(rows, "Late").named("LateOut")
        worker = InheritableThread(target=late.collect)  # the run's job tag goes along
        worker.start()
        deadline = time.monotonic() + 30
        while not tracker.getActiveJobsIds() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert tracker.getActiveJobsIds(), "the job never started"
    # The Spark job, not the thread: the thread may still turn the job's result into rows.
    still_running = list(tracker.getActiveJobsIds())
    worker.join()
    assert not still_running, "the run ended while its job still ran"
    events = [decode(value) for _, value in emitter.messages()]
    (complete,) = [e for e in events if isinstance(e, RunComplete)]
    nodes = {n["id"] for e in events if isinstance(e, Batch) for n in e.expanded().rows()}
    assert len(nodes) == 8  # four source rows, four named output rows
    assert complete.node_count == len(nodes)
