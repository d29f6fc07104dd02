"""Window aggregates over a whole partition (``F.sum("x").over(Window.partitionBy("k"))``).

Per partition and aggregated column one AGGREGATE node, fed by a TENSOR per member (the member's
p-node and a VALUE node of its value), exactly as for a group; there is no DELTA, as no row is
merged. Each output row gets a TIMES node of its own row and its partition's AGGREGATE nodes: the
value is part of the row, and the row is gone when either is. The partition id is a hash of the
partition key computed before Spark's shuffle, so, as for groups, the members' side and the rows'
side derive the same AGGREGATE ids without a per-partition member list. Ranking functions need no
node: the row keeps its provenance. Running and sliding frames (each row its own frame) are
refused: their exact graph is quadratic in the partition size.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from capture_agent.frame import context_of, fresh, materialize
from capture_agent.plans import WindowAggregate
from capture_agent.taps import HIDDEN_PREFIX, ID, MemberSpec, WindowRowSpec

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

    from capture_agent.frame import TrackedFrame

__all__ = ["capture_window_aggregates"]

_PARTITION = HIDDEN_PREFIX + "partition"
_FIRST = HIDDEN_PREFIX + "first"


def capture_window_aggregates(
    frame: TrackedFrame,
    build: Callable[[DataFrame], DataFrame],
    aggregates: list[WindowAggregate],
) -> TrackedFrame:
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    session = context_of(frame)
    key = session.next_key("window")
    hash_inputs: list[Column] = []
    for sql in aggregates[0].partition_sql:
        hash_inputs += [F.expr(sql), F.expr(sql).isNull()]
    members = materialize(frame).withColumn(_PARTITION, session.node_id(key, *hash_inputs))
    member_hidden: dict[str, Column] = {"id": F.col(ID), "group": F.col(_PARTITION)}
    for i, aggregate in enumerate(aggregates):
        member_hidden[f"x{i}"] = session.kept_value(F.expr(aggregate.input_sql))
    spec = MemberSpec(key=key + ":members", aggregates=len(aggregates), group_key=key, delta=False)
    members = session.apply_tap(members, spec, member_hidden)

    rows = build(members)
    # One row per partition publishes the AGGREGATE nodes (same partitioning as the user's
    # window, so Spark needs no further shuffle).
    first = Window.partitionBy(F.col(_PARTITION)).orderBy(F.col(ID))
    rows = rows.withColumn(_FIRST, F.row_number().over(first) == 1)
    hidden: dict[str, Column] = {"group": F.col(_PARTITION), "first": F.col(_FIRST)}
    for i, aggregate in enumerate(aggregates):
        hidden[f"x{i}"] = F.col(f"`{aggregate.column}`").cast("string")
    row_spec = WindowRowSpec(
        key=key, functions=tuple(a.function for a in aggregates), group_key=key
    )
    return fresh(frame, rows, row_spec, extra=hidden)
