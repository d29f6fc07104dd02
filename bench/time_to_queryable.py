"""Time to queryable: from the end of a captured Spark job until its lineage can be queried, with
what it costs on the wire and on disk, side by side with the plain and captured job times.

    python -m bench.time_to_queryable [--rows 1000000] [--dim 100000] [--shapes pipeline,enrich]
        [--servers cold,warm] [--warm-rows 200000] [--timeout-s 14400] [--warmup 1]
        [--folder .stack-ttq] [--kafka-port 29092] ...

Two shapes over the same inputs (``--rows`` order rows and ``--dim`` customers, parquet):
- ``pipeline``: capture_overhead's pipeline: filter (80% kept), join with the customers, groupBy
  region with 3 aggregates, collected (37 rows out);
- ``enrich``: filter, join, withColumn, written as parquet (every kept row reaches the output);
- and, when named, ``total``: filter and one global aggregate (one group of every kept row: the
  hub the indexer pages);
- and ``cars=CARS/EXECUTIONS`` (``cars`` alone: 20000/10): Lipstick's car dealerships
  (examples/cars.py), a job that runs for tens of seconds at a rate of lineage the engine can
  write, so that its records stored by the job's end say whether ingest overlaps the job; its
  input rows are its cars.

Everything runs on a private stack (``--folder``, its own ports; the jars come from ``.stack``,
so run ``make setup`` first): Kafka, Neo4j, one ingest process and the query service, as ``make
up`` runs them. Each shape gets an empty Neo4j, a topic and consumer group of its own (Kafka keeps
running). In one Spark session: ``--warmup`` untimed pairs (the captured one publishes to a topic
ingest does not read), the plain job (kill switch), then the captured job on the shape's topic,
which ingest consumes while the job runs. TIME TO QUERYABLE runs from the moment the ``with
ProvenanceSession`` block returns until ListRuns, through the real gRPC query service, reports
the run complete; time to indexed, until it reports the run indexed (component and set ids
current: ingest keeps them behind the data). After ``--timeout-s`` without that, the shape
records what is stored so far and the rate instead.

Each shape runs on a *cold* server (Neo4j started for it: its JIT compiles the write path while
the run is written) and on a *warm* one (``--servers``), as a deployment's that has served jobs
before: a run of the shape over ``--warm-rows`` orders is ingested and indexed first, then deleted
(ingest_service.retention), so the measured run and the bare engine's replay hold only its
records; the bare engine's JVM is warmed alike (StoreReplay writes as many records into a scratch
database first, untimed).

Per shape: stored records (every node and relationship the run adds to Neo4j, id structures
included: Component, LevelSet, ConnectedSet nodes and SET_DEP; count store before and after) per
input row (orders + customers), wire bytes per input row (the shape's topic's log segments: the
run's messages as the broker stores them), disk bytes per stored record (growth of Neo4j's data
folder, store files and transaction logs, after a clean shutdown, which checkpoints), load
averages at its start and end. Prints a table, writes JSON to ``--results`` (bench/results/).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import neo4j
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from bench.capture_overhead import make_pipeline_inputs, pipeline
from bench.harness import (
    RESULTS,
    ROOT,
    Consumers,
    Ports,
    bench_stack,
    busy_ports,
    embedded_neo4j,
    without_addresses,
)
from capture_agent import ProvenanceSession
from examples import cars
from examples.spark import local_spark
from ingest_service.retention import delete_runs
from localstack.stack import Stack
from sparkprov import defaults
from sparkprov.client import QueryClient
from sparkprov.query_errors import QueryError
from sparkprov.query_model import Run

WARMUP_TOPIC = "sparkprov.bench.warmup"  # ingest does not read it

Body = Callable[[ProvenanceSession], Any]


def enrich(prov: ProvenanceSession, facts: str, dims: str, out: str) -> None:
    """Filter, join, withColumn, write parquet: every kept order row reaches the output."""
    spark = prov.spark
    orders = prov.source(spark.read.parquet(facts), "Orders")
    customers = prov.source(spark.read.parquet(dims), "Customers")
    paid = orders.filter(F.col("status") != 0)
    joined = paid.join(customers, on="customer_id")
    enriched = joined.withColumn("gross", F.round(F.col("amount") * 1.2, 2)).named("Enriched")
    enriched.write.mode("overwrite").parquet(out)


def total(prov: ProvenanceSession, facts: str) -> None:
    """One global aggregate: every kept order row is a member of one group, a hub whose node
    arrives after its members' edges (the indexer pages its edges: docs/graph-schema.md)."""
    orders = prov.source(prov.spark.read.parquet(facts), "Orders")
    paid = orders.filter(F.col("status") != 0)
    paid.agg(F.sum("amount").alias("revenue"), F.count("order_id").alias("orders")).collect()


# -- measurements ---------------------------------------------------------------------------


def graph_counts(driver: neo4j.Driver) -> dict[str, int]:
    """All nodes and relationships, and per label and type (Neo4j's count store: O(1) each)."""

    def count(query: str) -> int:
        records, _, _ = driver.execute_query(query)
        return int(records[0][0])

    labels = [r[0] for r in driver.execute_query("CALL db.labels()")[0]]
    types = [r[0] for r in driver.execute_query("CALL db.relationshipTypes()")[0]]
    counts = {"nodes": count("MATCH (n) RETURN count(n)")}
    counts["relationships"] = count("MATCH ()-[r]->() RETURN count(r)")
    counts |= {f"label:{x}": count(f"MATCH (n:`{x}`) RETURN count(n)") for x in labels}
    counts |= {f"type:{x}": count(f"MATCH ()-[r:`{x}`]->() RETURN count(r)") for x in types}
    return counts


def delta(after: dict[str, int], before: dict[str, int]) -> dict[str, int]:
    return {k: v - before.get(k, 0) for k, v in after.items() if v != before.get(k, 0)}


def allocated_bytes(folder: Path) -> int:
    """Disk blocks in use under ``folder`` (as du counts: preallocated logs included)."""
    total = 0
    for path in folder.rglob("*"):
        try:
            stat = path.lstat()
        except OSError:  # removed meanwhile (a pruned log)
            continue
        if path.is_file() and not path.is_symlink():
            total += stat.st_blocks * 512
    return total


def neo4j_disk(stack: Stack) -> dict[str, int]:
    home = stack.dir / "data" / "neo4j"
    return {
        "total": allocated_bytes(home),
        "store": allocated_bytes(home / "data" / "databases"),
        "transaction_logs": allocated_bytes(home / "data" / "transactions"),
    }


def topic_log_bytes(stack: Stack, topic: str) -> int:
    """Bytes of the topic's log segments (record batches as stored; indexes left out)."""
    folder = stack.dir / "data" / "kafka"
    return sum(p.stat().st_size for p in folder.glob(f"{topic}-*/*.log"))


# -- waiting --------------------------------------------------------------------------------


class Waiting:
    """A progress line for the wait: redrawn on a terminal, every 30 s otherwise."""

    def __init__(self, total: int) -> None:
        self.total = total
        self.tty = sys.stderr.isatty()
        self.last_line = 0.0

    def show(self, elapsed: float, done: int, rate: float, final: bool = False) -> None:
        now = time.monotonic()
        if not (self.tty or final or now - self.last_line >= 30):
            return
        self.last_line = now
        left = self.total - done
        eta = f"{left / rate:,.0f}s" if rate > 0 else "?"
        line = (
            f"waiting for queryable: {elapsed:,.0f}s, stored {done:,}/{self.total:,} "
            f"({100 * done / max(1, self.total):.1f}%), {rate:,.0f} records/s, eta {eta}"
        )
        sys.stderr.write(f"\r{line}\x1b[K" if self.tty else line + "\n")
        if self.tty and final:
            sys.stderr.write("\n")
        sys.stderr.flush()


def wait_queryable(
    client: QueryClient, run_id: str, total: int, started: float, timeout_s: float, poll_s: float
) -> dict[str, Any]:
    """Poll ListRuns from ``started`` (monotonic: the job's end) until ``run_id`` is complete
    or ``timeout_s`` has passed."""
    samples: list[tuple[float, int]] = []
    progress = Waiting(total)
    run: Run | None = None
    while True:
        try:
            runs = client.runs()
        except QueryError as e:  # a slow reply under load: ask again
            print(f"ListRuns failed ({e.status}); retrying", file=sys.stderr)
            runs = []
        for candidate in runs:
            if candidate.run_id == run_id:
                run = candidate
        elapsed = time.monotonic() - started
        done = run.node_count + run.edge_count if run is not None else 0
        samples.append((elapsed, done))
        recent = [s for s in samples if s[0] >= elapsed - 60]
        rate = (done - recent[0][1]) / max(1e-9, elapsed - recent[0][0]) if recent else 0.0
        complete = run is not None and run.complete
        if complete or elapsed >= timeout_s or (run is not None and run.failed):
            progress.show(elapsed, done, rate, final=True)
            break
        progress.show(elapsed, done, rate)
        time.sleep(poll_s)
    first = samples[0][1]
    return {
        "complete": complete,
        "time_to_queryable_s": elapsed if complete else None,
        "waited_s": elapsed,
        "stored_at_job_end": first,
        "stored_lineage_records": done,
        "wait_records_per_s": (done - first) / max(1e-9, elapsed),
        "last_minute_records_per_s": rate,
        "estimated_remaining_s": None if complete or rate <= 0 else (total - done) / rate,
        "state": f"RUN_STATE_{run.state.name}" if run is not None else None,
        "dangling_nodes": run.dangling_node_count if run is not None else None,
    }


# Where ingest's time went (ingest_service.monitoring): its Neo4j writes, against the rest of its
# loop (polling, decoding, buffering, committing offsets), which does not overlap them.
INGEST_METRICS = (
    "sparkprov_ingest_write_seconds_total",
    "sparkprov_ingest_flush_seconds_sum",
    "sparkprov_ingest_flush_seconds_count",
    "sparkprov_ingest_index_call_seconds_sum",
    "sparkprov_ingest_index_call_seconds_count",
)


def ingest_metrics(stack: Stack) -> dict[str, float]:
    """The first ingest process's counters of :data:`INGEST_METRICS`, from its ``/metrics``
    (none when it does not answer: the shape's other results are kept)."""
    from urllib.request import urlopen

    from prometheus_client.parser import text_string_to_metric_families

    try:
        with urlopen(f"http://{stack.settings.ingest_http_addr}/metrics", timeout=10) as reply:
            text = reply.read().decode()
    except OSError as e:
        print(f"ingest's /metrics did not answer ({e})", file=sys.stderr)
        return {}
    return {
        sample.name.removeprefix("sparkprov_ingest_"): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
        if sample.name in INGEST_METRICS
    }


class LockWaits:
    """Samples Neo4j's running transactions every ``every_s`` (``SHOW TRANSACTIONS``) while the
    run is ingested: of the samples of ingest's transactions (writes and index calls), the share
    whose status says they wait for a lock. Writers take no lock among themselves; this is what
    they still wait for (a race on one node, the run rows, the indexer's barrier). A write's
    slices (``tx_records``) are transactions of the procedure's own, without a query or adding
    to the run's counts: such a transaction that waits counts for the call it belongs to (each
    call is one sample), as does ingest's statement on the run rows after a call. Every
    2 s, not more often: SHOW TRANSACTIONS lists each transaction's locks, and a write holds
    ~10^5 of them (sampled every 0.5 s, 3.5% of Neo4j's CPU in a JFR recording of a 200k run)."""

    def __init__(self, driver: neo4j.Driver, every_s: float = 2.0) -> None:
        self.driver, self.every_s = driver, every_s
        self.samples = self.blocked = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> LockWaits:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=10)

    def _run(self) -> None:
        query = (
            "SHOW TRANSACTIONS YIELD currentQuery, status "
            "WHERE currentQuery CONTAINS 'sparkprov.write' "
            "OR currentQuery CONTAINS 'sparkprov.index' OR currentQuery = '' "
            "OR currentQuery CONTAINS 'MERGE (run:Run {run_id' "
            "RETURN currentQuery CONTAINS 'CALL sparkprov.' AS call, status"
        )
        while not self._stop.wait(self.every_s):
            try:
                records, _, _ = self.driver.execute_query(query)
            except neo4j.exceptions.Neo4jError:
                continue
            except neo4j.exceptions.DriverError:
                continue
            for r in records:
                self.samples += bool(r["call"])
                self.blocked += str(r["status"]).startswith("Blocked")

    def report(self) -> dict[str, Any]:
        share = self.blocked / self.samples if self.samples else None
        return {"lock_wait_samples": self.samples, "lock_wait_share": share}


def wait_indexed(
    client: QueryClient, run_id: str, started: float, timeout_s: float, poll_s: float
) -> float | None:
    """From the job's end (``started``), until ListRuns says the run is indexed (its component
    and set ids current: the indexer has kept every write of it); None after ``timeout_s``."""
    while time.monotonic() - started < timeout_s:
        try:
            runs = client.runs()
        except QueryError:
            runs = []
        if any(r.run_id == run_id and r.indexed for r in runs):
            return time.monotonic() - started
        time.sleep(poll_s)
    return None


# -- one shape --------------------------------------------------------------------------------


def shape_stack(environ: dict[str, str], name: str, folder: str, ports: Ports) -> Stack:
    """The stack for one shape: a topic and consumer group of its own, Neo4j wiped and started
    again (with ingest and the query service); Kafka keeps running from the previous shape (a
    restarted broker would refuse the Spark workers' cached idempotent producers)."""
    tag = f"{name.replace('@', '-')}.{uuid.uuid4().hex[:6]}"
    topic = f"sparkprov.ttq.{tag}"
    stack = bench_stack(
        {
            **environ,
            defaults.ENV_TOPIC: topic,
            defaults.ENV_DLQ_TOPIC: f"{topic}.dlq",
            "SPARKPROV_INGEST_GROUP": f"ttq.{tag}",
        },
        folder,
        ports,
    )
    stack.down(("neo4j", "ingest", "query"))
    shutil.rmtree(stack.dir / "data" / "neo4j", ignore_errors=True)
    stack.up(("kafka", "neo4j", "ingest", "query"))  # no viewer: nothing here looks at it
    return stack


def timed(spark: SparkSession, body: Body, **session: Any) -> tuple[float, ProvenanceSession]:
    started = time.perf_counter()
    with ProvenanceSession(spark, workflow="ttq", **session) as prov:
        body(prov)
    return time.perf_counter() - started, prov


def stack_driver(stack: Stack) -> neo4j.Driver:
    return neo4j.GraphDatabase.driver(
        stack.settings.neo4j_uri, auth=None, notifications_min_severity="OFF"
    )


def wait_run(
    client: QueryClient,
    run_id: str,
    total: int,
    started: float,
    args: argparse.Namespace,
    into: dict[str, Any],
    at_queryable: Callable[[], None] = lambda: None,
) -> None:
    """:func:`wait_queryable`, then (if it completed) :func:`wait_indexed` as
    ``time_to_indexed_s``, both from ``started``, each into ``into`` as it ends (a run stopped
    while its ids are indexed keeps its time to queryable); ``at_queryable`` is called between
    the two."""
    into |= wait_queryable(client, run_id, total, started, args.timeout_s, args.poll_s)
    at_queryable()
    into["time_to_indexed_s"] = (
        wait_indexed(client, run_id, started, args.timeout_s, args.poll_s)
        if into["complete"]
        else None
    )


def warm_server(
    name: str, body: Body, spark: SparkSession, stack: Stack, args: argparse.Namespace
) -> dict[str, Any]:
    """A server that has served a job before, as a deployment's has: the shape at ``body``'s
    smaller inputs is captured into the shape's topic and waited for until indexed, so Neo4j's
    JIT has compiled the write and index paths, then deleted again (ingest_service.retention), so
    the measured run and the bare engine's replay hold only the measured run's records."""
    topic = stack.settings.extra_env[defaults.ENV_TOPIC]
    bootstrap = stack.settings.kafka_bootstrap
    driver = stack_driver(stack)
    with driver, QueryClient(stack.settings.grpc_addr) as client:
        before = graph_counts(driver)
        _, prov = timed(spark, body, bootstrap=bootstrap, topic=topic)
        nodes, edges = prov.counts()
        waited: dict[str, Any] = {}
        wait_run(client, prov.run_id, nodes + edges, time.monotonic(), args, waited)
        indexed = waited["time_to_indexed_s"]
        if indexed is None:
            raise RuntimeError(f"{name}: the warm-up run was not indexed ({waited['state']})")
        stored = delta(graph_counts(driver), before)
        deleted = delete_runs(driver, prov.run_id)
    print(
        f"{name}: server warmed by a run of {nodes + edges:,} records "
        f"(queryable {waited['time_to_queryable_s']:.1f}s, indexed {indexed:.1f}s), deleted",
        file=sys.stderr,
    )
    return {
        "run_id": prov.run_id,
        "time_to_queryable_s": waited["time_to_queryable_s"],
        "time_to_indexed_s": indexed,
        "stored_records": stored.get("nodes", 0) + stored.get("relationships", 0),
        "deleted": vars(deleted),
    }


def run_shape(
    name: str,
    body: Body,
    spark: SparkSession,
    stack: Stack,
    args: argparse.Namespace,
    result: dict[str, Any],
    warm_body: Body | None = None,
) -> None:
    """Runs one shape, its measurements going into ``result`` as they are taken; with
    ``warm_body``, on a server warmed by that smaller run first (:func:`warm_server`)."""
    result["loadavg_start"] = os.getloadavg()
    bootstrap = stack.settings.kafka_bootstrap
    topic = stack.settings.extra_env[defaults.ENV_TOPIC]
    for _ in range(args.warmup):  # JIT, Python workers, file cache, the Kafka producer
        timed(spark, body, enabled=False)
        timed(spark, body, bootstrap=bootstrap, topic=WARMUP_TOPIC)
    result["plain_s"], _ = timed(spark, body, enabled=False)
    print(f"{name}: plain {result['plain_s']:.2f}s; topic {topic}", file=sys.stderr)
    result["server"] = "cold" if warm_body is None else "warm"
    if warm_body is not None:
        result["warm_up"] = warm_server(name, warm_body, spark, stack, args)

    driver = stack_driver(stack)
    # More ingest processes in the stack's group: writers in parallel (no lock among them).
    extra = Consumers(
        args.consumers - 1,
        {**os.environ, **stack.settings.extra_env, "SPARKPROV_LOG_LEVEL": "WARNING"},
        stack.dir / "logs",
        http_base=0,
    )
    for i in range(args.consumers - 1):
        extra.start(i)
    result["consumers"] = args.consumers
    with driver, QueryClient(stack.settings.grpc_addr) as client:
        before = graph_counts(driver)
        metrics_before = ingest_metrics(stack)
        wire_before = topic_log_bytes(stack, topic)
        disk_before = neo4j_disk(stack)
        result["captured_s"], prov = timed(spark, body, bootstrap=bootstrap, topic=topic)
        nodes, edges = prov.counts()
        print(
            f"{name}: captured {result['captured_s']:.2f}s, {nodes:,} nodes + {edges:,} edges",
            file=sys.stderr,
        )
        result |= {"run_id": prov.run_id, "lineage_nodes": nodes, "lineage_edges": edges}

        def indexer_so_far() -> None:
            # The indexer's time before the run was queryable: work beside the writer.
            now = ingest_metrics(stack)
            key = "index_call_seconds_sum"
            result["index_s_before_queryable"] = now.get(key, 0.0) - metrics_before.get(key, 0.0)

        with LockWaits(driver) as waits:
            wait_run(
                client, prov.run_id, nodes + edges, time.monotonic(), args, result, indexer_so_far
            )
        result |= waits.report()
        # Ingest's counters since the measured job (a warm-up's writes are not its own).
        after = ingest_metrics(stack)
        result["ingest_metrics"] = {k: v - metrics_before.get(k, 0.0) for k, v in after.items()}
        result["ingest_write_s"] = result["ingest_metrics"].get("write_seconds_total")
        result["graph_added"] = delta(graph_counts(driver), before)
        result["wire_bytes"] = topic_log_bytes(stack, topic) - wire_before
        disk = neo4j_disk(stack)
        result["disk_added_live"] = {k: disk[k] - disk_before[k] for k in disk}
    extra.stop()
    # Community has no db.checkpoint(): a clean shutdown checkpoints (and prunes logs past the
    # retention), so the store files then hold what was written.
    stack.down(("neo4j", "ingest", "query"))
    disk = neo4j_disk(stack)
    result["disk_added"] = {k: disk[k] - disk_before[k] for k in disk}
    result["loadavg_end"] = os.getloadavg()
    if args.bare:
        print(f"{name}: the bare engine writes the same records ...", file=sys.stderr)
        # The engine at each transaction size: the least of them is the one to beat (smaller
        # transactions write faster here: 1,000 records 20-27% faster than 20,000 at 200k).
        warm = result["warm_up"]["stored_records"] if warm_body is not None else 0
        runs = {b: bare_engine(stack, b, warm) for b in args.batch_rows}
        result["bare_engine_by_batch"] = runs
        best = min(runs, key=lambda b: runs[b]["write_s"])
        result["bare_engine"] = runs[best] | {"batch_rows": best}
        result["bare_engine_s"] = runs[best]["write_s"]
        if result.get("time_to_queryable_s") is not None:
            result["queryable_vs_bare"] = result["time_to_queryable_s"] / result["bare_engine_s"]

    inputs = result["rows"] if name.startswith("cars") else result["rows"] + result["dim"]
    stored = result["graph_added"].get("nodes", 0) + result["graph_added"].get("relationships", 0)
    result |= {
        "input_rows": inputs,
        "capture_ratio": result["captured_s"] / result["plain_s"],
        "stored_records": stored,
        "stored_records_per_input_row": stored / inputs,
        "lineage_records_per_input_row": (nodes + edges) / inputs,
        "wire_bytes_per_input_row": result["wire_bytes"] / inputs,
        "disk_bytes_per_stored_record": result["disk_added"]["total"] / max(1, stored),
    }


def bare_engine(stack: Stack, batch_rows: int, warm_records: int = 0) -> dict[str, Any]:
    """The engine's own time to write the lineage records this shape's run stored (its `:Node`s
    and `DERIVES`, every property), read from the stopped store and written with the core API
    into an empty embedded database with the real schema (bench/java/StoreReplay.java). Run
    after the shape, alone: the ratio of TIME TO QUERYABLE to it is ingest's overhead. With
    ``warm_records``, the replay first writes that many of the records into a scratch database
    in the same JVM, untimed: the bare engine as warm as the server it is compared with."""
    home = stack.dir / "data" / "bare-engine"
    shutil.rmtree(home, ignore_errors=True)
    conf = stack.dir / "neo4j" / "bare-engine.conf"
    conf.write_text(stack.settings.neo4j.conf_text())
    command = embedded_neo4j(
        stack,
        ROOT / "bench" / "java" / "StoreReplay.java",
        str(stack.dir / "data" / "neo4j"),
        str(home),
        str(conf),
        str(ROOT / "sparkprov" / "schema.cypher"),
        str(batch_rows),
        str(warm_records),
        str(stack.dir / "data" / "bare-engine-warm"),
    )
    load0 = os.getloadavg()
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    shutil.rmtree(home, ignore_errors=True)
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0 or not lines:
        raise RuntimeError(
            f"the bare-engine writer failed ({done.returncode}):\n{done.stderr[-3000:]}"
        )
    measured: dict[str, Any] = json.loads(lines[-1])
    return measured | {"load_average_start": load0, "load_average_end": os.getloadavg()}


# -- main -----------------------------------------------------------------------------------


def missing(shape: dict[str, Any], key: str) -> str:
    """A cell for a value the run lacks: not measured (--no-bare), or timed out."""
    if key in ("bare_engine_s", "queryable_vs_bare") and "bare_engine_s" not in shape:
        return "not run"
    return "TIMED OUT"


def print_table(report: dict[str, Any]) -> None:
    shapes = report["shapes"]
    rows = [
        ("plain job s", "plain_s", "{:,.2f}"),
        ("captured job s", "captured_s", "{:,.2f}"),
        ("captured / plain", "capture_ratio", "{:,.2f}"),
        ("TIME TO QUERYABLE s", "time_to_queryable_s", "{:,.1f}"),
        ("time to indexed s", "time_to_indexed_s", "{:,.1f}"),
        ("bare engine, same records s", "bare_engine_s", "{:,.1f}"),
        ("queryable / bare engine", "queryable_vs_bare", "{:,.2f}"),
        ("lock wait share (writes)", "lock_wait_share", "{:.1%}"),
        ("indexer s before queryable", "index_s_before_queryable", "{:,.1f}"),
        ("ingest's Neo4j writes s", "ingest_write_s", "{:,.1f}"),
        ("stored at job end", "stored_at_job_end", "{:,}"),
        ("lineage records", "stored_lineage_records", "{:,}"),
        ("ingest records/s (wait)", "wait_records_per_s", "{:,.0f}"),
        ("stored records / input row", "stored_records_per_input_row", "{:,.2f}"),
        ("wire bytes / input row", "wire_bytes_per_input_row", "{:,.1f}"),
        ("disk bytes / stored record", "disk_bytes_per_stored_record", "{:,.1f}"),
    ]
    print(f"{'':28}" + "".join(f"{name:>16}" for name in shapes))
    for label, key, fmt in rows:
        cells = []
        for s in shapes.values():
            value = s.get(key)
            cells.append(fmt.format(value) if value is not None else missing(s, key))
        print(f"{label:28}" + "".join(f"{c:>16}" for c in cells))
    cpus = report["machine"]["cpus"]
    for name, s in shapes.items():
        start, end = s["loadavg_start"][0], s["loadavg_end"][0]
        note = "" if s["complete"] else f", timed out ({s['state']})"
        print(f"{name}: load average {start:.1f} -> {end:.1f} on {cpus} cores{note}")


def shape_bodies(spark: SparkSession, data: Path, rows: int, dim: int) -> dict[str, Body]:
    """The shapes' jobs over inputs of ``rows`` orders and ``dim`` customers in ``data``."""
    facts, dims = make_pipeline_inputs(spark, data, rows, dim)
    return {
        "pipeline": lambda prov: pipeline(prov, facts, dims),
        "enrich": lambda prov: enrich(prov, facts, dims, str(data / "enriched.parquet")),
        "total": lambda prov: total(prov, facts),
        "cars": lambda prov: cars.run(prov, rows, dim, seed=1),
    }


def shape_spec(text: str, rows: int, dim: int) -> tuple[str, str, int, int]:
    """A ``--shapes`` entry: its label in the report, the shape, its order and customer rows
    (``NAME=ROWS/DIM``, or ``NAME`` at ``--rows``/``--dim``)."""
    name, _, scale = text.partition("=")
    if name not in ("pipeline", "enrich", "total", "cars"):
        raise SystemExit(f"--shapes: no shape {name!r} (pipeline, enrich, total, cars)")
    if not scale and name == "cars":
        return name, name, 20_000, 10  # cars and executions, as bench.capture_overhead's
    if not scale:
        return name, name, rows, dim
    try:
        rows_text, dim_text = scale.split("/")
        rows, dim = int(rows_text), int(dim_text)
    except ValueError:
        raise SystemExit(f"--shapes: {text!r} is not NAME=ROWS/DIM") from None
    # The label names the shape's topic too: ASCII letters, digits, '.', '_' and '-' only.
    size = next(
        (
            f"{rows // unit}{suffix}"
            for unit, suffix in ((10**6, "M"), (10**3, "k"))
            if rows % unit == 0
        ),
        str(rows),
    )
    return f"{name}-{size}", name, rows, dim


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000, help="order rows")
    parser.add_argument("--dim", type=int, default=100_000, help="customer rows")
    parser.add_argument(
        "--shapes",
        default="pipeline,enrich",
        help="comma-separated; a shape may name its own inputs as NAME=ROWS/DIM (say "
        "pipeline,enrich,pipeline=10000000/1000000: the 1M shapes and 10M in one run)",
    )
    parser.add_argument("--timeout-s", type=float, default=14400, help="per shape, after the job")
    parser.add_argument("--warmup", type=int, default=1)
    parser.add_argument(
        "--servers",
        default="cold,warm",
        help="each shape on a cold server (started for it), a warm one (that served a smaller "
        "run of the shape first, deleted before the measured run), or both: cold,warm",
    )
    parser.add_argument(
        "--warm-rows", type=int, default=200_000, help="order rows of the warm-up run (/10 dim)"
    )
    parser.add_argument("--poll-s", type=float, default=1.0)
    parser.add_argument("--data", default=os.path.join(tempfile.gettempdir(), "sparkprov-ttq"))
    parser.add_argument("--results", default=str(RESULTS), help="folder for the JSON")
    parser.add_argument("--keep", action="store_true", help="leave the last stack running")
    parser.add_argument("--folder", default=".stack-ttq")
    parser.add_argument(
        "--consumers", type=int, default=1, help="ingest processes in the group (writers)"
    )
    parser.add_argument(
        "--bare",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="after each shape, time the bare engine writing the records it stored",
    )
    parser.add_argument(
        "--batch-rows",
        type=lambda text: [int(b) for b in text.split(",")],
        default=[1_000, 20_000],
        help="records per bare-engine transaction, comma-separated: each is timed, the least "
        "time is the bare engine's",
    )
    parser.add_argument("--kafka-port", type=int, default=29092)
    parser.add_argument("--controller-port", type=int, default=29093)
    parser.add_argument("--bolt-port", type=int, default=27687)
    parser.add_argument("--grpc-port", type=int, default=29051)
    parser.add_argument("--ingest-http-port", type=int, default=29464)
    args = parser.parse_args(argv)

    ports = Ports(
        args.kafka_port, args.controller_port, args.bolt_port, args.grpc_port, args.ingest_http_port
    )
    environ = without_addresses(os.environ)
    environ["SPARKPROV_LOG_LEVEL"] = "WARNING"
    stack = bench_stack(environ, args.folder, ports)
    stack.down()  # what an earlier run left in this folder (--keep)
    busy = busy_ports(ports.all(1))
    if busy:
        raise SystemExit(f"ports {busy} are in use: choose others (--*-port)")
    for sub in ("data", "kafka", "neo4j"):
        shutil.rmtree(stack.dir / sub, ignore_errors=True)

    spark = local_spark("sparkprov-ttq")
    shapes = [shape_spec(text, args.rows, args.dim) for text in args.shapes.split(",") if text]
    inputs: dict[tuple[int, int], dict[str, Body]] = {}
    for _, _, rows, dim in shapes:
        if (rows, dim) not in inputs:
            data = Path(args.data) / f"rows{rows}-dim{dim}"
            data.mkdir(parents=True, exist_ok=True)
            inputs[rows, dim] = shape_bodies(spark, data, rows, dim)
    servers = [s for s in args.servers.split(",") if s]
    if set(servers) - {"cold", "warm"}:
        raise SystemExit(f"--servers takes cold and warm, not {args.servers}")
    if "warm" in servers and any(shape == "cars" for _, shape, _, _ in shapes):
        raise SystemExit("--shapes cars runs on cold servers only (--servers cold)")
    warm_bodies: dict[str, Body] = {}
    if "warm" in servers:
        warm_data = Path(args.data) / f"rows{args.warm_rows}-dim{args.warm_rows // 10}"
        warm_data.mkdir(parents=True, exist_ok=True)
        warm_bodies = shape_bodies(spark, warm_data, args.warm_rows, args.warm_rows // 10)
    report: dict[str, Any] = {
        "machine": {
            "cpus": os.cpu_count(),
            "memory_gib": os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30,
            "python": platform.python_version(),
            "platform": platform.platform(),
        },
        "arguments": vars(args),
        "neo4j": stack.settings.neo4j.values(),
        "loadavg_start": os.getloadavg(),
        "shapes": {},
    }
    out_dir = Path(args.results)
    out_dir.mkdir(parents=True, exist_ok=True)
    out = out_dir / f"time_to_queryable-{time.strftime('%Y%m%d-%H%M%S')}.json"
    try:
        for (label, shape, rows, dim), server in [(n, s) for n in shapes for s in servers]:
            name = label if server == "cold" else f"{label}@{server}"
            print(
                f"{name}: starting Neo4j, ingest and query afresh in {stack.dir}", file=sys.stderr
            )
            stack = shape_stack(environ, name, args.folder, ports)
            result: dict[str, Any] = {"rows": rows, "dim": dim}
            report["shapes"][name] = result
            try:
                warm = warm_bodies[shape] if server == "warm" else None
                run_shape(name, inputs[rows, dim][shape], spark, stack, args, result, warm)
            except BaseException as e:  # a run stopped by hand keeps what it measured
                result["stopped"] = f"{type(e).__name__}: {e}"
                raise
            finally:
                report["loadavg_end"] = os.getloadavg()
                out.write_text(json.dumps(report, indent=2))  # after each shape, or its stop
        if args.keep:
            stack.up(("kafka", "neo4j", "ingest", "query"))
    finally:
        spark.stop()
        if not args.keep:
            stack.down()
    print_table(report)
    print(f"-> {out.relative_to(ROOT) if out.is_relative_to(ROOT) else out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
