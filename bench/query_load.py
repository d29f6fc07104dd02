"""Query throughput under load: concurrent clients tracing back ~1,000-node lineages through the
real gRPC query service.

    python -m bench.query_load [--clients 16] [--seconds 30] [--ancestors 800-1200]
        [--strategy AUTO] [graph and stack arguments of bench.query_latency: --records,
        --shape, --reuse, --keep, --folder, ports]

The graph is bench.query_latency's (same stack folder and loader, so ``--reuse`` shares its
load). Query nodes: up to 64 nodes of the three largest components whose ancestor count lies in
``--ancestors`` (the generated graph, in memory, says which). Then ``--clients`` processes (one gRPC
channel each: Python clients in threads would share one interpreter lock and measure themselves)
send BackwardTrace requests back to back for ``--seconds`` after a warm-up, each picking the next
node of its own rotation. Reports requests/s, latency percentiles and errors (a failed call, or
an answer whose node count is not the node's ancestors + 1), the CPU time Neo4j and the query
service spent per request inside the measured window (/proc utime + stime: on a 2-core machine
that, not the wall clock, says how many requests/s the server side can reach), and writes JSON
under bench/results/.

The goal (issue 15): >= 100 requests/s with p99 <= 300 ms and 0 errors, at 16 clients.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import sys
import time
from pathlib import Path
from typing import Any

import grpc
import numpy as np

from bench.harness import RESULTS, ROOT
from bench.query_latency import (
    Adjacency,
    graph_arguments,
    large_components,
    loaded_graph,
    machine,
)
from sparkprov.v1 import query_pb2, query_pb2_grpc

__all__ = ["main"]

_POOL = 64


def choose_nodes(
    adj: Adjacency, ids: np.ndarray, large: np.ndarray, band: tuple[int, int], seed: int
) -> list[tuple[int, int]]:
    """Up to _POOL (id, ancestors) of the large components with ancestors in ``band``."""
    lo, hi = band
    rng = np.random.default_rng(seed)
    pool = np.nonzero(large)[0]
    out: list[tuple[int, int]] = []
    for p in pool[rng.permutation(len(pool))][:200_000].tolist():
        count = len(adj.reach([p], backward=True, cap=hi))
        if lo <= count <= hi:
            out.append((int(ids[p]), count))
            if len(out) == _POOL:
                break
    return out


def _client(
    address: str,
    strategy: int,
    nodes: list[tuple[int, int]],
    offset: int,
    warmup_s: float,
    seconds: float,
    ready: Any,
    results: Any,
) -> None:
    """One load client: back-to-back traces until the window closes; latencies of the requests
    sent inside the measured window, and errors."""
    channel = grpc.insecure_channel(address, options=[("grpc.max_receive_message_length", -1)])
    stub = query_pb2_grpc.ProvenanceQueryStub(channel)
    latencies: list[float] = []
    errors: list[str] = []
    grpc.channel_ready_future(channel).result(timeout=60)
    ready.wait()  # every client connected before the first request
    measure_from = time.time() + warmup_s
    stop = measure_from + seconds
    i = offset
    while True:
        node_id, ancestors = nodes[i % len(nodes)]
        i += 1
        sent = time.time()
        if sent >= stop:
            break
        try:
            reply = stub.BackwardTrace(
                query_pb2.TraceRequest(node_ids=[str(node_id)], strategy=strategy, limit=100_000),
                timeout=30,
            )
            ok = len(reply.nodes) == ancestors + 1
            problem = "" if ok else f"{node_id}: {len(reply.nodes)} nodes, want {ancestors + 1}"
        except grpc.RpcError as e:
            problem = f"{node_id}: {e.code().name} {e.details()}"
        if sent >= measure_from:
            latencies.append(time.time() - sent)
            if problem:
                errors.append(problem)
    channel.close()
    results.put((latencies, errors))


def cpu_seconds(pid: int) -> float:
    """A process's CPU time so far, user + system (/proc/<pid>/stat fields 14 and 15)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run_load(
    address: str,
    strategy: int,
    nodes: list[tuple[int, int]],
    args: argparse.Namespace,
    servers: dict[str, int],
) -> dict[str, Any]:
    """The load run; ``servers`` names the server processes (name -> pid) whose CPU time in the
    measured window is reported per request."""
    ctx = multiprocessing.get_context("spawn")
    results = ctx.Queue()
    ready = ctx.Barrier(args.clients + 1)  # and this process, to time the window
    procs = [
        ctx.Process(
            target=_client,
            args=(address, strategy, nodes, k * 7, args.warmup, args.seconds, ready, results),
        )
        for k in range(args.clients)
    ]
    for p in procs:
        p.start()
    ready.wait()
    time.sleep(args.warmup)
    before = {name: cpu_seconds(pid) for name, pid in servers.items()}
    time.sleep(args.seconds)
    used = {name: cpu_seconds(pid) - before[name] for name, pid in servers.items()}
    latencies: list[float] = []
    errors: list[str] = []
    for _ in procs:
        lat, err = results.get(timeout=args.seconds + args.warmup + 120)
        latencies += lat
        errors += err
    for p in procs:
        p.join()
    ms = np.array(latencies) * 1000
    return {
        "clients": args.clients,
        "seconds": args.seconds,
        "requests": len(latencies),
        "requests_per_s": len(latencies) / args.seconds,
        "errors": len(errors),
        "error_examples": errors[:5],
        "p50_ms": float(np.percentile(ms, 50)) if len(ms) else None,
        "p90_ms": float(np.percentile(ms, 90)) if len(ms) else None,
        "p99_ms": float(np.percentile(ms, 99)) if len(ms) else None,
        "max_ms": float(ms.max()) if len(ms) else None,
        "cpu_ms_per_request": {
            name: 1000 * seconds / max(1, len(latencies)) for name, seconds in used.items()
        },
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    graph_arguments(parser)
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--warmup", type=float, default=5.0)
    parser.add_argument("--ancestors", default="800-1200", help="lineage band of the query nodes")
    parser.add_argument(
        "--strategy", default="AUTO", choices=["AUTO", "RECURSIVE", "COMPONENT", "CONNECTED_SET"]
    )
    args = parser.parse_args(argv)
    lo, hi = (int(x) for x in args.ancestors.split("-"))
    strategy = query_pb2.Strategy.Value(f"STRATEGY_{args.strategy}")
    report: dict[str, Any] = {"machine": machine(), "arguments": vars(args)}
    with loaded_graph(args, report) as (stack, graph, driver, started):
        adj = Adjacency(graph)
        _, large = large_components(driver, graph)
        nodes = choose_nodes(adj, graph.ids, large, (lo, hi), args.seed)
        if not nodes:
            raise SystemExit(f"no node of the large components has {lo}-{hi} ancestors")
        report["query_nodes"] = {
            "count": len(nodes),
            "ancestors_median": float(np.median([a for _, a in nodes])),
        }
        print(
            f"{len(nodes)} query nodes, {lo}-{hi} ancestors "
            f"(median {report['query_nodes']['ancestors_median']:.0f})",
            file=sys.stderr,
        )
        started += stack.up(("query",))
        servers = {name: stack.pid(name) for name in ("neo4j", "query")}
        report["load"] = run_load(
            stack.settings.grpc_addr,
            strategy,
            nodes,
            args,
            {name: pid for name, pid in servers.items() if pid is not None},
        )
    report["machine"]["loadavg_after"] = list(os.getloadavg())
    load = report["load"]
    report["goal_met"] = (
        load["requests_per_s"] >= 100 and (load["p99_ms"] or 1e9) <= 300 and load["errors"] == 0
    )
    RESULTS.mkdir(parents=True, exist_ok=True)
    out = RESULTS / (
        f"query_load-{args.records // 1_000_000}M-{args.shape}-"
        f"{time.strftime('%Y%m%d-%H%M%S')}.json"
    )
    out.write_text(json.dumps(report, indent=2))
    print(
        f"{load['clients']} clients, {load['seconds']:.0f}s: {load['requests_per_s']:.1f} req/s, "
        f"p50 {load['p50_ms']:.1f} ms, p90 {load['p90_ms']:.1f} ms, p99 {load['p99_ms']:.1f} ms, "
        f"errors {load['errors']}; load average {report['machine']['loadavg_before']} -> "
        f"{report['machine']['loadavg_after']}"
    )
    cpu = ", ".join(f"{k} {v:.1f} ms" for k, v in load["cpu_ms_per_request"].items())
    print(f"CPU per request: {cpu}")
    print(
        f"goal (>= 100 req/s, p99 <= 300 ms, 0 errors): {'met' if report['goal_met'] else 'MISSED'}"
    )
    print(f"-> {out.relative_to(ROOT)}")
    return 0 if load["errors"] == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
