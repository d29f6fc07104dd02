"""Protobuf <-> :mod:`sparkprov.query_model` for the query client: the one place on the client
side that reads or builds ``query_pb2`` messages. Pure functions, no I/O.

Streamed traces arrive in chunks; :func:`merge_chunks` joins them into one ``Trace`` (the stats
travel in the last chunk).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from sparkprov.query_model import (
    DagLink,
    DagOperator,
    Deletion,
    Edge,
    Equivalence,
    GraphView,
    Node,
    Op,
    OperatorChange,
    Provenance,
    RecomputedAggregate,
    ResultComparison,
    ResultRow,
    RowVersions,
    Run,
    RunReuse,
    RunState,
    Semantics,
    Semiring,
    SourceRow,
    Strategy,
    Term,
    Trace,
    TraceStats,
    Verdict,
    VersionDiff,
    VersionInfo,
    VersionRuns,
)
from sparkprov.v1 import lineage_pb2, query_pb2

__all__ = [
    "check_equivalence_request",
    "dag_operator",
    "deletion",
    "equivalence",
    "graph_view",
    "merge_chunks",
    "node",
    "provenance",
    "provenance_request",
    "result_comparison",
    "row_versions",
    "run",
    "trace",
    "trace_request",
    "version_diff",
    "version_info",
]

_Enum = type[Op] | type[Strategy] | type[RunState] | type[Semiring] | type[Verdict]


def _enum(kind: _Enum, value: int) -> int:
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
        ids_pending=message.ids_pending,
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
        indexed=message.indexed,
        reuses=tuple(RunReuse(u.sink, u.version, u.run_id) for u in message.reuses),
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


# -- workflow versions ---------------------------------------------------------------------


def dag_operator(message: lineage_pb2.DagOperator) -> DagOperator:
    return DagOperator(
        id=message.id,
        kind=message.kind,
        params=dict(message.params),
        inputs=tuple(message.inputs),
        columns=tuple((c.name, c.type) for c in message.columns),
    )


def _operators(messages: Iterable[lineage_pb2.DagOperator]) -> tuple[DagOperator, ...]:
    return tuple(dag_operator(o) for o in messages)


def source_row(message: query_pb2.SourceRow) -> SourceRow:
    return SourceRow(
        node_id=message.node_id,
        run_id=message.run_id,
        relation=message.relation,
        by_file=message.by_file,
        file=message.file,
        file_index=message.file_index,
        row=message.row,
        partition=message.partition,
        offset=message.offset,
    )


def version_info(message: query_pb2.WorkflowVersionInfo) -> VersionInfo:
    return VersionInfo(
        workflow=message.workflow,
        version_id=message.version_id,
        seq=message.seq,
        run_ids=tuple(message.run_ids),
        operator_count=message.operator_count,
        sinks=tuple(message.sinks),
        created_unix_ms=message.created_unix_ms,
    )


def _changes(messages: Iterable[query_pb2.OperatorChange]) -> tuple[OperatorChange, ...]:
    return tuple(OperatorChange(dag_operator(c.before), dag_operator(c.after)) for c in messages)


def _links(messages: Iterable[query_pb2.DagLink]) -> tuple[DagLink, ...]:
    return tuple(DagLink(link.src, link.dst) for link in messages)


def version_diff(message: query_pb2.DiffVersionsResponse) -> VersionDiff:
    return VersionDiff(
        added=_operators(message.added),
        removed=_operators(message.removed),
        changed=_changes(message.changed),
        links_added=_links(message.links_added),
        links_removed=_links(message.links_removed),
        moved=_changes(message.moved),
    )


def row_versions(message: query_pb2.VersionsOfResult) -> RowVersions:
    return RowVersions(
        node_id=message.node_id,
        workflow=message.workflow,
        relation=message.relation,
        attributes=dict(message.attributes),
        versions=tuple(VersionRuns(v.version_id, tuple(v.run_ids)) for v in message.versions),
    )


def _result_rows(messages: Iterable[query_pb2.ResultRow]) -> tuple[ResultRow, ...]:
    return tuple(
        ResultRow(
            attributes=dict(r.attributes),
            count_a=r.count_a,
            count_b=r.count_b,
            node_ids=tuple(r.node_ids),
            sources=tuple(node(n) for n in r.sources),
            edit_operators=_operators(r.edit_operators),
        )
        for r in messages
    )


def result_comparison(message: query_pb2.CompareResultsResponse) -> ResultComparison:
    return ResultComparison(
        only_a=_result_rows(message.only_a),
        only_b=_result_rows(message.only_b),
        both=_result_rows(message.both),
        truncated=message.truncated,
    )


def check_equivalence_request(
    workflow: str,
    version_a: str,
    version_b: str,
    sink: str,
    *,
    sink_b: str,
    semantics: Semantics | int,
) -> query_pb2.CheckEquivalenceRequest:
    return query_pb2.CheckEquivalenceRequest(
        workflow=workflow,
        version_a=version_a,
        version_b=version_b,
        sink=sink,
        sink_b=sink_b,
        semantics=int(semantics),  # type: ignore[arg-type]
    )


def equivalence(message: query_pb2.CheckEquivalenceResponse) -> Equivalence:
    return Equivalence(
        verdict=_enum(Verdict, message.verdict),  # type: ignore[arg-type]
        method=message.method,
        reason=message.reason,
        segment_a=_operators(message.segment_a),
        segment_b=_operators(message.segment_b),
        counterexample=message.counterexample,
        millis=message.millis,
    )
