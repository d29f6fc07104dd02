"""Titian's oracle for SQL text captured from its plan, and what capture tests share.

The logical graph a captured job emitted through the in-memory emitter
(capture_agent.emitters.MemoryEmitter), in two forms: :func:`emitted_graph`, node rows by id and
a networkx DiGraph, for the small graphs of unit tests; and :class:`Compact` (:func:`compact`),
numpy arrays, for a TPC query's millions of nodes: the node ids sorted, an op and a relation per
node as small ints, the edges deduplicated as CSR arrays both ways, and the messages themselves,
from which a node's values are decoded again only when asked (:meth:`Compact.rows`). The
witness of an output node in it, as ``QueryClient.witness`` gives it from the stored graph
(:func:`witness`); and the oracle itself: the query's text re-run over its views restricted to
the witness gives the output row back (:func:`reproduces`)."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import networkx as nx
import numpy as np
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from capture_agent.emitters import MemoryEmitter
from capture_agent.replay import same_text
from sparkprov.blocks import MAX_MEMBER_AGGREGATES
from sparkprov.events import (  # derived_ids, member_columns: decode's parts, without its checks
    ATTRIBUTE_PREFIX,
    OP_NAMES,
    Batch,
    decode,
    derived_ids,
    member_columns,
    op_number,
)
from sparkprov.v1 import lineage_pb2
from sparkprov.values import string_column_texts

__all__ = [
    "Compact",
    "compact",
    "emitted_graph",
    "reproduces",
    "texts",
    "witness",
]

log = logging.getLogger(__name__)
_NULL = "\u0000"
_FULL = "sparkprov_full_"  # the full tables, kept under this prefix while views are restricted
_TOKEN = op_number("TOKEN")
_EXCLUDED = op_number("EXCLUDED")
_ONE_ROW = "one_row"  # the source capture makes of a OneRowRelation (docs/capture.md)
_NO_ROW = 0  # the op of an id that only edges name (OP_UNSPECIFIED)


def emitted_graph(emitter: MemoryEmitter) -> tuple[dict[int, dict[str, Any]], nx.DiGraph]:
    """Every emitted node (its expanded row) by id, and the graph of every emitted edge: a dict
    and a networkx node per emitted node, for small graphs (:func:`compact` for large ones)."""
    batches = [e.expanded() for _, v in emitter.messages() if isinstance(e := decode(v), Batch)]
    nodes = {n["id"]: n for b in batches for n in b.rows()}
    graph = nx.DiGraph()
    graph.add_nodes_from(nodes)
    for b in batches:
        graph.add_edges_from(zip(b.edges["src"], b.edges["dst"], strict=True))
    return nodes, graph


@dataclass(frozen=True)
class Compact:
    """An emitted graph as arrays. Positions index ``ids`` (every id a node row or an edge
    names, sorted); a node emitted twice keeps its last row, as :func:`emitted_graph` does."""

    messages: list[bytes]  # the batch messages, in order
    ids: np.ndarray  # int64, sorted, unique
    ops: np.ndarray  # int8 per position: the Op number, _NO_ROW for an id with no node row
    relation: np.ndarray  # int32 per position: an index into relations
    relations: list[str | None]
    message: np.ndarray  # int32 per position: the message holding the node's (last) row
    excluded: dict[int, int]  # an EXCLUDED node's id -> its value, the id of its right row
    succ: tuple[np.ndarray, np.ndarray]  # CSR (indptr, positions) of the distinct edges
    pred: tuple[np.ndarray, np.ndarray]
    node_count: int  # distinct ids with a node row
    edge_count: int  # distinct edges

    @classmethod
    def of(cls, messages: Iterable[bytes]) -> Compact:
        """The graph of the batches among ``messages`` (other events are skipped), each decoded
        once and dropped: only ids, ops, relations and edges are kept."""
        kept: list[bytes] = []
        ids: list[np.ndarray] = []
        ops: list[np.ndarray] = []
        rels: list[np.ndarray] = []
        where: list[np.ndarray] = []
        src: list[np.ndarray] = []
        dst: list[np.ndarray] = []
        relations: dict[str | None, int] = {}
        excluded: dict[int, int] = {}
        for value in messages:
            event = _batch(value)
            if event is None:
                continue
            at = len(kept)
            kept.append(value)
            for op, block_ids, relation, values in _blocks(event.batch, src, dst):
                n = len(block_ids)
                ids.append(block_ids)
                ops.append(np.full(n, op, dtype=np.int8))
                code = relations.setdefault(relation, len(relations))
                rels.append(np.full(n, code, dtype=np.int32))
                where.append(np.full(n, at, dtype=np.int32))
                if op == _EXCLUDED:
                    excluded.update(zip(block_ids.tolist(), map(int, values), strict=True))
        node_ids = _cat(ids, np.int64)
        edge_src, edge_dst = _cat(src, np.int64), _cat(dst, np.int64)
        universe = np.unique(np.concatenate([node_ids, edge_src, edge_dst]))
        # the last row of each id: the first of the reversed rows
        named, first = np.unique(node_ids[::-1], return_index=True)
        last = len(node_ids) - 1 - first
        rowed = np.searchsorted(universe, named)
        n = len(universe)
        node_ops = np.full(n, _NO_ROW, dtype=np.int8)
        node_ops[rowed] = _cat(ops, np.int8)[last]
        node_rel = np.zeros(n, dtype=np.int32)
        node_rel[rowed] = _cat(rels, np.int32)[last]
        node_msg = np.full(n, -1, dtype=np.int32)
        node_msg[rowed] = _cat(where, np.int32)[last]
        del node_ids, ids, ops, rels, where
        s = np.searchsorted(universe, edge_src)
        d = np.searchsorted(universe, edge_dst)
        del edge_src, edge_dst, src, dst
        pairs = np.unique(s * np.int64(n) + d)  # sorted by source, then destination
        s, d = pairs // n, pairs % n
        del pairs
        succ = (_indptr(s, n), d)
        order = np.argsort(d, kind="stable")
        pred = (_indptr(d[order], n), s[order])
        # EXCLUDED values of ids whose last row is another op are not theirs
        if excluded:
            keys = np.fromiter(excluded, dtype=np.int64, count=len(excluded))
            other = keys[node_ops[np.searchsorted(universe, keys)] != _EXCLUDED]
            for i in other.tolist():
                del excluded[i]
        return cls(
            kept,
            universe,
            node_ops,
            node_rel,
            list(relations),
            node_msg,
            excluded,
            succ,
            pred,
            len(named),
            len(s),
        )

    def index(self, node_id: int) -> int:
        """The position of ``node_id`` (KeyError when no row or edge names it)."""
        return _position(self.ids, node_id)

    def of_relation(self, relation: str) -> list[int]:
        """The ids of the nodes of ``relation``, sorted."""
        if relation not in self.relations:
            return []
        code = self.relations.index(relation)
        return self.ids[(self.relation == code) & (self.ops != _NO_ROW)].tolist()  # type: ignore[no-any-return]

    def rows(self, node_ids: Iterable[int]) -> dict[int, dict[str, Any]]:
        """The rows of ``node_ids`` as :func:`emitted_graph` gives them (their last), decoded
        again from the messages that hold them."""
        wanted = np.unique(np.fromiter(node_ids, dtype=np.int64))
        positions = np.minimum(np.searchsorted(self.ids, wanted), len(self.ids) - 1)
        if len(wanted) and (
            (self.ids[positions] != wanted).any() or (self.ops[positions] == _NO_ROW).any()
        ):
            raise KeyError("a node no batch emitted a row for")
        rows: dict[int, dict[str, Any]] = {}
        for at in np.unique(self.message[positions]).tolist():
            ids = set(self.ids[positions[self.message[positions] == at]].tolist())
            found = _node_rows(self.messages[at], ids)
            if len(found) < len(ids):  # nodes of expanded members: the batch decoded whole
                batch = decode(self.messages[at])
                assert isinstance(batch, Batch)
                found = _rows(batch, ids)
            rows.update(found)
        return rows


def compact(emitter: MemoryEmitter, spark: Any = None) -> Compact:
    """The graph ``emitter`` holds, as :class:`Compact` arrays; given ``spark``, the JVM taps'
    messages come through a Dataset (:meth:`MemoryEmitter.values`: not one py4j int per
    byte)."""
    if spark is None:
        return Compact.of(v for _, v in emitter.messages())
    return Compact.of(emitter.values(spark))


def _batch(value: bytes) -> Any:
    """The LineageEvent of a batch message (None for other events), parsed, not validated."""
    event = lineage_pb2.LineageEvent()
    event.ParseFromString(value)
    return event if event.WhichOneof("body") == "batch" else None


def _blocks(
    pb: Any, src: list[np.ndarray], dst: list[np.ndarray]
) -> Iterable[tuple[int, np.ndarray, str | None, Sequence[str]]]:
    """(op number, ids, relation, values) of each node block of a LineageBatch as
    ``decode(...).expanded()`` orders them (its blocks, the members it expands, then the compact
    members), with its edges appended to ``src`` and ``dst``; what :func:`decode` would check
    and the attribute values are skipped (:meth:`Compact.rows` decodes them when asked)."""
    derived_src, derived_dst = [], []
    for block in pb.nodes:
        plus = None
        values: Sequence[str] = block.values
        if block.HasField("derived"):
            derived = derived_ids(block.derived, None, block.op)  # labels are not kept
            block_ids = derived.ids
            values = derived.values or values
            plus = derived.plus
            derived_src.append(derived.src)
            derived_dst.append(derived.dst)
        else:
            block_ids = np.fromiter(block.ids, dtype=np.int64, count=len(block.ids))
        yield block.op, block_ids, block.relation or None, values
        if plus is not None and len(plus):  # a semi join's sums, a block after its rows
            yield lineage_pb2.OP_PLUS, plus, None, []
    src.append(np.fromiter(pb.edges.src, dtype=np.int64, count=len(pb.edges.src)))
    dst.append(np.fromiter(pb.edges.dst, dtype=np.int64, count=len(pb.edges.dst)))
    src += derived_src
    dst += derived_dst
    members = [member_columns(block) for block in pb.members]
    kept = [m.delta and 0 < m.aggregates <= MAX_MEMBER_AGGREGATES for m in members]
    for compact in (False, True):  # decode expands these first; expanded() the compact ones
        for m, is_compact in zip(members, kept, strict=True):
            if is_compact != compact:
                continue
            expansion = m.expand()
            for d in expansion.nodes:
                yield op_number(d.op), np.asarray(d.ids, dtype=np.int64), None, list(d.texts)
            src.append(expansion.src)
            dst.append(expansion.dst)


def _node_rows(value: bytes, wanted: set[int]) -> dict[int, dict[str, Any]]:
    """The rows of the ``wanted`` ids among the node blocks of a batch message, as
    :meth:`Batch.rows` gives them (an id's last), the attribute values of only the blocks that
    hold one decoded."""
    event = _batch(value)
    assert event is not None
    keys = np.fromiter(wanted, dtype=np.int64, count=len(wanted))
    out: dict[int, dict[str, Any]] = {}
    for block in event.batch.nodes:
        labels: Sequence[str] = block.labels
        values: Sequence[str] = block.values
        if block.HasField("derived"):
            derived = derived_ids(block.derived, block.relation, block.op)
            block_ids = derived.ids
            labels = labels or derived.labels
            values = values or derived.values
            for plus in derived.plus[np.isin(derived.plus, keys)].tolist():  # a semi join's sums
                out[plus] = {
                    "id": plus,
                    "run": event.run_id,
                    "op": "PLUS",
                    "label": "+",
                    "relation": None,
                    "value": None,
                    "shared": False,
                    "split": list(block.split),
                    "props": {},
                }
        else:
            block_ids = np.fromiter(block.ids, dtype=np.int64, count=len(block.ids))
        hits = np.flatnonzero(np.isin(block_ids, keys)).tolist()
        if not hits:
            continue
        names = [ATTRIBUTE_PREFIX + n for n in block.attribute_names]
        columns = [string_column_texts(c) for c in block.attribute_values]
        nulls = [set(c.null_rows) for c in block.attribute_values]
        for i in hits:
            node_id = int(block_ids[i])
            out[node_id] = {
                "id": node_id,
                "run": event.run_id,
                "op": OP_NAMES[block.op],
                "label": labels[i] if labels else block.label,
                "relation": block.relation or None,
                "value": values[i] if values else None,
                "shared": block.shared,
                "split": list(block.split),
                "props": {
                    name: column[i]
                    for name, column, null in zip(names, columns, nulls, strict=True)
                    if i not in null
                },
            }
    return out


def _rows(batch: Batch, wanted: set[int]) -> dict[int, dict[str, Any]]:
    """The rows (:meth:`Batch.rows`) of the ``wanted`` ids in ``batch``, the last of an id's
    rows when it has several."""
    logical = batch.expanded() if batch.members else batch
    return {row["id"]: row for row in logical.rows(wanted)}


def _cat(parts: list[np.ndarray], dtype: Any) -> np.ndarray:
    return np.concatenate(parts).astype(dtype, copy=False) if parts else np.zeros(0, dtype=dtype)


def _indptr(sorted_keys: np.ndarray, n: int) -> np.ndarray:
    """CSR row pointers of ``n`` rows for keys sorted ascending."""
    return np.searchsorted(sorted_keys, np.arange(n + 1, dtype=np.int64))


def _position(ids: np.ndarray, node_id: int) -> int:
    at = int(np.searchsorted(ids, node_id))
    if at == len(ids) or int(ids[at]) != node_id:
        raise KeyError(node_id)
    return at


def _neighbours(csr: tuple[np.ndarray, np.ndarray], positions: np.ndarray) -> np.ndarray:
    """Every neighbour (with repeats) of ``positions`` in ``csr``."""
    indptr, targets = csr
    starts, ends = indptr[positions], indptr[positions + 1]
    counts = ends - starts
    total = int(counts.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    # the run of each position's slice: its start, then +1 per step
    offsets = np.repeat(starts - np.cumsum(counts) + counts, counts)
    return targets[offsets + np.arange(total, dtype=np.int64)]


def _reach(csr: tuple[np.ndarray, np.ndarray], starts: np.ndarray, seen: np.ndarray) -> np.ndarray:
    """The positions ``csr`` reaches from ``starts`` in one or more steps that are not ``seen``
    yet, marked seen: one breadth-first traversal for all of them."""
    found = []
    frontier = starts
    while len(frontier):
        step = _neighbours(csr, frontier)
        frontier = np.unique(step[~seen[step]])
        seen[frontier] = True
        found.append(frontier)
    return _cat(found, np.int64)


def witness(graph: Compact, node_id: int) -> dict[str, list[dict[str, str]]]:
    """The witness of an output node in an emitted graph, as ``QueryClient.witness`` gives it
    from the stored one: the TOKEN rows its backward trace reaches, per relation, as the values
    they kept, closed under anti joins' exclusions (an EXCLUDED node whose left parent the
    witness reaches brings its right row's sources in)."""
    n = len(graph.ids)
    start = np.array([graph.index(node_id)], dtype=np.int64)
    above = np.concatenate([_reach(graph.pred, start, np.zeros(n, dtype=bool)), start])
    tokens = np.zeros(n, dtype=bool)  # the witness's TOKEN nodes
    tokens[above[graph.ops[above] == _TOKEN]] = True
    matches: set[int] = set()
    reached = np.zeros(n, dtype=bool)  # descendants of the witness so far, each visited once
    fresh = np.flatnonzero(tokens)
    while len(fresh):
        below = _reach(graph.succ, fresh, reached)
        found: set[int] = set()
        for e in below[graph.ops[below] == _EXCLUDED].tolist():
            right = graph.excluded[int(graph.ids[e])]
            parents = graph.ids[_neighbours(graph.pred, np.array([e], dtype=np.int64))]
            if right not in matches and bool((parents != right).any()):
                found.add(right)
        if not found:
            break
        matches |= found
        rights = np.array(sorted(graph.index(r) for r in found), dtype=np.int64)
        above = np.concatenate([_reach(graph.pred, rights, np.zeros(n, dtype=bool)), rights])
        fresh = np.unique(above[(graph.ops[above] == _TOKEN) & ~tokens[above]])
        tokens[fresh] = True
    rows: dict[str, list[dict[str, str]]] = {}
    for row in graph.rows(graph.ids[tokens].tolist()).values():
        rows.setdefault(row["relation"], []).append(
            {
                k[len(ATTRIBUTE_PREFIX) :]: v
                for k, v in row["props"].items()
                if k.startswith(ATTRIBUTE_PREFIX)
            }
        )
    return rows


def texts(df: DataFrame) -> list[tuple[str | None, ...]]:
    """The rows of ``df`` with every value as Spark casts it to text (as capture keeps it)."""
    return [
        tuple(r) for r in df.select(*[F.col(f"`{c}`").cast("string") for c in df.columns]).collect()
    ]


def reproduces(
    spark: Any,
    sql: str,
    views: Sequence[str],
    graph: Compact,
    node: int,
    columns: Sequence[str],
) -> tuple[bool, list[tuple[str | None, ...]]]:
    """Titian's oracle for output ``node`` of the query ``sql`` over the temp ``views``: whether
    re-running the text with each view restricted to the rows of the node's witness gives the
    node's row back; and the rows it gave. The views are restored afterwards."""
    props = graph.rows([node])[node]["props"]
    wanted = tuple(props.get(ATTRIBUTE_PREFIX + c) for c in columns)
    for view in views:
        spark.table(f"`{view}`").createOrReplaceTempView(_FULL + view)
    try:
        started = time.monotonic()
        rows = witness(graph, node)
        traced = time.monotonic()
        _restrict(spark, views, rows)
        restricted = time.monotonic()
        again = texts(spark.sql(sql))
        log.info(
            "node %d: witness of %d rows in %.1f s, views restricted in %.1f s, re-run in %.1f s",
            node,
            sum(map(len, rows.values())),
            traced - started,
            restricted - traced,
            time.monotonic() - restricted,
        )
    finally:
        for view in views:
            spark.table(f"`{_FULL}{view}`").createOrReplaceTempView(view)
            spark.catalog.dropTempView(_FULL + view)
    found = any(all(same_text(a, b) for a, b in zip(row, wanted, strict=True)) for row in again)
    return found, again


def _restrict(spark: Any, views: Sequence[str], rows: dict[str, list[dict[str, str]]]) -> None:
    """Each view replaced by its rows in the witness (matched on all kept values; a view read
    twice, e.g. nation as n1 and n2, gets the rows of both reads); no witness row: empty."""
    by_view: dict[str, list[dict[str, str]]] = {v: [] for v in views}
    for relation, kept in rows.items():
        view = relation if relation in by_view else relation.rsplit("_", 1)[0]
        if _ONE_ROW in (relation, view):
            continue  # a SELECT without FROM: no view, its one row comes back with the text
        if view not in by_view:
            raise ValueError(f"the witness reads {relation!r}, which is none of the views")
        by_view[view].extend(kept)
    for view, kept in by_view.items():
        df = spark.table(f"`{_FULL}{view}`")
        if not kept:  # empty, as the join below would make it, but visibly so to the optimizer
            df.where(F.lit(False)).createOrReplaceTempView(view)
            continue
        key = F.concat_ws(
            "\u001f",
            *[F.coalesce(F.col(f"`{c}`").cast("string"), F.lit(_NULL)) for c in df.columns],
        )
        keys = sorted({"\u001f".join(r.get(c, _NULL) for c in df.columns) for r in kept})
        wanted = spark.createDataFrame([(k,) for k in keys], "k string")
        df.join(F.broadcast(wanted), key == F.col("k"), "left_semi").createOrReplaceTempView(view)
