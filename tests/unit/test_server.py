"""The servicer on a fake store with a fake call context: a passed deadline ends every walking
RPC with DEADLINE_EXCEEDED (the check runs between trace levels), a live one lets it through."""

from __future__ import annotations

import grpc
import neo4j
import networkx as nx
import pytest

from query_service import limits
from query_service.server import ProvenanceQueryServicer, transaction_timeout
from query_service.settings import QuerySettings
from query_service.store import Store
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
    served = _servicer().BackwardTrace(query_pb2.TraceRequest(node_ids=["3"]), context)
    # the trace as the store serialized it, passed on as it is (add_servicer's serializer)
    assert isinstance(served, bytes)
    reply = query_pb2.TraceResponse.FromString(served)
    assert [n.id for n in reply.nodes] == ["3", "2", "1", "0"]
    assert context.code is None


class _Untouchable:
    """A store that fails the test when the servicer does any work with it."""

    def __getattr__(self, name: str) -> object:
        raise AssertionError(f"store.{name} used before the request was checked")


HUGE_ID = "1" * 1_000_000  # its echo made the status exceed gRPC's metadata limit
TOO_MANY = [str(i) for i in range(limits.MAX_IDS + 1)]


@pytest.mark.parametrize(
    ("method", "request_", "field"),
    [
        ("BackwardTrace", query_pb2.TraceRequest(node_ids=["1", HUGE_ID]), "node_ids"),
        ("ForwardTraceStream", query_pb2.TraceRequest(node_ids=[HUGE_ID]), "node_ids"),
        ("Subgraph", query_pb2.SubgraphRequest(node_id=HUGE_ID), "node_id"),
        ("PropagateDeletion", query_pb2.DeletionRequest(node_ids=[HUGE_ID]), "node_ids"),
        (
            "DependsOn",
            query_pb2.DependsOnRequest(node_id="1", on_node_ids=[HUGE_ID]),
            "on_node_ids",
        ),
        (
            "Provenance",
            query_pb2.ProvenanceRequest(node_id="1", token_costs={HUGE_ID: 1.0}),
            "token_costs",
        ),
        ("FindNodes", query_pb2.FindNodesRequest(run_id=HUGE_ID, relation="R"), "run_id"),
        ("ZoomOut", query_pb2.ZoomRequest(run_id="r", modules=[HUGE_ID]), "modules"),
        ("ListRuns", query_pb2.ListRunsRequest(workflow=HUGE_ID), "workflow"),
        ("BackwardTrace", query_pb2.TraceRequest(node_ids=TOO_MANY), "node_ids"),
        ("PropagateDeletion", query_pb2.DeletionRequest(node_ids=TOO_MANY), "node_ids"),
        (
            "Provenance",
            query_pb2.ProvenanceRequest(node_id="1", false_tokens=TOO_MANY),
            "false_tokens",
        ),
    ],
)
def test_oversized_requests_are_refused_before_any_work_with_a_short_message(
    method: str, request_: object, field: str
) -> None:
    servicer = ProvenanceQueryServicer(_Untouchable(), QuerySettings())  # type: ignore[arg-type]
    context = FakeContext(remaining=5.0)
    with pytest.raises(Aborted) as caught:
        reply = getattr(servicer, method)(request_, context)
        if method.endswith("Stream"):
            list(reply)
    assert context.code == grpc.StatusCode.INVALID_ARGUMENT
    details = str(caught.value)
    assert field in details and "limit" in details
    assert len(details.encode()) <= 200


def test_a_bad_id_is_quoted_by_a_short_prefix() -> None:
    context = FakeContext(remaining=5.0)
    bad = "x" * limits.MAX_ID_CHARS  # within the size limit, not a number
    with pytest.raises(Aborted) as caught:
        _servicer().BackwardTrace(query_pb2.TraceRequest(node_ids=[bad]), context)
    assert context.code == grpc.StatusCode.INVALID_ARGUMENT
    assert "'xxxx" in str(caught.value) and "not a decimal" in str(caught.value)


def test_status_texts_are_capped() -> None:
    assert limits.message("short") == "short"
    capped = limits.message("é" * 10_000)
    assert len(capped.encode()) <= limits.MAX_MESSAGE_BYTES and capped.endswith("...")


@pytest.mark.parametrize(
    ("remaining", "expected"),
    [(None, None), (9.2e18, None), (30.0, 30.0), (0.0, 0.001), (-1.0, 0.001)],
)
def test_transaction_timeout_is_the_callers_deadline(
    remaining: float | None, expected: float | None
) -> None:
    assert transaction_timeout(FakeContext(remaining)) == expected  # type: ignore[arg-type]


class _TimedOut(neo4j.exceptions.ClientError):
    """What Neo4j's driver raises when a transaction outlives its timeout."""

    @property
    def code(self) -> str:
        return "Neo.ClientError.Transaction.TransactionTimedOutClientConfiguration"


class _SlowDriver:
    """A driver whose every transaction outlives its timeout; keeps the timeouts it was given."""

    def __init__(self) -> None:
        self.timeouts: list[float | None] = []

    def execute_query(self, query: neo4j.Query, **_: object) -> None:
        self.timeouts.append(query.timeout)
        raise _TimedOut("the transaction has been terminated")


@pytest.mark.parametrize(
    ("method", "request_"),
    [
        ("BackwardTrace", query_pb2.TraceRequest(node_ids=["3"])),
        ("ForwardTrace", query_pb2.TraceRequest(node_ids=["0"], strategy=2)),
        ("Subgraph", query_pb2.SubgraphRequest(node_id="1")),
        ("PropagateDeletion", query_pb2.DeletionRequest(node_ids=["0"])),
    ],
)
def test_a_call_inside_neo4j_is_bounded_by_the_callers_deadline(
    method: str, request_: object
) -> None:
    """Each call that runs inside Neo4j gives its transaction the caller's remaining time, and a
    transaction Neo4j ended for it answers DEADLINE_EXCEEDED (not UNKNOWN)."""
    driver = _SlowDriver()
    servicer = ProvenanceQueryServicer(Store(driver), QuerySettings())  # type: ignore[arg-type]
    context = FakeContext(remaining=4.5)
    with pytest.raises(Aborted, match="deadline passed inside Neo4j"):
        getattr(servicer, method)(request_, context)
    assert context.code == grpc.StatusCode.DEADLINE_EXCEEDED
    assert driver.timeouts == [4.5]
