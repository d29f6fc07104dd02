"""Tracked DataFrames: the user's operations, each extended with its provenance.

A :class:`TrackedFrame` wraps a DataFrame that carries one hidden column, ``__sp_id``: the id of
each row's provenance node, computed by Spark (``xxhash64`` of run, operator and parent ids, so a
re-executed task yields the same ids). An operator that makes fresh nodes (join, group, named
relation) leaves them *pending*; they are tapped (published) when the frame is used further, so
that ``.named()`` can still put the relation name and values on those very nodes.

Operations sparkprov does not capture raise :class:`UnsupportedOperation` naming them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from capture_agent.errors import UnsupportedOperation
from capture_agent.taps import (
    HIDDEN_PREFIX,
    ID,
    GroupSpec,
    JoinSpec,
    MemberSpec,
    PlusSpec,
    TapSpec,
)

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, Row

    from capture_agent.session import ProvenanceSession

__all__ = ["TrackedFrame", "TrackedGroupedData"]

_SUPPORTED_JOINS = {"inner"}


def _visible(df: DataFrame) -> list[str]:
    return [c for c in df.columns if not c.startswith(HIDDEN_PREFIX)]


class TrackedFrame:
    """A DataFrame whose rows know their provenance. Build one with ``ProvenanceSession.source``."""

    def __init__(
        self,
        session: ProvenanceSession,
        df: DataFrame,
        pending: TapSpec | None = None,
        hidden: dict[str, Column] | None = None,
    ) -> None:
        self._session = session
        self._df = df
        # The tap that still has to publish this frame's fresh nodes, with the columns it reads.
        self._pending = pending
        self._hidden = hidden or {}
        self._done: DataFrame | None = None

    # -- plumbing -------------------------------------------------------------------------

    def _materialized(self) -> DataFrame:
        """The frame with its pending tap applied and only visible columns plus ``__sp_id``."""
        if self._done is None:
            df = self._df
            if self._pending is not None:
                df = self._session._apply_tap(df, self._pending, self._hidden)
            self._done = df.select(*_visible(df), ID)
        return self._done

    def _derive(self, df: DataFrame) -> TrackedFrame:
        return TrackedFrame(self._session, df)

    @property
    def columns(self) -> list[str]:
        return _visible(self._df)

    @property
    def df(self) -> DataFrame:
        """The plain DataFrame: lineage of what it computes is captured, of later steps not."""
        return self._materialized().drop(ID)

    def __getitem__(self, item: str) -> Column:
        if item.startswith(HIDDEN_PREFIX):
            raise KeyError(item)
        return self._materialized()[item]

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        from pyspark.sql import DataFrame

        if name in _visible(self._df):
            return self._materialized()[name]
        if hasattr(DataFrame, name):
            raise UnsupportedOperation(
                f"DataFrame.{name}",
                "this operation is not captured yet; use one of filter/where, select, withColumn,"
                " join (inner), groupBy().agg, union, distinct, or call .df to leave tracking",
            )
        raise AttributeError(f"{type(self).__name__} has no attribute {name!r}")

    # -- naming ---------------------------------------------------------------------------

    def named(self, relation: str) -> TrackedFrame:
        """Name this frame's rows as ``relation``: each row gets a node with the name and values."""
        if not relation:
            raise ValueError("relation name must not be empty")
        attributes = tuple(self.columns)
        if self._pending is not None:
            spec = _renamed(self._pending, relation, attributes)
            return TrackedFrame(self._session, self._df, spec, self._hidden)
        from pyspark.sql import functions as F

        key = self._session._next_key(f"named:{relation}")
        df = self._materialized().withColumn(HIDDEN_PREFIX + "parent", F.col(ID))
        df = df.withColumn(ID, self._session._node_id(key, F.col(HIDDEN_PREFIX + "parent")))
        spec = PlusSpec(key=key, relation=relation, attributes=attributes)
        return TrackedFrame(self._session, df, spec, {"parent": F.col(HIDDEN_PREFIX + "parent")})

    # -- row-preserving operators ---------------------------------------------------------

    def filter(self, condition: Column | str) -> TrackedFrame:
        return self._derive(self._materialized().filter(condition))

    where = filter

    def select(self, *cols: Column | str | Sequence[Column | str]) -> TrackedFrame:
        flat: list[Column | str] = []
        for c in cols:
            if isinstance(c, list | tuple):
                flat.extend(c)
            else:
                flat.append(c)  # type: ignore[arg-type]
        expanded: list[Column | str] = []
        for c in flat:
            if isinstance(c, str) and c == "*":
                expanded.extend(self.columns)
            elif isinstance(c, str) and c.startswith(HIDDEN_PREFIX):
                raise ValueError(f"column {c!r} is reserved for provenance")
            else:
                expanded.append(c)
        return self._derive(self._materialized().select(*expanded, ID))

    def withColumn(self, name: str, col: Column) -> TrackedFrame:  # noqa: N802 - Spark's name
        if name.startswith(HIDDEN_PREFIX):
            raise ValueError(f"column {name!r} is reserved for provenance")
        return self._derive(self._materialized().withColumn(name, col))

    def union(self, other: TrackedFrame) -> TrackedFrame:
        """Bag union: every row keeps its provenance."""
        left = self._materialized()
        right = other._materialized()
        return self._derive(
            left.select(*_visible(left), ID).union(right.select(*_visible(right), ID))
        )

    # -- operators that make fresh nodes ---------------------------------------------------

    def join(
        self,
        other: TrackedFrame,
        on: str | list[str] | Column | None = None,
        how: str = "inner",
    ) -> TrackedFrame:
        """Inner join: each result row is a TIMES node of its two input rows."""
        if not isinstance(other, TrackedFrame):
            raise TypeError("join() needs another TrackedFrame; track it with prov.source()")
        if how not in _SUPPORTED_JOINS:
            raise UnsupportedOperation(f"join(how={how!r})", "only inner joins are captured yet")
        if on is None:
            raise UnsupportedOperation("join without a condition (a cross join)")
        from pyspark.sql import functions as F

        left_col, right_col = HIDDEN_PREFIX + "left", HIDDEN_PREFIX + "right"
        left = self._materialized().withColumnRenamed(ID, left_col)
        right = other._materialized().withColumnRenamed(ID, right_col)
        joined = left.join(right, on=on, how=how)
        key = self._session._next_key("join")
        joined = joined.withColumn(
            ID, self._session._node_id(key, F.col(left_col), F.col(right_col))
        )
        spec = JoinSpec(key=key)
        return TrackedFrame(
            self._session,
            joined,
            spec,
            {"left": F.col(left_col), "right": F.col(right_col)},
        )

    def groupBy(self, *cols: str | Column) -> TrackedGroupedData:  # noqa: N802 - Spark's name
        return TrackedGroupedData(self, list(cols))

    groupby = groupBy

    def agg(self, *exprs: Column) -> TrackedFrame:
        """Aggregation over the whole frame: one group."""
        return TrackedGroupedData(self, []).agg(*exprs)

    def distinct(self) -> TrackedFrame:
        """One DELTA node per distinct row, fed by all its duplicates."""
        return TrackedGroupedData(self, list(self.columns))._aggregate([])

    # -- actions --------------------------------------------------------------------------

    def collect(self) -> list[Row]:
        return self.df.collect()

    def count(self) -> int:
        return self.df.count()

    def toPandas(self) -> Any:  # noqa: N802 - Spark's name
        return self.df.toPandas()

    def show(self, n: int = 20, truncate: bool | int = True) -> None:
        self.df.show(n, truncate)


def _renamed(spec: TapSpec, relation: str, attributes: tuple[str, ...]) -> TapSpec:
    from dataclasses import replace

    return replace(spec, relation=relation, attributes=attributes)


class TrackedGroupedData:
    """``TrackedFrame.groupBy(...)``: aggregations whose groups become DELTA nodes."""

    def __init__(self, frame: TrackedFrame, keys: list[str | Column]) -> None:
        self._frame = frame
        self._keys = keys

    def agg(self, *exprs: Column) -> TrackedFrame:
        if not exprs:
            raise ValueError("agg() needs at least one aggregate expression")
        if any(isinstance(e, dict) for e in exprs):
            raise UnsupportedOperation(
                "agg({column: function}) with a dict", "pass Column expressions such as F.sum('x')"
            )
        return self._aggregate(list(exprs))

    def count(self) -> TrackedFrame:
        from pyspark.sql import functions as F

        return self._aggregate([F.count(F.lit(1)).alias("count")])

    def _aggregate(self, exprs: list[Column]) -> TrackedFrame:
        from pyspark.sql import functions as F

        session = self._frame._session
        base = self._frame._materialized()
        key = session._next_key("group")
        group_col = HIDDEN_PREFIX + "group"
        key_cols = [F.col(k) if isinstance(k, str) else k for k in self._keys]
        hash_inputs: list[Column] = []
        for k in key_cols:
            hash_inputs += [k, k.isNull()]  # so that (null, 'a') and ('a', null) differ
        members = base.withColumn(group_col, session._node_id(key, *hash_inputs))

        functions, inputs = _describe_aggregates(members, key_cols, exprs) if exprs else ([], [])
        member_hidden: dict[str, Column] = {"id": F.col(ID), "group": F.col(group_col)}
        for i, input_sql in enumerate(inputs):
            tensor = session._node_id(key, F.lit(i), F.lit("tensor"), F.col(ID))
            member_hidden[f"t{i}"] = tensor
            member_hidden[f"v{i}"] = session._node_id(key, F.lit(i), F.lit("value"), F.col(ID))
            member_hidden[f"g{i}"] = session._node_id(key, F.lit(i), F.col(group_col))
            member_hidden[f"x{i}"] = F.expr(input_sql).cast("string")
        member_spec = MemberSpec(key=key + ":members", aggregates=len(inputs))
        members = session._apply_tap(members, member_spec, member_hidden)

        if exprs:
            grouped = members.groupBy(*key_cols, F.col(group_col)).agg(*exprs)
        else:
            grouped = members.select(*_visible(base), group_col).distinct()
        visible = _visible(grouped)
        out = grouped.withColumn(ID, F.col(group_col))
        hidden: dict[str, Column] = {}
        agg_names = visible[len(visible) - len(exprs) :] if exprs else []
        for i, name in enumerate(agg_names):
            hidden[f"g{i}"] = session._node_id(key, F.lit(i), F.col(group_col))
            hidden[f"x{i}"] = F.col(name).cast("string")
        out = out.select(*visible, ID, *[c.alias(HIDDEN_PREFIX + n) for n, c in hidden.items()])
        hidden = {n: F.col(HIDDEN_PREFIX + n) for n in hidden}
        spec = GroupSpec(key=key, functions=tuple(functions))
        return TrackedFrame(session, out, spec, hidden)


def _describe_aggregates(
    members: DataFrame, key_cols: list[Column], exprs: list[Column]
) -> tuple[list[str], list[str]]:
    """The function name and input expression (SQL text) of each aggregate, from Spark's
    analyzed plan, so that any built-in aggregate is recognised as Spark itself resolves it."""
    probe = members.groupBy(*key_cols).agg(*exprs)
    try:
        plan = probe._jdf.queryExecution().analyzed()
        aggregate_exprs = plan.aggregateExpressions()
    except Exception as e:  # Spark Connect, or a plan that is not a plain Aggregate
        raise UnsupportedOperation(
            "this aggregation", "sparkprov needs classic (non-Connect) PySpark and plain aggregates"
        ) from e
    total = aggregate_exprs.size()
    functions: list[str] = []
    inputs: list[str] = []
    for i in range(total - len(exprs), total):
        expr = aggregate_exprs.apply(i)
        child = expr.child() if expr.getClass().getSimpleName() == "Alias" else expr
        if child.getClass().getSimpleName() != "AggregateExpression":
            raise UnsupportedOperation(
                f"aggregate expression {expr.sql()}",
                "each agg() column must be one aggregate function (compute on its result "
                "with a later withColumn)",
            )
        if child.isDistinct():
            raise UnsupportedOperation(f"distinct aggregate {expr.sql()}")
        function = child.aggregateFunction()
        args = function.children()
        if args.size() != 1:
            raise UnsupportedOperation(f"aggregate {expr.sql()} with {args.size()} inputs")
        functions.append(function.prettyName().upper())
        inputs.append(args.apply(0).sql())
    return functions, inputs
