"""Protobuf <-> :mod:`sparkprov.query_model` for the query client: the one place on the client
side that reads or builds ``query_pb2`` messages. Pure functions, no I/O.

Streamed traces arrive in chunks; :func:`merge_chunks` joins them into one ``Trace`` (the stats
travel in the last chunk).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from sparkprov.query_model import (
    Deletion,
    Edge,
    GraphView,
    Node,
    Op,
    Provenance,
    RecomputedAggregate,
    Run,
    RunState,
    Semiring,
    Strategy,
    Term,
    Trace,
    TraceStats,
)
from sparkprov.v1 import query_pb2

__all__ = [
    "deletion",
    "graph_view",
    "merge_chunks",
    "node",
    "provenance",
    "provenance_request",
    "run",
    "trace",
    "trace_request",
]


def _enum(kind: type[Op] | type[Strategy] | type[RunState] | type[Semiring], value: int) -> int:
    """The enum member, or the bare number when a newer server sends one this client lacks."""
    try:
        return kind(value)
    except ValueError:
        return value


def node(message: query_pb2.Node) -> Node:
    return Node(
        id=message.id,
        run_id=message.run_id,
        op=_enum(Op, message.op),  # type: ignore[arg-type]
        label=message.label,
        relation=message.relation,
        attributes=dict(message.attributes),
        value=message.value,
        component_id=message.component_id,
        set_id=message.set_id,
    )


def _edges(edges: Iterable[query_pb2.Edge]) -> tuple[Edge, ...]:
    return tuple(Edge(e.src, e.dst) for e in edges)


def _stats(message: query_pb2.TraceStats) -> TraceStats:
    return TraceStats(
        strategy=_enum(Strategy, message.strategy),  # type: ignore[arg-type]
        levels=message.levels,
        queries=message.queries,
        edges_fetched=message.edges_fetched,
        sets_visited=message.sets_visited,
        millis=message.millis,
        nodes_reached=message.nodes_reached,
        edges_returned=message.edges_returned,
    )


def trace(message: query_pb2.TraceResponse) -> Trace:
    return Trace(
        nodes=tuple(node(n) for n in message.nodes),
        edges=_edges(message.edges),
        truncated=message.truncated,
        stats=_stats(message.stats),
    )


def merge_chunks(chunks: Iterable[query_pb2.TraceResponse]) -> Trace:
    nodes: list[Node] = []
    edges: list[Edge] = []
    truncated = False
    last: query_pb2.TraceResponse | None = None
    for chunk in chunks:
        nodes.extend(node(n) for n in chunk.nodes)
        edges.extend(_edges(chunk.edges))
        truncated = truncated or chunk.truncated
        last = chunk
    stats = _stats(last.stats) if last is not None else TraceStats()
    return Trace(nodes=tuple(nodes), edges=tuple(edges), truncated=truncated, stats=stats)


def trace_request(
    node_ids: Sequence[str],
    *,
    max_depth: int,
    limit: int,
    strategy: Strategy | int,
    zoomed_out_modules: Sequence[str],
    chunk_size: int = 0,
) -> query_pb2.TraceRequest:
    return query_pb2.TraceRequest(
        node_ids=list(node_ids),
        max_depth=max_depth,
        limit=limit,
        strategy=int(strategy),  # type: ignore[arg-type]
        zoomed_out_modules=list(zoomed_out_modules),
        chunk_size=chunk_size,
    )


def run(message: query_pb2.Run) -> Run:
    return Run(
        run_id=message.run_id,
        workflow=message.workflow,
        complete=message.complete,
        node_count=message.node_count,
        edge_count=message.edge_count,
        expected_node_count=message.expected_node_count,
        expected_edge_count=message.expected_edge_count,
        failed=message.failed,
        started_unix_ms=message.started_unix_ms,
        state=_enum(RunState, message.state),  # type: ignore[arg-type]
        dangling_node_count=message.dangling_node_count,
    )


def graph_view(message: query_pb2.GraphView) -> GraphView:
    return GraphView(
        run_id=message.run_id,
        zoomed_out_modules=tuple(message.zoomed_out_modules),
        nodes=tuple(node(n) for n in message.nodes),
        edges=_edges(message.edges),
        zoomed_node_ids=tuple(message.zoomed_node_ids),
    )


def deletion(message: query_pb2.DeletionResponse) -> Deletion:
    return Deletion(
        deleted_node_ids=tuple(message.deleted_node_ids),
        recomputed=tuple(
            RecomputedAggregate(
                node_id=r.node_id,
                function=r.function,
                old_value=r.old_value,
                new_value=r.new_value,
                inputs=r.inputs,
            )
            for r in message.recomputed
        ),
    )


def provenance_request(
    node_id: str,
    *,
    semiring: Semiring | int,
    false_tokens: Sequence[str],
    token_costs: Mapping[str, float],
    token_probabilities: Mapping[str, float],
    samples: int,
) -> query_pb2.ProvenanceRequest:
    return query_pb2.ProvenanceRequest(
        node_id=node_id,
        semiring=int(semiring),  # type: ignore[arg-type]
        false_tokens=list(false_tokens),
        token_costs=dict(token_costs),
        token_probabilities=dict(token_probabilities),
        samples=samples,
    )


def provenance(message: query_pb2.ProvenanceResponse) -> Provenance:
    return Provenance(
        polynomial=message.polynomial,
        text_truncated=message.text_truncated,
        terms=tuple(Term(t.id, t.op, t.label, tuple(t.args)) for t in message.terms),
        tokens=tuple(node(n) for n in message.tokens),
        semiring=_enum(Semiring, message.semiring),  # type: ignore[arg-type]
        boolean=message.boolean,
        count=message.count,
        witnesses=tuple(tuple(w.tokens) for w in message.witnesses),
        witnesses_truncated=message.witnesses_truncated,
        cost=message.cost,
        probability=message.probability,
        method=message.method,
    )
