"""The Python client of the query service: every RPC of proto/sparkprov/v1/query.proto, with
typed keyword arguments, returning the plain dataclasses of :mod:`sparkprov.query_model` and
raising the errors of :mod:`sparkprov.query_errors` (never protobuf, never ``grpc.RpcError``).

with QueryClient() as client:  # address from SPARKPROV_GRPC_ADDR, else 127.0.0.1:50051
    run = client.wait_for_run(run_id)
    row = client.find_nodes(run_id, "AvgAge", {"City": "NY"})[0]
    print(render_trace(client.backward_trace([row.id]), row.id))

``stub`` is the generated stub on the same channel, kept for tests of the wire contract itself.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import TypeVar

import grpc

from sparkprov import defaults, query_adapter
from sparkprov.bearer import BearerToken
from sparkprov.query_errors import NotFound, from_rpc_error
from sparkprov.query_model import (
    DeletedRuns,
    Deletion,
    Equivalence,
    GraphView,
    Node,
    Op,
    Provenance,
    ResultComparison,
    RowVersions,
    Run,
    Semantics,
    Semiring,
    SourceRow,
    Strategy,
    Trace,
    VersionDiff,
    VersionInfo,
)
from sparkprov.trace_render import render_trace
from sparkprov.v1 import query_pb2, query_pb2_grpc

__all__ = ["QueryClient", "RunNotComplete", "TraceTruncated", "render_trace"]

# The most nodes a witness trace may hold (the server's default maximum limit).
_WITNESS_LIMIT = 1_000_000

T = TypeVar("T")


class RunNotComplete(TimeoutError):
    """The run was not fully ingested within the wait."""


class TraceTruncated(RuntimeError):
    """A trace cut at its node limit: a witness taken from it would miss rows."""


def query_channel(
    address: str,
    *,
    tls_ca: str | Path | None = None,
    tls: bool | None = None,
    environ: Mapping[str, str] | None = None,
) -> grpc.Channel:
    """A channel to the query service, as every client of it makes one: TLS when ``tls_ca`` (a
    PEM file of the CA that signed the server's certificate) or ``tls`` (the system's CAs) says
    so, each read from ``SPARKPROV_QUERY_TLS_CA`` / ``SPARKPROV_QUERY_TLS`` when ``None``. A
    trace may hold up to the server's maximum limit of nodes (1M by default): far past gRPC's
    4 MB default for received messages, so the channel takes whatever it is sent."""
    env = os.environ if environ is None else environ
    if tls_ca is None:
        tls_ca = env.get(defaults.ENV_QUERY_TLS_CA, "").strip() or None
    if tls is None:
        tls = defaults.is_on(env.get(defaults.ENV_QUERY_TLS))
    options = [("grpc.max_receive_message_length", -1)]
    if tls_ca is None and not tls:
        return grpc.insecure_channel(address, options=options)
    roots = Path(tls_ca).read_bytes() if tls_ca is not None else None
    credentials = grpc.ssl_channel_credentials(root_certificates=roots)
    return grpc.secure_channel(address, credentials, options=options)


class QueryClient:
    """``address``: host:port of the query service; ``None`` reads ``SPARKPROV_GRPC_ADDR``
    (default 127.0.0.1:50051). ``token``: sent as ``authorization: Bearer <token>`` with every
    call; ``None`` reads ``SPARKPROV_QUERY_TOKEN`` (the server's setting); over a plaintext
    channel it travels in clear text. ``tls_ca``: a PEM file of the CA that signed the server's
    certificate; the channel is then TLS (``tls=True`` verifies against the system's CAs); both
    ``None`` read ``SPARKPROV_QUERY_TLS_CA`` / ``SPARKPROV_QUERY_TLS`` (:func:`query_channel`).
    ``timeout_s`` is every call's deadline."""

    def __init__(
        self,
        address: str | None = None,
        timeout_s: float = 30.0,
        *,
        tls_ca: str | Path | None = None,
        tls: bool | None = None,
        token: str | None = None,
    ) -> None:
        if address is None:
            address = os.environ.get(defaults.ENV_GRPC_ADDR) or defaults.GRPC_ADDR
        if token is None:
            token = os.environ.get(defaults.ENV_QUERY_TOKEN, "")
        self.address = address
        self._channel = query_channel(address, tls_ca=tls_ca, tls=tls)
        if token:
            self._channel = grpc.intercept_channel(self._channel, BearerToken(token))
        self.stub = query_pb2_grpc.ProvenanceQueryStub(self._channel)
        self.timeout_s = timeout_s

    def __enter__(self) -> QueryClient:
        return self

    def __exit__(
        self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        self._channel.close()

    def _call(self, rpc: Callable[..., T], request: object) -> T:
        try:
            return rpc(request, timeout=self.timeout_s)
        except grpc.RpcError as e:
            raise from_rpc_error(e) from e

    # -- runs and rows ----------------------------------------------------------------------

    def runs(self, workflow: str = "") -> list[Run]:
        """ListRuns: the runs of ``workflow`` (all when empty), newest first."""
        reply = self._call(self.stub.ListRuns, query_pb2.ListRunsRequest(workflow=workflow))
        return [query_adapter.run(r) for r in reply.runs]

    def delete_run(self, run_id: str, *, follow: bool = False, force: bool = False) -> DeletedRuns:
        """DeleteRun: removes the run's lineage (with ``follow``, that of the runs tied to it
        too). Raises :class:`FailedPrecondition` when refused; asking again finishes a deletion
        cut short."""
        reply = self._call(
            self.stub.DeleteRun,
            query_pb2.DeleteRunRequest(run_id=run_id, follow=follow, force=force),
        )
        return DeletedRuns(
            tuple(reply.deleted_run_ids), reply.nodes_deleted, reply.relationships_deleted
        )

    def wait_for_run(
        self,
        run_id: str,
        timeout_s: float = 120.0,
        *,
        indexed: bool = False,
        poll_s: float = 0.5,
    ) -> Run:
        """Poll ListRuns every ``poll_s`` until the run is complete (everything its marker
        counted is stored: queryable), or with ``indexed`` until its component and set ids are
        current too. Raises :class:`RunNotComplete` after ``timeout_s``."""
        deadline = time.monotonic() + timeout_s
        last: Run | None = None
        while time.monotonic() < deadline:
            for run in self.runs():
                if run.run_id == run_id:
                    last = run
                    if run.complete and (run.indexed or not indexed):
                        return run
            time.sleep(poll_s)
        state = (
            "never seen"
            if last is None
            else f"{last.node_count}/{last.expected_node_count} nodes, "
            f"{last.edge_count}/{last.expected_edge_count} edges stored"
            + (", ids pending" if last.complete and not last.indexed else "")
        )
        wanted = "indexed" if indexed else "complete"
        raise RunNotComplete(f"run {run_id} not {wanted} after {timeout_s:.0f}s ({state})")

    def find_nodes(
        self,
        run_id: str,
        relation: str,
        equals: Mapping[str, str] | None = None,
        limit: int = 0,
    ) -> list[Node]:
        """FindNodes: rows of ``relation`` in the run whose attributes equal ``equals`` (values
        as text); ``limit`` 0 = the server's default (1000)."""
        request = query_pb2.FindNodesRequest(
            run_id=run_id, relation=relation, equals=dict(equals or {}), limit=limit
        )
        return [query_adapter.node(n) for n in self._call(self.stub.FindNodes, request).nodes]

    # -- traces -----------------------------------------------------------------------------

    def backward_trace(
        self,
        node_ids: Sequence[str],
        *,
        max_depth: int = 0,
        limit: int = 0,
        strategy: Strategy = Strategy.AUTO,
        zoomed_out_modules: Sequence[str] = (),
    ) -> Trace:
        """BackwardTrace: the nodes' ancestors with the edges among them. ``max_depth`` 0 =
        unlimited; ``limit`` 0 = the server default (100000 nodes; ``truncated`` says if it
        cut); ``zoomed_out_modules`` traces that view of the first node's run."""
        request = query_adapter.trace_request(
            node_ids,
            max_depth=max_depth,
            limit=limit,
            strategy=strategy,
            zoomed_out_modules=zoomed_out_modules,
        )
        return query_adapter.trace(self._call(self.stub.BackwardTrace, request))

    def forward_trace(
        self,
        node_ids: Sequence[str],
        *,
        max_depth: int = 0,
        limit: int = 0,
        strategy: Strategy = Strategy.AUTO,
        zoomed_out_modules: Sequence[str] = (),
    ) -> Trace:
        """ForwardTrace: the nodes' descendants, as :meth:`backward_trace`."""
        request = query_adapter.trace_request(
            node_ids,
            max_depth=max_depth,
            limit=limit,
            strategy=strategy,
            zoomed_out_modules=zoomed_out_modules,
        )
        return query_adapter.trace(self._call(self.stub.ForwardTrace, request))

    def backward_trace_stream(
        self,
        node_ids: Sequence[str],
        *,
        chunk_size: int = 0,
        max_depth: int = 0,
        limit: int = 0,
        strategy: Strategy = Strategy.AUTO,
    ) -> Iterator[Trace]:
        """BackwardTraceStream: the trace in chunks of at most ``chunk_size`` nodes (0 = 1000);
        the last chunk carries the stats."""
        request = query_adapter.trace_request(
            node_ids, max_depth=max_depth, limit=limit, strategy=strategy, zoomed_out_modules=()
        )
        request.chunk_size = chunk_size
        return self._stream(self.stub.BackwardTraceStream, request)

    def forward_trace_stream(
        self,
        node_ids: Sequence[str],
        *,
        chunk_size: int = 0,
        max_depth: int = 0,
        limit: int = 0,
        strategy: Strategy = Strategy.AUTO,
    ) -> Iterator[Trace]:
        """ForwardTraceStream: as :meth:`backward_trace_stream`, forward."""
        request = query_adapter.trace_request(
            node_ids, max_depth=max_depth, limit=limit, strategy=strategy, zoomed_out_modules=()
        )
        request.chunk_size = chunk_size
        return self._stream(self.stub.ForwardTraceStream, request)

    def _stream(
        self, rpc: Callable[..., Iterator[query_pb2.TraceResponse]], request: object
    ) -> Iterator[Trace]:
        try:
            for chunk in rpc(request, timeout=self.timeout_s):
                yield query_adapter.trace(chunk)
        except grpc.RpcError as e:
            raise from_rpc_error(e) from e

    def subgraph(self, node_id: str, *, limit: int = 0) -> Trace:
        """Subgraph: the node's ancestors and descendants plus the other children of its
        descendants' parents."""
        request = query_pb2.SubgraphRequest(node_id=node_id, limit=limit)
        return query_adapter.trace(self._call(self.stub.Subgraph, request))

    # -- views, deletion, polynomials -------------------------------------------------------

    def zoom_out(
        self, run_id: str, modules: Sequence[str], *, zoomed_out_modules: Sequence[str] = ()
    ) -> GraphView:
        """ZoomOut: the run viewed with ``zoomed_out_modules`` and ``modules`` zoomed out."""
        request = query_pb2.ZoomRequest(
            run_id=run_id, modules=list(modules), zoomed_out_modules=list(zoomed_out_modules)
        )
        return query_adapter.graph_view(self._call(self.stub.ZoomOut, request))

    def zoom_in(
        self, run_id: str, modules: Sequence[str], *, zoomed_out_modules: Sequence[str]
    ) -> GraphView:
        """ZoomIn: the view with ``zoomed_out_modules`` minus ``modules`` zoomed out
        (``zoom_in(run, M, zoomed_out_modules=view.zoomed_out_modules)`` undoes a zoom_out)."""
        request = query_pb2.ZoomRequest(
            run_id=run_id, modules=list(modules), zoomed_out_modules=list(zoomed_out_modules)
        )
        return query_adapter.graph_view(self._call(self.stub.ZoomIn, request))

    def propagate_deletion(
        self, node_ids: Sequence[str], *, zoomed_out_modules: Sequence[str] = ()
    ) -> Deletion:
        """PropagateDeletion: what deleting the nodes removes, and the surviving aggregates'
        new values."""
        request = query_pb2.DeletionRequest(
            node_ids=list(node_ids), zoomed_out_modules=list(zoomed_out_modules)
        )
        return query_adapter.deletion(self._call(self.stub.PropagateDeletion, request))

    def depends_on(
        self,
        node_id: str,
        on_node_ids: Sequence[str],
        *,
        zoomed_out_modules: Sequence[str] = (),
    ) -> bool:
        """DependsOn: whether ``node_id`` is removed when ``on_node_ids`` are deleted."""
        request = query_pb2.DependsOnRequest(
            node_id=node_id,
            on_node_ids=list(on_node_ids),
            zoomed_out_modules=list(zoomed_out_modules),
        )
        return bool(self._call(self.stub.DependsOn, request).depends)

    def provenance(
        self,
        node_id: str,
        *,
        semiring: Semiring = Semiring.NONE,
        false_tokens: Sequence[str] = (),
        token_costs: Mapping[str, float] | None = None,
        token_probabilities: Mapping[str, float] | None = None,
        samples: int = 0,
    ) -> Provenance:
        """Provenance: the node's polynomial and its value in ``semiring`` (BOOLEAN with
        ``false_tokens``, TROPICAL with ``token_costs``, PROBABILITY with
        ``token_probabilities`` and Monte Carlo ``samples``)."""
        request = query_adapter.provenance_request(
            node_id,
            semiring=semiring,
            false_tokens=false_tokens,
            token_costs=token_costs or {},
            token_probabilities=token_probabilities or {},
            samples=samples,
        )
        return query_adapter.provenance(self._call(self.stub.Provenance, request))

    def locate_source_rows(self, node_ids: Sequence[str]) -> list[SourceRow]:
        """LocateSourceRows: the file and row (or Spark partition and offset) of each source
        row (TOKEN node) named, in order."""
        request = query_pb2.LocateSourceRowsRequest(node_ids=list(node_ids))
        reply = self._call(self.stub.LocateSourceRows, request)
        return [query_adapter.source_row(r) for r in reply.rows]

    # -- workflow versions (docs/versions.md) -----------------------------------------------

    def list_versions(self, workflow: str) -> list[VersionInfo]:
        """ListVersions: the workflow's versions in order (``seq`` 1 first), with their runs."""
        request = query_pb2.ListVersionsRequest(workflow=workflow)
        reply = self._call(self.stub.ListVersions, request)
        return [query_adapter.version_info(v) for v in reply.versions]

    def diff_versions(self, workflow: str, version_a: str, version_b: str) -> VersionDiff:
        """DiffVersions: the edit from ``version_a`` to ``version_b`` of ``workflow``."""
        request = query_pb2.DiffVersionsRequest(
            workflow=workflow, version_a=version_a, version_b=version_b
        )
        return query_adapter.version_diff(self._call(self.stub.DiffVersions, request))

    def versions_of(self, node_ids: Sequence[str]) -> list[RowVersions]:
        """VersionsOf (Drove's Q1): per node, a row of a named relation, the versions and runs
        of its workflow whose same relation holds an equal row."""
        request = query_pb2.VersionsOfRequest(node_ids=list(node_ids))
        reply = self._call(self.stub.VersionsOf, request)
        return [query_adapter.row_versions(r) for r in reply.results]

    def compare_results(
        self,
        run_a: str,
        relation_a: str,
        run_b: str,
        relation_b: str = "",
        *,
        limit: int = 0,
    ) -> ResultComparison:
        """CompareResults (Drove's Q2): the rows of ``relation_a`` in ``run_a`` and of
        ``relation_b`` ("" = ``relation_a``) in ``run_b``, as bags: only in a, only in b, in
        both; each one-sided row with its sources and the edit's operators on its path, for at
        most ``limit`` rows per side (0 = 100; ``truncated`` says if more were left out)."""
        request = query_pb2.CompareResultsRequest(
            run_a=run_a, relation_a=relation_a, run_b=run_b, relation_b=relation_b, limit=limit
        )
        return query_adapter.result_comparison(self._call(self.stub.CompareResults, request))

    def check_equivalence(
        self,
        workflow: str,
        version_a: str,
        version_b: str,
        sink: str,
        *,
        sink_b: str = "",
        semantics: Semantics = Semantics.BAG,
    ) -> Equivalence:
        """CheckEquivalence: whether ``sink`` of ``version_a`` and ``sink_b`` ("" = ``sink``)
        of ``version_b`` give the same result, as bags or sets: EQUIVALENT, NOT_EQUIVALENT
        (with a counterexample) or UNKNOWN (with the reason)."""
        request = query_adapter.check_equivalence_request(
            workflow, version_a, version_b, sink, sink_b=sink_b, semantics=semantics
        )
        return query_adapter.equivalence(self._call(self.stub.CheckEquivalence, request))

    # -- built on the RPCs ------------------------------------------------------------------

    def run_trace(self, run_id: str, relations: Sequence[str], *, limit: int = 0) -> Trace:
        """A whole run as one trace: every row of ``relations`` (its outputs, typically) with
        all their ancestors. Raises :class:`TraceTruncated` if the server's limit cut it."""
        ids: list[str] = []
        for relation in relations:
            rows = self.find_nodes(run_id, relation, limit=_WITNESS_LIMIT)
            if not rows:
                raise NotFound(grpc.StatusCode.NOT_FOUND, f"no rows of {relation!r} in {run_id}")
            ids.extend(n.id for n in rows)
        return self._trace(self.backward_trace, ids, limit or _WITNESS_LIMIT)

    def witness(
        self, node_ids: list[str], *, limit: int = _WITNESS_LIMIT
    ) -> dict[str, list[dict[str, str]]]:
        """The witness of ``node_ids``: the source rows their backward trace reaches, per
        relation, each as the values its TOKEN node kept (attribute -> value as text; a null
        value is absent), closed under the anti joins' exclusions (below). Re-running a job on
        just these rows of each source gives the nodes' rows back (Titian's replay;
        ``capture_agent.replay.witness_frames`` turns them into DataFrames). Module state tokens
        count as source rows of their state relation. Raises :class:`TraceTruncated` rather than
        return part of a witness.

        Closure: a positive provenance has no edge "kept because that row is absent", so a
        witness row that reaches the left side of an anti join where a right row excluded it
        would pass the anti join in the re-run, with the right row missing. Each such exclusion
        is stored as an EXCLUDED node (fed by the left row and one right row that matched it,
        whose id is its value; docs/capture.md): for every EXCLUDED node whose left parent the
        witness rows reach (forward trace), the right row and its own backward sources join the
        witness, until no new row does."""
        tokens = self._tokens(self._trace(self.backward_trace, node_ids, limit))
        matches: set[str] = set()
        fresh = list(tokens)
        while fresh:
            forward = self._trace(self.forward_trace, fresh, limit)
            excluded = {n.id: n.value for n in forward.nodes if n.op == Op.EXCLUDED}
            found = {
                excluded[e.dst]
                for e in forward.edges
                if e.dst in excluded and e.src != excluded[e.dst]  # the left parent
            } - matches
            if not found:
                break
            matches |= found
            more = self._tokens(self._trace(self.backward_trace, sorted(found), limit))
            fresh = [i for i in more if i not in tokens]
            tokens.update(more)
        rows: dict[str, list[dict[str, str]]] = {}
        for node in tokens.values():
            rows.setdefault(node.relation, []).append(dict(node.attributes))
        return rows

    @staticmethod
    def _tokens(trace: Trace) -> dict[str, Node]:
        return {n.id: n for n in trace.nodes if n.op == Op.TOKEN}

    @staticmethod
    def _trace(call: Callable[..., Trace], node_ids: Sequence[str], limit: int) -> Trace:
        trace = call(list(node_ids), limit=limit)
        if trace.truncated:
            raise TraceTruncated(
                f"the trace of {len(node_ids)} node(s) holds more than {limit} nodes: "
                "a witness taken from it would be partial; raise the limit or trace fewer nodes"
            )
        return trace
