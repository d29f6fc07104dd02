"""A small Python client of the query service, for scripts, the demo and tests.

with QueryClient("127.0.0.1:50051") as client:
    run = client.wait_for_run(run_id)
    row = client.find_nodes(run_id, "AvgAge", {"City": "NY"})[0]
    print(render_trace(client.backward_trace([row.id]), row.id))
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from types import TracebackType
from typing import Any

import grpc

from sparkprov.v1 import lineage_pb2, query_pb2, query_pb2_grpc

__all__ = ["QueryClient", "RunNotComplete", "TraceTruncated", "render_trace"]

# The most nodes a witness trace may hold (the server's default maximum limit).
_WITNESS_LIMIT = 1_000_000


class RunNotComplete(TimeoutError):
    """The run was not fully ingested within the wait."""


class TraceTruncated(RuntimeError):
    """A trace cut at its node limit: a witness taken from it would miss rows."""


class QueryClient:
    """``tls_ca``: a PEM file of the CA that signed the server's certificate; the channel is then
    TLS and verifies the server against it (``tls=True`` verifies against the system's CAs).
    ``token``: sent as ``authorization: Bearer <token>`` with every call (``SPARKPROV_QUERY_TOKEN``
    on the server); over a plaintext channel it travels in clear text."""

    def __init__(
        self,
        address: str,
        timeout_s: float = 30.0,
        *,
        tls_ca: str | Path | None = None,
        tls: bool = False,
        token: str = "",
    ) -> None:
        # A trace may hold up to the server's maximum limit of nodes (1M by default): far past
        # gRPC's 4 MB default for received messages, so the client takes whatever it is sent.
        options = [("grpc.max_receive_message_length", -1)]
        if tls_ca is not None or tls:
            roots = Path(tls_ca).read_bytes() if tls_ca is not None else None
            credentials = grpc.ssl_channel_credentials(root_certificates=roots)
            self._channel = grpc.secure_channel(address, credentials, options=options)
        else:
            self._channel = grpc.insecure_channel(address, options=options)
        if token:
            self._channel = grpc.intercept_channel(self._channel, _BearerToken(token))
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

    def runs(self, workflow: str = "") -> list[query_pb2.Run]:
        reply = self.stub.ListRuns(
            query_pb2.ListRunsRequest(workflow=workflow), timeout=self.timeout_s
        )
        return list(reply.runs)

    def wait_for_run(self, run_id: str, timeout_s: float = 120.0) -> query_pb2.Run:
        """Poll ListRuns until the run is complete (everything its marker counted is stored)."""
        deadline = time.monotonic() + timeout_s
        last: query_pb2.Run | None = None
        while time.monotonic() < deadline:
            for run in self.runs():
                if run.run_id == run_id:
                    last = run
                    if run.complete:
                        return run
            time.sleep(0.5)
        state = (
            "never seen"
            if last is None
            else f"{last.node_count}/{last.expected_node_count} nodes, "
            f"{last.edge_count}/{last.expected_edge_count} edges stored"
        )
        raise RunNotComplete(f"run {run_id} not complete after {timeout_s:.0f}s ({state})")

    def find_nodes(
        self, run_id: str, relation: str, equals: Mapping[str, str] | None = None, limit: int = 0
    ) -> list[query_pb2.Node]:
        reply = self.stub.FindNodes(
            query_pb2.FindNodesRequest(
                run_id=run_id, relation=relation, equals=dict(equals or {}), limit=limit
            ),
            timeout=self.timeout_s,
        )
        return list(reply.nodes)

    def backward_trace(self, node_ids: list[str], **options: int) -> query_pb2.TraceResponse:
        request = query_pb2.TraceRequest(node_ids=node_ids, **options)  # type: ignore[arg-type]
        return self.stub.BackwardTrace(request, timeout=self.timeout_s)  # type: ignore[no-any-return]

    def forward_trace(self, node_ids: list[str], **options: int) -> query_pb2.TraceResponse:
        request = query_pb2.TraceRequest(node_ids=node_ids, **options)  # type: ignore[arg-type]
        return self.stub.ForwardTrace(request, timeout=self.timeout_s)  # type: ignore[no-any-return]

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
            excluded = {n.id: n.value for n in forward.nodes if n.op == lineage_pb2.OP_EXCLUDED}
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
    def _tokens(trace: query_pb2.TraceResponse) -> dict[str, query_pb2.Node]:
        return {n.id: n for n in trace.nodes if n.op == lineage_pb2.OP_TOKEN}

    @staticmethod
    def _trace(
        call: Callable[..., query_pb2.TraceResponse], node_ids: list[str], limit: int
    ) -> query_pb2.TraceResponse:
        trace = call(node_ids, limit=limit)
        if trace.truncated:
            raise TraceTruncated(
                f"the trace of {len(node_ids)} node(s) holds more than {limit} nodes: "
                "a witness taken from it would be partial; raise the limit or trace fewer nodes"
            )
        return trace


class _BearerToken(
    grpc.UnaryUnaryClientInterceptor,  # type: ignore[misc]
    grpc.UnaryStreamClientInterceptor,  # type: ignore[misc]
):
    """Adds the token to the metadata of every call, unary and streaming alike."""

    def __init__(self, token: str) -> None:
        self._header = ("authorization", f"Bearer {token}")

    def _details(self, details: grpc.ClientCallDetails) -> grpc.ClientCallDetails:
        return _CallDetails(
            details.method,
            details.timeout,
            [*(details.metadata or ()), self._header],
            details.credentials,
            details.wait_for_ready,
            details.compression,
        )

    def intercept_unary_unary(
        self, continuation: Callable[..., Any], details: grpc.ClientCallDetails, request: Any
    ) -> Any:
        return continuation(self._details(details), request)

    def intercept_unary_stream(
        self, continuation: Callable[..., Any], details: grpc.ClientCallDetails, request: Any
    ) -> Iterator[Any]:
        return continuation(self._details(details), request)  # type: ignore[no-any-return]


class _CallDetails(grpc.ClientCallDetails):  # type: ignore[misc]
    def __init__(
        self,
        method: str,
        timeout: float | None,
        metadata: list[tuple[str, str]],
        credentials: grpc.CallCredentials | None,
        wait_for_ready: bool | None,
        compression: grpc.Compression | None,
    ) -> None:
        self.method = method
        self.timeout = timeout
        self.metadata = metadata
        self.credentials = credentials
        self.wait_for_ready = wait_for_ready
        self.compression = compression


def _describe(node: query_pb2.Node) -> str:
    op = lineage_pb2.Op.Name(node.op).removeprefix("OP_")
    text = f"[{op}] "
    if node.relation:
        text += f"{node.relation} "
    text += node.label
    shows_value = node.value != node.label or node.op == lineage_pb2.OP_AGGREGATE
    if node.value and shows_value:
        text += f" = {node.value}"
    if node.attributes:
        text += "  " + " ".join(f"{k}={v}" for k, v in sorted(node.attributes.items()))
    return text


def render_trace(trace: query_pb2.TraceResponse, root: str, *, backward: bool = True) -> str:
    """An indented tree of a trace from ``root``; shared ancestors are printed once."""
    nodes = {n.id: n for n in trace.nodes}
    nexts: dict[str, list[str]] = {}
    for edge in trace.edges:
        a, b = (edge.dst, edge.src) if backward else (edge.src, edge.dst)
        nexts.setdefault(a, []).append(b)
    arrow = "<- " if backward else "-> "
    lines: list[str] = []
    shown: set[str] = set()

    def walk(node_id: str, depth: int) -> None:
        node = nodes.get(node_id)
        text = _describe(node) if node else f"(node {node_id})"
        prefix = "    " * depth + (arrow if depth else "")
        if node_id in shown:
            lines.append(f"{prefix}{text}  (see above)")
            return
        shown.add(node_id)
        lines.append(prefix + text)
        children = sorted(
            nexts.get(node_id, []), key=lambda i: _describe(nodes[i]) if i in nodes else i
        )
        for child in children:
            walk(child, depth + 1)

    walk(root, 0)
    if trace.truncated:
        lines.append("... (truncated by the limit)")
    return "\n".join(lines)
