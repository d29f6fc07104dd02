"""Capture a query from its plan: any DataFrame, SQL text included, rebuilt with tracked operators.

``ProvenanceSession.tracked(df)`` reads ``df``'s optimized logical plan (Catalyst has already
turned SQL text, views, ``IN``/``EXISTS`` subqueries and ``DISTINCT`` into joins, filters,
projections and aggregates there) and rebuilds it bottom-up with the tracked operators of
capture_agent.frame, so the result has the provenance each of them records (docs/capture.md).
The plan's own expressions are reused, not re-parsed: each becomes a Column again, moved onto the
rebuilt child's attributes (``io.sparkprov.capture.Rebind``), because a tracked operator may give
a column another attribute than the original plan had.

Leaves become sources, named by the view or table they were read through (the analyzed plan's
``SubqueryAlias``), else ``relation<N>``. An operator this module does not rebuild raises
:class:`UnsupportedOperation` naming it: never a result without its lineage.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

from capture_agent.errors import UnsupportedOperation
from capture_agent.passthrough import PlainFrame
from capture_agent.plans import _name, _seq, distinct_inputs
from sparkprov.limits import check_name

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

    from capture_agent.frame import TrackedFrame, Values
    from capture_agent.jvm import JvmList
    from capture_agent.session import ProvenanceSession

__all__ = ["capture_plan"]

_LEAVES = {"LogicalRelation", "LogicalRDD", "LocalRelation", "HiveTableRelation"}
_LEAVES_V2 = {"DataSourceV2Relation", "DataSourceV2ScanRelation"}
_JOIN_TYPES = {
    "Inner": "inner",
    "Cross": "cross",
    "LeftOuter": "left",
    "RightOuter": "right",
    "FullOuter": "full",
    "LeftSemi": "left_semi",
    "LeftAnti": "left_anti",
}


def capture_plan(prov: ProvenanceSession, df: DataFrame, values: Values) -> TrackedFrame:
    """``df`` as a tracked frame with the same rows and columns, captured from its plan; its
    sources keep the values ``values`` says (``ProvenanceSession.source``)."""
    try:
        execution = df._jdf.queryExecution()
    except Exception as e:  # Spark Connect has no _jdf
        raise UnsupportedOperation(
            "this DataFrame", "plan capture needs classic (non-Connect) PySpark"
        ) from e
    builder = _Builder(prov, df, execution.analyzed(), values)
    plan = _optimized(df, execution.analyzed())
    frame, attributes = builder.build(plan)
    output = builder.output(plan)
    return frame.select(*[builder.column(a, output, attributes, alias=True) for a in output])


# Optimizer rules whose output the tracked operators cannot take back as Columns: they write
# internal expressions with no SQL function of their own (DecimalAggregates sums a decimal's
# unscaled long: MakeDecimal(sum(UnscaledValue(x)))).
_EXCLUDED_RULES = ("org.apache.spark.sql.catalyst.optimizer.DecimalAggregates",)
_EXCLUDED = "spark.sql.optimizer.excludedRules"


def _optimized(df: DataFrame, analyzed: Any) -> Any:
    """The analyzed plan optimized afresh without :data:`_EXCLUDED_RULES`."""
    spark = df.sparkSession
    jvm = spark._jvm
    assert jvm is not None
    conf = spark._jsparkSession.conf()
    before = conf.get(_EXCLUDED, "") if conf.contains(_EXCLUDED) else ""
    conf.set(_EXCLUDED, ",".join(r for r in (before, *_EXCLUDED_RULES) if r))
    try:
        fresh = jvm.org.apache.spark.sql.classic.Dataset.ofRows(spark._jsparkSession, analyzed)
        return fresh.queryExecution().optimizedPlan()
    finally:
        if before:
            conf.set(_EXCLUDED, before)
        else:
            conf.unset(_EXCLUDED)


class _Builder:
    def __init__(
        self, prov: ProvenanceSession, df: DataFrame, analyzed: Any, values: Values
    ) -> None:
        self._prov = prov
        self._values = values
        self._spark = df.sparkSession
        jvm = self._spark._jvm
        assert jvm is not None  # classic PySpark (checked by capture_plan)
        # Looked up once: py4j resolves each package and class name in a round trip of its own.
        self._datasets = jvm.org.apache.spark.sql.classic.Dataset
        self._used: dict[str, int] = {}
        taps = prov.capture.jvm
        if taps is None:
            raise UnsupportedOperation(
                "a query from its plan with the Python taps", "use the JVM taps (capture='jvm')"
            )
        self._taps = taps
        # The view or table name each leaf was read through (io.sparkprov.capture.PlanNames):
        # the innermost alias above it in the analyzed plan, found for a leaf of the optimized
        # plan by its first attribute, else (a CTE inlined anew, with fresh attributes) by the
        # analyzed leaf it gives the same result as.
        self._names = taps.plan_names(analyzed)

    # -- expressions ------------------------------------------------------------------------

    def column(self, expr: Any, old: JvmList, new: JvmList, alias: bool = False) -> Column:
        """The plan's expression as a Column over the rebuilt attributes ``new`` (the rebuilt
        counterparts of ``old``, scalar subqueries joined by :meth:`_subqueries` among them).
        ``alias``: keep the attribute's name (a top-level output)."""
        kind = self._taps.stray_subquery(expr, old)  # a subquery expression not joined
        if kind is not None:
            raise UnsupportedOperation(
                f"a {kind} expression left in the optimized plan",
                "its rows' lineage would not reach the result",
            )
        column = self._taps.rebound(expr, old, new)
        return column.alias(str(expr.name())) if alias else column

    def _subqueries(
        self, frame: TrackedFrame, old: JvmList, new: JvmList, exprs: list[Any]
    ) -> tuple[TrackedFrame, JvmList, JvmList]:
        """The uncorrelated scalar subqueries of ``exprs`` (``x > (SELECT avg(x) ...)``), each
        rebuilt and its one row joined to every row of ``frame`` (a left join: no row gives
        NULL, as Spark does), so a row's lineage reaches the rows the value was computed from.
        The frame, with ``old`` and ``new`` extended by each subquery and its column."""
        from pyspark.sql import functions as F

        for sub in self._taps.scalar_subqueries(exprs):
            plan = sub.plan()
            if list(_seq(sub.outerAttrs())):
                raise UnsupportedOperation(
                    f"the correlated scalar subquery {sub.sql()}",
                    "plan capture joins uncorrelated scalar subqueries only",
                )
            self._one_row_at_most(sub)
            value, _ = self.build(plan)
            name = f"_sparkprov_subquery{sub.exprId().id()}"
            value = value.select(F.col(f"`{value.columns[0]}`").alias(name))
            frame = frame.join(value, on=F.lit(True), how="left")
            attributes = self._attributes(frame, len(old) + 1)
            old, new = old + [sub], attributes
        return frame, old, new

    def _one_row_at_most(self, sub: Any) -> None:
        """Spark fails a query whose scalar subquery gives more than one row; so does capture,
        before joining it (where the plan does not bound it, the plain subquery is counted)."""
        bound = sub.plan().maxRows()
        if not bound.isEmpty() and bound.get() <= 1:
            return
        rows = int(self._dataset(sub.plan()).limit(2).count())
        if rows > 1:
            raise UnsupportedOperation(
                f"the scalar subquery {sub.sql()}",
                "it returns more than one row (Spark fails the plain query too)",
            )

    # -- operators --------------------------------------------------------------------------

    def build(self, node: Any) -> tuple[TrackedFrame, JvmList]:
        """The node rebuilt, with the rebuilt attributes of the node's output, in order."""
        kind = _name(node)
        if kind in _LEAVES or kind in _LEAVES_V2:
            return self._leaf(node)
        handler = getattr(self, "_" + kind, None)
        if handler is None:
            raise UnsupportedOperation(
                f"the plan operator {kind}", "plan capture rebuilds " + ", ".join(_HANDLED)
            )
        frame: TrackedFrame = handler(node)
        return frame, self._attributes(frame, int(node.output().size()))

    def _attributes(self, frame: TrackedFrame, count: int) -> JvmList:
        """The frame's visible attributes, in order (as many as the node has)."""
        from capture_agent.frame import visible_attributes

        attributes = visible_attributes(frame, self._taps)
        if len(attributes) != count:
            raise UnsupportedOperation(
                "this plan", f"rebuilt {len(attributes)} columns where the plan has {count}"
            )
        return attributes

    def _child(self, node: Any, i: int = 0) -> tuple[TrackedFrame, JvmList, JvmList]:
        child = node.children().apply(i)
        frame, new = self.build(child)
        old = self.output(child)
        names = list(frame.columns)
        if len(set(names)) < len(names):  # tracked operators find columns by name
            taken: dict[str, int] = {}
            unique = []
            for name in names:
                taken[name] = taken.get(name, 0) + 1
                unique.append(name if taken[name] == 1 else f"{name}_sparkprov{taken[name]}")
            frame = frame.select(
                *[self.column(a, old, new).alias(u) for a, u in zip(old, unique, strict=True)]
            )
            new = self._attributes(frame, len(old))
        return frame, old, new

    def output(self, plan: Any) -> JvmList:
        """A plan's output attributes, in order."""
        return self._taps.output(plan)

    def _dataset(self, plan: Any) -> Any:
        """The (JVM) Dataset of a logical plan, as it is: no tap."""
        return self._datasets.ofRows(self._spark._jsparkSession, plan)

    def _columns(self, attributes: Sequence[Any], old: JvmList, new: JvmList) -> list[Column]:
        """``attributes`` (of ``old``) as Columns over their rebuilt counterparts ``new``."""
        return [self.column(a, old, new) for a in attributes]

    def _window(
        self, node: Any, old: JvmList, new: JvmList
    ) -> tuple[list[Column], list[Column], Any]:
        """A Window or WindowGroupLimit node's partition columns, sort orders and WindowSpec."""
        from pyspark.sql import Window

        parts = self._columns(list(_seq(node.partitionSpec())), old, new)
        orders = [self._sort(o, old, new) for o in _seq(node.orderSpec())]
        return parts, orders, Window.partitionBy(*parts).orderBy(*orders)

    def _leaf(self, node: Any) -> tuple[TrackedFrame, JvmList]:
        from pyspark.sql import DataFrame

        jdf = self._dataset(node)
        read_as = self._names.of(node)
        relation = self._relation(
            (None if read_as is None else str(read_as)) or _path_name(node) or "relation"
        )
        frame = self._prov.source(DataFrame(jdf, self._spark), relation, self._values)
        assert not isinstance(frame, PlainFrame)  # the session is enabled
        return frame, self._attributes(frame, int(node.output().size()))

    def _relation(self, name: str) -> str:
        """A valid relation name, numbered when the same one is read twice (a self-join)."""
        clean = "".join(c if c.isalnum() or c == "_" else "_" for c in name) or "relation"
        seen = self._used.get(clean, 0)
        self._used[clean] = seen + 1
        relation = clean if seen == 0 else f"{clean}_{seen + 1}"
        check_name("relation", relation)
        return relation

    def _Filter(self, node: Any) -> TrackedFrame:  # noqa: N802 - Catalyst's names
        frame, old, new = self._child(node)
        kept = len(old)
        frame, old, new = self._subqueries(frame, old, new, [node.condition()])
        out = frame.filter(self.column(node.condition(), old, new))
        if len(old) == kept:
            return out
        after = self._attributes(out, len(old))
        return out.select(*[self.column(a, old[:kept], after[:kept]) for a in old[:kept]])

    def _Project(self, node: Any) -> TrackedFrame:  # noqa: N802
        frame, old, new = self._child(node)
        projections = list(_seq(node.projectList()))
        frame, old, new = self._subqueries(frame, old, new, projections)
        return frame.select(*[self.column(e, old, new) for e in projections])

    def _Join(self, node: Any) -> TrackedFrame:  # noqa: N802
        left, old_l, new_l = self._child(node, 0)
        right, old_r, new_r = self._child(node, 1)
        join_type = _name(node.joinType()).rstrip("$")
        if join_type == "ExistenceJoin":
            return self._existence(node, left, right, old_l + old_r, new_l + new_r)
        how = _JOIN_TYPES.get(join_type)
        if how is None:
            raise UnsupportedOperation(f"a {join_type} join")
        condition = node.condition()
        if condition.isEmpty():
            return left.crossJoin(right) if how in ("inner", "cross") else left.join(right, how=how)
        on = self.column(condition.get(), old_l + old_r, new_l + new_r)
        return left.join(right, on=on, how=how)

    def _existence(
        self, node: Any, left: TrackedFrame, right: TrackedFrame, old: JvmList, new: JvmList
    ) -> TrackedFrame:
        """``EXISTS`` under ``OR``: each left row with a flag saying whether a right row
        matches it. The rows with a match as a semi join (each fed by its matches), those without
        as an anti join (each with its exclusion), the flag a constant of each side."""
        from pyspark.sql import functions as F

        condition = node.condition()
        on = self.column(condition.get(), old, new) if condition.isDefined() else F.lit(True)
        # named apart: the tracked union selects by name, and joins may add several flags
        flag = f"_sparkprov_exists{node.joinType().exists().exprId().id()}"
        kept = old[: len(left.columns)]
        left = left.localCheckpoint()  # read by both sides: its taps publish once
        sides = []
        for how, found in (("left_semi", True), ("left_anti", False)):
            side = left.join(right, on=on, how=how)
            now = self._attributes(side, len(kept))
            columns = [self.column(a, kept, now) for a in kept]
            sides.append(side.select(*columns, F.lit(found).alias(flag)))
        return sides[0].union(sides[1])

    def _Aggregate(self, node: Any) -> TrackedFrame:  # noqa: N802
        frame, old, new = self._child(node)
        groups = list(_seq(node.groupingExpressions()))
        outputs = list(_seq(node.aggregateExpressions()))
        keys = [self._key(g, old, new, frame.columns) for g in groups]
        aggregates, aggregated = [], []
        for o in outputs:
            if any(o.semanticEquals(g) or _aliases(o, g) for g in groups):
                continue
            if _aggregates(o):
                aggregates.append(self.column(o, old, new))
                aggregated.append(o)
            else:  # a function of the keys (or a constant): one more key, the same groups
                keys.append(self.column(o.child(), old, new).alias(f"_sparkprov_key{len(keys)}"))
                groups.append(o)
        if aggregates:
            out = self._grouped(frame, keys, aggregates, aggregated)
        elif keys:  # grouping only (DISTINCT): a DELTA per distinct key, fed by its copies
            out = frame.select(*keys).distinct()
        else:
            raise UnsupportedOperation("an aggregate with neither keys nor aggregates")
        # Back to the plan's output order and names (a grouping key may be named anew).
        built = list(out.columns)
        return out.select(*[_pick(o, groups, built) for o in outputs])

    def _grouped(
        self, frame: TrackedFrame, keys: list[Any], aggregates: list[Column], exprs: list[Any]
    ) -> TrackedFrame:
        """``groupBy(keys).agg(aggregates)``, distinct aggregates beside plain ones (or over
        other inputs) aggregated apart (capture_agent.grouping.aggregate_by_kind)."""
        from capture_agent.grouping import aggregate_by_kind

        kinds = [distinct_inputs(e) for e in exprs]
        if len(set(kinds)) == 1:
            return frame.groupBy(*keys).agg(*aggregates)
        return aggregate_by_kind(frame, keys, aggregates, kinds)

    def _key(self, group: Any, old: JvmList, new: JvmList, columns: list[str]) -> Any:
        """A grouping key: by name where it is a column of a name no other column has (the
        tracked grouping then also rewrites distinct aggregates), else as a Column."""
        at = self._taps.index_of_attribute(old, group)
        if at >= 0 and _name(group) == "AttributeReference":
            name = str(new[at].name())
            if columns.count(name) == 1:
                return name
        return self.column(group, old, new)

    def _Window(self, node: Any) -> TrackedFrame:  # noqa: N802
        """The child's columns and the window expressions, as one select: the tracked
        projection captures ranking functions and window aggregates (docs/capture.md). Where a
        value depends on the rows ordered before it (a running frame, rank, dense_rank,
        row_number), those rows are its lineage (:meth:`_running`)."""
        frame, old, new = self._child(node)
        exprs = list(_seq(node.windowExpressions()))
        kinds = {_running_frame(e) for e in exprs} - {None}
        if kinds:
            frames = kinds - {"Rank"}
            if len(frames) > 1:
                raise UnsupportedOperation(
                    "window aggregates over a ROWS and a RANGE running frame in one window",
                    "compute them in separate selects",
                )
            return self._running(node, frame, old, new, exprs, frames != {"RangeFrame"})
        kept = self._columns(old, old, new)
        windows = [self.column(e, old, new) for e in exprs]
        return frame.select(*kept, *windows)

    def _running(
        self,
        node: Any,
        frame: TrackedFrame,
        old: JvmList,
        new: JvmList,
        exprs: list[Any],
        rows: bool,
    ) -> TrackedFrame:
        """Window values that depend on the rows ordered before: aggregates over a running
        frame (``sum(x) OVER (PARTITION BY p ORDER BY o ROWS BETWEEN UNBOUNDED PRECEDING AND
        CURRENT ROW)``, or RANGE, which takes the row's peers too) and rank, dense_rank and
        row_number. Those rows are the value's lineage: every row is numbered in its partition,
        joined with the other rows of its frame (a TIMES per pair) and taken once by itself,
        grouped per row (a DELTA whose members are those, with the running aggregates), and
        joined back to its row. The other window functions of the window (ranks included) are
        computed on the row as before. Quadratic in a partition's size, as the lineage is."""
        from pyspark.sql import functions as F

        def col(attribute: Any) -> Column:
            return self._taps.rebound(attribute, [], [])

        running = [e for e in exprs if _running_frame(e) in ("RowFrame", "RangeFrame")]
        direct = [e for e in exprs if not any(e is r for r in running)]
        parts, orders, window = self._window(node, old, new)
        ties = self._columns([a for a in old if _orderable(a)], old, new)  # as few ties as can be
        numbered = frame.select(
            *self._columns(old, old, new),
            *[self.column(e, old, new).alias(f"_sparkprov_value{j}") for j, e in enumerate(direct)],
            *[p.alias(f"_sparkprov_part{i}") for i, p in enumerate(parts)],
            F.row_number().over(window.orderBy(*orders, *ties)).alias("_sparkprov_position"),
            F.rank().over(window).alias("_sparkprov_peers"),
        ).localCheckpoint()  # read three times below: its taps publish once
        k, v = len(old), len(direct)
        n = k + v + len(parts) + 2
        mine = self._attributes(numbered, n)
        others = numbered.select(
            *[col(a).alias(f"_sparkprov_frame{i}") for i, a in enumerate(mine)]
        )
        theirs = self._attributes(others, n)
        position, peers = n - 2, n - 1
        if rows:
            on = col(theirs[position]) < col(mine[position])
        else:
            on = (col(theirs[peers]) <= col(mine[peers])) & (
                col(theirs[position]) != col(mine[position])
            )
        for a, b in zip(mine[k + v : position], theirs[k + v : position], strict=True):
            on = on & col(a).eqNullSafe(col(b))
        pairs = numbered.join(others, on=on, how="inner")
        paired = self._attributes(pairs, 2 * n)
        keys = [f"_sparkprov_row{i}" for i in range(position - k - v + 1)]
        values = [f"_sparkprov_member{i}" for i in range(k)]

        def members(row: Sequence[Any], member: Sequence[Any]) -> list[Column]:
            return [
                *[col(a).alias(c) for a, c in zip(row[k + v : position + 1], keys, strict=True)],
                *[col(a).alias(c) for a, c in zip(member[:k], values, strict=True)],
            ]

        frames = pairs.select(*members(paired[:n], paired[n:])).union(
            numbered.select(*members(mine, mine))
        )
        inputs = self._attributes(frames, len(keys) + k)[len(keys) :]
        if running:
            aggregated = frames.groupBy(*keys).agg(
                *[
                    self.column(e.child().windowFunction(), old, inputs).alias(f"_sparkprov_w{j}")
                    for j, e in enumerate(running)
                ]
            )
        else:  # ranks only: a DELTA per row, fed by its frame's rows
            aggregated = frames.select(*keys).distinct()
        grouped = self._attributes(aggregated, len(keys) + len(running))
        on = F.lit(True)
        for a, b in zip(mine[k + v : position + 1], grouped[: len(keys)], strict=True):
            on = on & col(a).eqNullSafe(col(b))
        out = numbered.join(aggregated, on=on, how="inner")
        done = self._attributes(out, n + len(grouped))
        computed = dict(zip([id(e) for e in direct], done[k : k + v], strict=True))
        computed.update(zip([id(e) for e in running], done[n + len(keys) :], strict=True))
        return out.select(
            *[col(a) for a in done[:k]], *[col(computed[id(e)]).alias(str(e.name())) for e in exprs]
        )

    def _sort(self, order: Any, old: JvmList, new: JvmList) -> Column:
        """A plan's SortOrder as a sorted Column (a window's orderBy evaluates a bare one)."""
        column = self.column(order.child(), old, new)
        ascending = _name(order.direction()).startswith("Ascending")
        first = _name(order.nullOrdering()).startswith("NullsFirst")
        if ascending:
            return column.asc_nulls_first() if first else column.asc_nulls_last()
        return column.desc_nulls_first() if first else column.desc_nulls_last()

    def _Sort(self, node: Any) -> TrackedFrame:  # noqa: N802
        frame, old, new = self._child(node)
        return frame.orderBy(*[self.column(o, old, new) for o in _seq(node.order())])

    def _GlobalLimit(self, node: Any) -> TrackedFrame:  # noqa: N802
        frame, _, _ = self._child(node)
        return frame.limit(int(node.limitExpr().eval(None)))

    def _LocalLimit(self, node: Any) -> TrackedFrame:  # noqa: N802
        frame, _, _ = self._child(node)
        return frame.limit(int(node.limitExpr().eval(None)))

    def _Union(self, node: Any) -> TrackedFrame:  # noqa: N802
        frames = [self.build(c)[0] for c in _seq(node.children())]
        out = frames[0]
        for other in frames[1:]:
            out = out.union(other)
        return out

    def _Expand(self, node: Any) -> TrackedFrame:  # noqa: N802
        """Rollup, cube, grouping sets (and several distinct aggregates): each input row once per
        projection, in one pass (an array of the projections, inlined), every copy keeping the
        row's node; the grouping id is one of the columns, and the Aggregate above groups on it
        like on any key."""
        from pyspark.sql import functions as F

        from capture_agent.frame import materialize, same_nodes
        from capture_agent.taps import ID

        frame, old, new = self._child(node)
        rows = materialize(frame)
        names = [f"_sparkprov_expand{i}" for i in range(len(list(_seq(node.output()))))]
        copies = [
            F.struct(
                *[
                    self.column(e, old, new).alias(n)
                    for e, n in zip(_seq(projection), names, strict=True)
                ],
                F.col(ID).alias(ID),
            )
            for projection in _seq(node.projections())
        ]
        return same_nodes(frame, rows.select(F.inline(F.array(*copies))))

    def _OneRowRelation(self, node: Any) -> TrackedFrame:  # noqa: N802
        """``SELECT <constants>`` with no FROM: a source of one row and no columns."""
        frame = self._prov.source(self._spark.range(1).select(), self._relation("one_row"))
        assert not isinstance(frame, PlainFrame)  # the session is enabled
        return frame

    def _Repartition(self, node: Any) -> TrackedFrame:  # noqa: N802
        return self._child(node)[0]

    def _RepartitionByExpression(self, node: Any) -> TrackedFrame:  # noqa: N802
        return self._child(node)[0]

    def _WindowGroupLimit(self, node: Any) -> TrackedFrame:  # noqa: N802
        """The rows a rank filter above the window keeps at most (``rank <= n`` per
        partition): kept here too, so the window's lineage joins (:meth:`_running`) pair only
        them. Each row keeps its provenance; the filter above decides again."""
        from pyspark.sql import functions as F

        frame, old, new = self._child(node)
        _, _, window = self._window(node, old, new)
        ranks = {"Rank": F.rank, "DenseRank": F.dense_rank, "RowNumber": F.row_number}
        kind = _name(node.rankLikeFunction())
        if kind not in ranks:
            return frame  # an optimization only: the filter above keeps the same rows
        limited = frame.select(
            *self._columns(old, old, new),
            ranks[kind]().over(window).alias("_sparkprov_limit"),
        ).filter(F.col("_sparkprov_limit") <= int(node.limit()))
        now = self._attributes(limited, len(old) + 1)[: len(old)]
        return limited.select(*self._columns(old, old, now))


_HANDLED = sorted(
    [*_LEAVES, *_LEAVES_V2]
    + [n[1:] for n in vars(_Builder) if n[:2] != "__" and n[0] == "_" and n[1].isupper()]
)


def _path_name(leaf: Any) -> str | None:
    """A file scan's name when no view or table names it: its (first) root folder's or file's
    name, e.g. ``orders`` for ``spark.read.parquet("/data/orders")``."""
    if _name(leaf) != "LogicalRelation":
        return None
    try:
        roots = leaf.relation().location().rootPaths()
        return str(roots.head().getName()).split(".")[0] if roots.nonEmpty() else None
    except Exception:  # not a file relation: py4j finds no such method
        return None


def _walk(expr: Any) -> Iterator[Any]:
    yield expr
    for child in _seq(expr.children()):
        yield from _walk(child)


_RANKS = ("Rank", "DenseRank", "RowNumber")


def _running_frame(expr: Any) -> str | None:
    """The kind of a window value that depends on the rows ordered before it: "RowFrame" or
    "RangeFrame" for an aggregate over an ordered window from the partition's start to the
    current row, "Rank" for rank, dense_rank and row_number (they count the rows before);
    None for anything else."""
    window = expr.child() if _name(expr) == "Alias" else expr
    if _name(window) != "WindowExpression":
        return None
    if _name(window.windowFunction()) in _RANKS:
        return "Rank"
    if _name(window.windowFunction()) != "AggregateExpression":
        return None
    spec = window.windowSpec()
    bounds = spec.frameSpecification()
    if _name(bounds) != "SpecifiedWindowFrame" or spec.orderSpec().isEmpty():
        return None
    lower, upper = _name(bounds.lower()).rstrip("$"), _name(bounds.upper()).rstrip("$")
    if (lower, upper) != ("UnboundedPreceding", "CurrentRow"):
        return None
    return _name(bounds.frameType()).rstrip("$")


def _orderable(attribute: Any) -> bool:
    """Whether rows can be ordered by this column (maps and variants cannot)."""
    return _name(attribute.dataType()) not in ("MapType", "VariantType", "ObjectType")


def _aggregates(expr: Any) -> bool:
    """Whether ``expr`` holds an aggregate function (else it is computed from the keys)."""
    return any(_name(e) == "AggregateExpression" for e in _walk(expr))


def _aliases(output: Any, group: Any) -> bool:
    return _name(output) == "Alias" and output.child().semanticEquals(group)


def _pick(output: Any, groups: list[Any], built: list[str]) -> Column:
    """The column of the grouped frame that is this aggregate output, named as the plan names
    it: a grouping key by its position among the keys, an aggregate by its alias."""
    from pyspark.sql import functions as F

    name = str(output.name())
    for i, g in enumerate(groups):
        if output is g or output.semanticEquals(g) or _aliases(output, g):
            return F.col(f"`{built[i]}`").alias(name) if built[i] != name else F.col(f"`{name}`")
    return F.col(f"`{name}`")
