"""Provenance graphs shaped like the CSProv paper's text-curation workflow, published to Kafka in
the capture agent's own event format.

    python -m bench.gen --records 1000000 [--topic sparkprov.lineage] [--seed 7] [--run-id ID]

Shape: 25 relations in 3 splits (sp1 = R00-R07, sp2 = R08-R15, sp3 = R16-R24, the last with
sub-splits sp4 = R16-R19 and sp5 = R20-R24, as in the paper's Figure 1); most components small
(3-40 nodes over a few consecutive relations), three large ones holding 18%, 14% and 10% of the
nodes; every non-source node has 1-3 parents in the preceding relations of its component, and a few
hub nodes have 100-450 parents (in-degree skew). Ids are random 63-bit numbers from the seed, so
the same seed gives the same graph. Messages hold up to 2048 nodes of one relation with the edges
into them, in relation order (as a pipeline's stages publish), then a RunComplete marker with the
exact counts, so ingest marks the run complete when everything is stored.
"""

from __future__ import annotations

import argparse
import sys
import time
import uuid
from dataclasses import dataclass

import numpy as np

from sparkprov import defaults
from sparkprov.events import (
    EdgeColumns,
    NodeColumns,
    encode_batch,
    encode_run_complete,
    encode_run_started,
)
from sparkprov.progress import Progress

__all__ = ["Graph", "RELATIONS", "generate", "publish", "split_of"]

RELATIONS = [f"R{i:02d}" for i in range(25)]
WORKFLOW = "text-curation"
CHUNK = 2048
# Edges per node, measured on generated graphs: records = nodes * (1 + EDGES_PER_NODE).
EDGES_PER_NODE = 0.87
_LABELS = {"TOKEN": "", "PLUS": "+", "TIMES": "·", "DELTA": "δ"}


def split_of(relation: int) -> tuple[str, ...]:
    if relation < 8:
        return ("sp1",)
    if relation < 16:
        return ("sp2",)
    return ("sp3", "sp4") if relation < 20 else ("sp3", "sp5")


@dataclass(frozen=True)
class Graph:
    ids: np.ndarray  # int64 node ids
    relation: np.ndarray  # relation index of each node
    component: np.ndarray  # generator's component of each node (not necessarily weakly connected)
    src: np.ndarray  # edge ends, as node positions
    dst: np.ndarray

    @property
    def nodes(self) -> int:
        return len(self.ids)

    @property
    def edges(self) -> int:
        return len(self.src)

    def ops(self) -> np.ndarray:
        indegree = np.bincount(self.dst, minlength=self.nodes)
        ops = np.full(self.nodes, "PLUS", dtype=object)
        ops[indegree == 0] = "TOKEN"
        ops[indegree >= 2] = "TIMES"
        ops[indegree >= 100] = "DELTA"
        return ops

    def splits(self) -> dict[int, tuple[str, ...]]:
        return {int(i): split_of(int(r)) for i, r in zip(self.ids, self.relation, strict=True)}

    def edge_ids(self) -> list[tuple[int, int]]:
        return list(zip(self.ids[self.src].tolist(), self.ids[self.dst].tolist(), strict=True))


def generate_reported(records: int, seed: int = 7) -> Graph:
    """:func:`generate`, telling stderr what it made and how long it took."""
    started = time.monotonic()
    graph = generate(records, seed)
    print(
        f"generated {graph.nodes:,} nodes, {graph.edges:,} edges "
        f"in {time.monotonic() - started:.1f}s",
        file=sys.stderr,
    )
    return graph


def generate(records: int, seed: int = 7) -> Graph:
    rng = np.random.default_rng(seed)
    n = max(10, int(records / (1 + EDGES_PER_NODE)))
    large = [int(n * f) for f in (0.18, 0.14, 0.10)]
    sizes = list(large)
    rest = n - sum(large)
    small = rng.integers(3, 41, size=rest // 10 + 10)
    small = small[np.cumsum(small) <= rest]
    if small.sum() < rest:
        small = np.append(small, rest - small.sum())
    sizes += small.tolist()
    sizes_arr = np.array([s for s in sizes if s > 0], dtype=np.int64)
    comps = len(sizes_arr)
    component = np.repeat(np.arange(comps), sizes_arr)
    starts = np.concatenate([[0], np.cumsum(sizes_arr)[:-1]])

    # Relations: large components span all 25; small ones a few consecutive relations.
    is_large = np.zeros(comps, dtype=bool)
    is_large[:3] = True
    first = np.where(is_large, 0, rng.integers(0, 21, comps))
    span = np.where(is_large, 25, rng.integers(2, 6, comps))
    relation = first[component] + (rng.random(n) * span[component]).astype(np.int64)
    order = np.lexsort((relation, component))  # within a component, by relation
    relation = relation[order]

    # Position of the first node of the same (component, relation), and of the component.
    key = component * 32 + relation
    boundary = np.concatenate([[True], key[1:] != key[:-1]])
    relstart = np.maximum.accumulate(np.where(boundary, np.arange(n), 0))
    compstart = starts[component]
    # Parents come from the preceding relations of the component (about two relations' worth).
    per_relation = np.maximum(1, sizes_arr // np.minimum(span, sizes_arr))
    window = 2 * per_relation[component]
    lower = np.maximum(compstart, relstart - window)
    has_parents = relstart > compstart
    srcs, dsts = [], []
    for p in (1.0, 0.06, 0.02):
        pick = has_parents & (rng.random(n) < p)
        child = np.nonzero(pick)[0]
        parent = lower[child] + (rng.random(len(child)) * (relstart[child] - lower[child])).astype(
            np.int64
        )
        srcs.append(parent)
        dsts.append(child)
    # Hubs: a few nodes of the large components with 100-450 parents.
    eligible = np.nonzero(is_large[component] & (relstart - compstart >= 450))[0]
    hubs = rng.choice(eligible, size=min(len(eligible), max(1, n // 20000)), replace=False)
    for hub in hubs:
        k = int(rng.integers(100, 451))
        srcs.append(compstart[hub] + rng.choice(relstart[hub] - compstart[hub], k, replace=False))
        dsts.append(np.full(k, hub))
    src = np.concatenate(srcs)
    dst = np.concatenate(dsts)
    pairs = np.unique(np.stack([src, dst], axis=1), axis=0)
    ids = rng.integers(1, 2**63 - 1, size=n, dtype=np.int64)
    if len(np.unique(ids)) != n:  # vanishingly rare; a different seed avoids it
        raise ValueError(f"seed {seed} drew a duplicate id; try another seed")
    return Graph(ids, relation, component, pairs[:, 0], pairs[:, 1])


def messages(graph: Graph, run_id: str, workflow: str = WORKFLOW) -> list[tuple[bytes, int]]:
    """The batch events of a graph (with their records), in publication order: by relation, then
    component. A progress bar on a terminal (sparkprov.progress)."""
    order = np.lexsort((graph.component, graph.relation))
    rank = np.empty(graph.nodes, dtype=np.int64)
    rank[order] = np.arange(graph.nodes)
    by_dst = np.argsort(rank[graph.dst], kind="stable")
    edge_rank = rank[graph.dst][by_dst]
    ops = graph.ops()
    out = []
    start = 0
    sequence = 0
    bar = Progress(graph.nodes, f"encoding {run_id}", unit="nodes")
    while start < graph.nodes:
        rel = graph.relation[order[start]]
        stop = min(start + CHUNK, graph.nodes)
        stop = start + int(np.searchsorted(graph.relation[order[start:stop]], rel, side="right"))
        chunk = order[start:stop]
        blocks = []
        for op in ("TOKEN", "PLUS", "TIMES", "DELTA"):
            members = chunk[ops[chunk] == op]
            if len(members) == 0:
                continue
            ids = graph.ids[members].tolist()
            blocks.append(
                NodeColumns(
                    op,
                    ids,
                    label=_LABELS[op],
                    labels=[f"{RELATIONS[rel]}#{i}" for i in members.tolist()]
                    if op == "TOKEN"
                    else (),
                    relation=RELATIONS[rel],
                    split=split_of(int(rel)),
                )
            )
        lo, hi = np.searchsorted(edge_rank, [start, stop])
        edges = by_dst[lo:hi]
        out.append(
            (
                encode_batch(
                    run_id,
                    workflow,
                    f"gen:{RELATIONS[rel]}",
                    int(rel),
                    sequence,
                    blocks,
                    EdgeColumns(
                        graph.ids[graph.src[edges]].tolist(), graph.ids[graph.dst[edges]].tolist()
                    ),
                ),
                len(chunk) + len(edges),
            )
        )
        sequence += 1
        start = stop
        bar.update(start)
    bar.close()
    return out


def publish(
    graph: Graph,
    bootstrap: str,
    topic: str,
    run_id: str,
    workflow: str = WORKFLOW,
    progress: bool = True,
) -> None:
    from kafka import KafkaProducer

    producer = KafkaProducer(
        bootstrap_servers=bootstrap.split(","),
        acks="all",
        linger_ms=20,
        batch_size=1024 * 1024,
        max_request_size=16 * 1024 * 1024,
    )
    total = graph.nodes + graph.edges
    batches = messages(graph, run_id, workflow)
    bar = Progress(total, f"publishing {run_id}") if progress else None
    try:
        producer.send(
            topic, encode_run_started(run_id, workflow, int(time.time() * 1000), "bench.gen")
        )
        done = 0
        for i, (data, records) in enumerate(batches):
            producer.send(topic, data, key=str(i).encode())
            done += records
            if bar:
                bar.update(done)
        producer.send(topic, encode_run_complete(run_id, workflow, graph.nodes, graph.edges))
        producer.flush(timeout=300)
        if bar:
            bar.update(total)
    finally:
        if bar:
            bar.close()
        producer.close(timeout=30)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=1_000_000, help="nodes + edges")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--run-id", default="")
    parser.add_argument("--bootstrap", default=defaults.KAFKA_BOOTSTRAP)
    parser.add_argument("--topic", default=defaults.TOPIC)
    args = parser.parse_args(argv)
    started = time.monotonic()
    graph = generate(args.records, args.seed)
    print(
        f"generated {graph.nodes:,} nodes and {graph.edges:,} edges "
        f"in {time.monotonic() - started:.1f}s",
        file=sys.stderr,
    )
    run_id = args.run_id or f"gen-{uuid.uuid4().hex[:12]}"
    publish(graph, args.bootstrap, args.topic, run_id)
    print(run_id)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
