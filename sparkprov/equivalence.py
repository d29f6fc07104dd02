"""Equivalence of two versions' sinks (Drove, sections 2.2-2.3): identical sub-DAGs, else segments.

1. The sinks' canonical ids are equal: their sub-DAGs are identical, the results equal (the
   inputs are the same and the operators deterministic, as Drove assumes).
2. Else the two sub-DAGs are walked down from the sinks while their operators are the same
   (same kind, parameters and columns) and differ in exactly one input: that common top is
   untouched by the edit. Where the walk stops, the minimal segment that covers the edit begins;
   its leaves are the sub-DAGs both versions share (equal ids), read as the same relation.
3. The segment is grown upward through the common top as long as the verifier models the
   operators met (filters, projections, inner joins, aggregates; sparkprov.verifier): the
   maximal covering segment. z3 decides it.
4. Equivalent segments make equivalent sinks: what lies above is the same deterministic
   operators over equal inputs. A segment proven different decides the sinks only when it
   reached the sink; if a non-relational operator above it (a UDF, an explode) stopped its
   growth, that operator might hide the difference, so the answer is unknown. A UDF, an explode
   or anything else the verifier does not model inside the segment makes the answer unknown:
   never a wrong "equivalent".
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from sparkprov.verifier import Semantics, Unsupported, compare, supported
from sparkprov.workflow import Operator, WorkflowDag

__all__ = ["Equivalence", "Semantics", "Verdict", "check"]


class Verdict(Enum):
    EQUIVALENT = "equivalent"
    NOT_EQUIVALENT = "not_equivalent"
    UNKNOWN = "unknown"


@dataclass(frozen=True)
class Equivalence:
    verdict: Verdict
    method: str  # "identical" or "smt"
    reason: str
    segment_a: tuple[Operator, ...] = ()
    segment_b: tuple[Operator, ...] = ()
    counterexample: str = ""


def _same_operator(x: Operator, y: Operator) -> bool:
    return x.signature() == y.signature() and x.columns == y.columns


def _segment(dag: WorkflowDag, top: str, leaves: set[str]) -> tuple[Operator, ...]:
    ops = dag.by_id()
    out: list[Operator] = []
    todo, seen = [top], set()
    while todo:
        current = todo.pop()
        if current in seen or current in leaves:
            continue
        seen.add(current)
        out.append(ops[current])
        todo.extend(ops[current].inputs)
    return tuple(out)


def check(
    a: WorkflowDag,
    b: WorkflowDag,
    sink_a: Operator,
    sink_b: Operator,
    semantics: Semantics = Semantics.BAG,
) -> Equivalence:
    """Whether ``sink_a`` of version ``a`` and ``sink_b`` of version ``b`` give the same result
    (bag or set semantics) on the same inputs."""
    if sink_a.id == sink_b.id:
        return Equivalence(Verdict.EQUIVALENT, "identical", "the sinks' sub-DAGs are identical")
    ops_a, ops_b = a.by_id(), b.by_id()
    leaves = a.ancestors(sink_a.id) & b.ancestors(sink_b.id)
    # The common top: pairs of equal operators, sink first, each with one differing input.
    chain: list[tuple[Operator, Operator]] = []
    x, y = sink_a, sink_b
    while _same_operator(x, y) and len(x.inputs) == len(y.inputs):
        differing = [k for k, (i, j) in enumerate(zip(x.inputs, y.inputs, strict=True)) if i != j]
        if len(differing) != 1:
            break
        chain.append((x, y))
        k = differing[0]
        x, y = ops_a[x.inputs[k]], ops_b[y.inputs[k]]
    # Grow the minimal segment (x, y) upward while the verifier models the operators.
    top_a, top_b = x, y
    blocked: Operator | None = None
    for upper_a, upper_b in reversed(chain):
        if not supported(upper_a, semantics):
            blocked = upper_a
            break
        top_a, top_b = upper_a, upper_b
    segment_a = _segment(a, top_a.id, leaves)
    segment_b = _segment(b, top_b.id, leaves)
    try:
        result = compare(ops_a, top_a.id, ops_b, top_b.id, leaves, semantics)
    except Unsupported as e:
        return Equivalence(Verdict.UNKNOWN, "smt", str(e), segment_a, segment_b)
    if result.equivalent:
        return Equivalence(Verdict.EQUIVALENT, "smt", result.reason, segment_a, segment_b)
    if blocked is not None:
        reason = (
            f"the covering segment differs ({result.reason}), but {blocked.describe()} above it "
            "is not modelled and may hide the difference"
        )
        return Equivalence(
            Verdict.UNKNOWN, "smt", reason, segment_a, segment_b, result.counterexample
        )
    return Equivalence(
        Verdict.NOT_EQUIVALENT,
        "smt",
        result.reason,
        segment_a,
        segment_b,
        result.counterexample,
    )
