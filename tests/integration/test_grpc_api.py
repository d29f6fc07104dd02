"""The gRPC contract on the real query service: validation, NOT_FOUND, health, reflection, and
hostile strings that must stay data (parameterized Cypher)."""

from __future__ import annotations

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

from sparkprov.query_errors import InvalidArgument, NotFound, QueryError
from sparkprov.v1 import query_pb2


@pytest.fixture(scope="module")
def run_id(people_run):  # type: ignore[no-untyped-def]
    return people_run[0]


@pytest.mark.parametrize(
    ("node_ids", "options", "error"),
    [
        ([], {}, InvalidArgument),
        (["abc"], {}, InvalidArgument),
        (["99999999999999999999"], {}, InvalidArgument),
        (["1"], {"limit": 10**9}, InvalidArgument),
        (["123456789"], {}, NotFound),
        (["1"], {"strategy": 42}, InvalidArgument),
    ],
)
def test_trace_rejects_bad_requests(client, node_ids, options, error) -> None:  # type: ignore[no-untyped-def]
    for call in (client.backward_trace, client.forward_trace):
        with pytest.raises(QueryError) as info:
            call(node_ids, **options)
        assert type(info.value) is error and info.value.details


def test_find_nodes_validation(client, run_id) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(InvalidArgument):
        client.find_nodes("", "AvgAge")
    with pytest.raises(InvalidArgument):
        client.find_nodes(run_id, "")
    with pytest.raises(NotFound) as info:
        client.find_nodes("nope", "x")
    assert info.value.code == grpc.StatusCode.NOT_FOUND and "nope" in info.value.details


def test_find_nodes_filters_by_attribute_values(client, run_id) -> None:  # type: ignore[no-untyped-def]
    assert len(client.find_nodes(run_id, "Person1")) == 4
    ny = client.find_nodes(run_id, "Person1", {"City": "NY"})
    assert sorted(n.attributes["Name"] for n in ny) == ["Mark", "Mary", "Steve"]
    both = client.find_nodes(run_id, "Person1", {"City": "NY", "Age": "40"})
    assert [n.attributes["Name"] for n in both] == ["Mark"]
    assert len(client.find_nodes(run_id, "Person1", limit=2)) == 2
    assert client.find_nodes(run_id, "Person1", {"City": "Paris"}) == []


@pytest.mark.parametrize(
    "hostile",
    [
        "x' OR 1=1 //",
        "`) DETACH DELETE n //",
        '"}) MATCH (m) DETACH DELETE m //',
        "Name] OR true OR n[",
    ],
)
def test_hostile_strings_stay_data(client, run_id, hostile) -> None:  # type: ignore[no-untyped-def]
    before = len(client.find_nodes(run_id, "Person1"))
    assert client.find_nodes(run_id, "Person1", {hostile: "NY"}) == []
    assert client.find_nodes(run_id, "Person1", {"City": hostile}) == []
    assert client.find_nodes(run_id, hostile) == []
    with pytest.raises(NotFound):
        client.find_nodes(hostile, "x")
    assert len(client.find_nodes(run_id, "Person1")) == before == 4


def test_list_runs(client, run_id) -> None:  # type: ignore[no-untyped-def]
    runs = {r.run_id: r for r in client.runs("people")}
    assert run_id in runs
    run = runs[run_id]
    assert run.workflow == "people" and run.complete and not run.failed
    assert run.node_count == run.expected_node_count == 17
    assert all(r.workflow == "people" for r in runs.values())
    assert run_id not in {r.run_id for r in client.runs("no-such-workflow")}


def test_depth_and_limit(client, run_id) -> None:  # type: ignore[no-untyped-def]
    row = client.find_nodes(run_id, "AvgAge", {"City": "NY"})[0]
    one = client.backward_trace([row.id], max_depth=1)
    assert {n.relation for n in one.nodes if n.relation} == {"AvgAge", "Person2"}
    assert one.stats.levels == 1 and not one.truncated
    cut = client.backward_trace([row.id], limit=3)
    assert cut.truncated and len(cut.nodes) == 3 and cut.nodes[0].id == row.id
    kept = {n.id for n in cut.nodes}
    assert all(e.src in kept and e.dst in kept for e in cut.edges)


def test_health_and_reflection(stack) -> None:  # type: ignore[no-untyped-def]
    with grpc.insecure_channel(stack.settings.grpc_addr) as channel:
        health = health_pb2_grpc.HealthStub(channel)
        for service in ("", "sparkprov.v1.ProvenanceQuery"):
            reply = health.Check(health_pb2.HealthCheckRequest(service=service), timeout=5)
            assert reply.status == health_pb2.HealthCheckResponse.SERVING
        stub = reflection_pb2_grpc.ServerReflectionStub(channel)
        request = reflection_pb2.ServerReflectionRequest(list_services="")
        replies = list(stub.ServerReflectionInfo(iter([request]), timeout=5))
        names = {s.name for s in replies[0].list_services_response.service}
        assert "sparkprov.v1.ProvenanceQuery" in names


def test_calls_without_a_deadline(client, run_id) -> None:  # type: ignore[no-untyped-def]
    """A client that sets no deadline (grpcurl's default) gets its answer: the service once
    passed gRPC's "infinite" remaining time to Neo4j as a transaction timeout and failed."""
    row = client.find_nodes(run_id, "AvgAge", {"City": "NY"})[0]
    request = query_pb2.TraceRequest(node_ids=[str(row.id)])
    for strategy in (0, 1, 2, 3):
        request.strategy = strategy
        reply = client.stub.BackwardTrace(request)  # no timeout
        assert str(row.id) in {n.id for n in reply.nodes}
        assert len(reply.nodes) > 1
