"""Both services' Prometheus metrics (prometheus_client), without Kafka or Neo4j: the ingest
service's ``/metrics`` serves the loop's counters under their names and the flush and index
latency histograms; the query service counts every RPC by method and status code and times it,
streams included, and serves them on its own address."""

from __future__ import annotations

import urllib.request

import networkx as nx
import pytest
from prometheus_client import start_http_server
from prometheus_client.parser import text_string_to_metric_families

from ingest_service.metrics import Metrics
from ingest_service.monitoring import serve
from query_service.metrics import RpcMetrics
from query_service.server import create_server
from query_service.settings import QuerySettings
from sparkprov.client import QueryClient
from sparkprov.query_errors import InvalidArgument, NotFound

from .test_traces import FakeStore


def _scrape(url: str) -> dict[str, dict[tuple, float]]:
    with urllib.request.urlopen(url, timeout=10) as reply:
        text = reply.read().decode()
    samples: dict[str, dict[tuple, float]] = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            samples.setdefault(s.name, {})[tuple(sorted(s.labels.items()))] = s.value
    return samples


def test_ingest_serves_its_counters_and_latency_histograms() -> None:
    metrics = Metrics()
    metrics.messages, metrics.conflicts, metrics.lag = 42, 3, 7
    for seconds in (0.02, 0.3, 4.0):
        metrics.flush_seconds.observe(seconds)
    metrics.index_call_seconds.observe(1.5)
    server = serve("127.0.0.1:0", metrics)
    try:
        got = _scrape(f"http://127.0.0.1:{server.server_port}/metrics")
    finally:
        server.shutdown()
    assert got["sparkprov_ingest_messages_total"][()] == 42  # the names scrapers already use
    assert got["sparkprov_ingest_conflicts_total"][()] == 3
    assert got["sparkprov_ingest_consumer_lag"][()] == 7
    flush = got["sparkprov_ingest_flush_seconds_bucket"]
    assert flush[(("le", "0.05"),)] == 1 and flush[(("le", "0.5"),)] == 2
    assert flush[(("le", "+Inf"),)] == 3
    assert got["sparkprov_ingest_flush_seconds_sum"][()] == pytest.approx(4.32)
    assert got["sparkprov_ingest_index_call_seconds_count"][()] == 1


def test_query_counts_and_times_each_rpc_by_method_and_code() -> None:
    metrics = RpcMetrics()
    store = FakeStore(nx.DiGraph([(0, 1), (1, 2)]))
    server, port = create_server(QuerySettings(grpc_addr="127.0.0.1:0"), store, metrics)  # type: ignore[arg-type]
    server.start()
    http, _ = start_http_server(0, "127.0.0.1", registry=metrics.registry)
    try:
        with QueryClient(f"127.0.0.1:{port}", timeout_s=10) as client:
            client.backward_trace(["2"])
            client.backward_trace(["1"])
            list(client.forward_trace_stream(["0"], chunk_size=1))
            with pytest.raises(InvalidArgument):
                client.backward_trace(["not-an-id"])
            with pytest.raises(NotFound):
                client.backward_trace(["99"])
        got = _scrape(f"http://127.0.0.1:{http.server_port}/metrics")
    finally:
        server.stop(grace=None)
        http.shutdown()
    calls = got["sparkprov_query_rpcs_total"]
    assert calls[(("code", "OK"), ("method", "BackwardTrace"))] == 2
    assert calls[(("code", "INVALID_ARGUMENT"), ("method", "BackwardTrace"))] == 1
    assert calls[(("code", "NOT_FOUND"), ("method", "BackwardTrace"))] == 1
    assert calls[(("code", "OK"), ("method", "ForwardTraceStream"))] == 1
    latency = got["sparkprov_query_rpc_seconds_count"]
    assert latency[(("method", "BackwardTrace"),)] == 4
    assert latency[(("method", "ForwardTraceStream"),)] == 1
