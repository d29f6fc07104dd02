"""Synthetic runs published straight to Kafka, for faults that need ingest busy for a while."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from kafka import KafkaProducer
from kafka.admin import KafkaAdminClient, NewTopic

from sparkprov import defaults
from sparkprov.client import QueryClient
from sparkprov.events import (
    EdgeColumns,
    NodeColumns,
    encode_batch,
    encode_run_complete,
    encode_run_started,
)

__all__ = [
    "ChainRun",
    "free_port",
    "ingest_process",
    "new_topic",
    "publish_chain_run",
    "wait_until_storing",
]

ROOT = Path(__file__).resolve().parents[2]


def new_topic(bootstrap: str, partitions: int, prefix: str) -> str:
    """A fresh topic ``sparkprov.test.<prefix>.<random>`` with ``partitions`` partitions."""
    name = f"sparkprov.test.{prefix}.{uuid.uuid4().hex[:8]}"
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        admin.create_topics([NewTopic(name, partitions, 1)])
    finally:
        admin.close()
    return name


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def ingest_process(env: Mapping[str, str], log: Path) -> subprocess.Popen[bytes]:
    """A real ingest service process (``python -m ingest_service``), its output appended to
    ``log``."""
    with log.open("ab") as out:
        return subprocess.Popen(  # noqa: S603 - our own service
            [sys.executable, "-m", "ingest_service"],
            env=dict(env),
            cwd=ROOT,
            stdout=out,
            stderr=subprocess.STDOUT,
        )


@dataclass(frozen=True)
class ChainRun:
    run_id: str
    nodes: int
    edges: int
    first_id: int


def publish_chain_run(bootstrap: str, workflow: str, batches: int, rows: int) -> ChainRun:
    """A run of ``batches`` messages of ``rows`` fresh TOKEN nodes chained by edges, with its
    run markers: ``batches * (2 rows - 1)`` records, a backlog of minutes when large."""
    run_id = f"{workflow}-{uuid.uuid4().hex}"
    base = int(uuid.uuid4().int >> 66)  # fresh ids, far from any other test's
    producer = KafkaProducer(bootstrap_servers=bootstrap)
    key = run_id.encode()
    producer.send(defaults.TOPIC, value=encode_run_started(run_id, workflow, 1, ""), key=key)
    for b in range(batches):
        ids = np.arange(base + b * rows, base + (b + 1) * rows, dtype=np.int64)
        value = encode_batch(
            run_id, workflow, "t", 0, b, [NodeColumns("TOKEN", ids, label="t")],
            EdgeColumns(ids[:-1], ids[1:]),
        )  # fmt: skip
        producer.send(defaults.TOPIC, value=value, key=key)
    nodes, edges = batches * rows, batches * (rows - 1)
    producer.send(
        defaults.TOPIC, value=encode_run_complete(run_id, workflow, nodes, edges), key=key
    )
    producer.flush()
    producer.close()
    return ChainRun(run_id, nodes, edges, base)


def wait_until_storing(client: QueryClient, run_id: str, timeout_s: float = 120) -> None:
    """Until ingest stored part, not all, of the run."""
    deadline = time.monotonic() + timeout_s
    while True:
        run = next((r for r in client.runs() if r.run_id == run_id), None)
        if run is not None and run.node_count > 0:
            assert not run.complete, "the run was stored whole before the fault"
            return
        assert time.monotonic() < deadline, "ingest stored nothing of the run"
        time.sleep(0.1)
