"""Tracked DataFrames: the user's operations, each extended with its provenance.

A :class:`TrackedFrame` wraps a DataFrame that carries one hidden column, ``__sp_id``: the id of
each row's provenance node, computed by Spark (``xxhash64`` of run, operator and parent ids, so a
re-executed task yields the same ids). An operator that makes fresh nodes (join, group, named
relation) leaves them *pending*; they are tapped (published) when the frame is used further, so
that ``.named()`` can still put the relation name and values on those very nodes.

Operations sparkprov does not capture raise :class:`UnsupportedOperation` naming them.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from capture_agent.errors import UnsupportedOperation
from capture_agent.origin import internal_calls
from capture_agent.plans import inspect_projection
from capture_agent.taps import (
    HIDDEN_PREFIX,
    ID,
    BlackBoxSpec,
    ExplodeSpec,
    JoinSpec,
    PlusSpec,
    TapSpec,
)
from capture_agent.workflow_dag import (
    expression_sql,
    predicate_sql,
    recorded,
    udf_params,
)
from sparkprov.limits import check_name
from sparkprov.workflow import DagBuilder

_UNKEYED = itertools.count()  # keys of frames whose nodes no tap of the run made

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, DataFrameWriter, Row

    from capture_agent.context import CaptureContext
    from capture_agent.grouping import TrackedGroupedData
    from capture_agent.jvm import JvmList, JvmTaps

__all__ = [
    "TrackedFrame",
    "function_params",
    "context_of",
    "fresh",
    "materialize",
    "JOIN_ROWS_WITH_MEMBERS",
    "materialize_with_origin",
    "same_nodes",
    "tracked_frame",
    "visible_columns",
    "visible_then_id",
]

_JOINS = {
    "inner": "inner",
    "cross": "cross",
    "left": "left", "leftouter": "left", "left_outer": "left",
    "right": "right", "rightouter": "right", "right_outer": "right",
    "outer": "full", "full": "full", "fullouter": "full", "full_outer": "full",
    "semi": "left_semi", "leftsemi": "left_semi", "left_semi": "left_semi",
    "anti": "left_anti", "leftanti": "left_anti", "left_anti": "left_anti",
}  # fmt: skip

_PARENT = HIDDEN_PREFIX + "parent"


def visible_columns(df: DataFrame) -> list[str]:
    return [c for c in df.columns if not c.startswith(HIDDEN_PREFIX)]


def _check_name(name: str) -> None:
    if name.startswith(HIDDEN_PREFIX):
        raise ValueError(f"column {name!r} uses the prefix reserved for provenance")


class TrackedFrame:
    """A DataFrame whose rows know their provenance. Build one with ``ProvenanceSession.source``."""

    def __init__(
        self,
        ctx: CaptureContext,
        df: DataFrame,
        pending: TapSpec | None = None,
        hidden: dict[str, Column] | None = None,
    ) -> None:
        self._ctx = ctx
        self._df = df
        # The tap that still has to publish this frame's fresh nodes, with the columns it reads.
        self._pending = pending
        # Its split path, fixed where the frame is built (not where Spark later evaluates it).
        self._split = ctx.split_for(pending.relation) if pending is not None else ()
        self._hidden = hidden or {}
        self._done: DataFrame | None = None
        self._named = False
        # The operator of the workflow DAG that made this frame (capture_agent.workflow_dag).
        self.dag_node: int | None = None
        # The capture key of the source whose TOKEN ids the id column holds, if it holds a
        # source's rows as they are ("" if not): a join sends such a side as positions.
        self.origin = ""
        # The capture keys of the nodes the id column may hold (a frame whose nodes no tap of
        # this run made, such as a reused result, has a key of its own): a bag union whose sides
        # may hold the same node gives one side fresh nodes (``union``).
        self.id_keys: frozenset[str] = frozenset(
            {pending.key} if pending is not None else {f"?{next(_UNKEYED)}"}
        )

    # -- plumbing -------------------------------------------------------------------------

    @internal_calls
    def _materialized(self) -> DataFrame:
        """The frame with its pending tap applied and only visible columns plus ``__sp_id``."""
        if self._done is None:
            df = self._df
            if self._pending is not None:
                df = self._ctx.apply_tap(df, self._pending, self._hidden, self._split)
            jvm = self._ctx.jvm
            self._done = visible_then_id(df) if jvm is None else jvm.visible_then_id(df)
        return self._done

    def _derive(self, df: DataFrame) -> TrackedFrame:
        derived = TrackedFrame(self._ctx, df)
        derived.dag_node = self.dag_node  # an operator not recorded keeps the frame's
        derived.origin = self.origin  # the same nodes
        derived.id_keys = self.id_keys
        return derived

    def _apart_from(self, other: TrackedFrame) -> TrackedFrame:
        """This frame, or, where its id column may hold a node ``other``'s holds too, its rows as
        fresh PLUS nodes, each fed by its row: a bag union of the two then has a node per copy
        of a row that is on both sides, so an aggregate above has both as members (one node
        would be one member: a count or sum of the graph would take the row once where Spark
        takes it twice)."""
        if not self.id_keys & other.id_keys:
            return self
        spec = PlusSpec(key=self._ctx.next_key("union"))
        return self._fresh(self._materialized(), spec)

    def dag_builder(self) -> DagBuilder:
        return self._ctx.dag

    def visible_schema(self) -> list[tuple[str, str]]:
        """(name, Spark type) of the visible columns."""
        return [
            (f.name, f.dataType.simpleString())
            for f in self._df.schema.fields
            if not f.name.startswith(HIDDEN_PREFIX)
        ]

    def _fresh(
        self,
        df: DataFrame,
        spec: TapSpec,
        parent: Column | None = None,
        extra: dict[str, Column] | None = None,
    ) -> TrackedFrame:
        """Rows of ``df`` get a fresh node each, child of their current one (``spec``'s kind);
        ``extra`` are further lineage columns the tap reads."""
        from pyspark.sql import functions as F

        if parent is None and self.origin and isinstance(spec, PlusSpec):
            spec = replace(spec, origins=(self.origin,))  # the parents are a source's rows
        df = df.withColumn(_PARENT, parent if parent is not None else F.col(ID))
        df = df.withColumn(ID, self._ctx.node_id(spec.key, F.col(_PARENT)))
        out = TrackedFrame(self._ctx, df, spec, {"parent": F.col(_PARENT), **(extra or {})})
        out.dag_node = self.dag_node
        return out

    @property
    def columns(self) -> list[str]:
        return visible_columns(self._df)

    @property
    def schema(self) -> Any:
        return self.df.schema

    @property
    def df(self) -> DataFrame:
        """The plain DataFrame: lineage of what it computes is captured, of later steps not."""
        return self._materialized().drop(ID)

    def __getitem__(self, item: str) -> Column:
        _check_name(item)
        return self._materialized()[item]

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        from pyspark.sql import DataFrame

        if name in visible_columns(self._df):
            return self._materialized()[name]
        if hasattr(DataFrame, name):
            raise UnsupportedOperation(
                f"DataFrame.{name}",
                "this operation is not captured; see the README for the captured operations, "
                "or call .df to leave tracking (later steps then have no provenance)",
            )
        raise AttributeError(f"{type(self).__name__} has no attribute {name!r}")

    # -- naming ---------------------------------------------------------------------------

    @internal_calls
    def named(self, relation: str, values: Values = "all") -> TrackedFrame:
        """Name this frame's rows as ``relation``: each row gets a node with the name and its
        values (``values``: "all" columns, a list of columns, or None). In a session with
        ``reuse=True`` the relation is a stored sink (capture_agent.reuse): computed and
        written now, or read from an equivalent earlier result."""
        out = self._name(relation, values)
        reuse = self._ctx.reuse
        if reuse is None or self._ctx.dag.depth:
            return out
        return reuse.sink(out, relation, chosen(self.columns, values))

    @recorded("named", lambda self, relation, *a, **k: {"relation": relation})
    def _name(self, relation: str, values: Values = "all") -> TrackedFrame:
        if not relation:
            raise ValueError("relation name must not be empty")
        check_name("relation", relation)
        self._ctx.datasets.named[relation] = None
        self._ctx.datasets.schema(relation, self.visible_schema())
        attributes = chosen(self.columns, values)
        # The operator's fresh nodes take the name, once; a source (already named), or a frame
        # named a second time, gets a PLUS node per row instead.
        if self._pending is not None and not self._pending.relation and not self._named:
            self._named = True
            spec = replace(
                self._pending, relation=relation, attributes=attributes, values_read=reads(values)
            )
            renamed = TrackedFrame(self._ctx, self._df, spec, self._hidden)
            renamed.dag_node = self.dag_node
            return renamed
        key = self._ctx.next_key(f"named:{relation}")
        return self._fresh(
            self._materialized(),
            PlusSpec(key=key, relation=relation, attributes=attributes, values_read=reads(values)),
        )

    # -- row-preserving operators ---------------------------------------------------------

    @recorded("filter", lambda self, c: {"predicate": predicate_sql(self._materialized(), c)})
    def filter(self, condition: Column | str) -> TrackedFrame:
        return self._derive(self._materialized().filter(condition))

    where = filter

    def _project(self, build: Callable[[DataFrame], DataFrame], operation: str) -> TrackedFrame:
        """A projection: rows keep their provenance, unless it generated rows (explode) or
        called Python UDFs (a BLACK_BOX node per row)."""
        from pyspark.errors import AnalysisException
        from pyspark.sql import functions as F

        try:
            df = build(self._materialized())
        except AnalysisException as e:
            if "MISSING_GROUP_BY" in str(e) or "MISSING_AGGREGATION" in str(e):
                raise UnsupportedOperation(
                    f"aggregate functions inside {operation}", "use .agg() or .groupBy().agg()"
                ) from e
            raise
        kind = inspect_projection(self._materialized(), df, operation, self._ctx.jvm)
        session = self._ctx
        if kind.window_aggregates:
            if kind.generator or kind.python_udfs:
                raise UnsupportedOperation(
                    f"window aggregates together with generators or Python UDFs in {operation}",
                    "compute them in separate withColumn calls",
                )
            from capture_agent.windows import capture_window_aggregates

            return capture_window_aggregates(self, build, kind.window_aggregates)
        if kind.generator:
            key = session.next_key("generate")
            new = [c for c in visible_columns(df) if c not in self.columns]
            element = F.concat_ws(",", *[F.col(c).cast("string") for c in new])
            # explode_outer of an empty array yields a row without an element (no VALUE node).
            element = F.when(~_all_null([F.col(c) for c in new]), element)
            # Titian-style position within the partition tells apart equal elements of a row.
            df = df.withColumn(_PARENT, F.col(ID))
            df = df.withColumn(
                ID,
                session.node_id(key, F.col(_PARENT), F.monotonically_increasing_id()),
            )
            hidden = {
                "parent": F.col(_PARENT),
                "element_id": session.node_id(key, F.lit("element"), F.col(ID)),
                "element": element,
            }
            return TrackedFrame(session, df, ExplodeSpec(key=key), hidden)
        if kind.python_udfs:
            key = session.next_key("udf")
            label = ",".join(dict.fromkeys(kind.python_udfs))
            return self._fresh(df, BlackBoxSpec(key=key, label=label))
        if self._pending is not None and not self._pending.relation and not self._named:
            try:
                return self._carry_pending(build(self._df))
            except AnalysisException:  # columns bound to the published frame (plan capture)
                pass
        return self._derive(df)

    def _carry_pending(self, df: DataFrame) -> TrackedFrame:
        """A projection of rows whose fresh nodes are not published yet (a join's TIMES, a
        group's DELTA, ...): the rows keep those nodes, so the capture point moves past the
        projection, and a ``.named`` after it names them instead of adding a PLUS per row
        (docs/capture.md). ``df`` is the projection over the unpublished frame, whose lineage
        columns the projection keeps."""
        carried = TrackedFrame(self._ctx, df, self._pending, self._hidden)
        carried._split = self._split  # where the operator was built, not the projection
        carried.dag_node = self.dag_node
        return carried

    @recorded("project", lambda self, *cols: _projection_params(self, _flat(cols)))
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
            else:
                if isinstance(c, str):
                    _check_name(c)
                expanded.append(c)
        return self._project(lambda df: self._ctx.select(df, [*expanded, *_hidden(df)]), "select")

    @recorded("project", lambda self, *exprs: _projection_params(self, list(exprs)))
    def selectExpr(self, *exprs: str) -> TrackedFrame:  # noqa: N802 - Spark's name
        return self._project(lambda df: df.selectExpr(*exprs, *_hidden(df)), "selectExpr")

    @recorded("with_column", lambda self, n, c: _projection_params(self, [c.alias(n)]))
    def withColumn(self, name: str, col: Column) -> TrackedFrame:  # noqa: N802 - Spark's name
        _check_name(name)
        return self._project(lambda df: df.withColumn(name, col), "withColumn")

    @recorded(
        "with_column",
        lambda self, m: _projection_params(self, [c.alias(n) for n, c in m.items()]),
    )
    def withColumns(self, mapping: dict[str, Column]) -> TrackedFrame:  # noqa: N802
        for name in mapping:
            _check_name(name)
        return self._project(lambda df: df.withColumns(mapping), "withColumns")

    @recorded("rename", lambda self, old, new: {"renames": json.dumps([[old, new]])})
    def withColumnRenamed(self, existing: str, new: str) -> TrackedFrame:  # noqa: N802
        _check_name(existing)
        _check_name(new)
        return self._derive(self._materialized().withColumnRenamed(existing, new))

    @recorded("rename", lambda self, m: {"renames": json.dumps(sorted(m.items()))})
    def withColumnsRenamed(self, mapping: dict[str, str]) -> TrackedFrame:  # noqa: N802
        for name in [*mapping, *mapping.values()]:
            _check_name(name)
        return self._derive(self._materialized().withColumnsRenamed(mapping))

    @recorded("drop", lambda self, *cols: {"columns": json.dumps([str(c) for c in cols])})
    def drop(self, *cols: str | Column) -> TrackedFrame:
        for c in cols:
            if isinstance(c, str):
                _check_name(c)
        return self._derive(self._materialized().drop(*cols))

    def alias(self, alias: str) -> TrackedFrame:
        return self._derive(self._materialized().alias(alias))

    @recorded("order_by", lambda self, *c, **k: {"keys": json.dumps([str(x) for x in c])})
    def orderBy(self, *cols: Any, **kwargs: Any) -> TrackedFrame:  # noqa: N802
        """Post-processing: order is not provenance; rows keep theirs."""
        return self._derive(self._materialized().orderBy(*cols, **kwargs))

    sort = orderBy

    def sortWithinPartitions(self, *cols: Any, **kwargs: Any) -> TrackedFrame:  # noqa: N802
        return self._derive(self._materialized().sortWithinPartitions(*cols, **kwargs))

    @recorded("limit", lambda self, num: {"n": str(num)})
    def limit(self, num: int) -> TrackedFrame:
        """The rows kept keep their provenance (taps upstream may see more rows than kept)."""
        return self._derive(self._materialized().limit(num))

    def repartition(self, *args: Any) -> TrackedFrame:
        return self._derive(self._materialized().repartition(*args))

    def coalesce(self, num: int) -> TrackedFrame:
        return self._derive(self._materialized().coalesce(num))

    def cache(self) -> TrackedFrame:
        return self._derive(self._materialized().cache())

    def persist(self, *args: Any) -> TrackedFrame:
        return self._derive(self._materialized().persist(*args))

    def unpersist(self, blocking: bool = False) -> TrackedFrame:
        """Drops what ``cache()``/``persist()`` cached: the very DataFrame this frame wraps (a
        frame's ``.df`` is a projection of it, so ``.df.unpersist()`` finds no cached plan and
        leaves the data, and the capture points in its plan, cached for the session's life)."""
        self._df.unpersist(blocking)
        return self

    def localCheckpoint(self, eager: bool = True) -> TrackedFrame:  # noqa: N802 - Spark's name
        """Cuts Spark's plan (its lineage, not ours): rows keep their provenance ids, so a
        workflow can pass module outputs on without re-planning everything upstream."""
        return self._derive(self._materialized().localCheckpoint(eager))

    def checkpoint(self, eager: bool = True) -> TrackedFrame:
        return self._derive(self._materialized().checkpoint(eager))

    @recorded("union")
    def union(self, other: TrackedFrame) -> TrackedFrame:
        """Bag union: every row keeps its provenance; where both sides may hold the same node
        (a frame unioned with a projection of itself), the right side's rows get a PLUS node
        each, so a row in both is two rows of the graph, as it is two rows of the result."""
        right_frame = tracked_frame(other, "union")._apart_from(self)
        left, right = self._materialized(), right_frame._materialized()
        out = self._derive(
            left.select(*visible_columns(left), ID).union(right.select(*visible_columns(right), ID))
        )
        out.id_keys = self.id_keys | right_frame.id_keys
        return out

    unionAll = union

    @recorded("union_by_name", lambda self, o, *a, **k: {"missing": str(bool(a or k))})
    def unionByName(  # noqa: N802 - Spark's name
        self,
        other: TrackedFrame,
        allowMissingColumns: bool = False,  # noqa: N803
    ) -> TrackedFrame:
        right_frame = tracked_frame(other, "unionByName")._apart_from(self)
        left, right = self._materialized(), right_frame._materialized()
        out = self._derive(left.unionByName(right, allowMissingColumns=allowMissingColumns))
        out.id_keys = self.id_keys | right_frame.id_keys
        return out

    @recorded("intersect")
    def intersect(self, other: TrackedFrame) -> TrackedFrame:
        """INTERSECT DISTINCT: a DELTA per result row fed by a TIMES per pair of equal rows of
        the two sides (see capture_agent.setops)."""
        from capture_agent.setops import intersect

        return intersect(self, other)

    @recorded("subtract")
    def subtract(self, other: TrackedFrame) -> TrackedFrame:
        """EXCEPT DISTINCT: a DELTA per result row fed by its left copies; the right side is not
        part of the provenance (no difference in the semiring; see capture_agent.setops)."""
        from capture_agent.setops import subtract

        return subtract(self, other)

    @recorded("except_all")
    def exceptAll(self, other: TrackedFrame) -> TrackedFrame:  # noqa: N802 - Spark's name
        """EXCEPT ALL: the kept left copies keep their provenance (see capture_agent.setops)."""
        from capture_agent.setops import except_all

        return except_all(self, other)

    @recorded("map_in_pandas", lambda self, func, *a, **k: function_params(func))
    def mapInPandas(  # noqa: N802 - Spark's name
        self, func: Callable[[Iterator[Any]], Iterator[Any]], schema: Any, barrier: bool = False
    ) -> TrackedFrame:
        """A BLACK_BOX node per output row, fed by every input row of its partition (see
        capture_agent.pandas_functions)."""
        from capture_agent.pandas_functions import map_in_pandas

        if barrier:
            raise UnsupportedOperation("mapInPandas(barrier=True)", "use barrier=False")
        return map_in_pandas(self, func, schema)

    # -- operators that make fresh nodes ---------------------------------------------------

    @recorded("join", lambda self, other, on=None, how=None: _join_params(on, how))
    def join(
        self,
        other: TrackedFrame,
        on: str | list[str] | Column | None = None,
        how: str | None = None,
    ) -> TrackedFrame:
        """Joins. inner/cross/outer: each result row is a TIMES node of its input rows (of its one
        side where an outer join found no partner). left semi: the kept row is a TIMES node of
        its left row and the sum of the right rows that matched it, r·(s1 + ... + sn), as the
        projection of the inner join is. left anti: the kept row's provenance passes through (no
        right row decided); an excluded row is recorded with one right row that matched it (an
        EXCLUDED node: see docs/capture.md)."""
        from pyspark.sql import functions as F

        other = tracked_frame(other, "join")
        kind = _JOINS.get((how or "inner").lower().replace("-", "_"))
        if kind is None:
            raise UnsupportedOperation(f"join(how={how!r})", f"use one of {sorted(_JOINS)}")
        if on is None and kind not in ("cross",):
            kind = "cross"
        left_col, right_col = HIDDEN_PREFIX + "left", HIDDEN_PREFIX + "right"
        right = other._materialized().withColumnRenamed(ID, right_col)
        if kind == "left_semi":
            from capture_agent.joins import semi_join

            return semi_join(self, right, on)
        if kind == "left_anti":
            from capture_agent.joins import anti_join

            return anti_join(self, right, on)
        left = self._materialized().withColumnRenamed(ID, left_col)
        joined = left.crossJoin(right) if on is None else left.join(right, on=on, how=kind)
        key = self._ctx.next_key("join")
        joined = joined.withColumn(ID, self._ctx.node_id(key, F.col(left_col), F.col(right_col)))
        hidden = {"left": F.col(left_col), "right": F.col(right_col)}
        spec = JoinSpec(key=key, origins=(self.origin, other.origin))
        return TrackedFrame(self._ctx, joined, spec, hidden)  # recorded by join

    @recorded("join", lambda self, other: _join_params(None, "cross"))
    def crossJoin(self, other: TrackedFrame) -> TrackedFrame:  # noqa: N802 - Spark's name
        return self.join(other, how="cross")

    def groupBy(self, *cols: str | Column) -> TrackedGroupedData:  # noqa: N802 - Spark's name
        from capture_agent.grouping import TrackedGroupedData

        flat: list[str | Column] = []
        for c in cols:
            flat.extend(c if isinstance(c, list) else [c])
        return TrackedGroupedData(self, flat)

    groupby = groupBy

    def rollup(self, *cols: str) -> TrackedGroupedData:
        """Grouping sets (a, b), (a), (): each set's groups are groups of their own."""
        return self._grouping_sets("rollup", cols)

    def cube(self, *cols: str) -> TrackedGroupedData:
        """Grouping sets: every subset of the columns; each set's groups are their own groups."""
        return self._grouping_sets("cube", cols)

    def _grouping_sets(self, operation: str, cols: tuple[Any, ...]) -> TrackedGroupedData:
        from itertools import combinations

        from capture_agent.grouping import TrackedGroupedData

        flat: list[Any] = []
        for c in cols:
            flat.extend(c if isinstance(c, list) else [c])
        for c in flat:
            if not isinstance(c, str):
                raise UnsupportedOperation(
                    f"{operation} on a Column expression",
                    "add the expression as a column with withColumn and roll up by its name",
                )
            _check_name(c)
        n = len(flat)
        if operation == "rollup":
            sets = [tuple(range(k)) for k in range(n, -1, -1)]
        else:
            sets = [s for k in range(n, -1, -1) for s in combinations(range(n), k)]
        return TrackedGroupedData(self, flat, sets)

    def agg(self, *exprs: Column) -> TrackedFrame:
        """Aggregation over the whole frame: one group."""
        return self.groupBy().agg(*exprs)

    def distinct(self) -> TrackedFrame:
        """One DELTA node per distinct row, fed by all its duplicates."""
        return self.dropDuplicates()

    @recorded("distinct", lambda self, subset=None: {"keys": json.dumps(subset or self.columns)})
    def dropDuplicates(self, subset: list[str] | None = None) -> TrackedFrame:  # noqa: N802
        """One DELTA node per distinct value of ``subset`` (all columns by default), fed by all
        the duplicates; the row kept is Spark's choice, its provenance is the DELTA node."""
        from capture_agent.grouping import TrackedGroupedData

        return TrackedGroupedData(self, list(subset or self.columns)).deduplicate()

    drop_duplicates = dropDuplicates

    # -- actions and writes: the materialization points -----------------------------------

    def collect(self) -> list[Row]:
        return self.df.collect()

    def count(self) -> int:
        return self.df.count()

    def take(self, num: int) -> list[Row]:
        return self.df.take(num)

    def head(self, n: int | None = None) -> Any:
        return self.df.head() if n is None else self.df.head(n)

    def first(self) -> Row | None:
        return self.df.first()

    def toPandas(self) -> Any:  # noqa: N802 - Spark's name
        return self.df.toPandas()

    def show(self, n: int = 20, truncate: bool | int = True, vertical: bool = False) -> None:
        self.df.show(n, truncate, vertical)

    @property
    def write(self) -> DataFrameWriter:
        """Writing is a materialization point: the job that writes also publishes the lineage.
        Where it writes (a path or a table) becomes the run's output dataset for OpenLineage."""
        from capture_agent.writer import TrackedWriter

        df = self.df
        relation = self._pending.relation if self._pending is not None else ""
        return TrackedWriter(df.write, df, relation, self._ctx.datasets)  # type: ignore[return-value]


def _flat(cols: Sequence[Any]) -> list[Column | str]:
    flat: list[Column | str] = []
    for c in cols:
        flat.extend(c if isinstance(c, list | tuple) else [c])
    return flat


def _projection_params(frame: TrackedFrame, cols: list[Column | str]) -> dict[str, str]:
    """A projection's output expressions (analyzed SQL, ``*`` expanded) and the UDFs it calls."""
    df = frame._materialized()
    expanded: list[Column | str] = []
    for c in cols:
        expanded.extend(frame.columns if isinstance(c, str) and c == "*" else [c])
    jvm = frame._ctx.jvm
    if jvm is None:
        sql = [expression_sql(df, c) for c in expanded]
        return {"columns": json.dumps(sql), **udf_params(df, expanded)}
    from pyspark.sql import functions as F

    facts = jvm.projection_sql(df, [F.expr(c) if isinstance(c, str) else c for c in expanded])
    with_udfs = [expanded[i] for i in facts["udf_columns"]]
    return {"columns": json.dumps(facts["sql"]), **udf_params(df, with_udfs)}


def _join_params(on: Any, how: str | None) -> dict[str, str]:
    kind = _JOINS.get((how or "inner").lower().replace("-", "_"), how or "")
    if on is None:
        return {"how": "cross" if kind != "cross" else kind}
    if isinstance(on, str):
        on = [on]
    if isinstance(on, list) and all(isinstance(n, str) for n in on):
        return {"how": kind, "on": json.dumps(on)}
    return {"how": kind, "condition": str(on)}


def function_params(func: Callable[..., Any]) -> dict[str, str]:
    """A Python function's name and a hash of its code (bytecode, constants, names)."""
    from capture_agent.workflow_dag import code_hash

    return {"function": getattr(func, "__name__", type(func).__name__), "code": code_hash(func)}


def _all_null(cols: list[Column]) -> Column:
    from pyspark.sql import functions as F

    condition = F.lit(True)
    for c in cols:
        condition = condition & c.isNull()
    return condition


def _hidden(df: DataFrame) -> list[str]:
    """The lineage columns a projection must carry along (``__sp_id`` and any a capture added)."""
    return [c for c in df.columns if c.startswith(HIDDEN_PREFIX)]


def visible_then_id(df: DataFrame) -> DataFrame:
    """Visible columns in order, then ``__sp_id``; works with repeated visible names too (the
    reference of capture_agent.jvm.JvmTaps.visible_then_id, which does it in one call)."""
    extra = [c for c in df.columns if c.startswith(HIDDEN_PREFIX) and c != ID]
    if extra:
        df = df.drop(*extra)
    if df.columns[-1] == ID:
        return df
    original = df.columns
    temp = [c if c == ID else f"{HIDDEN_PREFIX}c{i}" for i, c in enumerate(original)]
    moved = df.toDF(*temp).select(*[t for t in temp if t != ID], ID)
    return moved.toDF(*[c for c in original if c != ID], ID)


Values = str | Sequence[str] | None
# ProvenanceSession.source's and .tracked's default: the session's own policy (its ``values``).
SESSION_VALUES = "session"


def chosen(columns: list[str], values: Values) -> tuple[str, ...]:
    """The attribute names a relation's nodes keep: all columns, the listed ones, or none. For
    "read" all columns too, of which the JVM taps keep those the query reads (:func:`reads`)."""
    if values is None:
        return ()
    if values in ("all", "read"):
        return unique_names(columns)
    if isinstance(values, str):
        raise ValueError(f'values must be "read", "all", a list of columns or None, not {values!r}')
    missing = [v for v in values if v not in columns]
    if missing:
        raise ValueError(f"values {missing} are not columns of the relation ({columns})")
    return tuple(dict.fromkeys(values))


def reads(values: Values) -> bool:
    """Whether the policy ``values`` keeps only the columns the query reads ("read")."""
    return isinstance(values, str) and values == "read"


def unique_names(names: list[str]) -> tuple[str, ...]:
    """Attribute names, with repeats (e.g. both sides' key of a join) numbered: k, k_2."""
    seen: dict[str, int] = {}
    out = []
    for name in names:
        seen[name] = seen.get(name, 0) + 1
        out.append(name if seen[name] == 1 else f"{name}_{seen[name]}")
    return tuple(out)


def tracked_frame(other: Any, operation: str) -> TrackedFrame:
    if not isinstance(other, TrackedFrame):
        raise UnsupportedOperation(
            f"{operation} with an untracked DataFrame", "track it first with prov.source()"
        )
    return other


# -- the frame's plumbing, named for the operator modules (grouping, windows, set operations,
# pandas functions, modules), which build on tracked frames without reaching into them.


def context_of(frame: TrackedFrame) -> CaptureContext:
    """The capture context the frame was built in."""
    return frame._ctx


def materialize(frame: TrackedFrame) -> DataFrame:
    """The frame's DataFrame with its pending capture point placed: visible columns + the id."""
    return frame._materialized()


# Spark conf: "false" gives a join read only by an aggregation its own capture point again
# (docs/capture.md, "What travels"), for an ingest older than schema version 6 and for benchmarks.
JOIN_ROWS_WITH_MEMBERS = "spark.sparkprov.joinRowsWithMembers"


def materialize_with_origin(
    frame: TrackedFrame, fold_split: tuple[str, ...] | None = None
) -> tuple[DataFrame, JoinSpec | None, str, bool]:
    """As :func:`materialize`, and what the id column derives from, so a tap over these rows may
    send their ids as positions (lineage.proto's DerivedIds): where the pending capture point
    is a join's, that join's spec, with its left and right id columns kept
    (``__sp_left``/``__sp_right``); else the source whose TOKEN ids the rows hold ("" if none).

    With ``fold_split``, the split path of the member capture point that reads the rows: a
    join's rows that nothing names (no relation, no values) in that split path get no capture
    point of their own, for the member capture point sends them (``MemberSpec.join_rows``,
    lineage.proto's ``MemberBlock.join_rows``); the last item says so. The JVM taps only."""
    pending = frame._pending
    if not isinstance(pending, JoinSpec):
        return frame._materialized(), None, frame.origin, False
    folded = (
        fold_split is not None
        and frame._ctx.jvm is not None
        and frame._df.sparkSession.conf.get(JOIN_ROWS_WITH_MEMBERS, "true") != "false"
        and not pending.relation
        and not pending.attributes
        and not frame._named
        and frame._split == fold_split
    )
    df = (
        frame._df
        if folded
        else frame._ctx.apply_tap(frame._df, pending, frame._hidden, frame._split)
    )
    pair = [HIDDEN_PREFIX + "left", HIDDEN_PREFIX + "right"]
    kept = df.drop(*[c for c in df.columns if c.startswith(HIDDEN_PREFIX) and c not in (ID, *pair)])
    return kept, pending, "", folded


def visible_attributes(frame: TrackedFrame, taps: JvmTaps) -> JvmList:
    """The JVM attributes of the frame's visible columns, in order (capture_agent.plan_capture
    moves a plan's expressions onto them)."""
    return taps.visible_attributes(frame._materialized(), HIDDEN_PREFIX)


def same_nodes(frame: TrackedFrame, df: DataFrame) -> TrackedFrame:
    """A frame of rows that keep their nodes (no fresh node, nothing to publish)."""
    return frame._derive(df)


def fresh(
    frame: TrackedFrame,
    df: DataFrame,
    spec: TapSpec,
    parent: Column | None = None,
    extra: dict[str, Column] | None = None,
) -> TrackedFrame:
    """A frame whose rows get a fresh node each (``spec``), child of their current one."""
    return frame._fresh(df, spec, parent, extra)
