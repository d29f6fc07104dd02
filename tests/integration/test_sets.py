"""Component and connected-set ids kept incrementally by the real ingest store on the real Neo4j,
checked against networkx on random DAGs with random splits, arriving in random batches and
orders, with duplicates and edges that arrive before their nodes (CSProv invariants). The ids
are read as every reader reads them, through the plugin (docs/graph-schema.md, "Component and
set ids"), and its procedures must list exactly the nodes those ids group."""

from __future__ import annotations

import random
import uuid

import neo4j
import networkx as nx
import pytest
from hypothesis import HealthCheck, given, settings

from ingest_service.store import Store
from tests.integration.batches import dags, flush_of, fresh_ids, items_of
from tests.reference.sets import dependencies, recompute, same_partition

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
        "UNWIND $ids AS i MATCH (n:Node {id: i}) "
        "RETURN n.id AS id, sparkprov.component(n) AS c, sparkprov.set(n) AS s",
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


def _read_dependencies(driver: neo4j.Driver, sets: list[int]) -> set[tuple[int, int]]:
    """Every set dependency as sparkprov.setDependencies reads it, both ways (they must agree)."""
    out = {}
    for direction in ("BACKWARD", "FORWARD"):
        records, _, _ = driver.execute_query(
            "UNWIND $sets AS s CALL sparkprov.setDependencies(s, $d) YIELD set RETURN s, set",
            sets=sets,
            d=direction,
        )
        if direction == "BACKWARD":
            out[direction] = {(r["set"], r["s"]) for r in records}
        else:
            out[direction] = {(r["s"], r["set"]) for r in records}
    assert out["BACKWARD"] == out["FORWARD"]
    return out["BACKWARD"]


def _with_records(driver: neo4j.Driver, sets: list[int]) -> set[int]:
    records, _, _ = driver.execute_query(
        "UNWIND $sets AS s MATCH (k:ConnectedSet {id: s}) RETURN k.id AS id", sets=sets
    )
    return {r["id"] for r in records}


def _groups(labels: dict[int, int]) -> dict[int, set[int]]:
    out: dict[int, set[int]] = {}
    for node, label in labels.items():
        out.setdefault(label, set()).add(node)
    return out


_COMPONENT_NODES = (
    "UNWIND $ids AS i CALL sparkprov.componentNodes(i) YIELD node "
    "RETURN i, collect(node.id) AS members"
)
_SET_NODES = (
    "UNWIND $ids AS i CALL sparkprov.setNodes(i) YIELD node RETURN i, collect(node.id) AS members"
)


def _listed(driver: neo4j.Driver, query: str, groups: dict[int, set[int]]) -> dict[int, set[int]]:
    """What a members procedure lists for each id of ``groups``."""
    records, _, _ = driver.execute_query(query, ids=sorted(groups))
    return {r["i"]: set(r["members"]) for r in records}


def _check_records(
    driver: neo4j.Driver,
    component: dict[int, int],
    connected: dict[int, int],
    deps: set[tuple[int, int]],
) -> None:
    """The procedures and records agree with the functions: componentNodes and setNodes list
    exactly the nodes of an id, a current component id is its own root with a parentless record
    of its size (or none for a lone node), a set has a record when it has more than one node and
    only then (naming its component), and SET_DEP joins two sets with records."""
    components = _groups(component)
    assert _listed(driver, _COMPONENT_NODES, components) == components
    records, _, _ = driver.execute_query(
        "UNWIND $ids AS c OPTIONAL MATCH (k:Component {id: c}) "
        "RETURN c, sparkprov.componentRoot(c) AS root, k.size AS size, k.parent AS parent",
        ids=sorted(components),
    )
    for r in records:
        assert r["root"] == r["c"] and r["parent"] is None
        assert (r["size"] or 1) == len(components[r["c"]])
    sets = _groups(connected)
    assert _listed(driver, _SET_NODES, sets) == sets
    records, _, _ = driver.execute_query(
        "UNWIND $ids AS s OPTIONAL MATCH (k:ConnectedSet {id: s}) "
        "RETURN s, k IS NOT NULL AS kept, k.size AS size, "
        "sparkprov.componentRoot(k.component_id) AS component",
        ids=sorted(sets),
    )
    kept = set()
    for r in records:
        members = sets[r["s"]]
        assert r["kept"] or len(members) == 1
        if r["kept"]:
            kept.add(r["s"])
            # Its size is its level set's (what theta is compared with): a set whose level set
            # grew past theta keeps only the members for which that level is the deepest.
            assert r["size"] >= len(members) and r["size"] > 1
            assert {component[m] for m in members} == {r["component"]}
    assert {s for dep in deps for s in dep} <= kept


@pytest.fixture(scope="module")
def store(neo4j_driver: neo4j.Driver) -> Store:
    s = Store(neo4j_driver, theta=THETA)
    s.ensure_schema()
    return s


@pytest.fixture(scope="module")
def sliced(neo4j_driver: neo4j.Driver) -> Store:
    """A store whose writes commit in transactions of 3 records (the service's tx_records)."""
    return Store(neo4j_driver, theta=THETA, tx_records=3)


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(dags(SPLITS, max_nodes=28))
def test_incremental_ids_equal_a_recomputation_and_keep_lineage_inside_sets(
    store: Store,
    sliced: Store,
    neo4j_driver: neo4j.Driver,
    dag: tuple[dict[int, tuple[str, ...]], list, int],
) -> None:
    splits, edges, seed = dag
    rng = random.Random(seed)
    run = f"sets-{uuid.uuid4().hex[:8]}"
    ids = fresh_ids(splits)
    items = items_of(dag)
    items += rng.sample(items, k=len(items) // 3)
    rng.shuffle(items)
    for batch in _batches(items, rng):
        # in the caller's transaction or in slices of their own, by turns
        (sliced if rng.random() < 0.5 else store).write(flush_of(run, batch, ids, splits))
        if rng.random() < 0.3:  # ids behind the data: the indexer now and then, part of it
            store.index(rng.randint(1, 20))
    store.drain_ids()

    node_ids = sorted(ids.values())
    graph, component, connected, deps = _stored(neo4j_driver, node_ids)
    assert set(graph.edges) == {(ids[a], ids[b]) for a, b in edges}
    expected_component, expected_set = recompute(
        {ids[n]: s for n, s in splits.items()}, list(graph.edges), THETA
    )
    # Component ids are networkx's weakly connected components; sets are Algorithm 3's.
    assert same_partition(component, expected_component)
    assert same_partition(connected, expected_set)
    # Set dependencies are exactly those recomputed from the edges: the procedure reads every
    # one, SET_DEP stores those between two sets with records (of more than one node).
    expected = dependencies(graph.edges, connected)
    assert _read_dependencies(neo4j_driver, sorted(set(connected.values()))) == expected
    kept = _with_records(neo4j_driver, sorted(set(connected.values())))
    assert deps == {(a, b) for a, b in expected if a in kept and b in kept}
    _check_records(neo4j_driver, component, connected, deps)
    # Every ancestor lies in the set-lineage, every descendant in the set-descendants.
    set_graph = nx.DiGraph(list(expected))
    set_graph.add_nodes_from(connected.values())
    for node in graph.nodes:
        lineage = nx.ancestors(set_graph, connected[node]) | {connected[node]}
        assert {connected[a] for a in nx.ancestors(graph, node)} <= lineage
        descendants = nx.descendants(set_graph, connected[node]) | {connected[node]}
        assert {connected[d] for d in nx.descendants(graph, node)} <= descendants
