"""Random DAGs with random split paths, and flushes of their items in the real capture event
encoding (the property tests of sets and of trace strategies share them)."""

from __future__ import annotations

import random
from collections.abc import Iterable

from hypothesis import strategies as st

from ingest_service.store import Flush
from sparkprov.events import Batch, EdgeColumns, NodeColumns, decode, encode_batch


def node_batch(run: str, node: int, split: tuple[str, ...], workflow: str = "tests") -> Batch:
    data = encode_batch(run, workflow, "t", 0, 0, [NodeColumns("TOKEN", [node], split=split)], None)
    batch = decode(data)
    assert isinstance(batch, Batch)
    return batch


def edge_batch(run: str, src: int, dst: int, workflow: str = "tests") -> Batch:
    batch = decode(encode_batch(run, workflow, "t", 0, 0, [], EdgeColumns([src], [dst])))
    assert isinstance(batch, Batch)
    return batch


def flush_of(
    run: str,
    items: list[tuple[str, object]],
    ids: dict[int, int],
    splits: dict[int, tuple[str, ...]],
) -> Flush:
    """One flush of ("node", n) and ("edge", (a, b)) items, nodes and edges by their stored ids."""
    flush = Flush()
    for kind, item in items:
        if kind == "node":
            assert isinstance(item, int)
            flush.add(node_batch(run, ids[item], splits[item]))
        else:
            a, b = item  # type: ignore[misc]
            flush.add(edge_batch(run, ids[a], ids[b]))
    return flush


Dag = tuple[dict[int, tuple[str, ...]], list[tuple[int, int]], int]


def dags(split_paths: list[tuple[str, ...]], max_nodes: int) -> st.SearchStrategy[Dag]:
    """A DAG (edges go from lower to higher node numbers), each node's split path drawn from
    ``split_paths``, and a seed for the order in which its items arrive."""

    @st.composite
    def draw_dag(draw: st.DrawFn) -> Dag:
        n = draw(st.integers(2, max_nodes))
        splits = {i: draw(st.sampled_from(split_paths)) for i in range(n)}
        pairs = st.tuples(st.integers(0, n - 1), st.integers(0, n - 1))
        edges = draw(st.lists(pairs, max_size=3 * n))
        edges = sorted({(min(a, b), max(a, b)) for a, b in edges if a != b})
        return splits, edges, draw(st.integers(0, 2**31))

    return draw_dag()


def fresh_ids(nodes: Iterable[int]) -> dict[int, int]:
    """Random 62-bit stored ids for a DAG's nodes: examples never touch each other's nodes."""
    rng = random.SystemRandom()
    return {n: rng.getrandbits(62) + 1 for n in nodes}


def items_of(dag: Dag) -> list[tuple[str, object]]:
    """The DAG's nodes and edges as ("node", n) and ("edge", (a, b)) items."""
    splits, edges, _ = dag
    return [("node", n) for n in splits] + [("edge", e) for e in edges]
