"""The errors a :class:`sparkprov.client.QueryClient` call ends with, by what the caller does next.

``QueryError`` is the root and keeps the gRPC status (``code``, its ``status`` name, the server's
``details``). ``InvalidArgument`` (fix the request) and ``NotFound`` (an unknown node or run) are
the caller's; ``Unauthenticated`` wants a token; ``Unavailable`` (server or Neo4j down, or the
deadline passed) may succeed on retry. Any other status is a plain ``QueryError``. A raw
``grpc.RpcError`` never leaves the client: :func:`from_rpc_error` wraps it (``raise ... from``).
"""

from __future__ import annotations

import grpc

__all__ = [
    "FailedPrecondition",
    "InvalidArgument",
    "NotFound",
    "QueryError",
    "Unauthenticated",
    "Unavailable",
    "from_rpc_error",
]


class QueryError(Exception):
    """A failed query; ``code`` is the gRPC status code, ``details`` the server's message."""

    def __init__(self, code: grpc.StatusCode, details: str) -> None:
        super().__init__(f"{code.name}: {details}")
        self.code = code
        self.details = details

    @property
    def status(self) -> str:
        """The status's name, e.g. ``NOT_FOUND``."""
        return str(self.code.name)


class InvalidArgument(QueryError):
    """The request is malformed (bad id, limit over the maximum, unknown strategy ...)."""


class NotFound(QueryError):
    """An unknown node id or run."""


class FailedPrecondition(QueryError):
    """The server refuses the request in the stored state it is in (e.g. deleting a run that
    others are tied to); the message says what would let it through."""


class Unauthenticated(QueryError):
    """The server wants a bearer token (``token=`` / ``SPARKPROV_QUERY_TOKEN``) it did not get."""


class Unavailable(QueryError):
    """The server or its graph store cannot be reached, or the deadline passed: retryable."""


_BY_CODE: dict[grpc.StatusCode, type[QueryError]] = {
    grpc.StatusCode.INVALID_ARGUMENT: InvalidArgument,
    grpc.StatusCode.OUT_OF_RANGE: InvalidArgument,
    grpc.StatusCode.NOT_FOUND: NotFound,
    grpc.StatusCode.FAILED_PRECONDITION: FailedPrecondition,
    grpc.StatusCode.UNAUTHENTICATED: Unauthenticated,
    grpc.StatusCode.PERMISSION_DENIED: Unauthenticated,
    grpc.StatusCode.UNAVAILABLE: Unavailable,
    grpc.StatusCode.DEADLINE_EXCEEDED: Unavailable,
}


def from_rpc_error(error: grpc.RpcError) -> QueryError:
    """The :class:`QueryError` subclass for a failed call's status."""
    code = error.code() if hasattr(error, "code") else grpc.StatusCode.UNKNOWN
    details = (error.details() if hasattr(error, "details") else "") or ""
    if not isinstance(code, grpc.StatusCode):
        code = grpc.StatusCode.UNKNOWN
    return _BY_CODE.get(code, QueryError)(code, str(details))
