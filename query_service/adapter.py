"""The one place that converts between ``sparkprov.v1.query_pb2`` and the domain objects."""

from __future__ import annotations

from collections.abc import Mapping

from query_service import limits
from query_service.model import (
    Direction,
    InvalidArgument,
    NodeView,
    RunView,
    Semiring,
    Strategy,
    TraceResult,
)
from query_service.queries import Deletion, ProvenanceAnswer
from query_service.source_rows import SourceRowView
from query_service.traces import TraceQuery
from query_service.version_store import EqualRows, StoredVersion
from query_service.versions import ComparedRow, Comparison
from query_service.zoom import ZoomedView
from sparkprov.equivalence import Equivalence, Semantics, Verdict
from sparkprov.events import op_number
from sparkprov.id_format import InvalidNodeId, format_node_id, parse_node_id
from sparkprov.v1 import lineage_pb2, query_pb2
from sparkprov.workflow import Edit, Operator

__all__ = [
    "compare_response",
    "dag_operator",
    "diff_response",
    "equivalence_response",
    "versions_of_response",
    "versions_response",
    "deletion_response",
    "find_response",
    "graph_view",
    "keyed",
    "limit",
    "modules",
    "node",
    "node_id",
    "node_ids",
    "provenance_response",
    "runs_response",
    "semantics",
    "semiring",
    "trace_query",
    "trace_response",
    "with_millis",
]


def _parse_ids(texts: list[str]) -> list[int]:
    try:
        return [parse_node_id(t) for t in texts]
    except InvalidNodeId as e:
        raise InvalidArgument(str(e)) from e


def trace_query(
    request: query_pb2.TraceRequest, direction: Direction, default_limit: int, max_limit: int
) -> TraceQuery:
    if not request.node_ids:
        raise InvalidArgument("node_ids must name at least one node")
    if request.limit > max_limit:
        raise InvalidArgument(f"limit {request.limit} exceeds the maximum {max_limit}")
    try:
        strategy = Strategy(request.strategy)
    except ValueError as e:
        raise InvalidArgument(f"unknown strategy {request.strategy}") from e
    return TraceQuery(
        node_ids=_parse_ids(list(request.node_ids)),
        direction=direction,
        max_depth=request.max_depth,
        limit=request.limit or default_limit,
        strategy=strategy,
    )


def node(view: NodeView) -> query_pb2.Node:
    return query_pb2.Node(
        id=format_node_id(view.id),
        run_id=view.run_id,
        op=op_number(view.op),  # type: ignore[arg-type]
        label=view.label,
        relation=view.relation,
        attributes=view.attributes,
        value=view.value,
        component_id="" if view.component_id is None else format_node_id(view.component_id),
        set_id="" if view.set_id is None else format_node_id(view.set_id),
    )


def trace_response(result: TraceResult) -> query_pb2.TraceResponse:
    return query_pb2.TraceResponse(
        nodes=[node(n) for n in result.nodes],
        edges=[
            query_pb2.Edge(src=format_node_id(e.src), dst=format_node_id(e.dst))
            for e in result.edges
        ],
        truncated=result.truncated,
        stats=query_pb2.TraceStats(
            strategy=result.strategy.value,
            levels=result.levels,
            queries=result.queries,
            edges_fetched=result.edges_fetched,
            sets_visited=result.sets_visited,
            millis=result.millis,
            nodes_reached=result.extra.get("nodes_reached", len(result.nodes)),
            edges_returned=len(result.edges),
            ids_pending=result.ids_pending,
        ),
    )


def with_millis(encoded: bytes, millis: float) -> bytes:
    """A serialized TraceResponse with its ``stats.millis`` set: a second ``stats`` field merges
    into the first when parsed (protobuf's rule for embedded messages), so it is appended rather
    than the message rebuilt."""
    return (
        encoded
        + query_pb2.TraceResponse(stats=query_pb2.TraceStats(millis=millis)).SerializeToString()
    )


def find_response(nodes: list[NodeView]) -> query_pb2.FindNodesResponse:
    return query_pb2.FindNodesResponse(nodes=[node(n) for n in nodes])


def runs_response(runs: list[RunView]) -> query_pb2.ListRunsResponse:
    return query_pb2.ListRunsResponse(
        runs=[
            query_pb2.Run(
                run_id=r.run_id,
                workflow=r.workflow,
                complete=r.complete,
                node_count=r.node_count,
                edge_count=r.edge_count,
                expected_node_count=r.expected_node_count,
                expected_edge_count=r.expected_edge_count,
                failed=r.failed,
                started_unix_ms=r.started_unix_ms,
                state="RUN_STATE_" + r.state,
                dangling_node_count=r.dangling_node_count,
                indexed=r.indexed,
                reuses=[
                    query_pb2.RunReuse(sink=u.sink, version=u.version, run_id=u.run_id)
                    for u in r.reuses
                ],
            )
            for r in runs
        ]
    )


def source_rows_response(rows: list[SourceRowView]) -> query_pb2.LocateSourceRowsResponse:
    return query_pb2.LocateSourceRowsResponse(
        rows=[
            query_pb2.SourceRow(
                node_id=str(r.node_id),
                run_id=r.run_id,
                relation=r.relation,
                by_file=r.by_file,
                file=r.file,
                file_index=r.file_index,
                row=r.row,
                partition=r.partition,
                offset=r.offset,
            )
            for r in rows
        ]
    )


def node_ids(texts: list[str], what: str) -> list[int]:
    if not texts:
        raise InvalidArgument(f"{what} must name at least one node")
    return list(dict.fromkeys(_parse_ids(texts)))


def node_id(text: str, what: str = "node_id") -> int:
    if not text:
        raise InvalidArgument(f"{what} is required")
    return _parse_ids([text])[0]


def modules(names: list[str], what: str) -> list[str]:
    for name in names:
        if not name or len(name) > 200:
            raise InvalidArgument(f"{what}: module names must have 1 to 200 characters")
    return list(dict.fromkeys(names))


def limit(requested: int, default: int, maximum: int) -> int:
    if requested > maximum:
        raise InvalidArgument(f"limit {requested} exceeds the maximum {maximum}")
    return requested or default


def _edges(edges: list[tuple[int, int]]) -> list[query_pb2.Edge]:
    return [query_pb2.Edge(src=format_node_id(s), dst=format_node_id(d)) for s, d in edges]


def graph_view(run_id: str, view: ZoomedView) -> query_pb2.GraphView:
    graph = view.graph
    ids = sorted(graph.ids())
    return query_pb2.GraphView(
        run_id=run_id,
        zoomed_out_modules=view.modules,
        nodes=[node(graph.nodes[i]) for i in ids if i in graph.nodes],
        edges=_edges(graph.edges()),
        zoomed_node_ids=[format_node_id(i) for i in view.zoomed_nodes],
    )


def deletion_response(result: Deletion) -> query_pb2.DeletionResponse:
    return query_pb2.DeletionResponse(
        deleted_node_ids=[format_node_id(i) for i in result.deleted],
        recomputed=[
            query_pb2.RecomputedAggregate(
                node_id=format_node_id(r.node_id),
                function=r.function,
                old_value=r.old_value,
                new_value=r.new_value,
                inputs=r.inputs,
            )
            for r in result.recomputed
        ],
    )


def semiring(value: int) -> Semiring:
    try:
        return Semiring(value)
    except ValueError as e:
        raise InvalidArgument(f"unknown semiring {value}") from e


def keyed(values: Mapping[str, float], what: str) -> dict[int, float]:
    try:
        return {parse_node_id(k): float(v) for k, v in values.items()}
    except InvalidNodeId as e:
        raise InvalidArgument(f"{what}: {e}") from e


_UINT64_MAX = 2**64 - 1


def provenance_response(answer: ProvenanceAnswer) -> query_pb2.ProvenanceResponse:
    terms = list(answer.polynomial.terms.values())[::-1]
    return query_pb2.ProvenanceResponse(
        polynomial=answer.text,
        text_truncated=answer.text_truncated,
        terms=[
            query_pb2.Term(
                id=format_node_id(t.id),
                op=t.op,
                label=t.label,
                args=[format_node_id(a) for a in t.args],
            )
            for t in terms
        ],
        tokens=[node(v) for v in answer.tokens],
        semiring=answer.semiring.value,
        boolean=answer.boolean,
        count=min(answer.count, _UINT64_MAX),
        witnesses=[
            query_pb2.WitnessSet(tokens=[format_node_id(i) for i in w])
            for w in answer.witnesses or []
        ],
        witnesses_truncated=answer.witnesses_truncated,
        cost=answer.cost,
        probability=answer.probability,
        method=answer.method,
    )


# -- workflow versions (query_service.versions) ---------------------------------------------


def dag_operator(op: Operator) -> lineage_pb2.DagOperator:
    out = lineage_pb2.DagOperator(id=op.id, kind=op.kind, inputs=list(op.inputs))
    out.params.update(dict(op.params))
    for name, type_ in op.columns:
        out.columns.add(name=name, type=type_)
    return out


def versions_response(versions: list[StoredVersion]) -> query_pb2.ListVersionsResponse:
    return query_pb2.ListVersionsResponse(
        versions=[
            query_pb2.WorkflowVersionInfo(
                workflow=v.workflow,
                version_id=v.version_id,
                seq=v.seq,
                run_ids=v.run_ids,
                operator_count=len(v.dag.operators),
                sinks=[name for name, _ in v.dag.sinks],
                created_unix_ms=v.created_unix_ms,
            )
            for v in versions
        ]
    )


def diff_response(edit: Edit) -> query_pb2.DiffVersionsResponse:
    return query_pb2.DiffVersionsResponse(
        added=[dag_operator(o) for o in edit.added],
        removed=[dag_operator(o) for o in edit.removed],
        changed=[
            query_pb2.OperatorChange(before=dag_operator(a), after=dag_operator(b))
            for a, b in edit.changed
        ],
        moved=[
            query_pb2.OperatorChange(before=dag_operator(a), after=dag_operator(b))
            for a, b in edit.moved
        ],
        links_added=[query_pb2.DagLink(src=s, dst=d) for s, d in edit.links_added],
        links_removed=[query_pb2.DagLink(src=s, dst=d) for s, d in edit.links_removed],
    )


def versions_of_response(rows: list[EqualRows]) -> query_pb2.VersionsOfResponse:
    out = query_pb2.VersionsOfResponse()
    by_node: dict[int, query_pb2.VersionsOfResult] = {}
    for r in rows:
        result = by_node.get(r.node_id)
        if result is None:
            result = out.results.add(
                node_id=format_node_id(r.node_id), workflow=r.workflow, relation=r.relation
            )
            result.attributes.update(r.attributes)
            by_node[r.node_id] = result
        result.versions.add(version_id=r.version_id, run_ids=r.run_ids)
    return out


def _compared_row(row: ComparedRow) -> query_pb2.ResultRow:
    out = query_pb2.ResultRow(
        count_a=row.count_a,
        count_b=row.count_b,
        node_ids=[format_node_id(i) for i in row.node_ids],
        sources=[node(n) for n in row.sources],
        edit_operators=[dag_operator(o) for o in row.edit_operators],
    )
    out.attributes.update(row.attributes)
    return out


def compare_response(comparison: Comparison) -> query_pb2.CompareResultsResponse:
    return query_pb2.CompareResultsResponse(
        only_a=[_compared_row(r) for r in comparison.only_a],
        only_b=[_compared_row(r) for r in comparison.only_b],
        both=[_compared_row(r) for r in comparison.both],
        truncated=comparison.truncated,
    )


def semantics(value: int) -> Semantics:
    if value == query_pb2.SEMANTICS_BAG:
        return Semantics.BAG
    if value == query_pb2.SEMANTICS_SET:
        return Semantics.SET
    raise InvalidArgument(f"unknown semantics {value}")


_VERDICTS = {
    Verdict.EQUIVALENT: query_pb2.VERDICT_EQUIVALENT,
    Verdict.NOT_EQUIVALENT: query_pb2.VERDICT_NOT_EQUIVALENT,
    Verdict.UNKNOWN: query_pb2.VERDICT_UNKNOWN,
}


def equivalence_response(answer: Equivalence, millis: float) -> query_pb2.CheckEquivalenceResponse:
    return query_pb2.CheckEquivalenceResponse(
        verdict=_VERDICTS[answer.verdict],
        method=answer.method,
        reason=limits.message(answer.reason),
        segment_a=[dag_operator(o) for o in answer.segment_a],
        segment_b=[dag_operator(o) for o in answer.segment_b],
        counterexample=limits.message(answer.counterexample),
        millis=millis,
    )
