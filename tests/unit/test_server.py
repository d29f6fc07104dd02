"""The servicer on a fake store with a fake call context: a passed deadline ends every walking
RPC with DEADLINE_EXCEEDED (the check runs between trace levels), a live one lets it through."""

from __future__ import annotations

import grpc
import networkx as nx
import pytest

from query_service.server import ProvenanceQueryServicer
from query_service.settings import QuerySettings
from sparkprov.v1 import query_pb2

from .test_traces import FakeStore


class Aborted(Exception):
    pass


class FakeContext:
    def __init__(self, remaining: float | None) -> None:
        self.remaining = remaining
        self.code: grpc.StatusCode | None = None

    def time_remaining(self) -> float | None:
        return self.remaining

    def abort(self, code: grpc.StatusCode, details: str) -> None:
        self.code = code
        raise Aborted(details)


def _servicer() -> ProvenanceQueryServicer:
    store = FakeStore(nx.DiGraph([(0, 1), (1, 2), (2, 3)]))
    return ProvenanceQueryServicer(store, QuerySettings())  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("method", "request_"),
    [
        ("BackwardTrace", query_pb2.TraceRequest(node_ids=["3"], strategy=1)),
        ("ForwardTrace", query_pb2.TraceRequest(node_ids=["0"], strategy=2)),
        ("Subgraph", query_pb2.SubgraphRequest(node_id="1")),
        ("PropagateDeletion", query_pb2.DeletionRequest(node_ids=["0"])),
        ("DependsOn", query_pb2.DependsOnRequest(node_id="3", on_node_ids=["0"])),
        ("Provenance", query_pb2.ProvenanceRequest(node_id="3")),
    ],
)
def test_a_passed_deadline_ends_the_call(method: str, request_: object) -> None:
    context = FakeContext(remaining=0.0)
    with pytest.raises(Aborted):
        getattr(_servicer(), method)(request_, context)
    assert context.code == grpc.StatusCode.DEADLINE_EXCEEDED


def test_a_live_deadline_lets_the_trace_through() -> None:
    context = FakeContext(remaining=5.0)
    reply = _servicer().BackwardTrace(query_pb2.TraceRequest(node_ids=["3"]), context)
    assert [n.id for n in reply.nodes] == ["3", "2", "1", "0"]
    assert context.code is None
