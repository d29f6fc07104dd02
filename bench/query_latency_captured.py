"""Query latency on a captured workload: bench.query_latency's classes and table, over the stored
graph of a real PySpark pipeline run under capture instead of a generated one (issue 15).

    python -m bench.query_latency_captured [--pipeline tpch|pipeline] [--input-rows 250000]
        [--repeats 5] [--per-class 10] [--theta N] [--trace-timeout 60] [--reuse] [--keep]
        [--folder .stack-qcapt]
        [--kafka-port 48092] [--controller-port 48093] [--bolt-port 48687] [--grpc-port 48051]
        [--ingest-http-port 0] [--consumers 2] [--partitions 4]

Loading (bench.captured_load): the pipeline runs under JVM capture into a fresh topic, then the
ingest service stores it with bench.harness's bulk-load settings (``--consumers`` processes,
``--partitions`` partitions) and the query service's ``wait_for_run`` says when the run is
complete. ``--reuse`` keeps a stack whose marker names the same pipeline, input rows, theta and
bench.captured_load.VERSION.

Query nodes, from the stored graph (its DERIVES edges read over Bolt): LC1-LC3 are the three
largest stored components (their root records' sizes, their nodes from
``sparkprov.componentNodes``), every other node is in a small component; each node's stored
ancestors are counted in memory (capped past the largest band). The classes are the generated
bench's (the paper's section V): SC-SL = small components, 100-200 ancestors; LC-SL = LC1-LC3,
100-200; LC-LL = LC1-LC3, 5,000-10,000. The report says how many nodes each class had to choose
from; ``--per-class`` are taken in an order drawn from ``--seed``; a class without candidates is
reported empty (with its pool's ancestor counts), never filled with nodes outside its band.

Each chosen node is traced as in bench.query_latency (RECURSIVE, COMPONENT, CONNECTED_SET, AUTO
over gRPC; Cypher's ``[:DERIVES*]`` over Bolt; a warm-up round, then ``--repeats``; a
strategy past ``--trace-timeout`` or Cypher past ``--cypher-timeout`` on a node is counted as a
timeout and not asked again for that node: COMPONENT reads a whole component). All
strategies must return the same nodes and edges; Cypher the same nodes but the TENSOR and VALUE
nodes the service derives from member edges; the stored ancestors must be those counted (else
exit 1). Prints the table, the edges each strategy read and CONNECTED_SET's set-lineage (sets),
writes JSON under bench/results/.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
import neo4j
import numpy as np

from bench.captured_load import PIPELINES, load_captured, reusable, reuse_key
from bench.harness import RESULTS, ROOT, Ports, bench_stack, busy_ports, without_addresses
from bench.query_latency import (
    CLASSES,
    CYPHER,
    STRATEGIES,
    Adjacency,
    Runner,
    _fmt,
    large_components,
    machine,
    run_class,
    warm,
)
from localstack.stack import Stack
from sparkprov.v1 import query_pb2_grpc

__all__ = ["StoredGraph", "ancestor_counts", "histogram", "main", "pick_classes"]

MARKER = "query_latency_captured-loaded.json"
CAP = max(hi for _, _, hi in CLASSES.values())  # counts past it are not needed exactly
BINS = (0, 1, 10, 100, 201, 1000, 5000, 10_001)  # histogram edges of a pool's ancestor counts


# -- the stored graph -------------------------------------------------------------------------


@dataclass(frozen=True)
class StoredGraph:
    """The stored nodes (ids, sorted) and DERIVES edges (positions) of one run."""

    ids: np.ndarray
    src: np.ndarray
    dst: np.ndarray

    @property
    def nodes(self) -> int:
        return len(self.ids)

    @property
    def edges(self) -> int:
        return len(self.src)

    @classmethod
    def of(cls, ids: list[int], edges: list[tuple[int, int]]) -> StoredGraph:
        pairs = np.asarray(edges, dtype=np.int64).reshape(-1, 2)
        return cls.from_ids(np.asarray(ids, dtype=np.int64), pairs[:, 0], pairs[:, 1])

    @classmethod
    def from_ids(cls, ids: np.ndarray, src_ids: np.ndarray, dst_ids: np.ndarray) -> StoredGraph:
        """From node ids and the ids at each edge's ends."""
        sorted_ids = np.unique(ids)
        src = np.searchsorted(sorted_ids, src_ids).astype(np.int64)
        dst = np.searchsorted(sorted_ids, dst_ids).astype(np.int64)
        return cls(sorted_ids, src, dst)


_SLICES = 16  # of the id range: each is one query returning two lists


def read_stored(driver: neo4j.Driver, run_id: str) -> StoredGraph:
    """The run's stored graph over Bolt (placeholders left out: a complete run has none). Read
    in slices of the id range (index seeks), each as lists in one record: a record per node or
    edge cost the driver more than the query did (78 of 148 s at 100k TPC-H rows)."""
    step = 2**64 // _SLICES
    ids, src, dst = [], [], []
    for i in range(_SLICES):
        lo = -(2**63) + i * step
        hi = 2**63 - 1 if i == _SLICES - 1 else lo + step - 1
        records, _, _ = driver.execute_query(
            "MATCH (n:Node) WHERE n.id >= $lo AND n.id <= $hi AND n.run_id = $run "
            "AND n.op IS NOT NULL RETURN collect(n.id) AS ids",
            lo=lo,
            hi=hi,
            run=run_id,
        )
        ids.append(np.asarray(records[0]["ids"], dtype=np.int64))
        records, _, _ = driver.execute_query(
            "MATCH (a:Node)-[:DERIVES]->(b:Node) WHERE a.id >= $lo AND a.id <= $hi "
            "AND a.run_id = $run AND a.op IS NOT NULL AND b.op IS NOT NULL "
            "RETURN collect(a.id) AS src, collect(b.id) AS dst",
            lo=lo,
            hi=hi,
            run=run_id,
        )
        src.append(np.asarray(records[0]["src"], dtype=np.int64))
        dst.append(np.asarray(records[0]["dst"], dtype=np.int64))
    return StoredGraph.from_ids(np.concatenate(ids), np.concatenate(src), np.concatenate(dst))


# -- choosing the query nodes ----------------------------------------------------------------


def ancestor_counts(adj: Adjacency, cap: int = CAP) -> np.ndarray:
    """Every node's number of ancestors, exact up to ``cap`` (``cap + 1`` means more)."""
    indptr, parents = adj.parents
    indegree = np.diff(indptr)
    counts = np.zeros(adj.n, dtype=np.int64)
    # A node whose parents are all sources has exactly its parents as ancestors (one edge per
    # pair): most nodes of a captured graph (sources, joins of sources) need no traversal.
    is_source = indegree == 0
    parent_sources = np.zeros(len(parents) + 1, dtype=np.int64)
    np.cumsum(is_source[parents], out=parent_sources[1:])
    from_sources = parent_sources[indptr[1:]] - parent_sources[indptr[:-1]] == indegree
    counts[from_sources] = indegree[from_sources]
    for p in np.nonzero(~from_sources)[0].tolist():
        counts[p] = min(len(adj.reach([p], backward=True, cap=cap)), cap + 1)
    return np.minimum(counts, cap + 1)


def histogram(counts: np.ndarray) -> dict[str, int]:
    """How many of ``counts`` fall in each of BINS' ranges (labels "lo-hi", the last "lo+")."""
    labels = [
        f"{lo}" if hi - lo == 1 else f"{lo}-{hi - 1}"
        for lo, hi in zip(BINS, BINS[1:], strict=False)
    ] + [f"{BINS[-1]}+"]
    where = np.searchsorted(np.asarray(BINS), counts, side="right") - 1
    tally = np.bincount(where, minlength=len(BINS))
    return {label: int(n) for label, n in zip(labels, tally.tolist(), strict=True)}


def pick_classes(
    counts: np.ndarray, large: np.ndarray, seed: int, per_class: int
) -> dict[str, dict[str, Any]]:
    """Per class of CLASSES: how many nodes lie in it (``candidates``, of ``pool`` nodes in its
    kind of component) and the first ``per_class`` of them in an order drawn from ``seed``
    (``positions``, with their ``ancestors``). A class without candidates gets none, and the
    ancestor counts its pool does have (``pool_histogram``)."""
    order = np.random.default_rng(seed).permutation(len(counts))
    out: dict[str, dict[str, Any]] = {}
    for name, (in_large, lo, hi) in CLASSES.items():
        in_pool = large == in_large
        member = in_pool & (counts >= lo) & (counts <= hi)
        chosen = order[member[order]][:per_class]
        out[name] = {
            "band": [lo, hi],
            "pool": int(in_pool.sum()),
            "candidates": int(member.sum()),
            "positions": chosen.tolist(),
            "ancestors": counts[chosen].tolist(),
            "pool_histogram": histogram(counts[in_pool]),
        }
    return out


# -- the stack --------------------------------------------------------------------------------


@contextlib.contextmanager
def captured_stack(
    args: argparse.Namespace, report: dict[str, Any]
) -> Iterator[tuple[Stack, str, list[str]]]:
    """The stack of ``args.folder`` holding the captured run (loaded here, or reused with
    ``--reuse``), Neo4j and the query service up, Kafka down; yields the stack, the run id and
    the names of the processes started (stopped on exit unless ``--keep``)."""
    ports = Ports(
        args.kafka_port, args.controller_port, args.bolt_port, args.grpc_port, args.ingest_http_port
    )
    environ = without_addresses(os.environ)
    stack = bench_stack({**environ, "SPARKPROV_LOG_LEVEL": "WARNING"}, args.folder, ports)
    marker = stack.dir / MARKER
    previous = json.loads(marker.read_text()) if marker.exists() else {}
    key = reuse_key(args.pipeline, args.input_rows, args.theta)
    reuse = args.reuse and reusable(previous, key)
    if not reuse:
        stack.down(("kafka", "neo4j", "ingest", "query"))  # what an earlier run left (--keep)
    wanted = {"kafka": [ports.kafka, ports.kafka_controller], "neo4j": [ports.bolt]}
    wanted["query"] = [ports.grpc]
    busy = busy_ports([p for n, ps in wanted.items() if stack.pid(n) is None for p in ps])
    if busy:
        raise SystemExit(f"ports {busy} are in use: choose others (--*-port)")
    started: list[str] = []
    try:
        if reuse:
            started += stack.up(("neo4j", "query"))
            loaded = previous
            print(f"reusing the loaded run {loaded['run_id']}", file=sys.stderr)
        else:
            marker.unlink(missing_ok=True)
            for sub in ("data", "kafka"):
                shutil.rmtree(stack.dir / sub, ignore_errors=True)
            (stack.dir / "logs").mkdir(parents=True, exist_ok=True)
            started += stack.up(("kafka", "neo4j"))
            started.append("query")  # load_captured starts it
            loaded = {
                **key,
                **load_captured(
                    stack,
                    args.pipeline,
                    args.input_rows,
                    Path(args.data),
                    consumers=args.consumers,
                    partitions=args.partitions,
                    http_base=args.ingest_http_port,
                    theta=args.theta,
                    timeout_s=args.timeout,
                ),
            }
            marker.write_text(json.dumps(loaded, indent=2))
            stack.down(("kafka",))  # not needed for queries
            started.remove("kafka")
        report["load"] = {**loaded, "reused": reuse}
        yield stack, loaded["run_id"], started
    finally:
        if not args.keep:
            stack.down(tuple(n for n in Stack.ORDER if n in started))


# -- measuring --------------------------------------------------------------------------------


def measure(
    args: argparse.Namespace, stack: Stack, run_id: str, report: dict[str, Any]
) -> list[str]:
    driver = neo4j.GraphDatabase.driver(
        stack.settings.neo4j_uri, auth=None, notifications_min_severity="OFF"
    )
    with driver:
        t = time.monotonic()
        graph = read_stored(driver, run_id)
        read_s = time.monotonic() - t
        comps, large = large_components(driver, graph)
        adj = Adjacency(graph)
        counts = ancestor_counts(adj)
        classes = pick_classes(counts, large, args.seed, args.per_class)
        report["graph"] = {"stored_nodes": graph.nodes, "stored_edges": graph.edges}
        report["large_components"] = comps
        report["choosing_s"] = time.monotonic() - t
        report["reading_s"] = read_s
        print(f"chose the query nodes in {report['choosing_s']:.1f}s", file=sys.stderr)
        for name, c in classes.items():
            print(
                f"{name}: {c['candidates']:,} candidates of {c['pool']:,}, ancestors "
                f"{sorted(c['ancestors'])}; pool {c['pool_histogram']}",
                file=sys.stderr,
            )
        channel = grpc.insecure_channel(
            stack.settings.grpc_addr,
            options=[("grpc.max_receive_message_length", 512 * 1024 * 1024)],
        )
        with channel:
            runner = Runner(
                query_pb2_grpc.ProvenanceQueryStub(channel),
                driver,
                args.cypher_timeout,
                args.trace_timeout,
            )
            chosen = {
                name: {"ids": [int(graph.ids[p]) for p in c["positions"]]}
                for name, c in classes.items()
            }
            report["warmup"] = warm(runner, chosen, args.warmup)
            report["classes"] = {}
            for name, c in classes.items():
                entry = {k: v for k, v in c.items() if k != "positions"}
                ids = chosen[name]["ids"]
                entry["ids"] = [str(i) for i in ids]
                if ids:
                    entry["methods"] = run_class(runner, name, ids, c["ancestors"], args.repeats)
                report["classes"][name] = entry
    report["ratios"] = ratios(report["classes"])
    return runner.failures


def _ratio(a: float, b: float) -> float | None:
    """a / b, or None where either timed out on every node (no median to compare)."""
    return None if float("inf") in (a, b) else a / b


def ratios(classes: dict[str, Any]) -> dict[str, dict[str, float | None]]:
    out: dict[str, dict[str, float | None]] = {}
    for name, c in classes.items():
        if "methods" not in c:
            continue

        def med(method: str, c: dict[str, Any] = c) -> float:
            value = c["methods"][method]["median_ms"]
            return float("inf") if value is None else float(value)

        best = min(med(m) for m in ("RECURSIVE", "COMPONENT", "CONNECTED_SET"))
        out[name] = {
            "RECURSIVE/CONNECTED_SET": _ratio(med("RECURSIVE"), med("CONNECTED_SET")),
            "COMPONENT/CONNECTED_SET": _ratio(med("COMPONENT"), med("CONNECTED_SET")),
            "CYPHER/best": _ratio(med(CYPHER), best),
            "AUTO/best": _ratio(med("AUTO"), best),
        }
    return out


def _cell(method: dict[str, Any]) -> str:
    """A median, with how many query nodes timed out (their times are not in it)."""
    timeouts = method["timeouts"]
    median = "-" if method["median_ms"] is None else f"{method['median_ms']:,.1f}"
    return f"{median} ({timeouts} t/o)" if timeouts else median


def print_report(report: dict[str, Any]) -> None:
    load, g = report["load"], report["graph"]
    print(
        f"\n{load['pipeline']} at {load['source_rows']:,} input rows: captured "
        f"{load['lineage_nodes']:,} nodes + {load['lineage_edges']:,} edges in "
        f"{load['capture_s']:.1f}s, ingested in {load['ingest_s']:.0f}s "
        f"({load['lineage_records_per_s']:,.0f} records/s); stored {g['stored_nodes']:,} nodes "
        f"+ {g['stored_edges']:,} edges" + (" [reused]" if load["reused"] else "")
    )
    sizes = ", ".join(f"{c['size']:,}" for c in report["large_components"])
    print(f"LC1-LC3 hold {sizes} stored nodes")
    methods = [*STRATEGIES, CYPHER]
    print(
        f"\nmedian ms (client; CYPHER over Bolt)\n{'class':8}"
        + "".join(f"{m:>15}" for m in methods)
    )
    for name, c in report["classes"].items():
        where = f"{c['candidates']:,} candidates of {c['pool']:,}"
        if "methods" not in c:
            print(f"{name:8}{'no candidates':>15}   {where}; pool: {c['pool_histogram']}")
            continue
        row = "".join(f"{_cell(c['methods'][m]):>15}" for m in methods)
        lineage = f"ancestors {min(c['ancestors'])}-{max(c['ancestors'])}"
        print(f"{name:8}{row}   {lineage}, {where}")
    print(
        f"\nmedian edges read per trace, CONNECTED_SET's set-lineage (sets), nodes returned"
        f"\n{'class':8}" + "".join(f"{m:>15}" for m in STRATEGIES) + f"{'sets':>10}{'nodes':>10}"
    )
    for name, c in report["classes"].items():
        if "methods" in c:
            ms = c["methods"]
            row = "".join(f"{_fmt(ms[m]['edges_fetched_median']):>15}" for m in STRATEGIES)
            nodes = [s["nodes"] for s in ms["RECURSIVE"]["per_node"].values()]
            sets = _fmt(ms["CONNECTED_SET"]["sets_visited_median"])
            print(f"{name:8}{row}{sets:>10}{int(np.median(nodes)):>10,}")
    print("\nratios")
    for name, r in report["ratios"].items():
        print(
            f"{name:8}"
            + "   ".join(f"{k} {'-' if v is None else f'{v:.2f}'}" for k, v in r.items())
        )
    m = report["machine"]
    print(f"\nload average {m['loadavg_before'][0]:.2f} -> {m['loadavg_after'][0]:.2f}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pipeline", choices=PIPELINES, default="tpch")
    parser.add_argument("--input-rows", type=int, default=250_000, help="see bench/README.md")
    parser.add_argument("--theta", type=int, default=None, help="ingest's SPARKPROV_SET_THETA")
    parser.add_argument("--seed", type=int, default=7, help="query node order")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--per-class", type=int, default=10)
    parser.add_argument("--cypher-timeout", type=float, default=60.0)
    parser.add_argument(
        "--trace-timeout",
        type=float,
        default=60.0,
        help="seconds; a strategy that takes longer on a node is not asked again for it",
    )
    parser.add_argument(
        "--warmup", type=float, default=60.0, help="seconds of traces before timing (JIT)"
    )
    parser.add_argument("--reuse", action="store_true", help="keep a stack loaded alike")
    parser.add_argument("--keep", action="store_true", help="leave the stack running")
    parser.add_argument("--timeout", type=float, default=4 * 3600, help="loading, seconds")
    parser.add_argument("--consumers", type=int, default=2)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--data", default=os.path.join(tempfile.gettempdir(), "sparkprov-qcapt"))
    parser.add_argument("--folder", default=".stack-qcapt")
    parser.add_argument("--kafka-port", type=int, default=48092)
    parser.add_argument("--controller-port", type=int, default=48093)
    parser.add_argument("--bolt-port", type=int, default=48687)
    parser.add_argument("--grpc-port", type=int, default=48051)
    parser.add_argument(
        "--ingest-http-port", type=int, default=0, help="ingest i on this + i; 0: ephemeral"
    )
    args = parser.parse_args(argv)
    report: dict[str, Any] = {"machine": machine(), "arguments": vars(args)}
    with captured_stack(args, report) as (stack, run_id, _):
        failures = measure(args, stack, run_id, report)
    report["failures"] = failures
    report["machine"]["loadavg_after"] = list(os.getloadavg())
    RESULTS.mkdir(parents=True, exist_ok=True)
    out = RESULTS / (
        f"query_latency_captured-{args.pipeline}-{args.input_rows // 1000}k-"
        f"{time.strftime('%Y%m%d-%H%M%S')}.json"
    )
    out.write_text(json.dumps(report, indent=2))
    print_report(report)
    print(f"-> {out.relative_to(ROOT)}")
    if failures:
        print("CORRECTNESS FAILURES:\n  " + "\n  ".join(failures))
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
