"""The one place that converts between ``sparkprov.v1.query_pb2`` and the domain objects."""

from __future__ import annotations

from query_service.model import (
    Direction,
    InvalidArgument,
    NodeView,
    RunView,
    Strategy,
    TraceResult,
)
from query_service.traces import TraceQuery
from sparkprov.events import op_number
from sparkprov.ids import InvalidNodeId, format_node_id, parse_node_id
from sparkprov.v1 import query_pb2

__all__ = ["find_response", "node", "runs_response", "trace_query", "trace_response"]


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
            strategy=result.strategy.value,  # type: ignore[arg-type]
            levels=result.levels,
            queries=result.queries,
            edges_fetched=result.edges_fetched,
            sets_visited=result.sets_visited,
            millis=result.millis,
        ),
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
            )
            for r in runs
        ]
    )
