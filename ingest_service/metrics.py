"""Counters of the ingest service, written by the consume loop and read by ``/metrics``
(ingest_service.monitoring), and its latency histograms (prometheus_client)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from prometheus_client import CollectorRegistry, Histogram

__all__ = ["WRITE_BUCKETS", "Metrics"]

# From a small flush (milliseconds) to an index call at its time limit (120 s).
WRITE_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120)


@dataclass
class Metrics:
    """Counters for /metrics; written by the loop thread, read by the HTTP thread."""

    messages: int = 0
    dead_letters: int = 0
    # Commits held back because a dead letter was not acknowledged (its partition is re-read).
    dead_letter_failures: int = 0
    flushes: int = 0
    nodes_written: int = 0
    edges_written: int = 0
    runs_completed: int = 0
    runs_dangling: int = 0  # completed runs whose edges reference never-stored nodes
    dangling_nodes: int = 0  # those never-stored nodes
    write_seconds_total: float = 0.0
    last_write_seconds: float = 0.0
    store_failures: int = 0
    # Events dead-lettered because Neo4j refused their data (isolated from their flush).
    store_rejections: int = 0
    # Nodes re-sent with other content than the stored version (kept); their events are copied
    # to the dead-letter topic with reason "conflict".
    conflicts: int = 0
    lag: int = 0
    assigned_partitions: int = 0
    # Kafka consumers closed and made again because the group had silently left this member
    # without its partitions (ingest_service.membership).
    consumer_recreations: int = 0
    # The indexer (ingest_service.indexer): its calls, their time, the writes it indexed, and
    # the writes whose ids wait (as of its last call).
    index_calls: int = 0
    index_seconds_total: float = 0.0
    writes_indexed: int = 0
    ids_pending_writes: int = 0
    # Set at every turn of the loop: /healthz reports a loop stuck for long (in a write, or
    # retrying while Neo4j is away).
    last_loop_monotonic: float = field(default_factory=time.monotonic)
    ready: bool = False
    # Each process's own registry (tests make many Metrics in one process).
    registry: CollectorRegistry = field(default_factory=CollectorRegistry, repr=False)

    def __post_init__(self) -> None:
        self.flush_seconds = Histogram(
            "sparkprov_ingest_flush_seconds",
            "time of a flush's Neo4j write transaction",
            buckets=WRITE_BUCKETS,
            registry=self.registry,
        )
        self.index_call_seconds = Histogram(
            "sparkprov_ingest_index_call_seconds",
            "time of an indexer call (sparkprov.index)",
            buckets=WRITE_BUCKETS,
            registry=self.registry,
        )
