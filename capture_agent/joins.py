"""The joins whose result rows are no fresh product of their two sides: a left semi join keeps a
left row with the right rows that matched it as its witnesses (SemiJoinSpec), and a left anti
join keeps the left rows no right row matched while recording each row it excluded with one right
row that matched it (AntiJoinSpec; docs/capture.md). TrackedFrame.join calls them after checking
the join type and taking the right side's ids."""

from __future__ import annotations

from typing import TYPE_CHECKING

from capture_agent.frame import TrackedFrame, context_of, materialize, same_nodes
from capture_agent.taps import HIDDEN_PREFIX, ID, AntiJoinSpec, SemiJoinSpec

if TYPE_CHECKING:
    from collections.abc import Callable

    from pyspark.sql import Column, DataFrame

__all__ = ["anti_join", "semi_join"]


def _per_left_row(
    left: DataFrame,
    right: DataFrame,
    on: str | list[str] | Column | None,
    how: str,
    combine: Callable[[Column], Column],
    name: str,
) -> DataFrame:
    """Each left row once, with ``combine`` of the ids of the right rows that match it, as
    column ``name``. Joined on names: the right side's ids combined per key, joined to the left
    rows (keys first, as Spark's semi and anti joins on names put them). On a condition: the
    join's pairs, grouped back by a per-row number of the left side."""
    from pyspark.sql import functions as F

    right_col = HIDDEN_PREFIX + "right"
    names = [on] if isinstance(on, str) else on
    if isinstance(names, list) and all(isinstance(n, str) for n in names):
        per_key = right.groupBy(*names).agg(combine(F.col(right_col)).alias(name))
        return left.join(per_key, on=names, how=how)
    row = HIDDEN_PREFIX + "row"
    # The row number only tells rows apart (a union may repeat a provenance id).
    left = left.withColumn(row, F.monotonically_increasing_id())
    pairs = left.join(right, on=on, how=how)
    columns = [c for c in left.columns if c != row]
    grouped = pairs.groupBy(left[row]).agg(
        *[F.first(left[c]).alias(c) for c in columns],
        combine(right[right_col]).alias(name),
    )
    return grouped.select(*columns, name)


def semi_join(
    frame: TrackedFrame, right: DataFrame, on: str | list[str] | Column | None
) -> TrackedFrame:
    """A left semi join that keeps, per kept row, the ids of the right rows that matched it
    (its witnesses): the inner join's matches collected per left row."""
    from pyspark.sql import functions as F

    ctx = context_of(frame)
    left_col = HIDDEN_PREFIX + "left"
    witnesses = HIDDEN_PREFIX + "witnesses"
    left = materialize(frame).withColumnRenamed(ID, left_col)
    kept = _per_left_row(left, right, on, "inner", F.collect_list, witnesses)
    key = ctx.next_key("semijoin")
    kept = kept.withColumn(ID, ctx.node_id(key, F.col(left_col)))
    hidden = {"left": F.col(left_col), "witnesses": F.col(witnesses)}
    return TrackedFrame(ctx, kept, SemiJoinSpec(key=key), hidden)


def anti_join(
    frame: TrackedFrame, right: DataFrame, on: str | list[str] | Column | None
) -> TrackedFrame:
    """A left anti join that also records the rows it excludes: every left row meets the
    smallest id of the right rows that match it (a left outer join, one row per left row), the
    capture point records the rows with a match (AntiJoinSpec), and only the rows without one
    are kept, with their provenance. Same rows and columns as Spark's anti join (keys first
    when joined on names), in the same job."""
    from pyspark.sql import functions as F

    ctx = context_of(frame)
    match = HIDDEN_PREFIX + "match"
    joined = _per_left_row(materialize(frame), right, on, "left", F.min, match)
    key = ctx.next_key("antijoin")
    hidden = {
        "id": ctx.node_id(key, F.col(ID)),
        "left": F.col(ID),
        "right": F.col(match),
    }
    tapped = ctx.apply_tap(joined, AntiJoinSpec(key=key), hidden, ctx.split_for())
    return same_nodes(frame, tapped.filter(F.col(match).isNull()).drop(match))
