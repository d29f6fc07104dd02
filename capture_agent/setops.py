"""Set operations between two tracked frames: intersect, subtract, exceptAll.

Semantics (documented in docs/capture.md):

- ``intersect`` (SQL INTERSECT DISTINCT) is a join on all columns (nulls equal) followed by
  duplicate elimination: every pair (a, b) of equal rows of the two sides is a TIMES node fed by a
  and b, and each distinct result row is a DELTA node fed by all its pairs, δ(Σ a·b). A row is
  therefore deleted when all its copies on either side are.
- ``subtract`` (EXCEPT DISTINCT) keeps the left rows no right row equals, then eliminates
  duplicates: a DELTA node fed by every left copy of the row, δ(Σ a).
- ``exceptAll`` (EXCEPT ALL, bag difference) keeps, of n left copies of a row and m right copies,
  the n - m left copies with the largest provenance ids; each kept row keeps its own provenance.

Limitation: MODEL.md's semiring has no difference (monus). A difference's result depends on the
*absence* of the right rows, which no edge of a positive provenance graph can express: deleting a
right row could make a result row appear. So the right side's rows are not part of a subtract's or
exceptAll's provenance; a trace shows which left rows a result row came from, not why the right
side did not remove it.
"""

from __future__ import annotations

import functools
import operator
from typing import TYPE_CHECKING

from capture_agent.errors import UnsupportedOperation
from capture_agent.frame import (
    TrackedFrame,
    context_of,
    materialize,
    same_nodes,
    tracked_frame,
    visible_columns,
)
from capture_agent.taps import HIDDEN_PREFIX, ID, JoinSpec

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

__all__ = ["except_all", "intersect", "subtract"]

_LEFT = HIDDEN_PREFIX + "left"
_RIGHT = HIDDEN_PREFIX + "right"


def _sides(
    left: TrackedFrame, other: object, operation: str
) -> tuple[DataFrame, DataFrame, list[str], Column]:
    """Both sides with positional hidden column names, the visible names and the null-safe
    equality of all columns."""
    right = tracked_frame(other, operation)
    ldf, rdf = materialize(left), materialize(right)
    names = visible_columns(ldf)
    if len(set(names)) != len(names):
        raise UnsupportedOperation(
            f"{operation} of a frame with repeated column names {names}", "rename them first"
        )
    # Let Spark check arity and type compatibility and raise its own error.
    getattr(ldf.drop(ID), "exceptAll" if operation == "exceptAll" else operation)(rdf.drop(ID))
    lnames = [f"{HIDDEN_PREFIX}l{i}" for i in range(len(names))]
    rnames = [f"{HIDDEN_PREFIX}r{i}" for i in range(len(names))]
    ldf = ldf.toDF(*lnames, _LEFT)
    rdf = rdf.toDF(*rnames, _RIGHT)
    equal = functools.reduce(
        operator.and_, [ldf[a].eqNullSafe(rdf[b]) for a, b in zip(lnames, rnames, strict=True)]
    )
    return ldf, rdf, names, equal


def intersect(left: TrackedFrame, other: object) -> TrackedFrame:
    from pyspark.sql import functions as F

    session = context_of(left)
    ldf, rdf, names, equal = _sides(left, other, "intersect")
    key = session.next_key("intersect")
    pairs = ldf.join(rdf, equal, "inner")
    pairs = pairs.withColumn(ID, session.node_id(key, F.col(_LEFT), F.col(_RIGHT)))
    pairs = pairs.select(*ldf.columns[: len(names)], _LEFT, _RIGHT, ID).toDF(
        *names, _LEFT, _RIGHT, ID
    )
    hidden = {"left": F.col(_LEFT), "right": F.col(_RIGHT)}
    return TrackedFrame(session, pairs, JoinSpec(key=key), hidden).distinct()


def subtract(left: TrackedFrame, other: object) -> TrackedFrame:
    ldf, rdf, names, equal = _sides(left, other, "subtract")
    kept = ldf.join(rdf, equal, "left_anti").toDF(*names, ID)
    return same_nodes(left, kept).distinct()


def except_all(left: TrackedFrame, other: object) -> TrackedFrame:
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    ldf, rdf, names, _ = _sides(left, other, "exceptAll")
    count, position = HIDDEN_PREFIX + "count", HIDDEN_PREFIX + "position"
    rnames = rdf.columns[: len(names)]
    counts = rdf.groupBy(*rnames).agg(F.count(F.lit(1)).alias(count))
    lnames = ldf.columns[: len(names)]
    equal = functools.reduce(
        operator.and_, [ldf[a].eqNullSafe(counts[b]) for a, b in zip(lnames, rnames, strict=True)]
    )
    joined = ldf.join(counts, equal, "left")
    # Which copies survive is a choice: those with the largest ids (deterministic). Positions
    # count the left copies of a row by ascending id; the first m are removed.
    copies = Window.partitionBy(*[ldf[c] for c in lnames]).orderBy(F.col(_LEFT))
    joined = joined.withColumn(position, F.row_number().over(copies))
    kept = joined.where(F.col(position) > F.coalesce(F.col(count), F.lit(0)))
    return same_nodes(left, kept.select(*lnames, _LEFT).toDF(*names, ID))
