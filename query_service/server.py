"""The gRPC servicer (thin: validate, call the domain, convert) and ``create_server``.

Errors leave through ``context.abort``: INVALID_ARGUMENT for malformed requests, NOT_FOUND for
unknown ids or runs, UNIMPLEMENTED for strategies not built yet, UNAVAILABLE when Neo4j is down,
DEADLINE_EXCEEDED when the client's deadline passes mid-trace. Every request is first held to
the size limits of ``query_service.limits`` (INVALID_ARGUMENT before any work), and no status
text exceeds ``limits.MAX_MESSAGE_BYTES``: messages quote at most a prefix of an input.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from concurrent import futures
from contextlib import contextmanager
from dataclasses import replace
from typing import TypeVar

import grpc
import neo4j
from google.protobuf.message import Message
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

from ingest_service import retention
from query_service import adapter, limits, source_rows
from query_service.auth import BearerTokenInterceptor
from query_service.metrics import RpcMetrics
from query_service.model import (
    Direction,
    FailedPrecondition,
    InvalidArgument,
    NotFound,
    QueryError,
    TraceResult,
    Unimplemented,
)
from query_service.queries import Queries, provenance
from query_service.settings import QuerySettings
from query_service.store import GraphStore
from query_service.traces import TraceQuery, run, run_encoded
from query_service.version_store import VersionStore
from query_service.versions import Versions
from sparkprov.limits import quote
from sparkprov.v1 import query_pb2, query_pb2_grpc

__all__ = ["ProvenanceQueryServicer", "create_server"]

log = logging.getLogger(__name__)

T = TypeVar("T")

_CODES: dict[type[QueryError], grpc.StatusCode] = {
    InvalidArgument: grpc.StatusCode.INVALID_ARGUMENT,
    NotFound: grpc.StatusCode.NOT_FOUND,
    Unimplemented: grpc.StatusCode.UNIMPLEMENTED,
    FailedPrecondition: grpc.StatusCode.FAILED_PRECONDITION,
}


class _DeadlineExceeded(Exception):
    pass


@contextmanager
def _errors(context: grpc.ServicerContext) -> Iterator[None]:
    try:
        yield
    except QueryError as e:
        context.abort(_CODES.get(type(e), grpc.StatusCode.INVALID_ARGUMENT), limits.message(str(e)))
    except _DeadlineExceeded:
        context.abort(grpc.StatusCode.DEADLINE_EXCEEDED, "deadline passed during the call")
    except neo4j.exceptions.ClientError as e:
        # A call inside Neo4j runs in a transaction bounded by the call's deadline.
        if "TransactionTimedOut" not in (e.code or ""):
            raise
        context.abort(grpc.StatusCode.DEADLINE_EXCEEDED, "deadline passed inside Neo4j")
    except (neo4j.exceptions.ServiceUnavailable, neo4j.exceptions.SessionExpired) as e:
        log.warning("Neo4j unavailable: %s", e)
        context.abort(grpc.StatusCode.UNAVAILABLE, limits.message(f"graph store unavailable: {e}"))


# Past this, a remaining time is no deadline: gRPC reports a call sent without one as ~2^63 ns.
_NO_DEADLINE_S = 7 * 24 * 3600.0
_SHORTEST_S = 0.001  # Neo4j's transaction timeouts are whole milliseconds


def transaction_timeout(context: grpc.ServicerContext) -> float | None:
    """The caller's remaining deadline in seconds, to bound the Neo4j transaction with; None when
    the call has no deadline (passing gRPC's "infinite" remaining time on made Neo4j's driver
    reject the call: its timeout in milliseconds is out of range)."""
    remaining = context.time_remaining()
    if remaining is None or remaining > _NO_DEADLINE_S:
        return None
    # Neo4j reads a timeout of 0 as none at all; a spent deadline still gets the shortest one.
    return max(_SHORTEST_S, float(remaining))


def _deadline(context: grpc.ServicerContext) -> Callable[[], None]:
    def check() -> None:
        remaining = context.time_remaining()
        if remaining is not None and remaining <= 0:
            raise _DeadlineExceeded

    return check


class ProvenanceQueryServicer(query_pb2_grpc.ProvenanceQueryServicer):  # type: ignore[misc]
    def __init__(self, store: GraphStore, settings: QuerySettings) -> None:
        self._store = store
        self._settings = settings
        self._queries = Queries(store, settings.max_limit)
        self._versions_answerer: Versions | None = None

    def FindNodes(  # noqa: N802 - gRPC method name
        self, request: query_pb2.FindNodesRequest, context: grpc.ServicerContext
    ) -> query_pb2.FindNodesResponse:
        with _errors(context):
            limits.check(request)
            if not request.run_id:
                raise InvalidArgument("run_id is required")
            if not request.relation:
                raise InvalidArgument("relation is required")
            if request.limit > self._settings.max_limit:
                raise InvalidArgument(f"limit exceeds the maximum {self._settings.max_limit}")
            if not self._store.run_exists(request.run_id):
                raise NotFound(f"unknown run {quote(request.run_id)}")
            nodes = self._store.find(
                request.run_id, request.relation, dict(request.equals), request.limit or 1000
            )
            return adapter.find_response(nodes)
        raise AssertionError("unreachable")

    def BackwardTrace(  # noqa: N802
        self, request: query_pb2.TraceRequest, context: grpc.ServicerContext
    ) -> query_pb2.TraceResponse | bytes:
        return self._trace(request, context, Direction.BACKWARD)

    def ForwardTrace(  # noqa: N802
        self, request: query_pb2.TraceRequest, context: grpc.ServicerContext
    ) -> query_pb2.TraceResponse | bytes:
        return self._trace(request, context, Direction.FORWARD)

    def _trace(
        self, request: query_pb2.TraceRequest, context: grpc.ServicerContext, direction: Direction
    ) -> query_pb2.TraceResponse | bytes:
        """The trace as the plugin serialized it when it can (see add_servicer), else built."""
        with _errors(context):
            query = self._trace_query(request, direction)
            try:
                if not request.zoomed_out_modules:
                    done = run_encoded(
                        self._store, query, _deadline(context), transaction_timeout(context)
                    )
                    if done is not None:
                        return adapter.with_millis(*done)
                return adapter.trace_response(self._answer(request, query, context, direction))
            except NotFound as unknown:
                return adapter.trace_response(
                    self._with_unstored_rows(request, query, context, direction, unknown)
                )
        raise AssertionError("unreachable")

    def _trace_query(self, request: query_pb2.TraceRequest, direction: Direction) -> TraceQuery:
        limits.check(request)
        return adapter.trace_query(
            request, direction, self._settings.default_limit, self._settings.max_limit
        )

    def _run_trace(
        self, request: query_pb2.TraceRequest, context: grpc.ServicerContext, direction: Direction
    ) -> TraceResult:
        query = self._trace_query(request, direction)
        try:
            return self._answer(request, query, context, direction)
        except NotFound as unknown:
            return self._with_unstored_rows(request, query, context, direction, unknown)

    def _with_unstored_rows(
        self,
        request: query_pb2.TraceRequest,
        query: TraceQuery,
        context: grpc.ServicerContext,
        direction: Direction,
        unknown: NotFound,
    ) -> TraceResult:
        """The trace where some seeds are not stored: each that is a file source row a filter
        dropped before its capture point (source_rows.unstored) is its TOKEN node alone, reaching
        nothing either way; the stored seeds are traced as usual. Any other unknown seed: NOT_FOUND
        (``unknown``, as the store raised it)."""
        stored = self._store.nodes(query.node_ids)
        missing = [i for i in query.node_ids if i not in stored]
        rows = self._store.unstored_source_rows(missing) if missing else {}
        if not rows or any(i not in rows for i in missing):
            raise unknown
        kept = [i for i in query.node_ids if i in stored]
        if kept:
            result = self._answer(request, replace(query, node_ids=kept), context, direction)
        else:
            result = TraceResult(nodes=[], edges=[], truncated=False, strategy=query.strategy)
        unstored = [rows[i] for i in dict.fromkeys(missing)]
        result.nodes = unstored + result.nodes
        if result.ids:
            result.ids = [n.id for n in unstored] + result.ids
        return result

    def _answer(
        self,
        request: query_pb2.TraceRequest,
        query: TraceQuery,
        context: grpc.ServicerContext,
        direction: Direction,
    ) -> TraceResult:
        """A checked trace request's answer: over zoomed-out modules, or the trace itself."""
        if request.zoomed_out_modules:
            modules = adapter.modules(list(request.zoomed_out_modules), "zoomed_out_modules")
            return self._queries.view_trace(
                query.node_ids, direction, modules, query.limit, query.max_depth
            )
        return run(self._store, query, _deadline(context), transaction_timeout(context))

    def BackwardTraceStream(  # noqa: N802
        self, request: query_pb2.TraceRequest, context: grpc.ServicerContext
    ) -> Iterator[query_pb2.TraceResponse]:
        return self._stream(request, context, Direction.BACKWARD)

    def ForwardTraceStream(  # noqa: N802
        self, request: query_pb2.TraceRequest, context: grpc.ServicerContext
    ) -> Iterator[query_pb2.TraceResponse]:
        return self._stream(request, context, Direction.FORWARD)

    def _stream(
        self, request: query_pb2.TraceRequest, context: grpc.ServicerContext, direction: Direction
    ) -> Iterator[query_pb2.TraceResponse]:
        """The trace in chunks of ``chunk_size`` nodes, each with the edges whose later end (in
        the node order) is in it, so a client can render as chunks arrive; stats come last.
        The trace is computed whole first: this bounds message sizes, not server memory."""
        result: TraceResult | None = None
        with _errors(context):
            result = self._run_trace(request, context, direction)
        assert result is not None
        size = request.chunk_size or 1000
        full = adapter.trace_response(result)
        position = {n.id: i for i, n in enumerate(full.nodes)}
        chunks: list[list[query_pb2.Edge]] = [[] for _ in range(0, len(full.nodes), size)] or [[]]
        for edge in full.edges:
            last = max(position[edge.src], position[edge.dst])
            chunks[last // size].append(edge)
        for k, edges in enumerate(chunks):
            reply = query_pb2.TraceResponse(
                nodes=full.nodes[k * size : (k + 1) * size], edges=edges
            )
            if k == len(chunks) - 1:
                reply.truncated = full.truncated
                reply.stats.CopyFrom(full.stats)
            yield reply

    def Subgraph(  # noqa: N802
        self, request: query_pb2.SubgraphRequest, context: grpc.ServicerContext
    ) -> query_pb2.TraceResponse:
        with _errors(context):
            limits.check(request)
            node_id = adapter.node_id(request.node_id)
            limit = adapter.limit(
                request.limit, self._settings.default_limit, self._settings.max_limit
            )
            result = self._queries.subgraph(
                node_id, limit, _deadline(context), transaction_timeout(context)
            )
            return adapter.trace_response(result)
        raise AssertionError("unreachable")

    def ZoomOut(  # noqa: N802
        self, request: query_pb2.ZoomRequest, context: grpc.ServicerContext
    ) -> query_pb2.GraphView:
        with _errors(context):
            run_id, modules, zoomed = self._zoom_args(request)
            return adapter.graph_view(run_id, self._queries.zoom_out(run_id, modules, zoomed))
        raise AssertionError("unreachable")

    def ZoomIn(  # noqa: N802
        self, request: query_pb2.ZoomRequest, context: grpc.ServicerContext
    ) -> query_pb2.GraphView:
        with _errors(context):
            run_id, modules, zoomed = self._zoom_args(request)
            return adapter.graph_view(run_id, self._queries.zoom_in(run_id, modules, zoomed))
        raise AssertionError("unreachable")

    @staticmethod
    def _zoom_args(request: query_pb2.ZoomRequest) -> tuple[str, list[str], list[str]]:
        limits.check(request)
        if not request.run_id:
            raise InvalidArgument("run_id is required")
        modules = adapter.modules(list(request.modules), "modules")
        zoomed = adapter.modules(list(request.zoomed_out_modules), "zoomed_out_modules")
        return request.run_id, modules, zoomed

    def PropagateDeletion(  # noqa: N802
        self, request: query_pb2.DeletionRequest, context: grpc.ServicerContext
    ) -> query_pb2.DeletionResponse:
        with _errors(context):
            limits.check(request)
            ids = adapter.node_ids(list(request.node_ids), "node_ids")
            modules = adapter.modules(list(request.zoomed_out_modules), "zoomed_out_modules")
            result = self._queries.delete(
                ids, modules, _deadline(context), transaction_timeout(context)
            )
            return adapter.deletion_response(result)
        raise AssertionError("unreachable")

    def DependsOn(  # noqa: N802
        self, request: query_pb2.DependsOnRequest, context: grpc.ServicerContext
    ) -> query_pb2.DependsOnResponse:
        with _errors(context):
            limits.check(request)
            node_id = adapter.node_id(request.node_id)
            on = adapter.node_ids(list(request.on_node_ids), "on_node_ids")
            modules = adapter.modules(list(request.zoomed_out_modules), "zoomed_out_modules")
            depends = self._queries.depends_on(
                node_id, on, modules, _deadline(context), transaction_timeout(context)
            )
            return query_pb2.DependsOnResponse(depends=depends)
        raise AssertionError("unreachable")

    def Provenance(  # noqa: N802
        self, request: query_pb2.ProvenanceRequest, context: grpc.ServicerContext
    ) -> query_pb2.ProvenanceResponse:
        with _errors(context):
            limits.check(request)
            node_id = adapter.node_id(request.node_id)
            semiring = adapter.semiring(request.semiring)
            false = (
                adapter.node_ids(list(request.false_tokens), "false_tokens")
                if (request.false_tokens)
                else []
            )
            costs = adapter.keyed(dict(request.token_costs), "token_costs")
            probabilities = adapter.keyed(dict(request.token_probabilities), "token_probabilities")
            if request.samples > 1_000_000:
                raise InvalidArgument("samples exceeds the maximum 1000000")
            graph = self._queries.ancestry(node_id, _deadline(context))
            answer = provenance(
                graph, node_id, semiring, false, costs, probabilities, request.samples
            )
            return adapter.provenance_response(answer)
        raise AssertionError("unreachable")

    def ListRuns(  # noqa: N802
        self, request: query_pb2.ListRunsRequest, context: grpc.ServicerContext
    ) -> query_pb2.ListRunsResponse:
        with _errors(context):
            limits.check(request)
            return adapter.runs_response(self._store.runs(request.workflow))
        raise AssertionError("unreachable")

    def DeleteRun(  # noqa: N802
        self, request: query_pb2.DeleteRunRequest, context: grpc.ServicerContext
    ) -> query_pb2.DeleteRunResponse:
        with _errors(context):
            limits.check(request)
            if not request.run_id:
                raise InvalidArgument("run_id is required")
            try:
                deleted = retention.delete_runs(
                    self._store.driver, request.run_id, follow=request.follow, force=request.force
                )
            except retention.RunNotFound:
                raise NotFound(f"unknown run {quote(request.run_id)}") from None
            except retention.RunNotDeletable as e:
                raise FailedPrecondition(str(e)) from None
            log.info("DeleteRun %s: deleted runs %s", request.run_id, deleted.runs)
            return query_pb2.DeleteRunResponse(
                deleted_run_ids=deleted.runs,
                nodes_deleted=deleted.nodes,
                relationships_deleted=deleted.relationships,
            )
        raise AssertionError("unreachable")

    def LocateSourceRows(  # noqa: N802
        self, request: query_pb2.LocateSourceRowsRequest, context: grpc.ServicerContext
    ) -> query_pb2.LocateSourceRowsResponse:
        with _errors(context):
            limits.check(request)
            ids = adapter.node_ids(list(request.node_ids), "node_ids")
            return adapter.source_rows_response(source_rows.locate(self._store, ids))
        raise AssertionError("unreachable")

    # -- workflow versions (docs/versions.md) -----------------------------------------------

    @property
    def _versions(self) -> Versions:
        """Built on first use: it reads through the store's driver (the unit tests' fake stores
        have none and never ask about versions)."""
        if self._versions_answerer is None:
            self._versions_answerer = Versions(
                VersionStore(self._store.driver), self._store, self._settings.max_limit
            )
        return self._versions_answerer

    def ListVersions(  # noqa: N802
        self, request: query_pb2.ListVersionsRequest, context: grpc.ServicerContext
    ) -> query_pb2.ListVersionsResponse:
        with _errors(context):
            limits.check(request)
            return adapter.versions_response(self._versions.listed(request.workflow))
        raise AssertionError("unreachable")

    def DiffVersions(  # noqa: N802
        self, request: query_pb2.DiffVersionsRequest, context: grpc.ServicerContext
    ) -> query_pb2.DiffVersionsResponse:
        with _errors(context):
            limits.check(request)
            edit = self._versions.diff(request.workflow, request.version_a, request.version_b)
            return adapter.diff_response(edit)
        raise AssertionError("unreachable")

    def VersionsOf(  # noqa: N802
        self, request: query_pb2.VersionsOfRequest, context: grpc.ServicerContext
    ) -> query_pb2.VersionsOfResponse:
        with _errors(context):
            limits.check(request)
            ids = adapter.node_ids(list(request.node_ids), "node_ids")
            return adapter.versions_of_response(self._versions.versions_of(ids))
        raise AssertionError("unreachable")

    def CompareResults(  # noqa: N802
        self, request: query_pb2.CompareResultsRequest, context: grpc.ServicerContext
    ) -> query_pb2.CompareResultsResponse:
        with _errors(context):
            limits.check(request)
            comparison = self._versions.compare(
                request.run_a,
                request.relation_a,
                request.run_b,
                request.relation_b,
                request.limit or 100,
            )
            return adapter.compare_response(comparison)
        raise AssertionError("unreachable")

    def CheckEquivalence(  # noqa: N802
        self, request: query_pb2.CheckEquivalenceRequest, context: grpc.ServicerContext
    ) -> query_pb2.CheckEquivalenceResponse:
        with _errors(context):
            limits.check(request)
            answer, millis = self._versions.equivalence(
                request.workflow,
                request.version_a,
                request.version_b,
                request.sink,
                request.sink_b,
                adapter.semantics(request.semantics),
            )
            return adapter.equivalence_response(answer, millis)
        raise AssertionError("unreachable")


def _serialize(response: Message | bytes) -> bytes:
    """A response as gRPC sends it: bytes already serialized (a trace the plugin wrote) as they
    are, a message serialized."""
    return response if isinstance(response, bytes) else response.SerializeToString()


def add_servicer(
    servicer: ProvenanceQueryServicer, server: grpc.Server, metrics: RpcMetrics | None = None
) -> None:
    """The generated add_ProvenanceQueryServicer_to_server, but with :func:`_serialize` for the
    responses, so a method may answer with bytes serialized elsewhere (query.proto's contract),
    and each method timed and counted by ``metrics``."""
    service = query_pb2.DESCRIPTOR.services_by_name["ProvenanceQuery"]
    handlers = {}
    for method in service.methods:
        request_type = getattr(query_pb2, method.input_type.name)
        make = (
            grpc.unary_stream_rpc_method_handler
            if method.server_streaming
            else grpc.unary_unary_rpc_method_handler
        )
        behavior = getattr(servicer, method.name)
        if metrics is not None:
            behavior = metrics.wrap(behavior, method.name, method.server_streaming)
        handlers[method.name] = make(
            behavior,
            request_deserializer=request_type.FromString,
            response_serializer=_serialize,
        )
    server.add_generic_rpc_handlers(
        (grpc.method_handlers_generic_handler(service.full_name, handlers),)
    )


def _tls_credentials(settings: QuerySettings) -> grpc.ServerCredentials:
    """The certificate and key files, read once at start (a renewed certificate needs a
    restart). Clients are not asked for certificates: they authenticate with the bearer token."""
    with open(settings.tls_key, "rb") as key, open(settings.tls_cert, "rb") as cert:
        return grpc.ssl_server_credentials([(key.read(), cert.read())])


def create_server(
    settings: QuerySettings, store: GraphStore, metrics: RpcMetrics | None = None
) -> tuple[grpc.Server, int]:
    """A server (not started) bound to ``settings.grpc_addr``; port 0 picks a free one. Over TLS
    when ``settings.tls_cert`` is set, else plaintext. ``metrics``: where its RPCs are timed."""
    interceptors = [BearerTokenInterceptor(settings.auth_token)] if settings.auth_token else []
    server = grpc.server(
        futures.ThreadPoolExecutor(max_workers=settings.max_workers), interceptors=interceptors
    )
    add_servicer(ProvenanceQueryServicer(store, settings), server, metrics)
    health_servicer = health.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
    service_name = query_pb2.DESCRIPTOR.services_by_name["ProvenanceQuery"].full_name
    for name in ("", service_name):
        health_servicer.set(name, health_pb2.HealthCheckResponse.SERVING)
    reflection.enable_server_reflection(
        (service_name, health.SERVICE_NAME, reflection.SERVICE_NAME), server
    )
    if settings.tls_cert:
        port = server.add_secure_port(settings.grpc_addr, _tls_credentials(settings))
    else:
        port = server.add_insecure_port(settings.grpc_addr)
    if port == 0:
        raise OSError(f"cannot bind gRPC to {settings.grpc_addr}")
    return server, port
