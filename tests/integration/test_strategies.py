"""All trace strategies on the real Neo4j, over graphs written by the real ingest store (so the
component ids, connected sets and set dependencies are ingest's own): random DAGs with random
splits and a small theta, so sets are refined; every strategy must return networkx's ancestors
and descendants with the same edges, and CONNECTED_SET must read no more edges than COMPONENT."""

from __future__ import annotations

import random
import uuid

import neo4j
import networkx as nx
import pytest
from hypothesis import HealthCheck, given, settings

from ingest_service.store import Store as IngestStore
from query_service.model import Direction, Strategy
from query_service.store import Store
from query_service.traces import TraceQuery
from sparkprov import query_errors
from sparkprov.query_model import Strategy as WireStrategy
from tests.integration.batches import dags, flush_of, fresh_ids, items_of
from tests.reference.neo4j_reads import Neo4jReads
from tests.reference.traces import trace

SPLITS = [("a",), ("a", "x"), ("a", "y"), ("b",), ("b", "z"), ("c",)]
THETA = 4
STRATEGIES = (Strategy.RECURSIVE, Strategy.COMPONENT, Strategy.CONNECTED_SET, Strategy.AUTO)


@pytest.fixture(scope="module")
def stores(neo4j_driver: neo4j.Driver) -> tuple[IngestStore, Store]:
    ingest = IngestStore(neo4j_driver, theta=THETA)
    ingest.ensure_schema()
    return ingest, Neo4jReads(neo4j_driver)


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(dags(SPLITS, max_nodes=24))
def test_every_strategy_returns_the_same_trace(stores, dag) -> None:  # type: ignore[no-untyped-def]
    ingest, store = stores
    splits, edges, seed = dag
    rng = random.Random(seed)
    run = f"strategies-{uuid.uuid4().hex[:8]}"
    ids = fresh_ids(splits)
    items = items_of(dag)
    rng.shuffle(items)
    i = 0
    while i < len(items):
        size = rng.randint(1, 10)
        ingest.write(flush_of(run, items[i : i + size], ids, splits))
        i += size
    ingest.drain_ids()  # the strategies read component and set ids: current ones

    graph = nx.DiGraph([(ids[a], ids[b]) for a, b in edges])
    graph.add_nodes_from(ids.values())
    for node in graph.nodes:
        for direction, reach in (
            (Direction.BACKWARD, nx.ancestors),
            (Direction.FORWARD, nx.descendants),
        ):
            expected = reach(graph, node) | {node}
            results = {
                s: trace(store, TraceQuery([node], direction, strategy=s)) for s in STRATEGIES
            }
            for s, result in results.items():
                assert {n.id for n in result.nodes} == expected, (s, direction)
                assert result.nodes[0].id == node
                edges_got = {(e.src, e.dst) for e in result.edges}
                assert edges_got == {(e.src, e.dst) for e in results[Strategy.RECURSIVE].edges}
            cs, cc = results[Strategy.CONNECTED_SET], results[Strategy.COMPONENT]
            assert cs.edges_fetched <= cc.edges_fetched
            assert cs.sets_visited >= 1


def test_strategies_through_grpc(client, stores) -> None:  # type: ignore[no-untyped-def]
    ingest, _ = stores
    # a chain a0 -> a1 -> a2 (split a) -> b0 (split b) <- c0 <- c1 (split c)
    splits = {0: ("a",), 1: ("a",), 2: ("a",), 3: ("b",), 4: ("c",), 5: ("c",)}
    edges = [(0, 1), (1, 2), (2, 3), (5, 4), (4, 3)]
    run = f"strategies-{uuid.uuid4().hex[:8]}"
    ids = {n: random.SystemRandom().getrandbits(62) + 1 for n in splits}
    items = [("node", n) for n in splits] + [("edge", e) for e in edges]
    ingest.write(flush_of(run, items, ids, splits))  # type: ignore[arg-type]
    ingest.drain_ids()
    replies = {}
    for strategy in WireStrategy:
        replies[strategy] = client.backward_trace([str(ids[2])], strategy=strategy)
    for reply in replies.values():
        assert {n.id for n in reply.nodes} == {str(ids[i]) for i in (0, 1, 2)}
        assert len(reply.edges) == 2
    connected = replies[WireStrategy.CONNECTED_SET].stats
    assert connected.strategy == WireStrategy.CONNECTED_SET
    assert connected.sets_visited == 1 and connected.edges_fetched == 2
    assert replies[WireStrategy.COMPONENT].stats.edges_fetched == 5
    assert replies[WireStrategy.AUTO].stats.strategy != WireStrategy.AUTO  # AUTO names what ran
    with pytest.raises(query_errors.InvalidArgument):
        client.backward_trace(["x"])
