"""The viewer's calls to the query service: gRPC in, the page's JSON out.

``Gateway`` holds one channel to ``sparkprov.v1.ProvenanceQuery`` and sends the bearer token, if
any, with every call. A failed call raises ``GatewayError`` with the HTTP status the API answers
(INVALID_ARGUMENT -> 400, UNAUTHENTICATED -> 401, NOT_FOUND -> 404, UNAVAILABLE -> 503, ...) and
the server's own message.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import grpc

from sparkprov.client import query_channel
from sparkprov.v1 import query_pb2, query_pb2_grpc
from viewer import payloads
from viewer.levels import cut
from viewer.payloads import JSON

__all__ = ["Gateway", "GatewayError"]

_HTTP_STATUS = {
    grpc.StatusCode.INVALID_ARGUMENT: 400,
    grpc.StatusCode.OUT_OF_RANGE: 400,
    grpc.StatusCode.FAILED_PRECONDITION: 400,
    grpc.StatusCode.UNAUTHENTICATED: 401,
    grpc.StatusCode.PERMISSION_DENIED: 403,
    grpc.StatusCode.NOT_FOUND: 404,
    grpc.StatusCode.RESOURCE_EXHAUSTED: 413,
    grpc.StatusCode.UNIMPLEMENTED: 501,
    grpc.StatusCode.UNAVAILABLE: 503,
    grpc.StatusCode.DEADLINE_EXCEEDED: 504,
}


class GatewayError(Exception):
    """A call the API answers with ``status`` and ``message`` (bad input, unknown node, ...)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


class Gateway:
    def __init__(
        self,
        address: str,
        token: str = "",
        timeout_s: float = 30.0,
        *,
        tls_ca: str = "",
        tls: bool = False,
        stub: Any = None,
    ) -> None:
        """``stub``: what answers the calls instead of a channel to ``address`` (tests).
        ``tls_ca``/``tls``: the channel is TLS (sparkprov.client.query_channel)."""
        self._channel = query_channel(address, tls_ca=tls_ca or None, tls=tls)
        self._stub = stub or query_pb2_grpc.ProvenanceQueryStub(self._channel)
        self._metadata = (("authorization", f"Bearer {token}"),) if token else ()
        self._timeout_s = timeout_s

    def close(self) -> None:
        self._channel.close()

    def _call(self, method: str, request: Any) -> Any:
        try:
            return getattr(self._stub, method)(
                request, timeout=self._timeout_s, metadata=self._metadata
            )
        except grpc.RpcError as e:
            code = e.code()
            raise GatewayError(
                _HTTP_STATUS.get(code, 502), f"{method}: {code.name}: {e.details()}"
            ) from e

    def runs(self, workflow: str = "") -> list[JSON]:
        reply = self._call("ListRuns", query_pb2.ListRunsRequest(workflow=workflow))
        return [payloads.run(r) for r in reply.runs]

    def find(self, run_id: str, relation: str, equals: Mapping[str, str], limit: int) -> JSON:
        """A relation's rows whose values equal ``equals``; ``more`` when the limit cut them."""
        reply = self._call(
            "FindNodes",
            query_pb2.FindNodesRequest(
                run_id=run_id, relation=relation, equals=dict(equals), limit=limit + 1
            ),
        )
        nodes = [payloads.node(n) for n in reply.nodes]
        return {"nodes": nodes[:limit], "more": len(nodes) > limit}

    def trace(
        self,
        node_ids: Sequence[str],
        backward: bool,
        depth: int,
        max_nodes: int,
        zoomed_out: Sequence[str] = (),
    ) -> JSON:
        """The first ``depth`` levels of a trace (0: all), at most ``max_nodes`` nodes.

        The service is asked for one level more than is drawn, so that the nodes of the last
        drawn level that lead further are known: they come back as ``frontier``. ``truncated``
        says the node limit cut the trace before its levels did."""
        request = query_pb2.TraceRequest(
            node_ids=list(node_ids),
            max_depth=depth + 1 if depth else 0,
            limit=max_nodes + 1,
            zoomed_out_modules=list(zoomed_out),
        )
        reply = self._call("BackwardTrace" if backward else "ForwardTrace", request)
        edges = [(e.src, e.dst) for e in reply.edges]
        levels = cut(list(node_ids), edges, backward, depth)
        kept = [n for n in reply.nodes if n.id in levels.levels]
        # The service returns a trace level by level: when the limit cut it past the drawn
        # levels (some node beyond them came back), the drawn levels are whole.
        truncated = reply.truncated and len(kept) == len(reply.nodes)
        if len(kept) > max_nodes:
            kept, truncated = kept[:max_nodes], True
        ids = {n.id for n in kept}
        return {
            "nodes": [
                {
                    **payloads.node(n),
                    "level": levels.levels[n.id],
                    "frontier": n.id in levels.frontier,
                }
                for n in kept
            ],
            "edges": [{"src": s, "dst": d} for s, d in edges if s in ids and d in ids],
            "truncated": bool(truncated),
        }

    def locate(self, node_ids: Sequence[str]) -> JSON:
        """The file and row (or partition and offset) of each source row named."""
        reply = self._call(
            "LocateSourceRows", query_pb2.LocateSourceRowsRequest(node_ids=list(node_ids))
        )
        return {"rows": [payloads.source_row(r) for r in reply.rows]}

    def deletion(self, node_ids: Sequence[str], zoomed_out: Sequence[str] = ()) -> JSON:
        reply = self._call(
            "PropagateDeletion",
            query_pb2.DeletionRequest(node_ids=list(node_ids), zoomed_out_modules=list(zoomed_out)),
        )
        return payloads.deletion(reply)
