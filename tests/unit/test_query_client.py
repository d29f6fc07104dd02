"""The client's protobuf adapter and error tree, without a server: every status maps to the
error class the caller acts on, with the status kept; messages become the model's dataclasses
with enums by wire number (an unknown number from a newer server stays a number)."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import grpc
import pytest

from sparkprov import query_adapter, query_model
from sparkprov.client import QueryClient
from sparkprov.query_errors import (
    InvalidArgument,
    NotFound,
    QueryError,
    Unauthenticated,
    Unavailable,
    from_rpc_error,
)
from sparkprov.query_model import (
    DagLink,
    DagOperator,
    Op,
    OperatorChange,
    ResultRow,
    RunState,
    Semantics,
    Semiring,
    Strategy,
    Verdict,
    VersionInfo,
    VersionRuns,
)
from sparkprov.v1 import lineage_pb2, query_pb2


class FakeRpcError(grpc.RpcError):
    def __init__(self, code: grpc.StatusCode, details: str) -> None:
        self._code, self._details = code, details

    def code(self) -> grpc.StatusCode:
        return self._code

    def details(self) -> str:
        return self._details


@pytest.mark.parametrize(
    ("code", "error"),
    [
        (grpc.StatusCode.INVALID_ARGUMENT, InvalidArgument),
        (grpc.StatusCode.NOT_FOUND, NotFound),
        (grpc.StatusCode.UNAUTHENTICATED, Unauthenticated),
        (grpc.StatusCode.UNAVAILABLE, Unavailable),
        (grpc.StatusCode.DEADLINE_EXCEEDED, Unavailable),
        (grpc.StatusCode.UNIMPLEMENTED, QueryError),
        (grpc.StatusCode.INTERNAL, QueryError),
    ],
)
def test_every_status_has_its_error(code: grpc.StatusCode, error: type[QueryError]) -> None:
    got = from_rpc_error(FakeRpcError(code, "why"))
    assert type(got) is error and isinstance(got, QueryError)
    assert (got.code, got.status, got.details) == (code, code.name, "why")
    assert str(got) == f"{code.name}: why"


def test_messages_become_dataclasses() -> None:
    node = query_pb2.Node(
        id="-5", run_id="r", op=lineage_pb2.OP_AGGREGATE, label="AVG", value="35.0",
        attributes={"City": "NY"},
    )  # fmt: skip
    converted = query_adapter.node(node)
    assert converted.op is Op.AGGREGATE and converted.attributes == {"City": "NY"}
    with pytest.raises(dataclasses.FrozenInstanceError):
        converted.label = "x"  # type: ignore[misc]
    assert query_adapter.node(query_pb2.Node(id="1", op=99)).op == 99  # a newer server's op
    run = query_adapter.run(query_pb2.Run(run_id="r", state=query_pb2.RUN_STATE_FAILED))
    assert run.state is RunState.FAILED
    chunks = [
        query_pb2.TraceResponse(nodes=[node], edges=[query_pb2.Edge(src="1", dst="-5")]),
        query_pb2.TraceResponse(
            nodes=[query_pb2.Node(id="1", op=lineage_pb2.OP_TOKEN)],
            truncated=True,
            stats=query_pb2.TraceStats(strategy=query_pb2.STRATEGY_COMPONENT, levels=1),
        ),
    ]
    trace = query_adapter.merge_chunks(chunks)
    assert [n.id for n in trace.nodes] == ["-5", "1"] and trace.truncated
    assert trace.stats.strategy is Strategy.COMPONENT and trace.node("1") is not None
    answer = query_adapter.provenance(
        query_pb2.ProvenanceResponse(
            polynomial="a + b",
            semiring=query_pb2.SEMIRING_WHY,
            witnesses=[query_pb2.WitnessSet(tokens=["1"]), query_pb2.WitnessSet(tokens=["2"])],
            terms=[query_pb2.Term(id="3", op="PLUS", args=["1", "2"])],
        )
    )
    assert answer.semiring is Semiring.WHY and answer.witnesses == (("1",), ("2",))
    assert answer.terms[0].args == ("1", "2")
    request = query_adapter.trace_request(
        ["1"], max_depth=2, limit=5, strategy=Strategy.CONNECTED_SET, zoomed_out_modules=["m"]
    )
    assert request.strategy == query_pb2.STRATEGY_CONNECTED_SET and request.max_depth == 2


# -- the version RPCs, through a client on a fake stub ---------------------------------------


class FakeStub:
    """Answers each RPC by name with a canned reply (or raises it, if it is an error) and keeps
    the request and deadline it was called with."""

    def __init__(self, **replies: object) -> None:
        self.replies = replies
        self.calls: dict[str, tuple[Any, float]] = {}

    def __getattr__(self, name: str) -> Callable[..., object]:
        def call(request: object, timeout: float) -> object:
            self.calls[name] = (request, timeout)
            reply = self.replies[name]
            if isinstance(reply, Exception):
                raise reply
            return reply

        return call


def _client(**replies: object) -> tuple[QueryClient, FakeStub]:
    client = QueryClient("127.0.0.1:9", timeout_s=7.0)  # the channel connects lazily: never here
    stub = FakeStub(**replies)
    client.stub = stub  # type: ignore[assignment]
    return client, stub


FILTER = lineage_pb2.DagOperator(
    id="f1",
    kind="filter",
    params={"predicate": "(state = 'CA')"},
    inputs=["s1"],
    columns=[lineage_pb2.DagColumn(name="state", type="string")],
)


def test_an_enum_the_proto_outgrows_stops_the_import() -> None:
    """The enums take their numbers from the generated code; a value the .proto gains (or one
    renamed) that the enum lacks fails query_model's import instead of decoding as a number."""
    grown = SimpleNamespace(
        DESCRIPTOR=query_pb2.Strategy.DESCRIPTOR,
        items=lambda: [*query_pb2.Strategy.items(), ("STRATEGY_SAMPLED", 4)],
    )
    query_model._mirror(Strategy, query_pb2.Strategy, "STRATEGY_")
    with pytest.raises(RuntimeError, match="SAMPLED"):
        query_model._mirror(Strategy, grown, "STRATEGY_")
    with pytest.raises(RuntimeError, match="NONE"):
        query_model._mirror(Semiring, query_pb2.Semiring, "SEMIRING_")  # not renamed UNSPECIFIED


def test_list_versions() -> None:
    reply = query_pb2.ListVersionsResponse(
        versions=[
            query_pb2.WorkflowVersionInfo(
                workflow="w", version_id="v1", seq=1, run_ids=["r1", "r2"], operator_count=9,
                sinks=["wordcloud"], created_unix_ms=5,
            ),
            query_pb2.WorkflowVersionInfo(workflow="w", version_id="v2", seq=2, run_ids=["r3"]),
        ]
    )  # fmt: skip
    client, stub = _client(ListVersions=reply)
    versions = client.list_versions("w")
    request, timeout = stub.calls["ListVersions"]
    assert request.workflow == "w" and timeout == 7.0
    assert versions == [
        VersionInfo("w", "v1", 1, ("r1", "r2"), 9, ("wordcloud",), 5),
        VersionInfo("w", "v2", 2, ("r3",), 0, (), 0),
    ]
    with pytest.raises(dataclasses.FrozenInstanceError):
        versions[0].seq = 3  # type: ignore[misc]


def test_diff_versions() -> None:
    before = lineage_pb2.DagOperator(id="u1", kind="with_column", params={"udfs": "label"})
    after = lineage_pb2.DagOperator(id="u2", kind="with_column", params={"udfs": "label_heat"})
    reply = query_pb2.DiffVersionsResponse(
        added=[FILTER],
        changed=[query_pb2.OperatorChange(before=before, after=after)],
        links_added=[query_pb2.DagLink(src="s1", dst="f1"), query_pb2.DagLink(src="f1", dst="j")],
        links_removed=[query_pb2.DagLink(src="s1", dst="j")],
        moved=[query_pb2.OperatorChange(before=FILTER, after=FILTER)],
    )
    client, stub = _client(DiffVersions=reply)
    diff = client.diff_versions("w", "v1", "v2")
    request, _ = stub.calls["DiffVersions"]
    assert (request.workflow, request.version_a, request.version_b) == ("w", "v1", "v2")
    (added,) = diff.added
    assert added == DagOperator(
        "f1", "filter", {"predicate": "(state = 'CA')"}, ("s1",), (("state", "string"),)
    )
    assert diff.removed == ()
    assert [(c.before.params["udfs"], c.after.params["udfs"]) for c in diff.changed] == [
        ("label", "label_heat")
    ]
    assert diff.links_added == (DagLink("s1", "f1"), DagLink("f1", "j"))
    assert diff.links_removed == (DagLink("s1", "j"),)
    assert diff.moved == (OperatorChange(added, added),)


def test_versions_of() -> None:
    reply = query_pb2.VersionsOfResponse(
        results=[
            query_pb2.VersionsOfResult(
                node_id="-3", workflow="w", relation="scatterplot", attributes={"tid": "100"},
                versions=[
                    query_pb2.VersionRuns(version_id="v1", run_ids=["r1", "r2"]),
                    query_pb2.VersionRuns(version_id="", run_ids=["r0"]),
                ],
            )
        ]
    )  # fmt: skip
    client, stub = _client(VersionsOf=reply)
    (row,) = client.versions_of(["-3"])
    request, _ = stub.calls["VersionsOf"]
    assert list(request.node_ids) == ["-3"]
    assert (row.node_id, row.workflow, row.relation, row.attributes) == (
        "-3", "w", "scatterplot", {"tid": "100"}
    )  # fmt: skip
    assert row.versions == (VersionRuns("v1", ("r1", "r2")), VersionRuns("", ("r0",)))
    assert row.runs("v1") == ("r1", "r2") and row.runs("") == ("r0",) and row.runs("v9") == ()


def test_compare_results() -> None:
    token = query_pb2.Node(id="1", op=lineage_pb2.OP_TOKEN, relation="tweet")
    reply = query_pb2.CompareResultsResponse(
        only_a=[
            query_pb2.ResultRow(
                attributes={"state": "NY"}, count_a=1, node_ids=["-7"], sources=[token],
                edit_operators=[FILTER],
            )
        ],
        both=[query_pb2.ResultRow(attributes={"state": "CA"}, count_a=2, count_b=1)],
        truncated=True,
    )  # fmt: skip
    client, stub = _client(CompareResults=reply)
    answer = client.compare_results("ra", "choropleth", "rb")
    request, _ = stub.calls["CompareResults"]
    assert (request.run_a, request.relation_a, request.run_b, request.relation_b) == (
        "ra", "choropleth", "rb", ""
    )  # fmt: skip
    assert request.limit == 0
    (row,) = answer.only_a
    assert (row.attributes, row.count_a, row.count_b, row.node_ids) == (
        {"state": "NY"},
        1,
        0,
        ("-7",),
    )
    assert row.sources[0].op is Op.TOKEN and row.sources[0].relation == "tweet"
    assert [o.params["predicate"] for o in row.edit_operators] == ["(state = 'CA')"]
    assert answer.only_b == () and answer.truncated
    assert answer.both == (ResultRow({"state": "CA"}, 2, 1),)
    client.compare_results("ra", "x", "rb", "y", limit=5)
    request, _ = stub.calls["CompareResults"]
    assert (request.relation_b, request.limit) == ("y", 5)


def test_check_equivalence() -> None:
    reply = query_pb2.CheckEquivalenceResponse(
        verdict=query_pb2.VERDICT_NOT_EQUIVALENT, method="smt", reason="differ on a row",
        segment_a=[FILTER], counterexample="tweet(1, 'LA')", millis=12.5,
    )  # fmt: skip
    client, stub = _client(CheckEquivalence=reply)
    answer = client.check_equivalence("w", "v1", "v2", "choropleth")
    request, _ = stub.calls["CheckEquivalence"]
    assert (request.workflow, request.version_a, request.version_b, request.sink) == (
        "w", "v1", "v2", "choropleth"
    )  # fmt: skip
    assert request.sink_b == "" and request.semantics == query_pb2.SEMANTICS_BAG
    assert answer.verdict is Verdict.NOT_EQUIVALENT and answer.verdict.name == "NOT_EQUIVALENT"
    assert (answer.method, answer.reason, answer.counterexample, answer.millis) == (
        "smt", "differ on a row", "tweet(1, 'LA')", 12.5
    )  # fmt: skip
    assert [o.kind for o in answer.segment_a] == ["filter"] and answer.segment_b == ()
    client.check_equivalence("w", "v1", "v2", "a", sink_b="b", semantics=Semantics.SET)
    request, _ = stub.calls["CheckEquivalence"]
    assert (request.sink_b, request.semantics) == ("b", query_pb2.SEMANTICS_SET)
    stub.replies["CheckEquivalence"] = query_pb2.CheckEquivalenceResponse(verdict=9)  # type: ignore[arg-type]
    assert client.check_equivalence("w", "v1", "v2", "a").verdict == 9  # a newer server's verdict


INVALID, MISSING, DOWN = (
    grpc.StatusCode.INVALID_ARGUMENT,
    grpc.StatusCode.NOT_FOUND,
    grpc.StatusCode.UNAVAILABLE,
)


@pytest.mark.parametrize(
    ("rpc", "call", "code", "error"),
    [
        ("ListVersions", lambda c: c.list_versions(""), INVALID, InvalidArgument),
        ("DiffVersions", lambda c: c.diff_versions("w", "x", "y"), MISSING, NotFound),
        ("VersionsOf", lambda c: c.versions_of(["x!"]), INVALID, InvalidArgument),
        ("CompareResults", lambda c: c.compare_results("r", "a", "s"), MISSING, NotFound),
        ("CheckEquivalence", lambda c: c.check_equivalence("w", "a", "b", ""), DOWN, Unavailable),
    ],
)
def test_version_rpcs_raise_the_callers_errors(
    rpc: str,
    call: Callable[[QueryClient], object],
    code: grpc.StatusCode,
    error: type[QueryError],
) -> None:
    failure = FakeRpcError(code, "no such thing")
    client, _ = _client(**{rpc: failure})
    with pytest.raises(error) as info:
        call(client)
    assert info.value.code == code and info.value.details == "no such thing"
    assert info.value.__cause__ is failure


def test_every_rpc_has_a_client_method() -> None:
    """An RPC added to query.proto without a QueryClient method fails here (ListRuns is
    ``runs``)."""
    service = query_pb2.DESCRIPTOR.services_by_name["ProvenanceQuery"]
    renamed = {"list_runs": "runs"}
    for method in service.methods:
        name = re.sub(r"(?<!^)(?=[A-Z])", "_", method.name).lower()
        assert callable(getattr(QueryClient, renamed.get(name, name), None)), method.name
