"""Provenance graphs shaped like the CSProv paper's text-curation workflow, published to Kafka in
the capture agent's own event format.

    python -m bench.gen --records 1000000 [--shape csprov|uniform] [--topic sparkprov.lineage]
        [--seed 7] [--run-id ID]

Shape: 25 relations in 3 splits (sp1 = R00-R07, sp2 = R08-R15, sp3 = R16-R24, the last with
sub-splits sp4 = R16-R19 and sp5 = R20-R24, as in the paper's Figure 1); most components small
(3-40 nodes over a few consecutive relations), three large ones holding 18%, 14% and 10% of the
nodes. Two shapes of the large components (``--shape``):
- ``csprov`` (the default, the paper's workload): a row's parents are the rows it joins with by
  key: within a split the rows of its key in the previous relation, at a split's first relation
  the rows of the 1-3 keys its key joins with upstream. A split's connected sets are its key
  groups, so a row's set-lineage is a few small sets (C2 holds: at 1M, a 100-200-ancestor row's
  set-lineage holds ~240 nodes of a ~86k-node component). A hot key per large component (800 rows
  per relation, joined by the hot key downstream, with a hub per relation aggregating 100-800 of
  its rows) gives the large lineages (5k-10k ancestors, set-lineage ~20k nodes).
- ``uniform`` (the adversarial case): a row's 1-3 parents drawn from anywhere in the preceding
  relations of its component, and a few hubs with 100-450 parents: a split's part of a large
  component is one connected set, so set-lineages hold most of the component.
Ids are random 63-bit numbers from the seed, so the same seed and shape give the same graph.
Messages hold up to 2048 nodes of one relation with the edges into them, in relation order (as a
pipeline's stages publish), then a RunComplete marker with the exact counts, so ingest marks the
run complete when everything is stored.
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

__all__ = ["Graph", "RELATIONS", "SHAPES", "VERSION", "generate", "publish", "split_of"]

RELATIONS = [f"R{i:02d}" for i in range(25)]
WORKFLOW = "text-curation"
CHUNK = 2048
# Edges per node of each shape, measured on generated graphs: records = nodes * (1 + it).
SHAPES = {"csprov": 1.0, "uniform": 0.87}
# Bumped whenever a seed's graph changes, so a benchmark never reuses a graph loaded by an older
# generator as if it were this one's.
VERSION = 2
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


def generate_reported(records: int, seed: int = 7, shape: str = "csprov") -> Graph:
    """:func:`generate`, telling stderr what it made and how long it took."""
    started = time.monotonic()
    graph = generate(records, seed, shape)
    print(
        f"generated {graph.nodes:,} nodes, {graph.edges:,} edges ({shape}) "
        f"in {time.monotonic() - started:.1f}s",
        file=sys.stderr,
    )
    return graph


def generate(records: int, seed: int = 7, shape: str = "csprov") -> Graph:
    """A graph of about ``records`` nodes + edges. ``shape``: ``csprov`` (a row's parents are the
    rows it joins with by key, as in the paper's workflow: small connected sets, small
    set-lineages) or ``uniform`` (a row's parents drawn from anywhere in the preceding relations of
    its component: one connected set per split, the adversarial case for CONNECTED_SET)."""
    if shape not in SHAPES:
        raise ValueError(f"shape {shape!r}: one of {', '.join(SHAPES)}")
    rng = np.random.default_rng(seed)
    n = max(10, int(records / (1 + SHAPES[shape])))
    large = [int(n * f) for f in (0.18, 0.14, 0.10)]
    sizes = list(large)
    rest = n - sum(large)
    small = rng.integers(3, 41, size=rest // 10 + 10)
    small = small[np.cumsum(small) <= rest]
    if small.sum() < rest:
        small = np.append(small, rest - small.sum())
    sizes += small.tolist()
    sizes_arr = np.array([s for s in sizes if s > 0], dtype=np.int64)
    if shape == "uniform":
        relation, component, src, dst = _windowed(rng, sizes_arr, large=3)
    else:
        relation, component, src, dst = _keyed(rng, sizes_arr, large=3)
    pairs = np.unique(np.stack([src, dst], axis=1), axis=0)
    ids = rng.integers(1, 2**63 - 1, size=len(relation), dtype=np.int64)
    if len(np.unique(ids)) != len(ids):  # vanishingly rare; a different seed avoids it
        raise ValueError(f"seed {seed} drew a duplicate id; try another seed")
    return Graph(ids, relation, component, pairs[:, 0], pairs[:, 1])


def _windowed(
    rng: np.random.Generator, sizes_arr: np.ndarray, large: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Components of these sizes (the first ``large`` span all relations, the others a few
    consecutive ones); a node's parents drawn from its component's preceding relations, about
    two relations' worth; a few hubs in the large components."""
    n = int(sizes_arr.sum())
    comps = len(sizes_arr)
    component = np.repeat(np.arange(comps), sizes_arr)
    starts = np.concatenate([[0], np.cumsum(sizes_arr)[:-1]])

    # Relations: large components span all 25; small ones a few consecutive relations.
    is_large = np.zeros(comps, dtype=bool)
    is_large[:large] = True
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
    return relation, component, np.concatenate(srcs), np.concatenate(dsts)


# The keyed shape: splits' first relations, rows per relation that share a join key, and the hot
# keys (a few keys hold many rows, as real join keys do).
_SEGMENT_STARTS = (0, 8, 16, 20)  # sp1, sp2, sp4 (in sp3), sp5 (in sp3): split_of's parts
_GROUP_ROWS = 3
_HOT_SHARE = 0.15  # of a relation's rows, held by the hot keys
_HOT_ROWS = 800  # rows of a relation per hot key


def _keyed(
    rng: np.random.Generator, sizes_arr: np.ndarray, large: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The small components as :func:`_windowed` makes them; the ``large`` first ones keyed.

    In a large component each relation holds the same number of rows, and each row a join key:
    most keys hold ``_GROUP_ROWS`` rows of a relation, a few hot keys ``_HOT_ROWS``. Within a
    split a row's parents are rows of the previous relation (sometimes the one before) with its
    key, so a split's connected sets are its key groups. At a split's first relation the workflow
    joins on another key: each key group joins with 1-3 key groups of the previous split, always
    the same ones, so the component is connected across splits while a row's set-lineage stays a
    few small sets. A hot key's group joins the same hot key's group upstream, and in it a row of
    each relation aggregates 100-800 rows of its key in the previous relation (a hub): the large
    lineages, within a few large sets, as a group-by over a hot key's are."""
    small_rel, small_comp, small_src, small_dst = _windowed(rng, sizes_arr[large:], large=0)
    relations, components, srcs, dsts = [], [], [], []
    base = 0
    for c, size in enumerate(sizes_arr[:large].tolist()):
        rel, s, d = _keyed_component(rng, int(size), base)
        relations.append(rel)
        components.append(np.full(len(rel), c, dtype=np.int64))
        srcs.append(s)
        dsts.append(d)
        base += len(rel)
    relations.append(small_rel)
    components.append(small_comp + large)
    srcs.append(small_src + base)
    dsts.append(small_dst + base)
    return (
        np.concatenate(relations),
        np.concatenate(components),
        np.concatenate(srcs),
        np.concatenate(dsts),
    )


def _keyed_component(
    rng: np.random.Generator, size: int, base: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    per = max(_GROUP_ROWS, size // len(RELATIONS))
    hot = max(1, int(per * _HOT_SHARE) // _HOT_ROWS) if per >= 4 * _HOT_ROWS else 0
    cold = (per - hot * _HOT_ROWS) // _GROUP_ROWS
    # Rows of a relation by key, the same layout in every relation: key k holds rows
    # first[k] .. first[k] + count[k] - 1.
    count = np.array([_HOT_ROWS] * hot + [_GROUP_ROWS] * cold, dtype=np.int64)
    count[-1] += per - int(count.sum())
    first = np.concatenate([[0], np.cumsum(count)[:-1]])
    keys = len(count)
    key = np.repeat(np.arange(keys), count)
    relation = np.repeat(np.arange(len(RELATIONS)), per)

    def pick(r: int, want: np.ndarray) -> np.ndarray:
        """Positions of random rows of relation ``r`` with these keys."""
        t = (rng.random(len(want)) * count[want]).astype(np.int64)
        return base + r * per + first[want] + t

    srcs, dsts = [], []
    starts = set(_SEGMENT_STARTS)
    row = np.arange(per)
    for r in range(1, len(RELATIONS)):
        child = base + r * per + row
        if r in starts:
            # Each key group joins with the same 1-3 groups of the previous split.
            joins = rng.integers(0, keys, size=(keys, 3))
            joins[:hot, 0] = np.arange(hot)  # a hot key's rows join its hot rows upstream
            fanout = rng.integers(1, 4, size=keys)
            for j in range(3):
                take = fanout[key] > j
                srcs.append(pick(r - 1, joins[key[take], j]))
                dsts.append(child[take])
            continue
        srcs.append(pick(r - 1, key))
        dsts.append(child)
        second = rng.random(per) < 0.3
        srcs.append(pick(r - 1, key[second]))
        dsts.append(child[second])
        if r - 1 not in starts:
            skip = rng.random(per) < 0.1
            srcs.append(pick(r - 2, key[skip]))
            dsts.append(child[skip])
        # Hubs: in each hot key's group, one row aggregating 100-400 rows of its key above.
        for k in range(hot):
            hub = base + r * per + first[k] + int(rng.integers(0, count[k]))
            parents = rng.choice(count[k], int(rng.integers(100, count[k] + 1)), replace=False)
            srcs.append(base + (r - 1) * per + first[k] + parents)
            dsts.append(np.full(len(parents), hub))
    return relation, np.concatenate(srcs), np.concatenate(dsts)


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
    parser.add_argument("--shape", choices=sorted(SHAPES), default="csprov")
    parser.add_argument("--run-id", default="")
    parser.add_argument("--bootstrap", default=defaults.KAFKA_BOOTSTRAP)
    parser.add_argument("--topic", default=defaults.TOPIC)
    args = parser.parse_args(argv)
    started = time.monotonic()
    graph = generate(args.records, args.seed, args.shape)
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
