"""Optional bearer-token auth: a server interceptor that rejects calls whose ``authorization``
metadata is not ``Bearer <token>`` with UNAUTHENTICATED. Off unless a token is configured
(``SPARKPROV_QUERY_TOKEN``). Health checks stay open, so orchestrators can probe without the
secret; reflection does not, as it describes the API."""

from __future__ import annotations

import hmac
from collections.abc import Callable
from typing import Any

import grpc

__all__ = ["BearerTokenInterceptor"]

_OPEN = ("/grpc.health.v1.Health/",)


def _deny(request: Any, context: grpc.ServicerContext) -> Any:
    context.abort(grpc.StatusCode.UNAUTHENTICATED, "missing or wrong bearer token")


class BearerTokenInterceptor(grpc.ServerInterceptor):  # type: ignore[misc]
    def __init__(self, token: str) -> None:
        if not token:
            raise ValueError("an empty token would accept anyone")
        self._expected = f"Bearer {token}".encode()

    def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], grpc.RpcMethodHandler | None],
        details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler | None:
        if details.method.startswith(_OPEN):
            return continuation(details)
        given = dict(details.invocation_metadata or ()).get("authorization", "")
        if isinstance(given, str):
            given = given.encode()
        if hmac.compare_digest(given, self._expected):
            return continuation(details)
        handler = continuation(details)
        if handler is not None and handler.response_streaming:
            if handler.request_streaming:
                return grpc.stream_stream_rpc_method_handler(_deny_stream)
            return grpc.unary_stream_rpc_method_handler(_deny_stream)
        if handler is not None and handler.request_streaming:
            return grpc.stream_unary_rpc_method_handler(_deny)
        return grpc.unary_unary_rpc_method_handler(_deny)


def _deny_stream(request: Any, context: grpc.ServicerContext) -> Any:
    context.abort(grpc.StatusCode.UNAUTHENTICATED, "missing or wrong bearer token")
    yield  # pragma: no cover - abort raises
