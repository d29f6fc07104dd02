"""Reading Spark's analyzed plans (classic PySpark, through py4j) to see what an operation did.

A projection can hide operations whose provenance differs from "the row keeps its provenance":
generators (explode), window functions, aggregates, Python UDFs. Spark has already resolved
them in the analyzed plan, so this module asks the plan rather than parsing user expressions.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from capture_agent.errors import UnsupportedOperation
from capture_agent.taps import TAP_PREFIX

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from capture_agent.jvm import JvmTaps

__all__ = [
    "ProjectionKind",
    "WindowAggregate",
    "describe_aggregates",
    "inspect_projection",
    "projection_facts",
]

# Window functions after which a row keeps exactly its own provenance.
_RANKING = {"Rank", "DenseRank", "RowNumber", "PercentRank", "NTile", "CumeDist"}
_NODE_LINE = re.compile(r"^[\s:+\-]*([A-Za-z]+)\b", re.MULTILINE)


def _analyzed(df: DataFrame) -> Any:
    try:
        return df._jdf.queryExecution().analyzed()
    except Exception as e:  # Spark Connect has no _jdf
        raise UnsupportedOperation(
            "this DataFrame", "sparkprov needs classic (non-Connect) PySpark"
        ) from e


def _seq(scala_seq: Any) -> Iterator[Any]:
    for i in range(scala_seq.size()):
        yield scala_seq.apply(i)


def _name(obj: Any) -> str:
    from capture_agent.jvm import class_name

    return class_name(obj)


def _node_counts(plan: Any) -> dict[str, int]:
    counts: dict[str, int] = {}
    for name in _NODE_LINE.findall(plan.treeString()):
        counts[name] = counts.get(name, 0) + 1
    return counts


def _expressions(expr: Any) -> Iterator[Any]:
    yield expr
    for child in _seq(expr.children()):
        yield from _expressions(child)


@dataclass
class ProjectionKind:
    """What a select/withColumn added on top of its input."""

    generator: bool = False
    python_udfs: list[str] = field(default_factory=list)
    window_aggregates: list[WindowAggregate] = field(default_factory=list)


def inspect_projection(
    before: DataFrame, after: DataFrame, operation: str, jvm: JvmTaps | None = None
) -> ProjectionKind:
    """Classify the plan ``after`` added over ``before``; raise for what cannot be captured.
    With the capture jar (``jvm``) its facts come in one py4j call (io.sparkprov.capture
    .PlanFacts); this module's walk over py4j is their reference."""
    old, new = _analyzed(before), _analyzed(after)
    facts = projection_facts(old, new) if jvm is None else jvm.projection_facts(old, new)
    added = dict(facts["added"])
    udfs = list(facts["udfs"])
    kind = ProjectionKind(python_udfs=udfs)
    if added.get("Aggregate", 0) > 0:
        raise UnsupportedOperation(
            f"aggregate functions inside {operation}", "use .agg() or .groupBy().agg()"
        )
    if added.get("Generate", 0) > 0:
        kind.generator = True
    if added.get("Window", 0) > 0:
        kind.window_aggregates = _window_aggregates(new, added["Window"], operation)
    return kind


def projection_facts(old: Any, new: Any) -> dict[str, Any]:
    """What analysed plan ``new`` adds over ``old``, by walking both over py4j: ``added``, the
    count of each plan node name more in ``new`` (subqueries' plans included, as ``treeString``
    prints them), and ``udfs``, the Python UDFs the projection calls. The reference of
    capture_agent.jvm.JvmTaps.projection_facts, which answers in one call."""
    added = _node_counts(new)
    for name, n in _node_counts(old).items():
        added[name] = added.get(name, 0) - n
    return {"added": added, "udfs": _projected_udfs(new)}


def _projected_udfs(plan: Any) -> list[str]:
    """Python UDFs of a projection: in the top node's expressions (or right below a
    generator/window the projection added)."""
    names: list[str] = []
    node = plan
    for _ in range(3):
        if _name(node) not in {"Project", "Generate", "Window"}:
            break
        for expr in _seq(node.expressions()):
            for sub in _expressions(expr):
                if _name(sub) == "PythonUDF" and not str(sub.name()).startswith(TAP_PREFIX):
                    names.append(str(sub.name()))
        children = list(_seq(node.children()))
        if len(children) != 1:
            break
        node = children[0]
    return names


@dataclass(frozen=True)
class WindowAggregate:
    """An aggregate over a whole window partition, computed into output column ``column``."""

    column: str
    function: str
    input_sql: str
    partition_sql: tuple[str, ...]


def _window_aggregates(plan: Any, windows: int, operation: str) -> list[WindowAggregate]:
    """The aggregates of the ``windows`` Window nodes the projection added (the topmost ones);
    ranking functions pass (the row keeps its provenance), anything else raises."""
    outputs = {int(a.exprId().id()): str(a.name()) for a in _seq(plan.output())}
    found: list[WindowAggregate] = []
    node = plan
    while windows > 0:
        if _name(node) == "Window":
            windows -= 1
            for named in _seq(node.windowExpressions()):
                aggregate = _window_aggregate(named, outputs, operation)
                if aggregate is not None:
                    found.append(aggregate)
        children = list(_seq(node.children()))
        if not children:
            break
        node = children[0]
    if len({a.partition_sql for a in found}) > 1:
        raise UnsupportedOperation(
            f"window aggregates over different partitionings in one {operation}",
            "compute each partitioning's aggregates in a withColumn of their own",
        )
    return found


def _window_aggregate(
    named: Any, outputs: dict[int, str], operation: str
) -> WindowAggregate | None:
    expr = named.child() if _name(named) == "Alias" else named
    if _name(expr) != "WindowExpression":
        raise UnsupportedOperation(f"window expression {named.sql()} in {operation}")
    function = expr.windowFunction()
    if _name(function) in _RANKING:
        return None
    if _name(function) != "AggregateExpression":
        raise UnsupportedOperation(
            f"window function {function.prettyName()} in {operation}",
            "captured are ranking functions (rank, dense_rank, row_number, percent_rank, "
            "ntile, cume_dist) and aggregates over the whole partition",
        )
    aggregate = function.aggregateFunction()
    pretty = str(aggregate.prettyName())
    spec = expr.windowSpec()
    frame = spec.frameSpecification()
    whole = (
        _name(frame) == "SpecifiedWindowFrame"
        and _name(frame.lower()) == "UnboundedPreceding$"
        and _name(frame.upper()) == "UnboundedFollowing$"
    )
    if not whole:
        raise UnsupportedOperation(
            f"window function {pretty} over the frame {frame.sql()} in {operation}",
            "window aggregates are captured over the whole partition (no orderBy, or "
            "rowsBetween(Window.unboundedPreceding, Window.unboundedFollowing)); capture from "
            "the plan (prov.tracked) also takes running frames, from the partition's start to "
            "the current row",
        )
    if function.isDistinct():
        raise UnsupportedOperation(f"distinct window aggregate {named.sql()} in {operation}")
    args = list(_seq(aggregate.children()))
    if len(args) != 1:
        raise UnsupportedOperation(f"window aggregate {named.sql()} with {len(args)} inputs")
    column = outputs.get(int(named.exprId().id()))
    if column is None:
        raise UnsupportedOperation(
            f"window function {pretty} inside an expression in {operation}",
            "compute the window aggregate into a column of its own, then derive from it",
        )
    return WindowAggregate(
        column=column,
        function=pretty.upper(),
        input_sql=str(args[0].sql()),
        partition_sql=tuple(str(p.sql()) for p in _seq(spec.partitionSpec())),
    )


def _aggregate_expressions(grouped: DataFrame, count: int) -> list[Any]:
    """The last ``count`` aggregate columns of a groupBy().agg() result, as Spark resolved them."""
    plan = _analyzed(grouped)
    if _name(plan) != "Aggregate":
        raise UnsupportedOperation("this aggregation", "expected a plain groupBy().agg()")
    return list(_seq(plan.aggregateExpressions()))[-count:]


def composite_aggregates(grouped: DataFrame, count: int) -> list[tuple[str, list[str]]] | None:
    """For the last ``count`` columns of a groupBy().agg() result: each column's expression and
    the aggregate expressions inside it (SQL text), ``(sql, [])`` for a column that is one
    aggregate; None when every column is one aggregate (nothing computed on a result)."""
    out: list[tuple[str, list[str]]] = []
    for expr in _aggregate_expressions(grouped, count):
        child = expr.child() if _name(expr) == "Alias" else expr
        if _name(child) == "AggregateExpression":
            out.append((str(child.sql()), []))
            continue
        inner = [str(e.sql()) for e in _outermost(child, "AggregateExpression")]
        if not inner:
            raise UnsupportedOperation(
                f"aggregate expression {expr.sql()}", "it aggregates nothing: use withColumn"
            )
        out.append((str(child.sql()), inner))
    return out if any(inner for _, inner in out) else None


def _outermost(expr: Any, name: str) -> Iterator[Any]:
    """The subexpressions of kind ``name`` not inside another of that kind."""
    if _name(expr) == name:
        yield expr
        return
    for child in _seq(expr.children()):
        yield from _outermost(child, name)


def distinct_inputs(expr: Any) -> str:
    """The inputs of ``expr``'s distinct aggregates (SQL text), "" when it has none: the kind of
    grouping it needs (one per kind: :func:`capture_agent.grouping.aggregate_by_kind`)."""
    found = {
        str(e.aggregateFunction().children().mkString(","))
        for e in _expressions(expr)
        if _name(e) == "AggregateExpression" and e.isDistinct()
    }
    plain = any(
        _name(e) == "AggregateExpression" and not e.isDistinct() for e in _expressions(expr)
    )
    if len(found) > 1 or (found and plain):
        raise UnsupportedOperation(
            f"the aggregate output {expr.sql()}", "it mixes distinct and plain aggregates"
        )
    return found.pop() if found else ""


def aggregate_kinds(grouped: DataFrame, count: int) -> list[str]:
    """:func:`distinct_inputs` of each of the last ``count`` columns of a groupBy().agg()."""
    return [distinct_inputs(e) for e in _aggregate_expressions(grouped, count)]


def distinct_aggregates(grouped: DataFrame, count: int) -> list[tuple[str, list[str]]] | None:
    """If the last ``count`` aggregate columns of a groupBy().agg() result are all distinct
    aggregates (``count(DISTINCT a, b)``, ``sum(DISTINCT x)``...) over the same inputs: each one's
    function name and input expressions (SQL text). None if none of them is distinct."""
    exprs = _aggregate_expressions(grouped, count)
    children = [expr.child() if _name(expr) == "Alias" else expr for expr in exprs]
    flags = [_name(c) == "AggregateExpression" and bool(c.isDistinct()) for c in children]
    if not any(flags):
        return None
    if not all(flags):
        raise UnsupportedOperation(
            "distinct and non-distinct aggregates in one agg()",
            "compute them in two agg() calls and join the results on the grouping keys",
        )
    out = []
    for expr, child in zip(exprs, children, strict=True):
        function = child.aggregateFunction()
        args = [str(a.sql()) for a in _seq(function.children())]
        name = str(function.prettyName()).upper()
        if len(args) != 1 and name != "COUNT":
            raise UnsupportedOperation(f"distinct aggregate {expr.sql()} with {len(args)} inputs")
        out.append((name, args))
    if len({tuple(sorted(args)) for _, args in out}) != 1:
        raise UnsupportedOperation(
            "distinct aggregates over different inputs in one agg()",
            "compute them in separate agg() calls and join the results on the grouping keys",
        )
    return out


def describe_aggregates(grouped: DataFrame, count: int) -> tuple[list[str], list[str]]:
    """Function name and input expression (SQL text) of the last ``count`` aggregate columns of
    a groupBy().agg() result, as Spark resolved them."""
    exprs = _aggregate_expressions(grouped, count)
    functions: list[str] = []
    inputs: list[str] = []
    for expr in exprs:
        child = expr.child() if _name(expr) == "Alias" else expr
        if _name(child) != "AggregateExpression":
            raise UnsupportedOperation(
                f"aggregate expression {expr.sql()}",
                "each agg() column must be one aggregate function (compute on its result "
                "with a later withColumn)",
            )
        if child.isDistinct():
            raise UnsupportedOperation(f"distinct aggregate {expr.sql()}")
        function = child.aggregateFunction()
        args = list(_seq(function.children()))
        if len(args) != 1:
            raise UnsupportedOperation(f"aggregate {expr.sql()} with {len(args)} inputs")
        functions.append(str(function.prettyName()).upper())
        inputs.append(str(args[0].sql()))
    return functions, inputs
