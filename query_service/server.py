"""The gRPC servicer (thin: validate, call the domain, convert) and ``create_server``.

Errors leave through ``context.abort``: INVALID_ARGUMENT for malformed requests, NOT_FOUND for
unknown ids or runs, UNIMPLEMENTED for strategies not built yet, UNAVAILABLE when Neo4j is down,
DEADLINE_EXCEEDED when the client's deadline passes mid-trace.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from concurrent import futures
from contextlib import contextmanager
from typing import TypeVar

import grpc
import neo4j
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

from query_service import adapter
from query_service.model import Direction, InvalidArgument, NotFound, QueryError, Unimplemented
from query_service.settings import QuerySettings
from query_service.store import Store
from query_service.traces import trace
from sparkprov.v1 import query_pb2, query_pb2_grpc

__all__ = ["ProvenanceQueryServicer", "create_server"]

log = logging.getLogger(__name__)

T = TypeVar("T")

_CODES: dict[type[QueryError], grpc.StatusCode] = {
    InvalidArgument: grpc.StatusCode.INVALID_ARGUMENT,
    NotFound: grpc.StatusCode.NOT_FOUND,
    Unimplemented: grpc.StatusCode.UNIMPLEMENTED,
}


class _DeadlineExceeded(Exception):
    pass


@contextmanager
def _errors(context: grpc.ServicerContext) -> Iterator[None]:
    try:
        yield
    except QueryError as e:
        context.abort(_CODES.get(type(e), grpc.StatusCode.INVALID_ARGUMENT), str(e))
    except _DeadlineExceeded:
        context.abort(grpc.StatusCode.DEADLINE_EXCEEDED, "deadline passed during the trace")
    except (neo4j.exceptions.ServiceUnavailable, neo4j.exceptions.SessionExpired) as e:
        log.warning("Neo4j unavailable: %s", e)
        context.abort(grpc.StatusCode.UNAVAILABLE, f"graph store unavailable: {e}")


def _deadline(context: grpc.ServicerContext) -> Callable[[], None]:
    def check() -> None:
        remaining = context.time_remaining()
        if remaining is not None and remaining <= 0:
            raise _DeadlineExceeded

    return check


class ProvenanceQueryServicer(query_pb2_grpc.ProvenanceQueryServicer):  # type: ignore[misc]
    def __init__(self, store: Store, settings: QuerySettings) -> None:
        self._store = store
        self._settings = settings

    def FindNodes(  # noqa: N802 - gRPC method name
        self, request: query_pb2.FindNodesRequest, context: grpc.ServicerContext
    ) -> query_pb2.FindNodesResponse:
        with _errors(context):
            if not request.run_id:
                raise InvalidArgument("run_id is required")
            if not request.relation:
                raise InvalidArgument("relation is required")
            if request.limit > self._settings.max_limit:
                raise InvalidArgument(f"limit exceeds the maximum {self._settings.max_limit}")
            if not self._store.run_exists(request.run_id):
                raise NotFound(f"unknown run {request.run_id!r}")
            nodes = self._store.find(
                request.run_id, request.relation, dict(request.equals), request.limit or 1000
            )
            return adapter.find_response(nodes)
        raise AssertionError("unreachable")

    def BackwardTrace(  # noqa: N802
        self, request: query_pb2.TraceRequest, context: grpc.ServicerContext
    ) -> query_pb2.TraceResponse:
        return self._trace(request, context, Direction.BACKWARD)

    def ForwardTrace(  # noqa: N802
        self, request: query_pb2.TraceRequest, context: grpc.ServicerContext
    ) -> query_pb2.TraceResponse:
        return self._trace(request, context, Direction.FORWARD)

    def _trace(
        self, request: query_pb2.TraceRequest, context: grpc.ServicerContext, direction: Direction
    ) -> query_pb2.TraceResponse:
        with _errors(context):
            query = adapter.trace_query(
                request, direction, self._settings.default_limit, self._settings.max_limit
            )
            return adapter.trace_response(trace(self._store, query, _deadline(context)))
        raise AssertionError("unreachable")

    def ListRuns(  # noqa: N802
        self, request: query_pb2.ListRunsRequest, context: grpc.ServicerContext
    ) -> query_pb2.ListRunsResponse:
        with _errors(context):
            return adapter.runs_response(self._store.runs(request.workflow))
        raise AssertionError("unreachable")


def create_server(settings: QuerySettings, store: Store) -> tuple[grpc.Server, int]:
    """A server (not started) bound to ``settings.grpc_addr``; port 0 picks a free one."""
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=settings.max_workers))
    query_pb2_grpc.add_ProvenanceQueryServicer_to_server(
        ProvenanceQueryServicer(store, settings), server
    )
    health_servicer = health.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
    service_name = query_pb2.DESCRIPTOR.services_by_name["ProvenanceQuery"].full_name
    for name in ("", service_name):
        health_servicer.set(name, health_pb2.HealthCheckResponse.SERVING)
    reflection.enable_server_reflection(
        (service_name, health.SERVICE_NAME, reflection.SERVICE_NAME), server
    )
    port = server.add_insecure_port(settings.grpc_addr)
    if port == 0:
        raise OSError(f"cannot bind gRPC to {settings.grpc_addr}")
    return server, port
