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
import json
import os
import platform
import shutil
import signal
import subprocess
import sys
import time
import uuid
from typing import Any

import neo4j

from bench.gen import Graph, generate_reported, messages
from bench.harness import RESULTS, ROOT, IngestOptions, bench_stack, ingest
from sparkprov import defaults
from sparkprov.progress import Progress

_NAIVE_NODE = "MERGE (n:NaiveNode {id: $id}) SET n.op = $op, n.label = $label, n.run_id = $run"
_NAIVE_EDGE = (
    "MERGE (a:NaiveNode {id: $src}) MERGE (b:NaiveNode {id: $dst}) MERGE (a)-[:NAIVE_DERIVES]->(b)"
)


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
    bar.close()
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
        graph = generate_reported(args.records, args.seed)
        with neo4j.GraphDatabase.driver(
            stack.settings.neo4j_uri, auth=None, notifications_min_severity="OFF"
        ) as driver:
            from ingest_service.store import Store

            Store(driver).ensure_schema()
            options = IngestOptions(
                consumers=args.consumers,
                partitions=args.partitions,
                timeout=args.timeout,
                kill_one=args.kill_one,
                restart_neo4j=args.restart_neo4j,
            )
            ours = ingest(stack, graph, driver, logs, options)
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
