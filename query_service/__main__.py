"""``python -m query_service``: settings from the environment (see README), then serve gRPC."""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading
from types import FrameType

from prometheus_client import start_http_server

from query_service.metrics import RpcMetrics
from query_service.server import create_server
from query_service.settings import QuerySettings
from query_service.store import Store
from sparkprov.runtime import configure_logging

log = logging.getLogger("query_service")


def main() -> int:
    configure_logging(os.environ.get("SPARKPROV_LOG_LEVEL", "INFO"))
    settings = QuerySettings.from_env(os.environ)
    store = Store.connect(
        settings.neo4j_uri,
        settings.neo4j_user,
        settings.neo4j_password,
        timeout_s=settings.neo4j_timeout_s,
        tls_ca=settings.neo4j_tls_ca,
        database=settings.neo4j_database,
    )
    metrics = RpcMetrics()
    server, port = create_server(settings, store, metrics)
    server.start()
    if settings.metrics_addr:
        host, _, metrics_port = settings.metrics_addr.rpartition(":")
        start_http_server(int(metrics_port), host or "127.0.0.1", registry=metrics.registry)
    log.info(
        "serving sparkprov.v1.ProvenanceQuery on %s (port %d, %s)",
        settings.grpc_addr,
        port,
        "TLS" if settings.tls_cert else "plaintext",
    )
    stopped = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stopped.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    stopped.wait()
    server.stop(grace=5).wait()
    store.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
