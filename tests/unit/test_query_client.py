"""The client's protobuf adapter and error tree, without a server: every status maps to the
error class the caller acts on, with the status kept; messages become the model's dataclasses
with enums by wire number (an unknown number from a newer server stays a number)."""

from __future__ import annotations

import dataclasses

import grpc
import pytest

from sparkprov import query_adapter
from sparkprov.query_errors import (
    InvalidArgument,
    NotFound,
    QueryError,
    Unauthenticated,
    Unavailable,
    from_rpc_error,
)
from sparkprov.query_model import Op, RunState, Semiring, Strategy
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
