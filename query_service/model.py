"""Plain domain objects and errors of the query service; no protobuf here.

``Strategy`` and ``Semiring`` are the client's (:mod:`sparkprov.query_model`), whose numbers are
query.proto's: one definition for both ends of the wire.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

from sparkprov.query_model import Semiring, Strategy

__all__ = [
    "Direction",
    "EdgeView",
    "InvalidArgument",
    "NodeView",
    "NotFound",
    "FailedPrecondition",
    "QueryError",
    "RunReuse",
    "RunView",
    "Semiring",
    "Strategy",
    "TraceResult",
    "Unimplemented",
]


class QueryError(Exception):
    """Root of the errors a request can end with; each maps to one gRPC status."""


class InvalidArgument(QueryError):
    pass


class NotFound(QueryError):
    pass


class Unimplemented(QueryError):
    pass


class FailedPrecondition(QueryError):
    """The request is well formed but the stored state refuses it now (e.g. DeleteRun of a run
    tied to others, or not indexed yet)."""


class Direction(Enum):
    BACKWARD = "backward"
    FORWARD = "forward"


@dataclass(frozen=True)
class NodeView:
    id: int
    run_id: str
    op: str
    label: str
    relation: str
    attributes: dict[str, str]
    value: str
    component_id: int | None
    set_id: int | None


@dataclass(frozen=True)
class EdgeView:
    src: int
    dst: int


@dataclass
class TraceResult:
    nodes: list[NodeView]
    edges: list[EdgeView]
    truncated: bool
    strategy: Strategy
    levels: int = 0
    queries: int = 0
    edges_fetched: int = 0
    sets_visited: int = 0
    millis: float = 0.0
    extra: dict[str, int] = field(default_factory=dict)
    ids: list[int] = field(default_factory=list)  # the returned node ids, in order
    # The strategy asked for reads ids, which were pending: RECURSIVE ran (TraceStats).
    ids_pending: bool = False


@dataclass(frozen=True)
class RunReuse:
    """A sink a run reused from the stored result of run ``run_id`` (of sub-DAG ``version``)."""

    sink: str
    version: str
    run_id: str


@dataclass(frozen=True)
class RunView:
    run_id: str
    workflow: str
    complete: bool
    node_count: int
    edge_count: int
    expected_node_count: int
    expected_edge_count: int
    failed: bool
    started_unix_ms: int
    dangling_node_count: int = 0
    reuses: tuple[RunReuse, ...] = ()
    # Complete and no write of it waits for the indexer: its component and set ids are current.
    indexed: bool = False

    @property
    def state(self) -> str:
        """RUNNING, COMPLETE, COMPLETE_WITH_DANGLING or FAILED (proto RunState)."""
        if self.failed:
            return "FAILED"
        if not self.complete:
            return "RUNNING"
        return "COMPLETE_WITH_DANGLING" if self.dangling_node_count else "COMPLETE"
