"""The query service's Prometheus metrics (prometheus_client): per RPC method, a latency
histogram and a count of calls by status code; served on ``SPARKPROV_QUERY_METRICS_ADDR``
(``/metrics``) by ``python -m query_service``.

:meth:`RpcMetrics.wrap` times a method's behavior where the server registers it
(``query_service.server.add_servicer``): a unary call until it returns, a streaming one until its
last chunk is sent (or the stream fails). The status is the one the servicer aborted with
(``context.abort``), ``OK``, or ``UNKNOWN`` for anything else that escaped.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import grpc
from prometheus_client import CollectorRegistry, Counter, Histogram

__all__ = ["LATENCY_BUCKETS", "RpcMetrics"]

# From a node view (milliseconds) to a trace over a million nodes (tens of seconds).
LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60)


def _code(context: grpc.ServicerContext) -> str:
    code = context.code() if hasattr(context, "code") else None
    return code.name if isinstance(code, grpc.StatusCode) else "UNKNOWN"


class RpcMetrics:
    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry if registry is not None else CollectorRegistry()
        self.latency = Histogram(
            "sparkprov_query_rpc_seconds",
            "time to answer an RPC (a stream: until its last chunk)",
            ["method"],
            buckets=LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.calls = Counter(
            "sparkprov_query_rpcs",
            "RPCs answered, by method and status code",
            ["method", "code"],
            registry=self.registry,
        )

    @contextmanager
    def _observed(self, method: str, context: grpc.ServicerContext) -> Iterator[None]:
        started, code = time.perf_counter(), "OK"
        try:
            yield
        except BaseException:
            code = _code(context)
            raise
        finally:
            self.latency.labels(method).observe(time.perf_counter() - started)
            self.calls.labels(method, code).inc()

    def wrap(
        self, behavior: Callable[[Any, grpc.ServicerContext], Any], method: str, streaming: bool
    ) -> Callable[[Any, grpc.ServicerContext], Any]:
        """``behavior``, timed and counted under ``method``."""
        if streaming:

            def stream(request: Any, context: grpc.ServicerContext) -> Iterator[Any]:
                with self._observed(method, context):
                    yield from behavior(request, context)

            return stream

        def unary(request: Any, context: grpc.ServicerContext) -> Any:
            with self._observed(method, context):
                return behavior(request, context)

        return unary
