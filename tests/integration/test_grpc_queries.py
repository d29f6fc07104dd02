"""The gRPC contract of the RPCs beyond traces, on the real query service: validation
(INVALID_ARGUMENT with a reason, NOT_FOUND for unknown ids and runs), hostile strings that stay
data (a module and relation named like Cypher injections), AVG recomputed on deletion, streamed
traces, and bearer-token auth on a second server switched on by its settings."""

from __future__ import annotations

import uuid

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from pyspark.sql import functions as F

from capture_agent import ProvenanceSession
from examples.people import run_workflow
from query_service import QuerySettings, create_server
from query_service.store import Store
from sparkprov.v1 import query_pb2, query_pb2_grpc

HOSTILE = [
    "x' OR 1=1 //",
    "`) DETACH DELETE n //",
    '"}) MATCH (m) DETACH DELETE m //',
    "$ids] OR true OR n[",
]


@pytest.fixture(scope="module")
def people(spark, client):  # type: ignore[no-untyped-def]
    run_id, _ = run_workflow(spark)
    client.wait_for_run(run_id)
    return run_id


def _code(call, request):  # type: ignore[no-untyped-def]
    with pytest.raises(grpc.RpcError) as info:
        call(request, timeout=30)
    assert info.value.details()
    return info.value.code()


INVALID = grpc.StatusCode.INVALID_ARGUMENT
NOT_FOUND = grpc.StatusCode.NOT_FOUND


def test_validation_of_every_rpc(client, people) -> None:  # type: ignore[no-untyped-def]
    s = client.stub
    (row,) = client.find_nodes(people, "AvgAge", {"City": "NY"})
    cases = [
        (s.Subgraph, query_pb2.SubgraphRequest(), INVALID),
        (s.Subgraph, query_pb2.SubgraphRequest(node_id="abc"), INVALID),
        (s.Subgraph, query_pb2.SubgraphRequest(node_id="123456789"), NOT_FOUND),
        (s.Subgraph, query_pb2.SubgraphRequest(node_id=row.id, limit=10**9), INVALID),
        (s.ZoomOut, query_pb2.ZoomRequest(modules=["m"]), INVALID),
        (s.ZoomOut, query_pb2.ZoomRequest(run_id=people), INVALID),
        (s.ZoomOut, query_pb2.ZoomRequest(run_id="no-such-run", modules=["m"]), NOT_FOUND),
        (s.ZoomOut, query_pb2.ZoomRequest(run_id=people, modules=["no-module"]), INVALID),
        (s.ZoomOut, query_pb2.ZoomRequest(run_id=people, modules=[""]), INVALID),
        (s.ZoomIn, query_pb2.ZoomRequest(run_id=people, modules=["m"]), INVALID),
        (s.PropagateDeletion, query_pb2.DeletionRequest(), INVALID),
        (s.PropagateDeletion, query_pb2.DeletionRequest(node_ids=["1x"]), INVALID),
        (s.PropagateDeletion, query_pb2.DeletionRequest(node_ids=["123456789"]), NOT_FOUND),
        (s.DependsOn, query_pb2.DependsOnRequest(on_node_ids=[row.id]), INVALID),
        (s.DependsOn, query_pb2.DependsOnRequest(node_id=row.id), INVALID),
        (
            s.DependsOn,
            query_pb2.DependsOnRequest(node_id=row.id, on_node_ids=["123456789"]),
            NOT_FOUND,
        ),
        (s.Provenance, query_pb2.ProvenanceRequest(), INVALID),
        (s.Provenance, query_pb2.ProvenanceRequest(node_id="123456789"), NOT_FOUND),
        (s.Provenance, query_pb2.ProvenanceRequest(node_id=row.id, semiring=42), INVALID),  # type: ignore[arg-type]
        (
            s.Provenance,
            query_pb2.ProvenanceRequest(
                node_id=row.id, semiring=5, token_probabilities={row.id: 1.5}
            ),  # type: ignore[arg-type]
            INVALID,
        ),
        (
            s.Provenance,
            query_pb2.ProvenanceRequest(node_id=row.id, token_costs={"abc": 1.0}),
            INVALID,
        ),
    ]
    for call, request, code in cases:
        assert _code(call, request) == code, request


def test_deletion_recomputes_avg(client, people) -> None:  # type: ignore[no-untyped-def]
    (steve,) = client.find_nodes(people, "Person1", {"Name": "Steve"})
    (ny,) = client.find_nodes(people, "AvgAge", {"City": "NY"})
    reply = client.stub.PropagateDeletion(
        query_pb2.DeletionRequest(node_ids=[steve.id]), timeout=30
    )
    assert ny.id not in reply.deleted_node_ids
    (avg,) = reply.recomputed
    assert (avg.function, avg.old_value, avg.new_value, avg.inputs) == ("AVG", "35.0", "40.0", 1)
    # Mary (20) was filtered out: she is not in the NY average, deleting her changes nothing
    (mary,) = client.find_nodes(people, "Person1", {"Name": "Mary"})
    reply = client.stub.PropagateDeletion(query_pb2.DeletionRequest(node_ids=[mary.id]), timeout=30)
    assert list(reply.deleted_node_ids) == [mary.id] and not reply.recomputed


def test_streamed_trace_equals_the_unary_trace(client, people) -> None:  # type: ignore[no-untyped-def]
    (ny,) = client.find_nodes(people, "AvgAge", {"City": "NY"})
    whole = client.backward_trace([ny.id])
    chunks = list(
        client.stub.BackwardTraceStream(
            query_pb2.TraceRequest(node_ids=[ny.id], chunk_size=2), timeout=30
        )
    )
    assert len(chunks) == (len(whole.nodes) + 1) // 2
    assert all(len(c.nodes) <= 2 for c in chunks)
    assert [n.id for c in chunks for n in c.nodes] == [n.id for n in whole.nodes]
    assert sorted((e.src, e.dst) for c in chunks for e in c.edges) == sorted(
        (e.src, e.dst) for e in whole.edges
    )
    assert chunks[-1].stats.nodes_reached == len(whole.nodes)
    with pytest.raises(grpc.RpcError) as info:
        list(client.stub.ForwardTraceStream(query_pb2.TraceRequest(node_ids=["x"]), timeout=30))
    assert info.value.code() == INVALID


def test_hostile_module_and_relation_names_stay_data(spark, client, neo4j_driver) -> None:  # type: ignore[no-untyped-def]
    before, _, _ = neo4j_driver.execute_query("MATCH (n:Node) RETURN count(n) AS n")
    name, relation = HOSTILE[1], HOSTILE[2]
    with ProvenanceSession(spark, workflow=f"hostile-{uuid.uuid4().hex[:6]}") as prov:
        rows = spark.createDataFrame([("a", 1), ("b", 2)], "k string, v long")
        with prov.module(name) as m:
            got = m.input(prov.source(rows, "In"), "Rows")
            out = m.output(got.filter(F.col("v") > 1), relation)
        out.collect()
    client.wait_for_run(prov.run_id)
    (row,) = client.find_nodes(prov.run_id, relation)
    view = client.stub.ZoomOut(
        query_pb2.ZoomRequest(run_id=prov.run_id, modules=[name]), timeout=30
    )
    assert {n.label for n in view.nodes if n.id in set(view.zoomed_node_ids)} == {name}
    assert row.id in {n.id for n in view.nodes}
    for hostile in HOSTILE:
        if hostile != name:
            zoom = query_pb2.ZoomRequest(run_id=prov.run_id, modules=[hostile])
            assert _code(client.stub.ZoomOut, zoom) == INVALID
        zoom = query_pb2.ZoomRequest(run_id=hostile, modules=[name])
        assert _code(client.stub.ZoomOut, zoom) == NOT_FOUND
        provenance = query_pb2.ProvenanceRequest(node_id=hostile)
        assert _code(client.stub.Provenance, provenance) == INVALID
    after, _, _ = neo4j_driver.execute_query("MATCH (n:Node) RETURN count(n) AS n")
    assert after[0]["n"] > before[0]["n"]  # nothing was deleted, the new run was added


@pytest.fixture(scope="module")
def secured(stack):  # type: ignore[no-untyped-def]
    settings = QuerySettings(
        grpc_addr="127.0.0.1:0", neo4j_uri=stack.settings.neo4j_uri, auth_token="s3cret-token"
    )
    store = Store.connect(settings.neo4j_uri)
    server, port = create_server(settings, store)
    server.start()
    channel = grpc.insecure_channel(f"127.0.0.1:{port}")
    yield channel
    channel.close()
    server.stop(grace=None)
    store.close()


def test_bearer_token_auth_when_configured(secured, people) -> None:  # type: ignore[no-untyped-def]
    stub = query_pb2_grpc.ProvenanceQueryStub(secured)
    request = query_pb2.ListRunsRequest(workflow="people")
    for metadata in (
        (),
        (("authorization", "Bearer wrong"),),
        (("authorization", "s3cret-token"),),
    ):
        with pytest.raises(grpc.RpcError) as info:
            stub.ListRuns(request, metadata=metadata, timeout=10)
        assert info.value.code() == grpc.StatusCode.UNAUTHENTICATED
    with pytest.raises(grpc.RpcError) as info:
        list(stub.BackwardTraceStream(query_pb2.TraceRequest(node_ids=["1"]), timeout=10))
    assert info.value.code() == grpc.StatusCode.UNAUTHENTICATED
    good = (("authorization", "Bearer s3cret-token"),)
    assert people in {r.run_id for r in stub.ListRuns(request, metadata=good, timeout=10).runs}
    health = health_pb2_grpc.HealthStub(secured)
    reply = health.Check(health_pb2.HealthCheckRequest(service=""), timeout=5)
    assert reply.status == health_pb2.HealthCheckResponse.SERVING
