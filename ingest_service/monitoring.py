"""HTTP endpoints of the ingest service: ``/healthz`` (200 once consuming) and ``/metrics``
(Prometheus, by prometheus_client: the loop's counters and gauges, read from :class:`Metrics` at
each scrape, and its latency histograms)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from ingest_service.metrics import Metrics

__all__ = ["serve"]

_STALL_S = 120.0


class _Counters(Collector):
    """The loop's counters and gauges (:class:`Metrics`), read at every scrape."""

    def __init__(self, metrics: Metrics) -> None:
        self._metrics = metrics

    def collect(self) -> Iterator[Metric]:
        m = self._metrics
        rows = [
            ("sparkprov_ingest_messages_total", "counter", "Kafka messages consumed", m.messages),
            (
                "sparkprov_ingest_dead_letters_total",
                "counter",
                "messages sent to the DLQ",
                m.dead_letters,
            ),
            (
                "sparkprov_ingest_dead_letter_failures_total",
                "counter",
                "commits held back by an unacknowledged dead letter",
                m.dead_letter_failures,
            ),
            ("sparkprov_ingest_flushes_total", "counter", "Neo4j write transactions", m.flushes),
            ("sparkprov_ingest_nodes_total", "counter", "new nodes stored", m.nodes_written),
            ("sparkprov_ingest_edges_total", "counter", "new edges stored", m.edges_written),
            (
                "sparkprov_ingest_runs_completed_total",
                "counter",
                "runs marked complete",
                m.runs_completed,
            ),
            (
                "sparkprov_ingest_runs_dangling_total",
                "counter",
                "runs completed with edges to nodes they never stored",
                m.runs_dangling,
            ),
            (
                "sparkprov_ingest_dangling_nodes_total",
                "counter",
                "never-stored nodes referenced by the edges of completed runs",
                m.dangling_nodes,
            ),
            (
                "sparkprov_ingest_store_failures_total",
                "counter",
                "failed write attempts",
                m.store_failures,
            ),
            (
                "sparkprov_ingest_store_rejections_total",
                "counter",
                "events dead-lettered because Neo4j refused their data",
                m.store_rejections,
            ),
            (
                "sparkprov_ingest_conflicts_total",
                "counter",
                "nodes re-sent with other content than stored (first version kept)",
                m.conflicts,
            ),
            (
                "sparkprov_ingest_write_seconds_total",
                "counter",
                "time in Neo4j writes",
                m.write_seconds_total,
            ),
            (
                "sparkprov_ingest_last_write_seconds",
                "gauge",
                "latency of the last write",
                m.last_write_seconds,
            ),
            ("sparkprov_ingest_consumer_lag", "gauge", "messages behind the log end", m.lag),
            (
                "sparkprov_ingest_assigned_partitions",
                "gauge",
                "partitions this member holds",
                m.assigned_partitions,
            ),
            (
                "sparkprov_ingest_consumer_recreations_total",
                "counter",
                "Kafka consumers recreated because the group left this member without partitions",
                m.consumer_recreations,
            ),
            (
                "sparkprov_ingest_index_calls_total",
                "counter",
                "calls of the indexer",
                m.index_calls,
            ),
            (
                "sparkprov_ingest_index_seconds_total",
                "counter",
                "seconds in the indexer's calls",
                round(m.index_seconds_total, 6),
            ),
            (
                "sparkprov_ingest_writes_indexed_total",
                "counter",
                "writes whose component and set ids the indexer kept",
                m.writes_indexed,
            ),
            (
                "sparkprov_ingest_ids_pending_writes",
                "gauge",
                "writes whose ids wait for the indexer (as of its last call)",
                m.ids_pending_writes,
            ),
        ]
        for name, kind, help_text, value in rows:
            family = CounterMetricFamily if kind == "counter" else GaugeMetricFamily
            yield family(name, help_text, value=value)


def serve(address: str, metrics: Metrics) -> ThreadingHTTPServer:
    """``/healthz`` and ``/metrics`` on ``address``, from a thread of their own."""
    metrics.registry.register(_Counters(metrics))
    host, _, port = address.rpartition(":")

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            if self.path == "/healthz":
                alive = time.monotonic() - metrics.last_loop_monotonic < _STALL_S
                ok = metrics.ready and alive
                self._reply(200 if ok else 503, "ok\n" if ok else "not ready\n")
            elif self.path == "/metrics":
                self._reply(200, generate_latest(metrics.registry).decode(), CONTENT_TYPE_LATEST)
            else:
                self._reply(404, "not found\n")

        def _reply(self, code: int, body: str, ctype: str = "text/plain") -> None:
            data = body.encode()
            self.send_response(code)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: object) -> None:  # noqa: A002
            pass

    server = ThreadingHTTPServer((host or "127.0.0.1", int(port)), Handler)
    threading.Thread(target=server.serve_forever, name="ingest-http", daemon=True).start()
    return server
