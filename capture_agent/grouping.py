"""Aggregations and duplicate elimination: every group becomes a DELTA node.

No per-group member list is built: a member's group id is ``xxhash64`` of the grouping key,
computed before the shuffle, and the group's output row gets the very same id after it. So the
member -> group edges are tapped on the members (map side) and the DELTA and AGGREGATE nodes on
the groups, each where Spark already has the rows.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from capture_agent.errors import UnsupportedOperation
from capture_agent.frame import (
    TrackedFrame,
    context_of,
    function_params,
    materialize,
    materialize_with_origin,
    visible_columns,
)
from capture_agent.plans import (
    aggregate_kinds,
    composite_aggregates,
    describe_aggregates,
    distinct_aggregates,
)
from capture_agent.taps import HIDDEN_PREFIX, ID, GroupSpec, JoinSpec, MemberSpec
from capture_agent.workflow_dag import aggregate_params, recorded
from sparkprov.workflow import DagBuilder

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

__all__ = ["TrackedGroupedData"]

_GROUP = HIDDEN_PREFIX + "group"
# What the members' ids derive from: the join whose rows they are, or the source whose rows they
# are ("" if neither), and whether the join's rows travel with the members (the join then has no
# capture point of its own): capture_agent.frame.materialize_with_origin.
_Origin = tuple[JoinSpec | None, str, bool]


class TrackedGroupedData:
    """``TrackedFrame.groupBy(...)``: aggregations whose groups become DELTA nodes."""

    def __init__(
        self,
        frame: TrackedFrame,
        keys: list[str | Column],
        sets: list[tuple[int, ...]] | None = None,
    ) -> None:
        self._frame = frame
        self._keys = keys
        # rollup/cube: the grouping sets, as indexes into ``keys`` (then all keys are names).
        self._sets = sets

    @property
    def dag_node(self) -> int | None:
        return self._frame.dag_node

    def dag_builder(self) -> DagBuilder:
        return self._frame.dag_builder()

    def visible_schema(self) -> list[tuple[str, str]]:
        return self._frame.visible_schema()

    def _params(self, *exprs: Column) -> dict[str, str]:
        """The aggregation's keys and aggregates as Spark analyzes them (workflow DAG)."""
        keys = [self._keys[i] for i in range(len(self._keys))]
        params = aggregate_params(materialize(self._frame).groupBy(*keys).agg(*exprs))
        if self._sets is not None:
            params["sets"] = json.dumps(self._sets)
        return params

    def _simple_params(self, function: str, cols: tuple[str, ...]) -> dict[str, str]:
        from pyspark.sql import functions as F

        names = cols or tuple(self._frame.columns)
        return self._params(*[getattr(F, function)(c).alias(f"{function}({c})") for c in names])

    @recorded("aggregate", lambda self, *exprs: self._params(*exprs))
    def agg(self, *exprs: Column) -> TrackedFrame:
        if not exprs:
            raise ValueError("agg() needs at least one aggregate expression")
        if any(isinstance(e, dict) for e in exprs):
            raise UnsupportedOperation(
                "agg({column: function}) with a dict", "pass Column expressions such as F.sum('x')"
            )
        if self._sets is None:
            # Spark's analysis of the plain aggregation, once, says which rewrite applies.
            plain = materialize(self._frame).groupBy(*self._keys).agg(*exprs)
            kinds = aggregate_kinds(plain, len(exprs))
            if len(set(kinds)) > 1:  # distinct aggregates beside plain ones, or over others
                return aggregate_by_kind(self._frame, list(self._keys), list(exprs), kinds)
            rewritten = self._composite(plain, list(exprs))
            names = [k for k in self._keys if isinstance(k, str)]
            if rewritten is None and len(names) == len(self._keys):
                rewritten = self._distinct(plain, names, list(exprs))
            if rewritten is not None:
                return rewritten
        return self._aggregate(list(exprs))

    def _composite(self, plain: DataFrame, exprs: list[Column]) -> TrackedFrame | None:
        """Columns computed on aggregates (``sum(x) * 0.5``, ``sum(a) / count(b)``): the
        aggregates inside them are aggregated as usual (an AGGREGATE node each), then the
        columns are computed on the group's row, a projection that keeps its provenance. None:
        every column is one aggregate."""
        from pyspark.sql import functions as F

        described = composite_aggregates(plain, len(exprs))
        if described is None:
            return None
        keys = plain.columns[: -len(exprs)]
        names = plain.columns[-len(exprs) :]
        inner = list(dict.fromkeys(sql for sql, parts in described for sql in parts or [sql]))
        temporary = [f"aggregate_input_{i}" for i in range(len(inner))]
        clash = sorted(set(temporary) & set(plain.columns))
        if clash:
            raise UnsupportedOperation(f"aggregates computed on, over columns named {clash}")
        # through agg(): the inner aggregates may be distinct ones
        grouped = self.agg(*[F.expr(sql).alias(t) for sql, t in zip(inner, temporary, strict=True)])
        by_sql = dict(zip(inner, temporary, strict=True))
        columns = []
        for (sql, parts), name in zip(described, names, strict=True):
            text = sql
            for part in sorted(parts or [sql], key=len, reverse=True):
                text = text.replace(part, f"`{by_sql[part]}`")
            columns.append(F.expr(text).alias(name))
        return grouped.select(*[F.col(f"`{k}`") for k in keys], *columns)

    def _distinct(
        self, plain: DataFrame, keys: list[str], exprs: list[Column]
    ) -> TrackedFrame | None:
        """Distinct aggregates (``count(DISTINCT x)``, ``sum(DISTINCT x)``...) as their
        definition: the distinct rows of (keys, inputs), a DELTA node each, then the plain
        aggregate over them. A group's members are then those distinct rows, each derived from
        every input row that has its values (its provenance is theirs under δ). None: no
        distinct aggregate here."""
        from pyspark.sql import functions as F

        described = distinct_aggregates(plain, len(exprs))
        if described is None:
            return None
        names = plain.columns[-len(exprs) :]
        inputs = described[0][1]
        taken = set(self._frame.columns)
        columns = [f"distinct_input_{i}" for i in range(len(inputs))]
        if taken & set(columns):
            clash = sorted(taken & set(columns))
            raise UnsupportedOperation(f"distinct aggregates over a frame with columns {clash}")
        rows = self._frame.select(
            *keys, *[F.expr(sql).alias(c) for sql, c in zip(inputs, columns, strict=True)]
        ).distinct()
        order = {sql: c for sql, c in zip(inputs, columns, strict=True)}
        aggregates = []
        for (function, args), name in zip(described, names, strict=True):
            own = [F.col(order[a]) for a in args]
            if len(own) == 1:
                column = own[0]
            else:  # count(DISTINCT a, b): rows whose inputs are all non-null
                present = own[0].isNotNull()
                for c in own[1:]:
                    present = present & c.isNotNull()
                column = F.when(present, F.lit(1))
            aggregates.append(_call(function, column).alias(name))
        return TrackedGroupedData(rows, list(keys)).agg(*aggregates)

    @recorded("aggregate", lambda self: self._count_params())
    def count(self) -> TrackedFrame:
        from pyspark.sql import functions as F

        return self._aggregate([F.count(F.lit(1)).alias("count")])

    def _count_params(self) -> dict[str, str]:
        from pyspark.sql import functions as F

        return self._params(F.count(F.lit(1)).alias("count"))

    def _simple(self, function: str, cols: tuple[str, ...]) -> TrackedFrame:
        from pyspark.sql import functions as F

        names = cols or tuple(self._frame.columns)
        return self._aggregate([getattr(F, function)(c).alias(f"{function}({c})") for c in names])

    @recorded("aggregate", lambda self, *cols: self._simple_params("sum", cols))
    def sum(self, *cols: str) -> TrackedFrame:
        return self._simple("sum", cols)

    @recorded("aggregate", lambda self, *cols: self._simple_params("avg", cols))
    def avg(self, *cols: str) -> TrackedFrame:
        return self._simple("avg", cols)

    mean = avg

    @recorded("aggregate", lambda self, *cols: self._simple_params("min", cols))
    def min(self, *cols: str) -> TrackedFrame:
        return self._simple("min", cols)

    @recorded("aggregate", lambda self, *cols: self._simple_params("max", cols))
    def max(self, *cols: str) -> TrackedFrame:
        return self._simple("max", cols)

    @recorded("apply_in_pandas", lambda self, func, schema: function_params(func))
    def applyInPandas(  # noqa: N802 - Spark's name
        self, func: Callable[..., Any], schema: Any
    ) -> TrackedFrame:
        """A BLACK_BOX node per output row, labelled with the function's name, fed by every
        input row of its group (see capture_agent.pandas_functions)."""
        from capture_agent.pandas_functions import apply_in_pandas

        if self._sets is not None:
            raise UnsupportedOperation("applyInPandas after rollup/cube", "use groupBy")
        return apply_in_pandas(self._frame, self._keys, func, schema)

    def __getattr__(self, name: str) -> TrackedFrame:
        raise UnsupportedOperation(
            f"GroupedData.{name}", "use groupBy().agg() with built-in aggregate functions"
        )

    # -- the shared machinery -------------------------------------------------------------

    def _members(self) -> tuple[DataFrame, str, list[Column], _Origin]:
        from pyspark.sql import functions as F

        session = context_of(self._frame)
        key = session.next_key("group")
        key_cols = [F.col(k) if isinstance(k, str) else k for k in self._keys]
        hash_inputs: list[Column] = []
        for k in key_cols:
            hash_inputs += [k, k.isNull()]  # so that (null, 'a') and ('a', null) differ
        frame, join, origin, folded = materialize_with_origin(self._frame, session.split_for())
        members = frame.withColumn(_GROUP, session.node_id(key, *hash_inputs))
        return members, key, key_cols, (join, origin, folded)

    def _member_tap(
        self,
        members: DataFrame,
        key: str,
        origin: _Origin,
        values: dict[str, Column],
        aggregates: int = 0,
        value_of: tuple[int, ...] = (),
    ) -> DataFrame:
        """``members`` with the member tap of group ``key``; its members travel as the positions
        they derive from where :meth:`_members` found them (a join's pairs, a source's rows)."""
        from pyspark.sql import functions as F

        session = context_of(self._frame)
        hidden: dict[str, Column] = {"id": F.col(ID), "group": F.col(_GROUP), **values}
        spec = MemberSpec(
            key=key + ":members", aggregates=aggregates, group_key=key, value_of=value_of
        )
        join, source, folded = origin
        if join is not None:
            hidden["left"] = F.col(HIDDEN_PREFIX + "left")
            hidden["right"] = F.col(HIDDEN_PREFIX + "right")
            spec = replace(spec, pair_key=join.key, origins=join.origins, join_rows=folded)
        elif source:
            spec = replace(spec, origins=(source,))
        return session.apply_tap(members, spec, hidden)

    def _aggregate(self, exprs: list[Column]) -> TrackedFrame:
        from pyspark.sql import functions as F

        if self._sets is not None:
            return self._aggregate_sets(exprs)
        session = context_of(self._frame)
        members, key, key_cols, origin = self._members()
        functions, inputs = describe_aggregates(members.groupBy(*key_cols).agg(*exprs), len(exprs))

        # Aggregates of one input (sum(amount), avg(amount)) share its value input.
        distinct = list(dict.fromkeys(inputs))
        value_of = tuple(distinct.index(sql) for sql in inputs)
        values = {f"x{k}": session.kept_value(F.expr(sql)) for k, sql in enumerate(distinct)}
        shared = value_of if len(distinct) < len(inputs) else ()
        members = self._member_tap(members, key, origin, values, len(inputs), shared)

        if key_cols:
            grouped = members.groupBy(*key_cols, F.col(_GROUP)).agg(*exprs)
        else:  # over the whole frame: one row even of no members, as Spark gives (its DELTA
            # then has no parents), with the id every member computed
            grouped = members.agg(*exprs).withColumn(_GROUP, session.node_id(key))
        visible = visible_columns(grouped)
        hidden: dict[str, Column] = {}
        for i, name in enumerate(visible[len(visible) - len(exprs) :]):
            hidden[f"x{i}"] = F.col(name).cast("string")
        out = grouped.select(
            *visible,
            F.col(_GROUP).alias(ID),
            *[c.alias(HIDDEN_PREFIX + n) for n, c in hidden.items()],
        )
        spec = GroupSpec(key=key, functions=tuple(functions))
        return TrackedFrame(session, out, spec, {n: F.col(HIDDEN_PREFIX + n) for n in hidden})

    def _aggregate_sets(self, exprs: list[Column]) -> TrackedFrame:
        """rollup/cube: every member row joins one group per grouping set (as Spark's Expand
        does), whose id hashes the set's index and its key values, so a subtotal row is a group
        of its own even where a key value is null; one DELTA and one AGGREGATE per aggregated
        column per group, all in one pass over the members."""
        from pyspark.sql import functions as F

        assert self._sets is not None
        session = context_of(self._frame)
        frame = materialize(self._frame)
        names = [str(k) for k in self._keys]
        functions, inputs = describe_aggregates(frame.groupBy(*names).agg(*exprs), len(exprs))
        key = session.next_key("grouping_sets")
        set_col = HIDDEN_PREFIX + "set"
        masked = [f"{HIDDEN_PREFIX}k{i}" for i in range(len(names))]
        members = frame.withColumn(
            set_col, F.explode(F.array(*[F.lit(i) for i in range(len(self._sets))]))
        )
        # Keys outside the row's grouping set are null in its group (the originals stay for the
        # aggregate inputs).
        for i, name in enumerate(names):
            inside = [s for s, subset in enumerate(self._sets) if i in subset]
            members = members.withColumn(
                masked[i], F.when(F.col(set_col).isin(inside), F.col(name))
            )
        hash_inputs: list[Column] = [F.col(set_col)]
        for m in masked:
            hash_inputs += [F.col(m), F.col(m).isNull()]
        members = members.withColumn(_GROUP, session.node_id(key, *hash_inputs))
        member_hidden: dict[str, Column] = {"id": F.col(ID), "group": F.col(_GROUP)}
        for i, input_sql in enumerate(inputs):
            member_hidden[f"x{i}"] = session.kept_value(F.expr(input_sql))
        member_spec = MemberSpec(key=key + ":members", aggregates=len(inputs), group_key=key)
        members = session.apply_tap(members, member_spec, member_hidden)

        grouped = members.groupBy(*masked, _GROUP).agg(*exprs)
        results = [f"{HIDDEN_PREFIX}v{j}" for j in range(len(exprs))]
        aggregated = visible_columns(grouped)
        values = [f"{HIDDEN_PREFIX}x{j}" for j in range(len(exprs))]
        out = grouped.toDF(*masked, _GROUP, *results).select(
            *masked,
            *results,
            F.col(_GROUP).alias(ID),
            *[F.col(r).cast("string").alias(v) for r, v in zip(results, values, strict=True)],
        )
        out = out.toDF(*names, *aggregated, ID, *values)
        spec = GroupSpec(key=key, functions=tuple(functions))
        hidden = {f"x{j}": F.col(v) for j, v in enumerate(values)}
        return TrackedFrame(session, out, spec, hidden)

    def deduplicate(self) -> TrackedFrame:
        """dropDuplicates(keys): one DELTA per key value, fed by every duplicate."""
        from pyspark.sql import functions as F

        session = context_of(self._frame)
        members, key, _, origin = self._members()
        members = self._member_tap(members, key, origin, {})
        kept = members.dropDuplicates([_GROUP])  # the group id hashes the keys
        out = kept.select(*visible_columns(kept), F.col(_GROUP).alias(ID))
        return TrackedFrame(session, out, GroupSpec(key=key))


def aggregate_by_kind(
    frame: TrackedFrame, keys: list[Any], aggregates: list[Column], kinds: list[str]
) -> TrackedFrame:
    """``groupBy(keys).agg(aggregates)`` where the aggregates are of several kinds (``kinds``:
    plain "", or the inputs of their distinct aggregates): one tracked grouping per kind, its
    groups' rows joined on the keys (null-safe), so each result row is TIMES of its group in
    every grouping; the columns in the order asked."""
    from pyspark.sql import functions as F

    buckets: dict[str, list[int]] = {}
    for i, kind in enumerate(kinds):
        buckets.setdefault(kind, []).append(i)
    frame = frame.localCheckpoint()  # read once per kind: its taps publish once
    out: TrackedFrame | None = None
    names: list[str] = []
    key_names: list[str] = []
    built: dict[int, str] = {}  # aggregate index -> its column in ``out``
    for b, members in enumerate(buckets.values()):
        part = frame.groupBy(*keys).agg(*[aggregates[i] for i in members])
        columns = list(part.columns)
        renamed = [f"_sparkprov_g{b}_{i}" for i in range(len(keys))]
        values = [f"_sparkprov_a{i}" for i in members]
        built.update(zip(members, columns[len(keys) :], strict=True))
        part = part.select(
            *[F.col(f"`{c}`").alias(r) for c, r in zip(columns, renamed, strict=False)],
            *[F.col(f"`{c}`").alias(v) for c, v in zip(columns[len(keys) :], values, strict=True)],
        )
        if out is None:
            out, names, key_names = part, renamed, columns[: len(keys)]
        elif keys:
            on = F.lit(True)
            for mine, theirs in zip(names, renamed, strict=True):
                on = on & F.col(f"`{mine}`").eqNullSafe(F.col(f"`{theirs}`"))
            out = out.join(part, on=on, how="inner").drop(*renamed)
        else:  # one row each
            out = out.crossJoin(part)
    assert out is not None
    return out.select(
        *[F.col(f"`{n}`").alias(k) for n, k in zip(names, key_names, strict=True)],
        *[F.col(f"`_sparkprov_a{i}`").alias(built[i]) for i in range(len(aggregates))],
    )


def _call(function: str, column: Column) -> Column:
    """Spark's aggregate function ``function`` (a prettyName, upper case) of one column."""
    from pyspark.sql import functions as F

    names = {"MEAN": "avg", "AVG": "avg"}
    builder = getattr(F, names.get(function, function.lower()), None)
    if builder is None:
        raise UnsupportedOperation(f"distinct aggregate {function}")
    return builder(column)  # type: ignore[no-any-return]
