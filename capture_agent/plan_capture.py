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

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from capture_agent.errors import UnsupportedOperation
from capture_agent.passthrough import PlainFrame
from capture_agent.plans import _name, _seq
from sparkprov.limits import check_name

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

    from capture_agent.frame import TrackedFrame
    from capture_agent.session import ProvenanceSession

__all__ = ["capture_plan"]

_LEAVES = {"LogicalRelation", "LogicalRDD", "LocalRelation", "HiveTableRelation"}
_LEAVES_V2 = {"DataSourceV2Relation", "DataSourceV2ScanRelation"}
_SUBQUERIES = {"ScalarSubquery", "Exists", "ListQuery", "LateralSubquery"}
_JOIN_TYPES = {
    "Inner": "inner",
    "Cross": "cross",
    "LeftOuter": "left",
    "RightOuter": "right",
    "FullOuter": "full",
    "LeftSemi": "left_semi",
    "LeftAnti": "left_anti",
}


def capture_plan(prov: ProvenanceSession, df: DataFrame) -> TrackedFrame:
    """``df`` as a tracked frame with the same rows and columns, captured from its plan."""
    try:
        execution = df._jdf.queryExecution()
    except Exception as e:  # Spark Connect has no _jdf
        raise UnsupportedOperation(
            "this DataFrame", "plan capture needs classic (non-Connect) PySpark"
        ) from e
    builder = _Builder(prov, df, _relation_names(execution.analyzed()))
    plan = _optimized(df, execution.analyzed())
    frame, attributes = builder.build(plan)
    output = list(_seq(plan.output()))
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


def _relation_names(analyzed: Any) -> dict[int, str]:
    """The expression id of each leaf's first output attribute -> the view or table name it was
    read through (the innermost alias above it)."""
    names: dict[int, str] = {}

    def walk(node: Any, alias: str) -> None:
        kind = _name(node)
        if kind == "SubqueryAlias":
            alias = str(node.identifier().name())
        elif kind in ("View",):
            alias = str(node.desc().identifier().table())
        children = list(_seq(node.children()))
        if not children and alias:
            output = list(_seq(node.output()))
            if output:
                names.setdefault(int(output[0].exprId().id()), alias)
        for child in children:
            walk(child, alias)
        for expr in _seq(node.expressions()):  # IN, EXISTS and scalar subqueries' plans
            for sub in _walk(expr):
                if _name(sub) in _SUBQUERIES:
                    walk(sub.plan(), "")

    walk(analyzed, "")
    return names


class _Builder:
    def __init__(self, prov: ProvenanceSession, df: DataFrame, names: dict[int, str]) -> None:
        self._prov = prov
        self._spark = df.sparkSession
        jvm = self._spark._jvm
        assert jvm is not None  # classic PySpark (checked by capture_plan)
        self._jvm = jvm
        self._names = names
        self._used: dict[str, int] = {}
        taps = prov.capture.jvm
        if taps is None:
            raise UnsupportedOperation(
                "a query from its plan with the Python taps", "use the JVM taps (capture='jvm')"
            )
        self._taps = taps

    # -- expressions ------------------------------------------------------------------------

    def column(self, expr: Any, old: list[Any], new: list[Any], alias: bool = False) -> Column:
        """The plan's expression as a Column over the rebuilt attributes ``new`` (the rebuilt
        counterparts of ``old``). ``alias``: keep the attribute's name (a top-level output)."""
        self._refuse_subqueries(expr)
        column = self._taps.rebound(expr, old, new)
        return column.alias(str(expr.name())) if alias else column

    def _refuse_subqueries(self, expr: Any) -> None:
        for sub in _walk(expr):
            kind = _name(sub)
            if kind in _SUBQUERIES or kind == "InSubquery":
                raise UnsupportedOperation(
                    f"a {kind} expression left in the optimized plan",
                    "its rows' lineage would not reach the result",
                )

    # -- operators --------------------------------------------------------------------------

    def build(self, node: Any) -> tuple[TrackedFrame, list[Any]]:
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
        return frame, self._attributes(frame, len(list(_seq(node.output()))))

    def _attributes(self, frame: TrackedFrame, count: int) -> list[Any]:
        """The frame's visible attributes, in order (as many as the node has)."""
        from capture_agent.frame import visible_attributes

        attributes = visible_attributes(frame)
        if len(attributes) != count:
            raise UnsupportedOperation(
                "this plan", f"rebuilt {len(attributes)} columns where the plan has {count}"
            )
        return attributes

    def _child(self, node: Any, i: int = 0) -> tuple[TrackedFrame, list[Any], list[Any]]:
        child = list(_seq(node.children()))[i]
        frame, new = self.build(child)
        return frame, list(_seq(child.output())), new

    def _leaf(self, node: Any) -> tuple[TrackedFrame, list[Any]]:
        from pyspark.sql import DataFrame

        jdf = self._jvm.org.apache.spark.sql.classic.Dataset.ofRows(
            self._spark._jsparkSession, node
        )
        output = list(_seq(node.output()))
        name = self._names.get(int(output[0].exprId().id())) if output else None
        relation = self._relation(name or "relation")
        frame = self._prov.source(DataFrame(jdf, self._spark), relation)
        assert not isinstance(frame, PlainFrame)  # the session is enabled
        return frame, self._attributes(frame, len(output))

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
        return frame.filter(self.column(node.condition(), old, new))

    def _Project(self, node: Any) -> TrackedFrame:  # noqa: N802
        frame, old, new = self._child(node)
        return frame.select(*[self.column(e, old, new) for e in _seq(node.projectList())])

    def _Join(self, node: Any) -> TrackedFrame:  # noqa: N802
        left, old_l, new_l = self._child(node, 0)
        right, old_r, new_r = self._child(node, 1)
        join_type = _name(node.joinType()).rstrip("$")
        how = _JOIN_TYPES.get(join_type)
        if how is None:
            raise UnsupportedOperation(f"a {join_type} join")
        condition = node.condition()
        if condition.isEmpty():
            return left.crossJoin(right) if how in ("inner", "cross") else left.join(right, how=how)
        on = self.column(condition.get(), old_l + old_r, new_l + new_r)
        return left.join(right, on=on, how=how)

    def _Aggregate(self, node: Any) -> TrackedFrame:  # noqa: N802
        frame, old, new = self._child(node)
        groups = list(_seq(node.groupingExpressions()))
        outputs = list(_seq(node.aggregateExpressions()))
        aggregates = []
        for o in outputs:
            if _name(o) == "Alias" and not any(o.child().semanticEquals(g) for g in groups):
                aggregates.append(self.column(o, old, new))
            elif not any(o.semanticEquals(g) or _aliases(o, g) for g in groups):
                raise UnsupportedOperation(f"the aggregate output {o.sql()}")
        if aggregates:
            grouped = frame.groupBy(*[self._key(g, old, new, frame.columns) for g in groups])
            out = grouped.agg(*aggregates)
        elif groups:  # grouping only (DISTINCT): a DELTA per distinct key, fed by its copies
            out = frame.select(*[self.column(g, old, new) for g in groups]).distinct()
        else:
            raise UnsupportedOperation("an aggregate with neither keys nor aggregates")
        # Back to the plan's output order and names (a grouping key may be named anew).
        built = list(out.columns)
        return out.select(*[_pick(o, groups, built) for o in outputs])

    def _key(self, group: Any, old: list[Any], new: list[Any], columns: list[str]) -> Any:
        """A grouping key: by name where it is a column of a name no other column has (the
        tracked grouping then also rewrites distinct aggregates), else as a Column."""
        if _name(group) == "AttributeReference":
            for o, n in zip(old, new, strict=True):
                if o.exprId().id() == group.exprId().id():
                    name = str(n.name())
                    if columns.count(name) == 1:
                        return name
        return self.column(group, old, new)

    def _Window(self, node: Any) -> TrackedFrame:  # noqa: N802
        """The child's columns and the window expressions, as one select: the tracked
        projection captures ranking functions and window aggregates (docs/capture.md)."""
        frame, old, new = self._child(node)
        kept = [self.column(a, old, new) for a in old]
        windows = [self.column(e, old, new) for e in _seq(node.windowExpressions())]
        return frame.select(*kept, *windows)

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

    def _Repartition(self, node: Any) -> TrackedFrame:  # noqa: N802
        return self._child(node)[0]

    def _RepartitionByExpression(self, node: Any) -> TrackedFrame:  # noqa: N802
        return self._child(node)[0]

    def _WindowGroupLimit(self, node: Any) -> TrackedFrame:  # noqa: N802
        """An optimization only: it drops rows that cannot pass the rank filter the plan keeps
        above its window, so leaving it out changes no result."""
        return self._child(node)[0]


_HANDLED = sorted(
    [*_LEAVES, *_LEAVES_V2]
    + [n[1:] for n in vars(_Builder) if n[:2] != "__" and n[0] == "_" and n[1].isupper()]
)


def _walk(expr: Any) -> Iterator[Any]:
    yield expr
    for child in _seq(expr.children()):
        yield from _walk(child)


def _aliases(output: Any, group: Any) -> bool:
    return _name(output) == "Alias" and output.child().semanticEquals(group)


def _pick(output: Any, groups: list[Any], built: list[str]) -> Column:
    """The column of the grouped frame that is this aggregate output, named as the plan names
    it: a grouping key by its position among the keys, an aggregate by its alias."""
    from pyspark.sql import functions as F

    name = str(output.name())
    for i, g in enumerate(groups):
        if output.semanticEquals(g) or _aliases(output, g):
            return F.col(f"`{built[i]}`").alias(name) if built[i] != name else F.col(f"`{name}`")
    return F.col(f"`{name}`")
