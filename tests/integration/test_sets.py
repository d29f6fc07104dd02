"""Component and connected-set ids kept incrementally by the real ingest store on the real Neo4j,
checked against networkx on random DAGs with random splits, arriving in random batches and
orders, with duplicates and edges that arrive before their nodes (CSProv invariants)."""

from __future__ import annotations

import random
import uuid

import neo4j
import networkx as nx
import pytest
from hypothesis import HealthCheck, given, settings

from ingest_service.sets import dependencies, recompute, same_partition
from ingest_service.store import Store
from tests.integration.batches import dags, flush_of, fresh_ids, items_of

SPLITS = [("a",), ("a", "x"), ("a", "y"), ("b",), ("b", "z"), ()]
THETA = 4  # small, so sets cross it and get refined by their sub-splits


def _batches(items: list[tuple[str, object]], rng: random.Random) -> list[list[tuple[str, object]]]:
    out = []
    i = 0
    while i < len(items):
        size = rng.randint(1, 12)
        out.append(items[i : i + size])
        i += size
    return out


def _stored(
    driver: neo4j.Driver, ids: list[int]
) -> tuple[nx.DiGraph, dict[int, int], dict[int, int], set[tuple[int, int]]]:
    records, _, _ = driver.execute_query(
        "UNWIND $ids AS i MATCH (n:Node {id: i}) RETURN n.id AS id, n.component_id AS c, "
        "n.set_id AS s",
        ids=ids,
    )
    component = {r["id"]: r["c"] for r in records}
    connected = {r["id"]: r["s"] for r in records}
    records, _, _ = driver.execute_query(
        "UNWIND $ids AS i MATCH (a:Node {id: i})-[:DERIVES]->(b:Node) RETURN a.id AS a, b.id AS b",
        ids=ids,
    )
    graph = nx.DiGraph()
    graph.add_nodes_from(ids)
    graph.add_edges_from((r["a"], r["b"]) for r in records)
    sets = sorted(set(connected.values()))
    records, _, _ = driver.execute_query(
        "UNWIND $sets AS s MATCH (a:ConnectedSet {id: s})-[:SET_DEP]->(b:ConnectedSet) "
        "RETURN a.id AS a, b.id AS b",
        sets=sets,
    )
    deps = {(r["a"], r["b"]) for r in records}
    return graph, component, connected, deps


@pytest.fixture(scope="module")
def store(neo4j_driver: neo4j.Driver) -> Store:
    s = Store(neo4j_driver, theta=THETA)
    s.ensure_schema()
    return s


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(dags(SPLITS, max_nodes=28))
def test_incremental_ids_equal_a_recomputation_and_keep_lineage_inside_sets(
    store: Store, neo4j_driver: neo4j.Driver, dag: tuple[dict[int, tuple[str, ...]], list, int]
) -> None:
    splits, edges, seed = dag
    rng = random.Random(seed)
    run = f"sets-{uuid.uuid4().hex[:8]}"
    ids = fresh_ids(splits)
    items = items_of(dag)
    items += rng.sample(items, k=len(items) // 3)
    rng.shuffle(items)
    for batch in _batches(items, rng):
        store.write(flush_of(run, batch, ids, splits))

    node_ids = sorted(ids.values())
    graph, component, connected, deps = _stored(neo4j_driver, node_ids)
    assert set(graph.edges) == {(ids[a], ids[b]) for a, b in edges}
    expected_component, expected_set = recompute(
        {ids[n]: s for n, s in splits.items()}, list(graph.edges), THETA
    )
    # Component ids are networkx's weakly connected components; sets are Algorithm 3's.
    assert same_partition(component, expected_component)
    assert same_partition(connected, expected_set)
    # Set dependencies are exactly those recomputed from the edges.
    assert deps == dependencies(graph.edges, connected)
    # Every ancestor lies in the set-lineage, every descendant in the set-descendants.
    set_graph = nx.DiGraph(list(deps))
    set_graph.add_nodes_from(connected.values())
    for node in graph.nodes:
        lineage = nx.ancestors(set_graph, connected[node]) | {connected[node]}
        assert {connected[a] for a in nx.ancestors(graph, node)} <= lineage
        descendants = nx.descendants(set_graph, connected[node]) | {connected[node]}
        assert {connected[d] for d in nx.descendants(graph, node)} <= descendants
