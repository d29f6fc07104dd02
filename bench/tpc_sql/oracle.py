"""Titian's oracle for SQL text captured from its plan, and what capture tests share.

The logical graph a captured job emitted through the in-memory emitter
(capture_agent.emitters.MemoryEmitter), as node rows by id and a networkx DiGraph; the witness
of an output node in it, as ``QueryClient.witness`` gives it from the stored graph; and the
oracle itself: the query's text re-run over its views restricted to the witness gives the
output row back (:func:`reproduces`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import networkx as nx
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from capture_agent.emitters import MemoryEmitter
from capture_agent.replay import same_text
from sparkprov.events import ATTRIBUTE_PREFIX, Batch, decode

__all__ = ["emitted_graph", "reproduces", "texts", "witness"]

_NULL = "\u0000"
_FULL = "sparkprov_full_"  # the full tables, kept under this prefix while views are restricted


def emitted_graph(emitter: MemoryEmitter) -> tuple[dict[int, dict[str, Any]], nx.DiGraph]:
    """Every emitted node (its expanded row) by id, and the graph of every emitted edge."""
    batches = [e.expanded() for _, v in emitter.messages() if isinstance(e := decode(v), Batch)]
    nodes = {n["id"]: n for b in batches for n in b.rows()}
    graph = nx.DiGraph()
    graph.add_nodes_from(nodes)
    for b in batches:
        graph.add_edges_from(zip(b.edges["src"], b.edges["dst"], strict=True))
    return nodes, graph


def witness(
    nodes: dict[int, dict[str, Any]], graph: nx.DiGraph, node_id: int
) -> dict[str, list[dict[str, str]]]:
    """The witness of an output node in an emitted graph, as ``QueryClient.witness`` gives it
    from the stored one: the TOKEN rows its backward trace reaches, per relation, as the values
    they kept, closed under anti joins' exclusions (an EXCLUDED node whose left parent the
    witness reaches brings its right row's sources in)."""
    tokens = {a for a in nx.ancestors(graph, node_id) | {node_id} if nodes[a]["op"] == "TOKEN"}
    matches: set[int] = set()
    reached: set[int] = set()  # descendants of the witness so far, each visited once
    fresh = set(tokens)
    while fresh:
        found: set[int] = set()
        for e in _visit(graph.successors, fresh, reached):
            if nodes[e]["op"] == "EXCLUDED":
                right = int(nodes[e]["value"])
                if right not in matches and any(p != right for p in graph.predecessors(e)):
                    found.add(right)
        if not found:
            break
        matches |= found
        above = _visit(graph.predecessors, found, set()) | found
        fresh = {a for a in above if nodes[a]["op"] == "TOKEN"} - tokens
        tokens |= fresh
    rows: dict[str, list[dict[str, str]]] = {}
    for t in tokens:
        props = nodes[t]["props"]
        rows.setdefault(nodes[t]["relation"], []).append(
            {
                k[len(ATTRIBUTE_PREFIX) :]: v
                for k, v in props.items()
                if k.startswith(ATTRIBUTE_PREFIX)
            }
        )
    return rows


def _visit(step: Any, starts: set[int], seen: set[int]) -> set[int]:
    """The nodes ``step`` (successors or predecessors) reaches from ``starts`` that are not in
    ``seen`` yet, added to it: one traversal for all of them."""
    found: set[int] = set()
    stack = list(starts)
    while stack:
        for n in step(stack.pop()):
            if n not in seen:
                seen.add(n)
                found.add(n)
                stack.append(n)
    return found


def texts(df: DataFrame) -> list[tuple[str | None, ...]]:
    """The rows of ``df`` with every value as Spark casts it to text (as capture keeps it)."""
    return [
        tuple(r) for r in df.select(*[F.col(f"`{c}`").cast("string") for c in df.columns]).collect()
    ]


def reproduces(
    spark: Any,
    sql: str,
    views: Sequence[str],
    nodes: dict[int, dict[str, Any]],
    graph: nx.DiGraph,
    node: int,
    columns: Sequence[str],
) -> tuple[bool, list[tuple[str | None, ...]]]:
    """Titian's oracle for output ``node`` of the query ``sql`` over the temp ``views``: whether
    re-running the text with each view restricted to the rows of the node's witness gives the
    node's row back; and the rows it gave. The views are restored afterwards."""
    props = nodes[node]["props"]
    wanted = tuple(props.get(ATTRIBUTE_PREFIX + c) for c in columns)
    for view in views:
        spark.table(f"`{view}`").createOrReplaceTempView(_FULL + view)
    try:
        _restrict(spark, views, witness(nodes, graph, node))
        again = texts(spark.sql(sql))
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
        if view not in by_view:
            raise ValueError(f"the witness reads {relation!r}, which is none of the views")
        by_view[view].extend(kept)
    for view, kept in by_view.items():
        df = spark.table(f"`{_FULL}{view}`")
        key = F.concat_ws(
            "\u001f",
            *[F.coalesce(F.col(f"`{c}`").cast("string"), F.lit(_NULL)) for c in df.columns],
        )
        keys = sorted({"\u001f".join(r.get(c, _NULL) for c in df.columns) for r in kept})
        wanted = spark.createDataFrame([(k,) for k in keys], "k string")
        df.join(F.broadcast(wanted), key == F.col("k"), "left_semi").createOrReplaceTempView(view)
