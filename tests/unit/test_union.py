"""A bag union whose sides may hold the same node (a frame unioned with a projection of itself):
a row on both sides is two rows of the result, so it must be two members of an aggregate above,
each with its TENSOR, as Spark counts and sums it twice. Sides with nothing in common keep their
rows' nodes (no PLUS node added). Through the in-memory emitter: no broker."""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from capture_agent import ProvenanceSession
from capture_agent.emitters import MemoryEmitter
from sparkprov.events import Batch, RunComplete, decode

ROWS = [(1, "a", 2.0), (2, "a", 3.0), (3, "b", 5.0), (4, "b", 0.5), (5, "c", 7.0)]


def _graph(emitter: MemoryEmitter) -> tuple[dict[int, Any], set[tuple[int, int]], RunComplete]:
    events = [decode(v) for _, v in emitter.messages()]
    nodes: dict[int, Any] = {}
    edges: set[tuple[int, int]] = set()
    for e in events:
        if isinstance(e, Batch):
            logical = e.expanded()
            nodes.update((n["id"], n) for n in logical.rows())
            edges.update(zip(logical.edges["src"], logical.edges["dst"], strict=True))
    (done,) = [e for e in events if isinstance(e, RunComplete)]
    return nodes, edges, done


def _members(nodes: dict[int, Any], edges: set[tuple[int, int]]) -> dict[str, list[float]]:
    """Per output row (its ``k``), the values of the TENSOR nodes that feed its sum."""
    into: dict[int, list[int]] = defaultdict(list)
    for src, dst in edges:
        into[dst].append(src)
    out: dict[str, list[float]] = {}
    for node in nodes.values():
        if node["relation"] != "G":
            continue
        delta = (
            next(p for p in into[node["id"]] if nodes[p]["op"] == "DELTA")
            if node["op"] != "DELTA"
            else node["id"]
        )
        aggregates = [p for p in into[delta] if nodes[p]["op"] == "AGGREGATE"]
        sums = [a for a in aggregates if nodes[a]["value"] not in (None, "")]
        values = []
        for tensor in into[sums[0]]:
            (value,) = [p for p in into[tensor] if nodes[p]["op"] == "VALUE"]
            values.append(float(nodes[value]["value"]))
        out[node["props"]["a_k"]] = sorted(values)
    return out


def test_a_row_on_both_sides_is_two_members(spark: SparkSession) -> None:
    emitter = MemoryEmitter(spark)
    with ProvenanceSession(spark, "union", emitter=emitter) as prov:
        a = prov.source(spark.createDataFrame(ROWS, "id long, k string, v double"), "A")
        both = a.select("k", "v").union(a.filter(F.col("v") > 1).select("k", "v"))
        groups = both.groupBy("k").agg(F.sum("v").alias("s"))
        rows = {r["k"]: r["s"] for r in groups.named("G").collect()}
    nodes, edges, done = _graph(emitter)
    assert (done.node_count, done.edge_count) == (len(nodes), len(edges))
    members = _members(nodes, edges)
    assert members == {"a": [2.0, 2.0, 3.0, 3.0], "b": [0.5, 5.0, 5.0], "c": [7.0, 7.0]}
    assert {k: sum(v) for k, v in members.items()} == rows
    plus = [n for n in nodes.values() if n["op"] == "PLUS"]
    assert len(plus) == 4  # the right side's rows, each fed by its row's TOKEN
    tokens = {i for i, n in nodes.items() if n["op"] == "TOKEN"}
    assert all(Counter(s for s, d in edges if d == p["id"]).keys() <= tokens for p in plus)


def test_sides_with_nothing_in_common_keep_their_nodes(spark: SparkSession) -> None:
    emitter = MemoryEmitter(spark)
    with ProvenanceSession(spark, "union", emitter=emitter) as prov:
        a = prov.source(spark.createDataFrame(ROWS[:3], "id long, k string, v double"), "A")
        b = prov.source(spark.createDataFrame(ROWS[3:], "id long, k string, v double"), "B")
        a.select("k", "v").union(b.select("k", "v")).unionByName(
            prov.source(spark.createDataFrame([("d", 1.0)], "k string, v double"), "C")
        ).groupBy("k").agg(F.sum("v").alias("s")).named("G").collect()
    nodes, edges, _ = _graph(emitter)
    assert not [n for n in nodes.values() if n["op"] == "PLUS"]
    assert sum(len(v) for v in _members(nodes, edges).values()) == 6


def test_union_by_name_of_a_frame_and_itself(spark: SparkSession) -> None:
    emitter = MemoryEmitter(spark)
    with ProvenanceSession(spark, "union", emitter=emitter) as prov:
        a = prov.source(spark.createDataFrame(ROWS, "id long, k string, v double"), "A")
        a.unionByName(a).groupBy("k").agg(F.sum("v").alias("s")).named("G").collect()
    nodes, edges, done = _graph(emitter)
    assert (done.node_count, done.edge_count) == (len(nodes), len(edges))
    assert _members(nodes, edges) == {
        "a": [2.0, 2.0, 3.0, 3.0],
        "b": [0.5, 0.5, 5.0, 5.0],
        "c": [7.0, 7.0],
    }


def test_unpersist_drops_what_cache_cached(spark: SparkSession) -> None:
    """A tracked frame's ``unpersist`` uncaches the DataFrame its ``cache`` cached (its ``.df``
    is a projection of it, which Spark's cache manager does not find): a job that caches and
    unpersists per iteration (examples/cars.py) keeps nothing of earlier iterations cached."""
    manager = spark._jsparkSession.sharedState().cacheManager()
    spark.catalog.clearCache()
    with ProvenanceSession(spark, "unpersist", emitter=MemoryEmitter(spark)) as prov:
        frame = prov.source(spark.createDataFrame(ROWS, "id long, k string, x double"), "R")
        cached = frame.filter(F.col("x") > 1.0).cache()
        assert cached.count() == 4 and not manager.isEmpty()
        cached.df.unpersist()  # a projection of the cached plan: nothing is uncached
        assert not manager.isEmpty()
        assert cached.unpersist() is cached
        assert manager.isEmpty()
        assert sorted(r["id"] for r in cached.collect()) == [1, 2, 3, 5]
