"""What the query client returns: plain frozen dataclasses and enums, never protobuf.

The enums are ``IntEnum`` with the wire numbers of proto/sparkprov/v1 (``Op.TOKEN == 1``), so a
value converts both ways without a table; their ``name`` is the text users see (``TOKEN``,
``CONNECTED_SET``, ``COMPLETE_WITH_DANGLING``). The .proto defines them: each member takes its
number from the generated code, and importing this module fails when a member is missing or left
over (the query service's ``Strategy`` and ``Semiring`` are these). Node ids are the decimal text
of the stored signed 64-bit ids, as on the wire. :mod:`sparkprov.query_adapter` is the only module
that turns protobuf into these.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any

from sparkprov.v1 import lineage_pb2, query_pb2

__all__ = [
    "DagLink",
    "DagOperator",
    "DeletedRuns",
    "Deletion",
    "Edge",
    "Equivalence",
    "GraphView",
    "Node",
    "Op",
    "OperatorChange",
    "Provenance",
    "RecomputedAggregate",
    "ResultComparison",
    "ResultRow",
    "RowVersions",
    "Run",
    "RunReuse",
    "RunState",
    "Semantics",
    "Semiring",
    "SourceRow",
    "Strategy",
    "Term",
    "Trace",
    "TraceStats",
    "Verdict",
    "VersionDiff",
    "VersionInfo",
    "VersionRuns",
]


class Op(enum.IntEnum):
    """A node's operation (../shared/MODEL.md, section 1)."""

    UNSPECIFIED = lineage_pb2.OP_UNSPECIFIED
    TOKEN = lineage_pb2.OP_TOKEN
    PLUS = lineage_pb2.OP_PLUS
    TIMES = lineage_pb2.OP_TIMES
    DELTA = lineage_pb2.OP_DELTA
    TENSOR = lineage_pb2.OP_TENSOR
    AGGREGATE = lineage_pb2.OP_AGGREGATE
    BLACK_BOX = lineage_pb2.OP_BLACK_BOX
    MODULE = lineage_pb2.OP_MODULE
    VALUE = lineage_pb2.OP_VALUE
    EXCLUDED = lineage_pb2.OP_EXCLUDED


class Strategy(enum.IntEnum):
    """How a trace runs; AUTO lets the server choose (the trace's stats name what ran)."""

    AUTO = query_pb2.STRATEGY_AUTO
    RECURSIVE = query_pb2.STRATEGY_RECURSIVE
    COMPONENT = query_pb2.STRATEGY_COMPONENT
    CONNECTED_SET = query_pb2.STRATEGY_CONNECTED_SET


class RunState(enum.IntEnum):
    UNSPECIFIED = query_pb2.RUN_STATE_UNSPECIFIED
    RUNNING = query_pb2.RUN_STATE_RUNNING
    COMPLETE = query_pb2.RUN_STATE_COMPLETE
    COMPLETE_WITH_DANGLING = query_pb2.RUN_STATE_COMPLETE_WITH_DANGLING
    FAILED = query_pb2.RUN_STATE_FAILED


class Semiring(enum.IntEnum):
    """The semiring a provenance polynomial is evaluated in; NONE: the polynomial only."""

    NONE = query_pb2.SEMIRING_UNSPECIFIED
    BOOLEAN = query_pb2.SEMIRING_BOOLEAN
    COUNTING = query_pb2.SEMIRING_COUNTING
    WHY = query_pb2.SEMIRING_WHY
    TROPICAL = query_pb2.SEMIRING_TROPICAL
    PROBABILITY = query_pb2.SEMIRING_PROBABILITY


class Semantics(enum.IntEnum):
    """How CheckEquivalence compares two results: as bags (Spark's) or as sets."""

    BAG = query_pb2.SEMANTICS_BAG
    SET = query_pb2.SEMANTICS_SET


class Verdict(enum.IntEnum):
    """CheckEquivalence's answer; UNKNOWN comes with the reason the verifier could not decide."""

    UNSPECIFIED = query_pb2.VERDICT_UNSPECIFIED
    EQUIVALENT = query_pb2.VERDICT_EQUIVALENT
    NOT_EQUIVALENT = query_pb2.VERDICT_NOT_EQUIVALENT
    UNKNOWN = query_pb2.VERDICT_UNKNOWN


def _mirror(kind: type[enum.IntEnum], proto: Any, prefix: str, renamed: str = "") -> None:
    """Fails the import when ``kind`` lacks a value of its proto enum or has one too many (the
    numbers are the generated code's already). ``renamed``: the zero value's name, if not the
    proto's without its prefix."""
    want = {
        renamed if number == 0 and renamed else name.removeprefix(prefix): number
        for name, number in proto.items()
    }
    have = {member.name: member.value for member in kind}
    if have != want:
        raise RuntimeError(f"{kind.__name__} is not {proto.DESCRIPTOR.full_name}: {have} != {want}")


_mirror(Op, lineage_pb2.Op, "OP_")
_mirror(Strategy, query_pb2.Strategy, "STRATEGY_")
_mirror(RunState, query_pb2.RunState, "RUN_STATE_")
_mirror(Semiring, query_pb2.Semiring, "SEMIRING_", renamed="NONE")
_mirror(Semantics, query_pb2.Semantics, "SEMANTICS_")
_mirror(Verdict, query_pb2.Verdict, "VERDICT_")


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
    # The strategy asked for reads component or set ids, which were pending: RECURSIVE ran.
    ids_pending: bool = False


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
class RunReuse:
    """A sink the run reused: the stored result of run ``run_id``, whose sub-DAG for the sink
    has canonical id ``version`` (docs/versions.md, "Reuse")."""

    sink: str
    version: str
    run_id: str


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
    reuses: tuple[RunReuse, ...] = ()
    # Complete, and its component and set ids current (../shared/MODEL.md section 6).
    indexed: bool = False


@dataclass(frozen=True)
class DeletedRuns:
    """What DeleteRun removed: the runs (the one asked for first, then those followed), and the
    stored nodes and relationships."""

    run_ids: tuple[str, ...]
    nodes: int
    relationships: int


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


# -- workflow versions (docs/versions.md) ------------------------------------------------------


@dataclass(frozen=True)
class DagOperator:
    """One operator of a version's canonical DAG: ``id`` is its Merkle hash (equal ids in two
    versions mean identical sub-DAGs), ``inputs`` its inputs' ids in order (left, right),
    ``params`` its predicates, expressions and keys as Spark SQL text, ``columns`` the (name,
    Spark type) of the columns it outputs."""

    id: str
    kind: str
    params: dict[str, str] = field(default_factory=dict)
    inputs: tuple[str, ...] = ()
    columns: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class SourceRow:
    """Where a source row (TOKEN node) lives (LocateSourceRows): row ``row`` (from 0) of
    ``file``, its source's ``file_index``-th file, when ``by_file``; else Spark's
    ``partition`` and ``offset`` (docs/queries.md, "Which file and row")."""

    node_id: str
    run_id: str
    relation: str
    by_file: bool
    file: str = ""
    file_index: int = 0
    row: int = 0
    partition: int = 0
    offset: int = 0


@dataclass(frozen=True)
class VersionInfo:
    """A version of a workflow: ``seq`` 1 is its first, in order of first run."""

    workflow: str
    version_id: str
    seq: int
    run_ids: tuple[str, ...]
    operator_count: int
    sinks: tuple[str, ...]  # the named relations
    created_unix_ms: int


@dataclass(frozen=True)
class DagLink:
    """A link of a DAG, from the operator read (``src``) to the one reading it (``dst``)."""

    src: str
    dst: str


@dataclass(frozen=True)
class OperatorChange:
    """An operator of version a (``before``) and its counterpart in version b (``after``)."""

    before: DagOperator
    after: DagOperator


@dataclass(frozen=True)
class VersionDiff:
    """The edit from version a to version b: ``added`` and ``links_added`` are b's,
    ``removed`` and ``links_removed`` a's; ``changed``: same kind and place, other parameters;
    ``moved``: the same operator reading another input."""

    added: tuple[DagOperator, ...]
    removed: tuple[DagOperator, ...]
    changed: tuple[OperatorChange, ...]
    links_added: tuple[DagLink, ...]
    links_removed: tuple[DagLink, ...]
    moved: tuple[OperatorChange, ...]


@dataclass(frozen=True)
class VersionRuns:
    """The runs of one version; ``version_id`` is "" for runs recorded before versions."""

    version_id: str
    run_ids: tuple[str, ...]


@dataclass(frozen=True)
class RowVersions:
    """VersionsOf for one node: the versions (and their runs) of its workflow whose same
    relation holds a row equal to this one."""

    node_id: str
    workflow: str
    relation: str
    attributes: dict[str, str]
    versions: tuple[VersionRuns, ...]

    def runs(self, version_id: str) -> tuple[str, ...]:
        """The runs of ``version_id`` holding the row; () when none does."""
        return next((v.run_ids for v in self.versions if v.version_id == version_id), ())


@dataclass(frozen=True)
class ResultRow:
    """A row (its attribute values) of two compared results, with its copies in each. For a
    one-sided row: its copies' nodes, the source rows (TOKENs) of their backward trace and the
    edit's operators on a path from those sources to the result."""

    attributes: dict[str, str]
    count_a: int
    count_b: int
    node_ids: tuple[str, ...] = ()
    sources: tuple[Node, ...] = ()
    edit_operators: tuple[DagOperator, ...] = ()


@dataclass(frozen=True)
class ResultComparison:
    """CompareResults, as bags: ``only_a`` holds ``count_a - count_b`` copies of each row,
    ``both`` the ``min`` of the two; ``truncated``: more one-sided rows than were explained."""

    only_a: tuple[ResultRow, ...]
    only_b: tuple[ResultRow, ...]
    both: tuple[ResultRow, ...]
    truncated: bool


@dataclass(frozen=True)
class Equivalence:
    """CheckEquivalence: the verdict, how it was reached (``method`` "identical" or "smt"),
    why (``reason``), the covering segments checked, a counterexample when NOT_EQUIVALENT (one
    tuple per leaf relation on which the results differ) and the time taken."""

    verdict: Verdict
    method: str
    reason: str
    segment_a: tuple[DagOperator, ...]
    segment_b: tuple[DagOperator, ...]
    counterexample: str
    millis: float
