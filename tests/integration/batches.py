"""Flushes built from items of a random DAG, in the real capture event encoding."""

from __future__ import annotations

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
