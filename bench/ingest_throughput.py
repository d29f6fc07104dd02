"""Ingest throughput: sustained records/s from Kafka into Neo4j with component and set ids kept,
side by side in one run with a naive writer (one transaction per record) on the same data.

    python -m bench.ingest_throughput [--records 1000000] [--consumers 2] [--partitions 4]
        [--naive-records 20000] [--kill-one] [--restart-neo4j] [--check-ids]

It starts its own Kafka and Neo4j (folder .stack-bench, ports 39092/39093/37687 unless the
SPARKPROV_* variables say otherwise; the jars come from .stack, so run `make setup` first), empties
the Neo4j data, generates a CSProv-shaped graph (bench.gen), publishes it to a fresh topic, then
starts ``--consumers`` ingest processes in one consumer group and times them until the run is
complete. Options: ``--kill-one`` SIGKILLs one ingest process at 40% and restarts it;
``--restart-neo4j`` stops Neo4j at 60% and starts it again 5 s later; either way the stored counts
must equal the generated ones exactly. ``--check-ids`` compares the stored ids with a from-scratch
recomputation (``python -m ingest_service.reindex --check``). Prints the rates and their ratio,
writes JSON under bench/results/.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import shutil
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import neo4j

from bench.gen import Graph, Progress, generate, messages, publish
from localstack.stack import Stack, StackSettings
from sparkprov import defaults

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"

_NAIVE_NODE = "MERGE (n:NaiveNode {id: $id}) SET n.op = $op, n.label = $label, n.run_id = $run"
_NAIVE_EDGE = (
    "MERGE (a:NaiveNode {id: $src}) MERGE (b:NaiveNode {id: $dst}) MERGE (a)-[:NAIVE_DERIVES]->(b)"
)


def bench_stack(environ: dict[str, str]) -> Stack:
    directory = ROOT / ".stack-bench"
    directory.mkdir(exist_ok=True)
    for name in ("lib", "plugins"):
        link = directory / name
        if not link.exists():
            link.symlink_to(ROOT / ".stack" / name)
    env = {
        defaults.ENV_KAFKA_BOOTSTRAP: "127.0.0.1:39092",
        "SPARKPROV_KAFKA_CONTROLLER_PORT": "39093",
        defaults.ENV_NEO4J_URI: "bolt://127.0.0.1:37687",
        **environ,
    }
    return Stack(StackSettings.from_env(directory, env))


def peak_rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return 0.0


def create_topic(bootstrap: str, topic: str, partitions: int) -> None:
    from kafka.admin import KafkaAdminClient, NewTopic

    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        admin.create_topics([NewTopic(topic, partitions, 1)])
    finally:
        admin.close()


class Consumers:
    """``count`` ingest processes in one group; each keeps its own peak RSS once stopped."""

    def __init__(self, count: int, env: dict[str, str], logs: Path) -> None:
        self.env, self.logs = env, logs
        self.procs: list[subprocess.Popen[bytes] | None] = [None] * count
        self.peaks: list[float] = [0.0] * count
        self.restarts = 0

    def start(self, i: int) -> None:
        env = dict(self.env)
        env[defaults.ENV_INGEST_HTTP_ADDR] = f"127.0.0.1:{39500 + i}"
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


def run_ingest(
    args: argparse.Namespace,
    stack: Stack,
    graph: Graph,
    driver: neo4j.Driver,
    logs: Path,
) -> dict[str, Any]:
    settings = stack.settings
    topic = f"bench.ingest.{uuid.uuid4().hex[:8]}"
    run_id = f"bench-{uuid.uuid4().hex[:12]}"
    create_topic(settings.kafka_bootstrap, topic, args.partitions)
    started = time.monotonic()
    publish(graph, settings.kafka_bootstrap, topic, run_id)
    publish_s = time.monotonic() - started
    total = graph.nodes + graph.edges

    env = {
        **os.environ,
        defaults.ENV_KAFKA_BOOTSTRAP: settings.kafka_bootstrap,
        defaults.ENV_NEO4J_URI: settings.neo4j_uri,
        defaults.ENV_TOPIC: topic,
        defaults.ENV_DLQ_TOPIC: topic + ".dlq",
        "SPARKPROV_INGEST_GROUP": f"bench-{run_id}",
        "SPARKPROV_TOPIC_PARTITIONS": str(args.partitions),
        "SPARKPROV_LOG_LEVEL": "WARNING",
    }
    consumers = Consumers(args.consumers, env, logs)
    bar = Progress(total, f"ingesting with {args.consumers} consumers")
    t0 = time.monotonic()
    for i in range(args.consumers):
        consumers.start(i)
    killed = restarted = False
    samples: list[tuple[float, int]] = []
    events: list[str] = []
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
            if state["complete"]:
                break
            if args.kill_one and not killed and done >= 0.4 * total:
                consumers.kill(0)
                events.append(f"SIGKILL ingest-0 at {done:,} records")
                time.sleep(1)
                consumers.start(0)
                killed = True
            if args.restart_neo4j and not restarted and done >= 0.6 * total:
                events.append(f"Neo4j stopped at {done:,} records")
                stack.down(("neo4j",))
                time.sleep(5)
                stack.up(("neo4j",))
                events.append("Neo4j started again")
                restarted = True
            if time.monotonic() - t0 > args.timeout:
                raise SystemExit(f"ingest did not complete in {args.timeout}s: {state}")
    finally:
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


def run_naive(graph: Graph, driver: neo4j.Driver, records: int) -> dict[str, Any]:
    """One transaction per record, on the first ``records`` records of the same messages."""
    driver.execute_query(
        "CREATE CONSTRAINT naive_id IF NOT EXISTS FOR (n:NaiveNode) REQUIRE n.id IS UNIQUE"
    )
    run_id = f"naive-{uuid.uuid4().hex[:8]}"
    from sparkprov.events import Batch, decode

    work: list[tuple[str, dict[str, Any]]] = []
    for data, _ in messages(graph, run_id):
        batch = decode(data)
        assert isinstance(batch, Batch)
        for row in batch.rows():
            work.append((_NAIVE_NODE, {"id": row["id"], "op": row["op"], "label": row["label"]}))
        work += [
            (_NAIVE_EDGE, {"src": s, "dst": d})
            for s, d in zip(batch.edges["src"], batch.edges["dst"], strict=True)
        ]
        if len(work) >= records:
            break
    work = work[:records]
    bar = Progress(len(work), "naive writer")
    t0 = time.monotonic()
    with driver.session() as session:
        for i, (query, params) in enumerate(work):
            session.execute_write(lambda tx, q=query, p=params: tx.run(q, p, run=run_id).consume())
            if i % 1000 == 0:
                bar.update(i)
    elapsed = time.monotonic() - t0
    bar.update(len(work))
    return {"records": len(work), "elapsed_s": elapsed, "records_per_s": len(work) / elapsed}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=1_000_000, help="nodes + edges")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--consumers", type=int, default=2)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--naive-records", type=int, default=20_000)
    parser.add_argument("--kill-one", action="store_true")
    parser.add_argument("--restart-neo4j", action="store_true")
    parser.add_argument("--check-ids", action="store_true")
    parser.add_argument("--timeout", type=float, default=3600)
    parser.add_argument("--keep", action="store_true", help="leave Kafka and Neo4j running")
    args = parser.parse_args(argv)
    # A SIGTERM (timeout, Ctrl-C from a supervisor) still stops what this run started.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))

    stack = bench_stack(dict(os.environ))
    shutil.rmtree(stack.dir / "data", ignore_errors=True)
    shutil.rmtree(stack.dir / "kafka", ignore_errors=True)
    logs = stack.dir / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    started = stack.up(("kafka", "neo4j"))
    report: dict[str, Any] = {
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count()},
        "arguments": vars(args),
    }
    try:
        t = time.monotonic()
        graph = generate(args.records, args.seed)
        print(
            f"generated {graph.nodes:,} nodes, {graph.edges:,} edges "
            f"in {time.monotonic() - t:.1f}s",
            file=sys.stderr,
        )
        with neo4j.GraphDatabase.driver(
            stack.settings.neo4j_uri, auth=None, notifications_min_severity="OFF"
        ) as driver:
            from ingest_service.store import Store

            Store(driver).ensure_schema()
            ours = run_ingest(args, stack, graph, driver, logs)
            report["ingest"] = ours
            if args.check_ids:
                check = subprocess.run(
                    [sys.executable, "-m", "ingest_service.reindex", "--check"],
                    env={**os.environ, defaults.ENV_NEO4J_URI: stack.settings.neo4j_uri},
                    cwd=ROOT,
                    capture_output=True,
                    text=True,
                )
                report["reindex_check"] = {
                    "exit": check.returncode,
                    "output": check.stdout.strip().splitlines()[-5:],
                }
            naive = run_naive(graph, driver, args.naive_records)
            report["naive"] = naive
        report["ratio"] = ours["sustained_records_per_s"] / naive["records_per_s"]
    finally:
        if not args.keep:
            stack.down(tuple(started))
    RESULTS.mkdir(parents=True, exist_ok=True)
    out = RESULTS / f"ingest_throughput-{time.strftime('%Y%m%d-%H%M%S')}.json"
    out.write_text(json.dumps(report, indent=2))
    print(
        f"\nours:  {ours['sustained_records_per_s']:>10,.0f} records/s sustained "
        f"({ours['records_per_s']:,.0f}/s end to end, {ours['records']:,} records, "
        f"{args.consumers} consumers, peak RSS {max(ours['peak_rss_mib']):,.0f} MiB)\n"
        f"naive: {naive['records_per_s']:>10,.0f} records/s ({naive['records']:,} records)\n"
        f"ratio: {report['ratio']:.1f}x   counts match: {ours['counts_match']}"
        + (f"   events: {'; '.join(ours['events'])}" if ours["events"] else "")
        + (f"\nreindex check: {report['reindex_check']}" if "reindex_check" in report else "")
        + f"\n-> {out.relative_to(ROOT)}"
    )
    return 0 if ours["counts_match"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
