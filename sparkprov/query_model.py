"""What the query client returns: plain frozen dataclasses and enums, never protobuf.

The enums are ``IntEnum`` with the wire numbers of proto/sparkprov/v1 (``Op.TOKEN == 1``), so a
value converts both ways without a table; their ``name`` is the text users see (``TOKEN``,
``CONNECTED_SET``, ``COMPLETE_WITH_DANGLING``). Node ids are the decimal text of the stored
signed 64-bit ids, as on the wire. :mod:`sparkprov.query_adapter` is the only module that turns
protobuf into these.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

__all__ = [
    "Deletion",
    "Edge",
    "GraphView",
    "Node",
    "Op",
    "Provenance",
    "RecomputedAggregate",
    "Run",
    "RunState",
    "Semiring",
    "Strategy",
    "Term",
    "Trace",
    "TraceStats",
]


class Op(enum.IntEnum):
    """A node's operation (../shared/MODEL.md, section 1)."""

    UNSPECIFIED = 0
    TOKEN = 1
    PLUS = 2
    TIMES = 3
    DELTA = 4
    TENSOR = 5
    AGGREGATE = 6
    BLACK_BOX = 7
    MODULE = 8
    VALUE = 9
    EXCLUDED = 10


class Strategy(enum.IntEnum):
    """How a trace runs; AUTO lets the server choose (the trace's stats name what ran)."""

    AUTO = 0
    RECURSIVE = 1
    COMPONENT = 2
    CONNECTED_SET = 3


class RunState(enum.IntEnum):
    UNSPECIFIED = 0
    RUNNING = 1
    COMPLETE = 2
    COMPLETE_WITH_DANGLING = 3
    FAILED = 4


class Semiring(enum.IntEnum):
    """The semiring a provenance polynomial is evaluated in; NONE: the polynomial only."""

    NONE = 0
    BOOLEAN = 1
    COUNTING = 2
    WHY = 3
    TROPICAL = 4
    PROBABILITY = 5


@dataclass(frozen=True)
class Node:
    id: str
    run_id: str
    op: Op
    label: str
    relation: str = ""
    attributes: dict[str, str] = field(default_factory=dict)
    value: str = ""
    component_id: str = ""
    set_id: str = ""


@dataclass(frozen=True)
class Edge:
    """From what is used (``src``) to what is derived (``dst``)."""

    src: str
    dst: str


@dataclass(frozen=True)
class TraceStats:
    strategy: Strategy = Strategy.AUTO
    levels: int = 0
    queries: int = 0
    edges_fetched: int = 0
    sets_visited: int = 0
    millis: float = 0.0
    nodes_reached: int = 0
    edges_returned: int = 0


@dataclass(frozen=True)
class Trace:
    """A backward or forward trace, or a subgraph: the queried nodes first."""

    nodes: tuple[Node, ...]
    edges: tuple[Edge, ...]
    truncated: bool = False
    stats: TraceStats = field(default_factory=TraceStats)

    def node(self, node_id: str) -> Node | None:
        return next((n for n in self.nodes if n.id == node_id), None)


@dataclass(frozen=True)
class Run:
    run_id: str
    workflow: str
    complete: bool
    node_count: int
    edge_count: int
    expected_node_count: int  # -1 until the run-complete marker arrived
    expected_edge_count: int
    failed: bool
    started_unix_ms: int
    state: RunState
    dangling_node_count: int


@dataclass(frozen=True)
class GraphView:
    """A run viewed with ``zoomed_out_modules`` zoomed out (ZoomOut / ZoomIn)."""

    run_id: str
    zoomed_out_modules: tuple[str, ...]
    nodes: tuple[Node, ...]
    edges: tuple[Edge, ...]
    zoomed_node_ids: tuple[str, ...]


@dataclass(frozen=True)
class RecomputedAggregate:
    node_id: str
    function: str
    old_value: str
    new_value: str
    inputs: int  # surviving TENSOR inputs


@dataclass(frozen=True)
class Deletion:
    """What deleting nodes removes (the deleted nodes included) and the aggregates that survive
    with another value."""

    deleted_node_ids: tuple[str, ...]
    recomputed: tuple[RecomputedAggregate, ...]


@dataclass(frozen=True)
class Term:
    """One term of a polynomial: VAR, ONE, PLUS, TIMES, DELTA or BLACK_BOX over ``args``."""

    id: str
    op: str
    label: str
    args: tuple[str, ...]


@dataclass(frozen=True)
class Provenance:
    """A node's provenance polynomial and, when a semiring was asked for, its value there (only
    the field of that semiring is meaningful)."""

    polynomial: str
    text_truncated: bool
    terms: tuple[Term, ...]
    tokens: tuple[Node, ...]
    semiring: Semiring
    boolean: bool
    count: int
    witnesses: tuple[tuple[str, ...], ...]
    witnesses_truncated: bool
    cost: float
    probability: float
    method: str
