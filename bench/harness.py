"""What the benchmarks share: a private local stack (own folder and ports, jars from .stack), the
real ingest service run as a consumer group, and polling the stored counts until a run is complete.

A benchmark picks a folder and a :class:`Ports`, so several benchmarks (or a benchmark and the
test suite's ``.stack``) never share a Kafka, a Neo4j or a port.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import neo4j

from bench.gen import Graph, publish
from localstack.stack import Stack, StackSettings
from sparkprov import defaults
from sparkprov.progress import Progress

__all__ = [
    "RESULTS",
    "ROOT",
    "Consumers",
    "IngestOptions",
    "Ports",
    "bench_stack",
    "busy_ports",
    "create_topic",
    "exact_counts",
    "ingest",
    "peak_rss_mib",
    "stored",
    "topic_bytes",
]

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"


@dataclass(frozen=True)
class Ports:
    """Loopback ports of one benchmark's stack; ingest process i serves HTTP on ingest_http + i."""

    kafka: int = 39092
    kafka_controller: int = 39093
    bolt: int = 37687
    grpc: int = 39051
    ingest_http: int = 39500

    def all(self, consumers: int = 2) -> list[int]:
        base = [self.kafka, self.kafka_controller, self.bolt, self.grpc]
        return base + [self.ingest_http + i for i in range(consumers)]


# Addresses come from a bench's --*-port flags only: a shell's SPARKPROV_NEO4J_URI must not point
# a bench at .stack.
ADDRESS_VARIABLES = frozenset(
    {
        defaults.ENV_KAFKA_BOOTSTRAP,
        defaults.ENV_NEO4J_URI,
        defaults.ENV_GRPC_ADDR,
        defaults.ENV_INGEST_HTTP_ADDR,
        defaults.ENV_NEO4J_HTTP_ADDR,
        defaults.ENV_VIEWER_ADDR,
        "SPARKPROV_KAFKA_CONTROLLER_PORT",
    }
)


def without_addresses(environ: Mapping[str, str]) -> dict[str, str]:
    """``environ`` without the variables that name a server's address."""
    return {k: v for k, v in environ.items() if k not in ADDRESS_VARIABLES}


def ingest_env(settings: Any, topic: str, run_id: str, partitions: int) -> dict[str, str]:
    """The environment of bulk-loading ingest processes: their own topic, dead-letter topic and
    consumer group, quiet logs."""
    return {
        **os.environ,
        defaults.ENV_KAFKA_BOOTSTRAP: settings.kafka_bootstrap,
        defaults.ENV_NEO4J_URI: settings.neo4j_uri,
        defaults.ENV_TOPIC: topic,
        defaults.ENV_DLQ_TOPIC: topic + ".dlq",
        "SPARKPROV_INGEST_GROUP": f"bench-{run_id}",
        "SPARKPROV_TOPIC_PARTITIONS": str(partitions),
        "SPARKPROV_LOG_LEVEL": "WARNING",
    }


def busy_ports(ports: list[int]) -> list[int]:
    """The ports something already listens on (127.0.0.1)."""
    busy = []
    for port in ports:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            sock.settimeout(0.3)
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                busy.append(port)
    return busy


def bench_stack(
    environ: dict[str, str], folder: str = ".stack-bench", ports: Ports | None = None
) -> Stack:
    """A stack in ``ROOT/folder`` on ``ports``; SPARKPROV_* variables in ``environ`` win."""
    ports = ports or Ports()
    directory = ROOT / folder
    directory.mkdir(exist_ok=True)
    for name in ("lib", "plugins"):
        link = directory / name
        if not link.exists():
            link.symlink_to(ROOT / ".stack" / name)
    env = {
        defaults.ENV_KAFKA_BOOTSTRAP: f"127.0.0.1:{ports.kafka}",
        "SPARKPROV_KAFKA_CONTROLLER_PORT": str(ports.kafka_controller),
        defaults.ENV_NEO4J_URI: f"bolt://127.0.0.1:{ports.bolt}",
        defaults.ENV_GRPC_ADDR: f"127.0.0.1:{ports.grpc}",
        defaults.ENV_INGEST_HTTP_ADDR: f"127.0.0.1:{ports.ingest_http}",
        # No Neo4j HTTP connector (Browser): it would take the port of the stack `make up` runs.
        defaults.ENV_NEO4J_HTTP_ADDR: "",
        **environ,
    }
    return Stack(StackSettings.from_env(directory, env))


def embedded_neo4j(stack: Stack, source: Path, *args: str) -> list[str]:
    """The command that runs a single-file Java program (``source``, under bench/java/) against
    the stack's Neo4j jars, in a JVM of the stack's heap: the bare-engine writers."""
    return [
        stack.settings.java,
        *stack.settings.neo4j.jvm_heap_flags(),
        "-XX:+UseG1GC",
        "-cp",
        f"{stack.dir / 'lib' / 'neo4j'}/*",
        str(source),
        *args,
    ]


def peak_rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return 0.0


def topic_bytes(bootstrap: str, topic: str) -> int:
    """Bytes the brokers' logs hold for ``topic`` (every partition, record batches as stored:
    after compression; ``DescribeLogDirs``, so any Kafka answers, not only a local one). A run's
    bytes on the wire are the growth of this across the run."""
    from kafka.admin import KafkaAdminClient

    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        answers = admin.describe_log_dirs()
    finally:
        admin.close()
    return sum(
        partition["partition_size"]
        for broker in answers
        for log_dir in broker["log_dirs"]
        for t in log_dir["topics"]
        if t["name"] == topic
        for partition in t["partitions"]
    )


def create_topic(bootstrap: str, topic: str, partitions: int) -> None:
    from kafka.admin import KafkaAdminClient, NewTopic

    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        admin.create_topics([NewTopic(topic, partitions, 1)])
    finally:
        admin.close()


def fresh_topic(bootstrap: str, topic: str, partitions: int, timeout_s: float = 300.0) -> None:
    """``topic`` empty: deleted with its logs (if it was there), then created again. A broker
    appending to a log of several GB took 2-5x the CPU per run it took on a new one
    (bench/README.md, "The bench's topic made new"), so a benchmark's runs start on a new log."""
    from kafka.admin import KafkaAdminClient
    from kafka.errors import TopicAlreadyExistsError, UnknownTopicOrPartitionError

    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        with contextlib.suppress(UnknownTopicOrPartitionError):
            admin.delete_topics([topic])
        deadline = time.monotonic() + timeout_s
        while topic in admin.list_topics() or topic_bytes(bootstrap, topic) > 0:
            if time.monotonic() > deadline:
                raise TimeoutError(f"topic {topic} still there {timeout_s:.0f} s after deleting it")
            time.sleep(1.0)
    finally:
        admin.close()
    for attempt in range(30):  # the broker may still be removing the old log
        try:
            create_topic(bootstrap, topic, partitions)
            return
        except TopicAlreadyExistsError:  # while marked for deletion
            if attempt == 29:
                raise
            time.sleep(2.0)


class Consumers:
    """``count`` ingest processes in one group; each keeps its own peak RSS once stopped."""

    def __init__(self, count: int, env: dict[str, str], logs: Path, http_base: int = 39500) -> None:
        self.env, self.logs, self.http_base = env, logs, http_base
        self.procs: list[subprocess.Popen[bytes] | None] = [None] * count
        self.peaks: list[float] = [0.0] * count
        self.restarts = 0

    def start(self, i: int) -> None:
        env = dict(self.env)
        # http_base 0: every process binds an ephemeral port (no fixed port to collide on).
        port = self.http_base + i if self.http_base else 0
        env[defaults.ENV_INGEST_HTTP_ADDR] = f"127.0.0.1:{port}"
        log = open(self.logs / f"ingest-{i}.log", "ab")  # noqa: SIM115 - owned by the process
        self.procs[i] = subprocess.Popen(
            [sys.executable, "-m", "ingest_service"], env=env, stdout=log, stderr=log, cwd=ROOT
        )

    def sample(self) -> None:
        for i, p in enumerate(self.procs):
            if p is not None and p.poll() is None:
                with contextlib.suppress(OSError):  # it just exited
                    self.peaks[i] = max(self.peaks[i], peak_rss_mib(p.pid))

    def kill(self, i: int) -> None:
        p = self.procs[i]
        assert p is not None
        self.sample()
        p.send_signal(signal.SIGKILL)
        p.wait()
        self.restarts += 1

    def stop(self) -> None:
        self.sample()
        for p in self.procs:
            if p is not None and p.poll() is None:
                p.terminate()
        for p in self.procs:
            if p is not None:
                try:
                    p.wait(timeout=60)
                except subprocess.TimeoutExpired:
                    p.kill()


def stored(driver: neo4j.Driver, run_id: str) -> dict[str, Any]:
    records, _, _ = driver.execute_query(
        "MATCH (r:Run {run_id: $run}) RETURN r.stored_nodes AS nodes, r.stored_edges AS edges, "
        "r.complete AS complete",
        run=run_id,
    )
    return dict(records[0]) if records else {"nodes": 0, "edges": 0, "complete": False}


def exact_counts(driver: neo4j.Driver, run_id: str) -> tuple[int, int]:
    """Nodes and DERIVES edges of the run, counted in the graph itself (not the markers)."""
    records, _, _ = driver.execute_query(
        "MATCH (n:Node {run_id: $run}) "
        "RETURN count(n) AS nodes, sum(COUNT { (n)-[:DERIVES]->() }) AS edges",
        run=run_id,
    )
    return records[0]["nodes"], records[0]["edges"]


@dataclass
class IngestOptions:
    consumers: int = 2
    partitions: int = 4
    timeout: float = 3600
    kill_one: bool = False  # SIGKILL ingest process 0 at 40% and restart it
    restart_neo4j: bool = False  # stop Neo4j at 60%, start it again 5 s later
    http_base: int = 39500
    events: list[str] = field(default_factory=list)
    # Keep the ingest processes (whose indexer keeps the ids) running until no write's ids wait:
    # benchmarks that read component and set ids must not read them half indexed.
    indexed: bool = False


def ids_pending(driver: neo4j.Driver) -> bool:
    """Whether some write's component and set ids still wait for the indexer (its :IdWork rows)."""
    records, _, _ = driver.execute_query("MATCH (w:IdWork) RETURN count(w) > 0 AS pending")
    return bool(records[0]["pending"])


def ingest(
    stack: Stack, graph: Graph, driver: neo4j.Driver, logs: Path, options: IngestOptions
) -> dict[str, Any]:
    """Publish ``graph`` to a fresh topic, then run the ingest service as ``options.consumers``
    processes until the run is marked complete; timings, rates and the exact stored counts."""
    settings = stack.settings
    topic = f"bench.ingest.{uuid.uuid4().hex[:8]}"
    run_id = f"bench-{uuid.uuid4().hex[:12]}"
    create_topic(settings.kafka_bootstrap, topic, options.partitions)
    started = time.monotonic()
    publish(graph, settings.kafka_bootstrap, topic, run_id)
    publish_s = time.monotonic() - started
    total = graph.nodes + graph.edges

    env = ingest_env(settings, topic, run_id, options.partitions)
    consumers = Consumers(options.consumers, env, logs, options.http_base)
    bar = Progress(total, f"ingesting with {options.consumers} consumers")
    t0 = time.monotonic()
    for i in range(options.consumers):
        consumers.start(i)
    killed = restarted = False
    samples: list[tuple[float, int]] = []
    events = options.events
    try:
        while True:
            time.sleep(0.5)
            consumers.sample()
            try:
                state = stored(driver, run_id)
            except neo4j.exceptions.DriverError:
                continue  # Neo4j is restarting
            done = state["nodes"] + state["edges"]
            samples.append((time.monotonic() - t0, done))
            bar.update(done)
            if state["complete"] and (not options.indexed or not ids_pending(driver)):
                break
            if options.kill_one and not killed and done >= 0.4 * total:
                consumers.kill(0)
                events.append(f"SIGKILL ingest-0 at {done:,} records")
                time.sleep(1)
                consumers.start(0)
                killed = True
            if options.restart_neo4j and not restarted and done >= 0.6 * total:
                events.append(f"Neo4j stopped at {done:,} records")
                stack.down(("neo4j",))
                time.sleep(5)
                stack.up(("neo4j",))
                events.append("Neo4j started again")
                restarted = True
            if time.monotonic() - t0 > options.timeout:
                raise SystemExit(f"ingest did not complete in {options.timeout}s: {state}")
    finally:
        bar.close()
        consumers.stop()
    elapsed = time.monotonic() - t0
    nodes, edges = exact_counts(driver, run_id)
    # Sustained rate: between 10% and 90% of the records (startup and tail excluded).
    lo = next((t, d) for t, d in samples if d >= 0.1 * total)
    hi = next((t, d) for t, d in samples if d >= 0.9 * total)
    sustained = (hi[1] - lo[1]) / max(1e-9, hi[0] - lo[0])
    return {
        "run_id": run_id,
        "topic": topic,
        "records": total,
        "publish_s": publish_s,
        "elapsed_s": elapsed,
        "records_per_s": total / elapsed,
        "sustained_records_per_s": sustained,
        "peak_rss_mib": consumers.peaks,
        "events": events,
        "stored_nodes": nodes,
        "stored_edges": edges,
        "expected_nodes": graph.nodes,
        "expected_edges": graph.edges,
        "counts_match": nodes == graph.nodes and edges == graph.edges,
    }
