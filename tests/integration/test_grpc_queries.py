"""The gRPC contract of the RPCs beyond traces, on the real query service, through the Python
client (every RPC answers in its dataclasses; each error class: InvalidArgument with a reason,
NotFound for unknown ids and runs, Unauthenticated, Unavailable), hostile strings that stay
data (a module and relation named like Cypher injections), AVG recomputed on deletion, streamed
traces, and bearer-token auth on a second server switched on by its settings."""

from __future__ import annotations

import socket
import uuid

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from pyspark.sql import functions as F

from capture_agent import ProvenanceSession
from query_service import QuerySettings, create_server
from query_service.store import Store
from sparkprov.client import QueryClient
from sparkprov.query_errors import (
    InvalidArgument,
    NotFound,
    QueryError,
    Unauthenticated,
    Unavailable,
)
from sparkprov.query_model import (
    Deletion,
    Node,
    Op,
    Provenance,
    Run,
    RunState,
    Semiring,
    Strategy,
    Trace,
)
from sparkprov.v1 import query_pb2, query_pb2_grpc

HOSTILE = [
    "x' OR 1=1 //",
    "`) DETACH DELETE n //",
    '"}) MATCH (m) DETACH DELETE m //',
    "$ids] OR true OR n[",
]


@pytest.fixture(scope="module")
def people(people_run):  # type: ignore[no-untyped-def]
    return people_run[0]


def _fails(error, call, *args, **kwargs):  # type: ignore[no-untyped-def]
    with pytest.raises(error) as info:
        call(*args, **kwargs)
    assert info.value.details and info.value.status == info.value.code.name
    assert isinstance(info.value.__cause__, grpc.RpcError)  # the gRPC error is kept
    return info.value


def test_validation_of_every_rpc(client, people) -> None:  # type: ignore[no-untyped-def]
    (row,) = client.find_nodes(people, "AvgAge", {"City": "NY"})
    c = client
    cases = [
        (InvalidArgument, c.subgraph, ("",), {}),
        (InvalidArgument, c.subgraph, ("abc",), {}),
        (NotFound, c.subgraph, ("123456789",), {}),
        (InvalidArgument, c.subgraph, (row.id,), {"limit": 10**9}),
        (InvalidArgument, c.zoom_out, ("", ["m"]), {}),
        (InvalidArgument, c.zoom_out, (people, []), {}),
        (NotFound, c.zoom_out, ("no-such-run", ["m"]), {}),
        (InvalidArgument, c.zoom_out, (people, ["no-module"]), {}),
        (InvalidArgument, c.zoom_out, (people, [""]), {}),
        (InvalidArgument, c.zoom_in, (people, ["m"]), {"zoomed_out_modules": []}),
        (InvalidArgument, c.propagate_deletion, ([],), {}),
        (InvalidArgument, c.propagate_deletion, (["1x"],), {}),
        (NotFound, c.propagate_deletion, (["123456789"],), {}),
        (InvalidArgument, c.depends_on, ("", [row.id]), {}),
        (InvalidArgument, c.depends_on, (row.id, []), {}),
        (NotFound, c.depends_on, (row.id, ["123456789"]), {}),
        (InvalidArgument, c.provenance, ("",), {}),
        (NotFound, c.provenance, ("123456789",), {}),
        (InvalidArgument, c.provenance, (row.id,), {"semiring": 42}),
        (
            InvalidArgument,
            c.provenance,
            (row.id,),
            {"semiring": Semiring.PROBABILITY, "token_probabilities": {row.id: 1.5}},
        ),
        (InvalidArgument, c.provenance, (row.id,), {"token_costs": {"abc": 1.0}}),
        (InvalidArgument, c.backward_trace, (["1"],), {"strategy": 42}),
        (NotFound, c.forward_trace, (["123456789"],), {}),
        (NotFound, c.find_nodes, ("no-such-run", "AvgAge"), {}),
    ]
    for error, call, args, kwargs in cases:
        got = _fails(QueryError, call, *args, **kwargs)
        assert type(got) is error, (call.__name__, args, kwargs, got)


def test_every_rpc_answers_in_dataclasses(client, people) -> None:  # type: ignore[no-untyped-def]
    (ny,) = client.find_nodes(people, "AvgAge", {"City": "NY"})
    (steve,) = client.find_nodes(people, "Person1", {"Name": "Steve"})
    assert isinstance(ny, Node) and ny.op is Op.DELTA and ny.run_id == people
    (run,) = [r for r in client.runs("people") if r.run_id == people]
    assert isinstance(run, Run) and run.state is RunState.COMPLETE
    back = client.backward_trace([ny.id], strategy=Strategy.RECURSIVE, max_depth=2, limit=100)
    assert isinstance(back, Trace) and back.nodes[0].id == ny.id
    assert back.stats.strategy is Strategy.RECURSIVE and back.stats.levels == 2
    forward = client.forward_trace([steve.id])
    assert ny.id in {n.id for n in forward.nodes}
    sub = client.subgraph(steve.id)
    assert {n.id for n in forward.nodes} <= {n.id for n in sub.nodes}
    deletion = client.propagate_deletion([steve.id])
    assert isinstance(deletion, Deletion) and deletion.recomputed[0].function == "AVG"
    assert client.depends_on(ny.id, [steve.id]) is False  # Mark keeps NY's group
    both = [steve.id, *(n.id for n in client.find_nodes(people, "Person1", {"Name": "Mark"}))]
    assert client.depends_on(ny.id, both) is True
    counting = client.provenance(ny.id, semiring=Semiring.COUNTING)
    assert isinstance(counting, Provenance) and counting.semiring is Semiring.COUNTING
    assert counting.count == 1 and counting.polynomial.startswith("δ(")
    why = client.provenance(ny.id, semiring=Semiring.WHY)
    assert {frozenset(w) for w in why.witnesses} == {frozenset([i]) for i in both}


def test_deletion_recomputes_avg(client, people) -> None:  # type: ignore[no-untyped-def]
    (steve,) = client.find_nodes(people, "Person1", {"Name": "Steve"})
    (ny,) = client.find_nodes(people, "AvgAge", {"City": "NY"})
    reply = client.propagate_deletion([steve.id])
    assert ny.id not in reply.deleted_node_ids
    (avg,) = reply.recomputed
    assert (avg.function, avg.old_value, avg.new_value, avg.inputs) == ("AVG", "35.0", "40.0", 1)
    # Mary (20) was filtered out: she is not in the NY average, deleting her changes nothing
    (mary,) = client.find_nodes(people, "Person1", {"Name": "Mary"})
    reply = client.propagate_deletion([mary.id])
    assert list(reply.deleted_node_ids) == [mary.id] and not reply.recomputed


def test_streamed_trace_equals_the_unary_trace(client, people) -> None:  # type: ignore[no-untyped-def]
    (ny,) = client.find_nodes(people, "AvgAge", {"City": "NY"})
    whole = client.backward_trace([ny.id])
    chunks = list(client.backward_trace_stream([ny.id], chunk_size=2))
    assert len(chunks) == (len(whole.nodes) + 1) // 2
    assert all(len(c.nodes) <= 2 for c in chunks)
    assert [n.id for c in chunks for n in c.nodes] == [n.id for n in whole.nodes]
    assert sorted((e.src, e.dst) for c in chunks for e in c.edges) == sorted(
        (e.src, e.dst) for e in whole.edges
    )
    assert chunks[-1].stats.nodes_reached == len(whole.nodes)
    _fails(InvalidArgument, list, client.forward_trace_stream(["x"]))


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
    view = client.zoom_out(prov.run_id, [name])
    assert {n.label for n in view.nodes if n.id in set(view.zoomed_node_ids)} == {name}
    assert row.id in {n.id for n in view.nodes}
    for hostile in HOSTILE:
        if hostile != name:
            _fails(InvalidArgument, client.zoom_out, prov.run_id, [hostile])
        _fails(NotFound, client.zoom_out, hostile, [name])
        _fails(InvalidArgument, client.provenance, hostile)
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
    yield f"127.0.0.1:{port}"
    server.stop(grace=None)
    store.close()


def test_bearer_token_auth_when_configured(secured, people) -> None:  # type: ignore[no-untyped-def]
    channel = grpc.insecure_channel(secured)
    stub = query_pb2_grpc.ProvenanceQueryStub(channel)
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
    health = health_pb2_grpc.HealthStub(channel)
    reply = health.Check(health_pb2.HealthCheckRequest(service=""), timeout=5)
    assert reply.status == health_pb2.HealthCheckResponse.SERVING
    channel.close()


def test_client_raises_unauthenticated_without_the_token(secured, people) -> None:  # type: ignore[no-untyped-def]
    for token in ("", "wrong"):
        with QueryClient(secured, timeout_s=10, token=token) as client:
            _fails(Unauthenticated, client.runs, "people")
            _fails(Unauthenticated, list, client.backward_trace_stream(["1"]))
    with QueryClient(secured, timeout_s=10, token="s3cret-token") as client:
        assert people in {r.run_id for r in client.runs("people")}


def test_client_raises_unavailable_when_no_server_listens() -> None:
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        address = f"127.0.0.1:{s.getsockname()[1]}"
    with QueryClient(address, timeout_s=3) as client:
        error = _fails(Unavailable, client.runs)
        assert error.code in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED)
