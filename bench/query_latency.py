"""Query latency: the CSProv paper's query classes through the real gRPC query service, every
trace strategy side by side, plus Neo4j's own variable-length traversal and PropagateDeletion.

    python -m bench.query_latency [--records 1000000] [--shape csprov|uniform] [--repeats 5]
        [--reuse] [--keep] [--folder .stack-qbench] [--kafka-port 49092]
        [--controller-port 49093] [--bolt-port 47687] [--grpc-port 50151]
        [--ingest-http-port 49464] [--warmup 60]

Loading: a graph of ``--records`` nodes+edges (bench.gen, ``--seed``; ``--shape csprov``, the
paper's workload where a row's parents are the rows it joins with by key, or ``uniform``, parents
drawn from anywhere in the component: the adversarial case for connected sets) is published
to Kafka and stored by the real ingest service (bench.harness.ingest), in a stack of its own
(folder and ports above; the jars come from .stack, so run `make setup` first). ``--reuse``
skips generation and loading when the folder already holds the loaded graph of that size and
seed (a marker file written after a complete load); the graph is then regenerated in memory only,
to choose the query nodes.

Query nodes (10 per class, section V of the paper), from the stored component sizes (the three
largest components are LC1-LC3, the rest small) and each candidate's ancestor count, candidates
taken in an order drawn from ``--seed``:
- SC-SL: nodes of small components with 100-200 ancestors;
- LC-SL: nodes of LC1-LC3 with 100-200 ancestors;
- LC-LL: nodes of LC1-LC3 with 5,000-10,000 ancestors.
Where fewer than 10 candidates lie in a class's band, the nodes closest to it are taken and the
report says so (the generator's small components hold at most ~40 nodes, for one).

Each query node is traced backward with RECURSIVE, COMPONENT, CONNECTED_SET and AUTO (gRPC) and
with ``MATCH (n:Node {id: $id})<-[:DERIVES*]-(a:Node) RETURN DISTINCT a`` (Bolt, no service in
between); ``--warmup`` seconds of untimed traces of the SC-SL and LC-SL nodes first (a Neo4j
just started runs interpreted code), one warm-up round, then ``--repeats`` rounds, strategies in
rotating order. Every
strategy must return the same node and edge sets, Cypher the same nodes, and the ancestor count
must equal the generator's: otherwise the run exits 1. PropagateDeletion is timed for the node
whose forward closure is closest to 10,000 nodes, and for a set of nodes of one large component
whose joint forward closure is ~10,000 nodes; the deleted nodes are checked against Definition 4.2
evaluated in memory. Prints medians and ratios, writes JSON under bench/results/.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import shutil
import statistics
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol

import grpc
import neo4j
import numpy as np

from bench.gen import SHAPES, VERSION, Graph, generate_reported
from bench.harness import RESULTS, ROOT, IngestOptions, Ports, bench_stack, busy_ports, ingest
from localstack.stack import Stack
from query_service.deletion import propagate
from query_service.graph import Graph as MemGraph
from query_service.model import NodeView
from sparkprov.progress import Progress
from sparkprov.v1 import lineage_pb2, query_pb2, query_pb2_grpc

STRATEGIES = {
    "RECURSIVE": query_pb2.STRATEGY_RECURSIVE,
    "COMPONENT": query_pb2.STRATEGY_COMPONENT,
    "CONNECTED_SET": query_pb2.STRATEGY_CONNECTED_SET,
    "AUTO": query_pb2.STRATEGY_AUTO,
}
CYPHER = "CYPHER"
CYPHER_TRACE = "MATCH (n:Node {id: $id})<-[:DERIVES*]-(a:Node) RETURN DISTINCT a"
# The paper's bands of ancestor counts (section V).
CLASSES = {"SC-SL": (False, 100, 200), "LC-SL": (True, 100, 200), "LC-LL": (True, 5000, 10000)}
DELETION_TARGET = 10_000
MARKER = "query_latency-loaded.json"
# Ops of the nodes the query service derives from member edges (docs/graph-schema.md, "Group
# members"): a trace returns them, Cypher over the stored graph cannot.
DERIVED_OPS = frozenset({lineage_pb2.OP_TENSOR, lineage_pb2.OP_VALUE})


class Edges(Protocol):
    """A graph as arrays: node ids by position, and edges as (src, dst) positions. bench.gen's
    Graph is one; bench.query_latency_captured builds one from the stored graph."""

    @property
    def nodes(self) -> int: ...
    @property
    def ids(self) -> np.ndarray: ...
    @property
    def src(self) -> np.ndarray: ...
    @property
    def dst(self) -> np.ndarray: ...


# -- the graph in memory (the generator's, identical to the stored one) -----------------------


class Adjacency:
    """Parents and children of a graph as CSR arrays, and capped BFS over them."""

    def __init__(self, graph: Edges) -> None:
        self.n = graph.nodes
        self.parents = self._csr(graph.dst, graph.src)
        self.children = self._csr(graph.src, graph.dst)
        self._stamp = np.zeros(self.n, dtype=np.int64)
        self._tag = 0

    def _csr(self, keys: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        indptr = np.zeros(self.n + 1, dtype=np.int64)
        np.cumsum(np.bincount(keys, minlength=self.n), out=indptr[1:])
        return indptr, values[np.argsort(keys, kind="stable")]

    def reach(self, seeds: list[int], backward: bool, cap: int = 1 << 62) -> np.ndarray:
        """Positions reachable from ``seeds`` (seeds excluded), or more than ``cap`` of them."""
        indptr, values = self.parents if backward else self.children
        self._tag += 1
        tag = self._tag
        frontier = np.unique(np.asarray(seeds, dtype=np.int64))
        self._stamp[frontier] = tag
        found = []
        count = 0
        while len(frontier):
            starts = indptr[frontier]
            lens = indptr[frontier + 1] - starts
            total = int(lens.sum())
            if total == 0:
                break
            offsets = np.repeat(starts - np.cumsum(lens) + lens, lens) + np.arange(total)
            nxt = np.unique(values[offsets])
            nxt = nxt[self._stamp[nxt] != tag]
            self._stamp[nxt] = tag
            found.append(nxt)
            count += len(nxt)
            if count > cap:
                break
            frontier = nxt
        return np.concatenate(found) if found else np.zeros(0, dtype=np.int64)


# -- choosing the query nodes -------------------------------------------------------------------


def large_components(driver: neo4j.Driver, graph: Edges) -> tuple[list[dict[str, int]], np.ndarray]:
    """The three largest stored components (LC1-LC3) and a mask of the generated nodes in them."""
    # Only a root's record holds the size; a component's nodes are found through its records
    # (docs/graph-schema.md, "Component and set ids"), not by the ids they were born with.
    records, _, _ = driver.execute_query(
        "MATCH (c:Component) WHERE c.parent IS NULL "
        "RETURN c.id AS id, c.size AS size ORDER BY c.size DESC LIMIT 3"
    )
    comps = [{"id": r["id"], "size": r["size"]} for r in records]
    ids: list[int] = []
    for c in comps:
        records, _, _ = driver.execute_query(
            "CALL sparkprov.componentNodes($c) YIELD node RETURN node.id AS id", c=c["id"]
        )
        ids += [r["id"] for r in records]
        if len(records) != c["size"]:
            raise SystemExit(f"component {c['id']}: size {c['size']} but {len(records)} nodes")
    return comps, np.isin(graph.ids, np.array(ids, dtype=np.int64))


def choose(
    adj: Adjacency,
    pool: np.ndarray,
    lo: int,
    hi: int,
    count: int,
    scan: int,
) -> tuple[list[tuple[int, int]], bool]:
    """``count`` (position, ancestors) from ``pool`` (already in the seeded order): the first with
    ``lo``-``hi`` ancestors, else those closest to the band among the first ``scan``."""
    inband: list[tuple[int, int]] = []
    seen: list[tuple[int, int, int]] = []
    for rank, p in enumerate(pool[:scan].tolist()):
        ancestors = len(adj.reach([p], backward=True, cap=2 * hi))
        if lo <= ancestors <= hi:
            inband.append((p, ancestors))
            if len(inband) == count:
                return inband, True
        distance = lo - ancestors if ancestors < lo else ancestors - hi
        seen.append((distance, rank, p))
    seen.sort()
    return [(p, len(adj.reach([p], backward=True))) for _, _, p in seen[:count]], False


def choose_queries(
    adj: Adjacency, graph: Graph, large: np.ndarray, seed: int, per_class: int
) -> dict[str, dict[str, Any]]:
    rng = np.random.default_rng(seed)
    order = rng.permutation(graph.nodes)
    hubs = np.nonzero(np.bincount(graph.dst, minlength=graph.nodes) >= 100)[0]
    # Large lineages sit below the hubs (100-450 parents each): scan the hubs' descendants first.
    below_hubs = np.unique(np.concatenate([adj.reach([int(h)], False) for h in hubs] + [hubs]))
    below_hubs = below_hubs[large[below_hubs]]
    below_hubs = below_hubs[rng.permutation(len(below_hubs))]
    out = {}
    for name, (in_large, lo, hi) in CLASSES.items():
        if name == "LC-LL":
            pool, scan = below_hubs, 3000
        else:
            pool = order[large[order] == in_large]
            scan = 100_000 if in_large else 20_000
        picked, in_band = choose(adj, pool, lo, hi, per_class, scan)
        out[name] = {
            "band": [lo, hi],
            "in_band": in_band,
            "positions": [p for p, _ in picked],
            "ids": [int(graph.ids[p]) for p, _ in picked],
            "ancestors": [a for _, a in picked],
        }
        note = "" if in_band else f" (none enough in {lo}-{hi}: closest taken)"
        print(f"{name}: ancestors {sorted(a for _, a in picked)}{note}", file=sys.stderr)
    return out


def choose_deletions(
    adj: Adjacency, graph: Graph, large: np.ndarray, seed: int, scan: int = 20_000
) -> dict[str, Any]:
    """The node whose forward closure is closest to DELETION_TARGET, and a set of nodes of one
    large component (in seeded order) whose joint forward closure first reaches it."""
    rng = np.random.default_rng(seed + 1)
    pool = np.nonzero(large)[0]
    # Early relations reach furthest; scan them first.
    pool = pool[np.lexsort((rng.random(len(pool)), graph.relation[pool]))][:scan]
    best = (1 << 62, 0, 0)
    for p in pool.tolist():
        size = len(adj.reach([p], False, cap=2 * DELETION_TARGET)) + 1
        best = min(best, (abs(size - DELETION_TARGET), p, size))
        if best[0] <= DELETION_TARGET // 20:
            break
    _, single, single_size = best
    component = graph.component[single]
    members = pool[graph.component[pool] == component]
    seeds: list[int] = []
    for p in members.tolist():
        seeds.append(p)
        joint = len(np.union1d(adj.reach(seeds, False), seeds))
        if joint >= DELETION_TARGET or len(seeds) >= 2000:
            break
    return {
        "single": {"positions": [single], "closure": single_size},
        "set": {"positions": seeds, "closure": joint},
    }


def expected_deletion(adj: Adjacency, graph: Graph, positions: list[int]) -> set[int]:
    """Definition 4.2 on the generated graph: the ids PropagateDeletion must remove."""
    closure = np.union1d(adj.reach(positions, False), positions)
    indptr, parents = adj.parents
    ops = graph.ops()
    edges = [
        (int(graph.ids[q]), int(graph.ids[c]))
        for c in closure.tolist()
        for q in parents[indptr[c] : indptr[c + 1]].tolist()
    ]
    views = {
        int(graph.ids[c]): NodeView(int(graph.ids[c]), "", ops[c], "", "", {}, "", None, None)
        for c in closure.tolist()
    }
    return set(propagate(MemGraph.of(edges, views), [int(graph.ids[p]) for p in positions]))


# -- timing ---------------------------------------------------------------------------------


@dataclass
class Sample:
    millis: list[float] = field(default_factory=list)
    server_millis: list[float] = field(default_factory=list)
    stats: dict[str, Any] = field(default_factory=dict)
    timeouts: int = 0


class Runner:
    """Times the raw gRPC stub, not sparkprov.client.QueryClient: the latency measured is the
    service's and the wire's, without the client's conversion of up to 1M nodes to dataclasses
    (which would dominate the large classes and is not what the published numbers compare)."""

    def __init__(
        self,
        stub: query_pb2_grpc.ProvenanceQueryStub,
        driver: neo4j.Driver,
        cypher_timeout: float,
        trace_timeout: float = 600.0,
    ) -> None:
        self.stub, self.driver, self.cypher_timeout = stub, driver, cypher_timeout
        # The call's deadline bounds the trace's transaction in Neo4j (query_service.server), so
        # a trace that times out leaves no work behind to slow the next one.
        self.trace_timeout = trace_timeout
        self.failures: list[str] = []
        self.derived: set[str] = set()  # the last trace's nodes that only the service derives

    def trace(
        self, node_id: int, strategy: str
    ) -> tuple[float, set[str], set[tuple[str, str]], Any] | None:
        """Time, nodes, edges and stats of one backward trace; None past ``trace_timeout``."""
        request = query_pb2.TraceRequest(
            node_ids=[str(node_id)], strategy=STRATEGIES[strategy], limit=1_000_000
        )
        t = time.perf_counter()
        try:
            reply = self.stub.BackwardTrace(request, timeout=self.trace_timeout)
        except grpc.RpcError as e:
            if e.code() == grpc.StatusCode.DEADLINE_EXCEEDED:
                return None
            raise
        ms = (time.perf_counter() - t) * 1000
        nodes = {n.id for n in reply.nodes}
        edges = {(e.src, e.dst) for e in reply.edges}
        self.derived = {n.id for n in reply.nodes if n.op in DERIVED_OPS}
        return ms, nodes, edges, reply.stats

    def cypher(self, node_id: int) -> tuple[float, set[str] | None]:
        query = neo4j.Query(CYPHER_TRACE, timeout=self.cypher_timeout)
        t = time.perf_counter()
        try:
            records, _, _ = self.driver.execute_query(
                query, id=node_id, routing_=neo4j.RoutingControl.READ
            )
        except (neo4j.exceptions.ClientError, neo4j.exceptions.TransientError) as e:
            if "Timeout" in (e.code or "") or "terminated" in str(e).lower():
                return float("inf"), None
            raise
        ms = (time.perf_counter() - t) * 1000
        return ms, {str(r["a"]["id"]) for r in records} | {str(node_id)}


# What the warm-up traces: every method on the small classes, and the cheap ones on LC-SL. The
# large classes' COMPONENT and CONNECTED_SET traces run the same code on more edges, and Cypher
# on LC-LL takes ~1 s a call.
WARM_METHODS = {
    "SC-SL": [*STRATEGIES, CYPHER],
    "LC-SL": ["RECURSIVE", "AUTO", CYPHER],
}


def warm(runner: Runner, queries: dict[str, dict[str, Any]], seconds: float) -> dict[str, Any]:
    """Traces the query nodes for ``seconds`` before anything is timed (at least one pass), so
    that the plugin's and Cypher's code paths run compiled, not interpreted: a Neo4j just started
    (every run with ``--reuse``) spends its first ~40 s of traces in the JIT (bench.query_load's
    runs measured 24.5 ms of CPU per trace with 5 s of warm-up and 13.0 ms with 90 s)."""
    work = [
        (int(node_id), method)
        for name, methods in WARM_METHODS.items()
        for node_id in queries.get(name, {}).get("ids", [])
        for method in methods
    ]
    started = time.monotonic()
    calls = 0
    while work and (calls == 0 or time.monotonic() - started < seconds):
        for node_id, method in work:
            if method == CYPHER:
                runner.cypher(node_id)
            else:
                runner.trace(node_id, method)
            calls += 1
    return {"seconds": round(time.monotonic() - started, 1), "calls": calls}


def floor(runner: Runner, adj: Adjacency, graph: Graph, repeats: int = 200) -> dict[str, Any]:
    """The fixed cost of each path, from a trace with nothing to walk: a source node's backward
    trace through the service (gRPC, the service, one Bolt call of the plugin) and Cypher's query
    for it over Bolt, beside a bare ``RETURN 1`` over Bolt (the driver's round trip)."""
    indptr = adj.parents[0]
    source = int(graph.ids[int(np.flatnonzero(indptr[1:] == indptr[:-1])[0])])
    calls = {
        "bolt RETURN 1": lambda: runner.driver.execute_query(
            "RETURN 1 AS one", routing_=neo4j.RoutingControl.READ
        ),
        "cypher, no ancestors": lambda: runner.cypher(source),
        "gRPC RECURSIVE, no ancestors": lambda: runner.trace(source, "RECURSIVE"),
    }
    out: dict[str, Any] = {"node": str(source)}
    for name, call in calls.items():
        millis = []
        for round_ in range(repeats + 10):
            t = time.perf_counter()
            call()
            if round_ >= 10:
                millis.append((time.perf_counter() - t) * 1000)
        out[name] = _median(millis)
    return out


def run_class(
    runner: Runner, name: str, ids: list[int], ancestors: list[int], repeats: int
) -> dict[str, Any]:
    methods = [*STRATEGIES, CYPHER]
    samples = {m: {i: Sample() for i in ids} for m in methods}
    bar = Progress(len(ids) * len(methods) * (repeats + 1), f"{name}")
    done = 0
    for round_ in range(repeats + 1):  # round 0: warm-up and correctness
        for k, node_id in enumerate(ids):
            rotated = (
                methods[(round_ + k) % len(methods) :] + methods[: (round_ + k) % len(methods)]
            )
            for method in rotated:
                sample = samples[method][node_id]
                done += 1
                bar.update(done)
                if sample.timeouts:
                    continue  # timed out once: not asked again
                if method == CYPHER:
                    ms, cnodes = runner.cypher(node_id)
                    if cnodes is None:
                        sample.timeouts += 1
                        continue
                    if round_ == 0:
                        sample.stats = {"nodes": len(cnodes)}
                        sample.stats["_nodes"] = cnodes
                    else:
                        sample.millis.append(ms)
                    continue
                traced = runner.trace(node_id, method)
                if traced is None:
                    sample.timeouts += 1
                    continue
                ms, nodes, edges, stats = traced
                if round_ == 0:
                    sample.stats = {
                        "strategy": query_pb2.Strategy.Name(stats.strategy),
                        "levels": stats.levels,
                        "queries": stats.queries,
                        "edges_fetched": stats.edges_fetched,
                        "sets_visited": stats.sets_visited,
                        "nodes": len(nodes),
                        "edges": len(edges),
                        "_nodes": nodes,
                        "_edges": edges,
                        "_derived": runner.derived,
                    }
                    continue
                sample.millis.append(ms)
                sample.server_millis.append(stats.millis)
        if round_ == 0:
            check(runner, name, ids, ancestors, samples)
    bar.close()
    return summarise(samples, ids)


def check(
    runner: Runner,
    name: str,
    ids: list[int],
    ancestors: list[int],
    samples: dict[str, dict[int, Sample]],
) -> None:
    """Every strategy returns RECURSIVE's nodes and edges; Cypher, which reads the stored graph,
    the same nodes but those the service derives from member edges; and the stored ancestors
    number ``ancestors`` (the generator's, or those counted in the stored graph)."""
    for node_id, expected in zip(ids, ancestors, strict=True):
        base = samples["RECURSIVE"][node_id].stats
        if not base:
            runner.failures.append(f"{name} {node_id}: RECURSIVE timed out, answers not compared")
            continue
        stored = base["_nodes"] - base["_derived"]
        if len(stored) != expected + 1:
            runner.failures.append(
                f"{name} {node_id}: RECURSIVE found {len(stored) - 1} stored ancestors, "
                f"expected {expected}"
            )
        for method, per_node in samples.items():
            stats = per_node[node_id].stats
            if not stats:  # timed out
                continue
            if stats["_nodes"] != (stored if method == CYPHER else base["_nodes"]):
                runner.failures.append(
                    f"{name} {node_id}: {method} returned {stats['nodes']} nodes, "
                    f"RECURSIVE {base['nodes']} (different sets)"
                )
            if "_edges" in stats and stats["_edges"] != base["_edges"]:
                runner.failures.append(f"{name} {node_id}: {method} returned different edges")
        for per_node in samples.values():
            per_node[node_id].stats.pop("_nodes", None)
            per_node[node_id].stats.pop("_edges", None)
            per_node[node_id].stats.pop("_derived", None)


def _median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def summarise(samples: dict[str, dict[int, Sample]], ids: list[int]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for method, per_node in samples.items():
        everything = [ms for s in per_node.values() for ms in s.millis]
        server = [ms for s in per_node.values() for ms in s.server_millis]
        stats = [s.stats for s in per_node.values() if s.stats]
        out[method] = {
            "median_ms": _median(everything),
            "server_median_ms": _median(server),
            # What the strategy read: edges fetched, and (CONNECTED_SET) its set-lineage's sets.
            "edges_fetched_median": _median([s["edges_fetched"] for s in stats if "levels" in s]),
            "sets_visited_median": _median([s["sets_visited"] for s in stats if "levels" in s]),
            "timeouts": sum(s.timeouts for s in per_node.values()),
            "per_node": {
                str(i): {
                    "median_ms": _median(per_node[i].millis),
                    "server_median_ms": _median(per_node[i].server_millis),
                    **per_node[i].stats,
                }
                for i in ids
            },
        }
    return out


def time_deletion(
    runner: Runner, adj: Adjacency, graph: Graph, positions: list[int], repeats: int
) -> dict[str, Any]:
    ids = [str(int(graph.ids[p])) for p in positions]
    expected = {str(i) for i in expected_deletion(adj, graph, positions)}
    millis = []
    deleted: set[str] = set()
    for round_ in range(repeats + 1):
        t = time.perf_counter()
        reply = runner.stub.PropagateDeletion(query_pb2.DeletionRequest(node_ids=ids), timeout=600)
        ms = (time.perf_counter() - t) * 1000
        if round_ == 0:
            deleted = set(reply.deleted_node_ids)
            if deleted != expected:
                runner.failures.append(
                    f"PropagateDeletion of {len(ids)} node(s): {len(deleted)} deleted, "
                    f"Definition 4.2 in memory says {len(expected)}"
                )
        else:
            millis.append(ms)
    return {"seeds": len(ids), "deleted": len(deleted), "median_ms": _median(millis), "ms": millis}


# -- the stack ----------------------------------------------------------------------------------


def load(
    args: argparse.Namespace, stack: Stack, graph: Graph, driver: neo4j.Driver
) -> dict[str, Any]:
    from ingest_service.store import Store

    Store(driver).ensure_schema()
    logs = stack.dir / "logs"
    options = IngestOptions(http_base=args.ingest_http_port, timeout=args.timeout, indexed=True)
    result = ingest(stack, graph, driver, logs, options)
    if not result["counts_match"]:
        raise SystemExit(f"stored counts differ from the generated graph: {result}")
    return result


def graph_arguments(parser: argparse.ArgumentParser) -> None:
    """The arguments of a loaded graph's stack (this benchmark's and bench.query_load's)."""
    parser.add_argument("--records", type=int, default=1_000_000, help="nodes + edges")
    parser.add_argument("--seed", type=int, default=7, help="graph and query choice")
    parser.add_argument(
        "--shape",
        choices=sorted(SHAPES),
        default="csprov",
        help="csprov: parents by join key (the paper's workload); uniform: the adversarial case",
    )
    parser.add_argument("--reuse", action="store_true", help="keep a loaded graph of this size")
    parser.add_argument("--keep", action="store_true", help="leave the stack running")
    parser.add_argument("--timeout", type=float, default=4 * 3600, help="loading, seconds")
    parser.add_argument("--folder", default=".stack-qbench")
    parser.add_argument("--kafka-port", type=int, default=49092)
    parser.add_argument("--controller-port", type=int, default=49093)
    parser.add_argument("--bolt-port", type=int, default=47687)
    parser.add_argument("--grpc-port", type=int, default=50151)
    parser.add_argument("--ingest-http-port", type=int, default=49464)


@contextlib.contextmanager
def loaded_graph(
    args: argparse.Namespace, report: dict[str, Any]
) -> Iterator[tuple[Stack, Graph, neo4j.Driver, list[str]]]:
    """The stack of ``args.folder`` with the generated graph loaded through ingest (or reused,
    with ``--reuse``), Neo4j up and Kafka down; yields the stack, the graph in memory, a driver
    and the names of the processes started (stopped on exit unless ``--keep``)."""
    ports = Ports(
        args.kafka_port, args.controller_port, args.bolt_port, args.grpc_port, args.ingest_http_port
    )
    stack = bench_stack({**os.environ, "SPARKPROV_LOG_LEVEL": "WARNING"}, args.folder, ports)
    running = {name for name in ("kafka", "neo4j", "query") if stack.pid(name) is not None}
    wanted = {
        "kafka": [ports.kafka, ports.kafka_controller],
        "neo4j": [ports.bolt],
        "query": [ports.grpc],
        "ingest": [ports.ingest_http, ports.ingest_http + 1],
    }
    busy = busy_ports([p for name, ps in wanted.items() if name not in running for p in ps])
    if busy:
        raise SystemExit(f"ports {busy} are in use: choose others (--*-port)")

    marker = stack.dir / MARKER
    previous = json.loads(marker.read_text()) if marker.exists() else {}
    reuse = (
        args.reuse
        and previous.get("records") == args.records
        and previous.get("seed") == args.seed
        and previous.get("shape", "uniform") == args.shape
        and previous.get("generator", 1) == VERSION
    )
    started: list[str] = []
    try:
        if not reuse:
            if any(stack.pid(n) is not None for n in ("kafka", "neo4j")):
                stack.down(("kafka", "neo4j", "query"))
            marker.unlink(missing_ok=True)
            shutil.rmtree(stack.dir / "data", ignore_errors=True)
            shutil.rmtree(stack.dir / "kafka", ignore_errors=True)
            (stack.dir / "logs").mkdir(parents=True, exist_ok=True)
            started += stack.up(("kafka", "neo4j"))
        else:
            started += stack.up(("neo4j",))
        graph = generate_reported(args.records, args.seed, args.shape)
        driver = neo4j.GraphDatabase.driver(
            stack.settings.neo4j_uri, auth=None, notifications_min_severity="OFF"
        )
        with driver:
            if reuse:
                loaded = previous
                print(f"reusing the loaded run {loaded['run_id']}", file=sys.stderr)
            else:
                result = load(args, stack, graph, driver)
                loaded = {
                    "records": args.records,
                    "seed": args.seed,
                    "shape": args.shape,
                    "generator": VERSION,
                    "run_id": result["run_id"],
                    "ingest": result,
                }
                marker.write_text(json.dumps(loaded, indent=2))
                if "kafka" in started:  # not needed for queries
                    stack.down(("kafka",))
                    started.remove("kafka")
            report["graph"] = {
                "shape": args.shape,
                "nodes": graph.nodes,
                "edges": graph.edges,
                "records": graph.nodes + graph.edges,
                "run_id": loaded["run_id"],
                "load_s": loaded["ingest"]["elapsed_s"],
                "publish_s": loaded["ingest"]["publish_s"],
                "loaded_records_per_s": loaded["ingest"]["records_per_s"],
                "reused": reuse,
            }
            yield stack, graph, driver, started
    finally:
        if not args.keep:
            stack.down(tuple(n for n in Stack.ORDER if n in started))


def machine() -> dict[str, Any]:
    """What a result was measured on, the load average included (benchmarks run alone)."""
    return {
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "loadavg_before": list(os.getloadavg()),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    graph_arguments(parser)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--per-class", type=int, default=10)
    parser.add_argument("--cypher-timeout", type=float, default=60.0)
    parser.add_argument(
        "--warmup", type=float, default=60.0, help="seconds of traces before timing (JIT)"
    )
    args = parser.parse_args(argv)
    report: dict[str, Any] = {"machine": machine(), "arguments": vars(args)}
    with loaded_graph(args, report) as (stack, graph, driver, started):
        report["failures"] = measure(args, stack, graph, driver, report, started)
    report["machine"]["loadavg_after"] = list(os.getloadavg())

    RESULTS.mkdir(parents=True, exist_ok=True)
    out = (
        RESULTS / f"query_latency-{args.records // 1_000_000}M-{args.shape}-"
        f"{time.strftime('%Y%m%d-%H%M%S')}.json"
    )
    out.write_text(json.dumps(report, indent=2))
    print_report(report)
    print(f"-> {out.relative_to(ROOT)}")
    if report["failures"]:
        print("CORRECTNESS FAILURES:\n  " + "\n  ".join(report["failures"]))
        return 1
    return 0


def measure(
    args: argparse.Namespace,
    stack: Stack,
    graph: Graph,
    driver: neo4j.Driver,
    report: dict[str, Any],
    started: list[str],
) -> list[str]:
    t = time.monotonic()
    adj = Adjacency(graph)
    comps, large = large_components(driver, graph)
    report["large_components"] = comps
    queries = choose_queries(adj, graph, large, args.seed, args.per_class)
    deletions = choose_deletions(adj, graph, large, args.seed)
    print(f"chose the query nodes in {time.monotonic() - t:.1f}s", file=sys.stderr)

    started += stack.up(("query",))
    channel = grpc.insecure_channel(
        stack.settings.grpc_addr,
        options=[("grpc.max_receive_message_length", 512 * 1024 * 1024)],
    )
    with channel:
        runner = Runner(query_pb2_grpc.ProvenanceQueryStub(channel), driver, args.cypher_timeout)
        report["warmup"] = warm(runner, queries, args.warmup)
        report["floor_ms"] = floor(runner, adj, graph)
        report["classes"] = {}
        for name, q in queries.items():
            result = run_class(runner, name, q["ids"], q["ancestors"], args.repeats)
            report["classes"][name] = {
                "band": q["band"],
                "in_band": q["in_band"],
                "ancestors": q["ancestors"],
                "ids": [str(i) for i in q["ids"]],
                "methods": result,
            }
        report["deletion"] = {}
        for kind, d in deletions.items():
            report["deletion"][kind] = {
                "forward_closure": d["closure"],
                **time_deletion(runner, adj, graph, d["positions"], args.repeats),
            }
    report["ratios"], report["goals"] = ratios(report)
    return runner.failures


def ratios(report: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    out: dict[str, Any] = {}

    def med(cls: str, method: str) -> float:
        value = report["classes"][cls]["methods"][method]["median_ms"]
        return float("inf") if value is None else float(value)

    for cls in report["classes"]:
        cs = med(cls, "CONNECTED_SET")
        best = min(med(cls, m) for m in ("RECURSIVE", "COMPONENT", "CONNECTED_SET"))
        out[cls] = {
            "RECURSIVE/CONNECTED_SET": med(cls, "RECURSIVE") / cs,
            "COMPONENT/CONNECTED_SET": med(cls, "COMPONENT") / cs,
            "CYPHER/CONNECTED_SET": med(cls, CYPHER) / cs,
            "AUTO/best": med(cls, "AUTO") / best,
            "CYPHER/best": med(cls, CYPHER) / best,
        }
    deletion = report["deletion"]["set"]["median_ms"]
    goals = {
        "CS >= 5x RECURSIVE on LC-SL": out["LC-SL"]["RECURSIVE/CONNECTED_SET"] >= 5,
        "CS >= 5x RECURSIVE on LC-LL": out["LC-LL"]["RECURSIVE/CONNECTED_SET"] >= 5,
        "CS >= 3x COMPONENT on LC-SL": out["LC-SL"]["COMPONENT/CONNECTED_SET"] >= 3,
        "LC-SL median <= 50 ms (AUTO)": med("LC-SL", "AUTO") <= 50,
        "AUTO within 20% of the best everywhere": all(r["AUTO/best"] <= 1.2 for r in out.values()),
        "best >= 2x Cypher everywhere": all(r["CYPHER/best"] >= 2 for r in out.values()),
        "PropagateDeletion (~10k closure) <= 200 ms": deletion is not None and deletion <= 200,
    }
    return out, goals


def _fmt(ms: float | None) -> str:
    return "timeout" if ms is None else f"{ms:,.1f}"


def print_report(report: dict[str, Any]) -> None:
    g = report["graph"]
    print(
        f"\ngraph: {g['nodes']:,} nodes + {g['edges']:,} edges = {g['records']:,} records, "
        f"loaded through ingest in {g['load_s']:.0f}s ({g['loaded_records_per_s']:,.0f}/s)"
        + (" [reused]" if g["reused"] else "")
    )
    methods = [*STRATEGIES, CYPHER]
    print(
        f"\nmedian ms (client, gRPC; CYPHER over Bolt)\n{'class':8}"
        + "".join(f"{m:>15}" for m in methods)
    )
    for cls, c in report["classes"].items():
        row = "".join(f"{_fmt(c['methods'][m]['median_ms']):>15}" for m in methods)
        lineage = (
            f"ancestors {min(c['ancestors'])}-{max(c['ancestors'])}"
            if c["ancestors"]
            else "no such node"
        )
        print(f"{cls:8}{row}   {lineage}{'' if c['in_band'] else ' (band empty: closest)'}")
    print(
        f"\nmedian edges read per trace (set-lineage: CONNECTED_SET's sets)\n{'class':8}"
        + "".join(f"{m:>15}" for m in STRATEGIES)
        + f"{'sets':>10}"
    )
    for cls, c in report["classes"].items():
        ms = c["methods"]
        row = "".join(f"{_fmt(ms[m]['edges_fetched_median']):>15}" for m in STRATEGIES)
        print(f"{cls:8}{row}{_fmt(ms['CONNECTED_SET']['sets_visited_median']):>10}")
    print(
        "\nfixed cost (median ms): "
        + ", ".join(f"{k} {v:.2f}" for k, v in report["floor_ms"].items() if k != "node")
    )
    print("\nratios")
    for cls, r in report["ratios"].items():
        print(f"{cls:8}" + "   ".join(f"{k} {v:.2f}" for k, v in r.items()))
    print("\nPropagateDeletion")
    for kind, d in report["deletion"].items():
        print(
            f"  {kind:6} {d['seeds']:>5} seed(s), forward closure {d['forward_closure']:,}, "
            f"deleted {d['deleted']:,}: median {_fmt(d['median_ms'])} ms"
        )
    print("\ngoals (stated for 10M):")
    for goal, ok in report["goals"].items():
        print(f"  [{'met' if ok else 'MISSED'}] {goal}")


if __name__ == "__main__":
    raise SystemExit(main())
