"""The workflow DAG a run builds: each tracked operator recorded with its parameters.

:func:`recorded` wraps a tracked operator (a method of ``TrackedFrame`` or
``TrackedGroupedData``): when it returns, the operator is added to the session's
:class:`~sparkprov.workflow.DagBuilder` with its inputs (the frames it read), its parameters as
text and the visible columns of its result. Operators called by a recorded operator (``distinct``
calls ``dropDuplicates``, ``agg`` rewrites itself) are its own and not recorded again; operators
that are not recorded (cache, repartition, ...) leave the frame's operator as it was.

Parameters are Spark SQL texts of the *analyzed* expressions (``(x > CAST(3 AS BIGINT))``), so a
column written as ``F.col("x") > 3`` or ``"x > 3"`` is the same parameter; a Python UDF is
recorded by name and a hash of its code (bytecode, constants and names; not its file or line).
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Concatenate, ParamSpec, Protocol, TypeVar, cast

from capture_agent.origin import internal
from sparkprov.workflow import DagBuilder

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

__all__ = [
    "Recordable",
    "aggregate_params",
    "code_hash",
    "expression_sql",
    "predicate_sql",
    "recorded",
    "udf_params",
]

log = logging.getLogger(__name__)

P = ParamSpec("P")
R = TypeVar("R")
S = TypeVar("S", bound="Recordable")

# A pickled UDF larger than this is hashed by the JVM (Seq.hashCode) rather than copied over.
_MAX_UDF_BYTES = 1 << 20


class Recordable(Protocol):
    """What the recorder needs of a tracked frame (or grouped frame)."""

    @property
    def dag_node(self) -> int | None: ...

    def dag_builder(self) -> DagBuilder: ...

    def visible_schema(self) -> list[tuple[str, str]]: ...


def recorded(
    kind: str,
    params: Callable[..., dict[str, str]] | None = None,
) -> Callable[[Callable[Concatenate[S, P], R]], Callable[Concatenate[S, P], R]]:
    """Records the wrapped operator as ``kind``; ``params(self, *args, **kwargs)`` gives its
    parameters (called after the operator, on the same arguments)."""

    def wrap(method: Callable[Concatenate[S, P], R]) -> Callable[Concatenate[S, P], R]:
        @functools.wraps(method)
        def inner(self: S, *args: P.args, **kwargs: P.kwargs) -> R:
            dag = self.dag_builder()
            dag.depth += 1
            try:
                with internal():  # the agent's own Spark calls: no call sites (origin.py)
                    result = method(self, *args, **kwargs)
            finally:
                dag.depth -= 1
            if dag.depth or not _recordable(result):
                return result
            inputs = [self.dag_node]
            others: list[Any] = [a for a in [*args, *kwargs.values()] if _recordable(a)]
            inputs += [a.dag_node for a in others]
            try:
                described = params(self, *args, **kwargs) if params is not None else {}
            except Exception as e:  # a parameter Spark cannot print: recorded as opaque
                log.debug("parameters of %s not recorded: %s", kind, e)
                described = {"opaque": f"{type(e).__name__}"}
            frame: Any = result
            frame.dag_node = dag.add(kind, described, inputs, frame.visible_schema())
            return result

        return cast(Callable[Concatenate[S, P], R], inner)

    return wrap


def _recordable(obj: object) -> bool:
    # Asked of the class: a Column answers any attribute with a Column.
    return hasattr(type(obj), "visible_schema")


def _analyzed(df: DataFrame) -> Any:
    return df._jdf.queryExecution().analyzed()


def _seq(scala_seq: Any) -> list[Any]:
    return [scala_seq.apply(i) for i in range(scala_seq.size())]


def _expressions(expr: Any) -> list[Any]:
    out = [expr]
    for child in _seq(expr.children()):
        out.extend(_expressions(child))
    return out


def _projected(df: DataFrame, column: Column | str) -> Any:
    from pyspark.sql import functions as F

    col = F.expr(column) if isinstance(column, str) else column
    return _analyzed(df.select(col)).projectList().head()


def expression_sql(df: DataFrame, column: Column | str) -> str:
    """The analyzed SQL of ``column`` over ``df``, with its output name (``expr AS name``).
    A generator (explode) or a window function is planned below the projection, which then
    only names its output: the generator's or window's own SQL is taken from there."""
    from pyspark.sql import functions as F

    col = F.expr(column) if isinstance(column, str) else column
    plan = _analyzed(df.select(col))
    projected = plan.projectList().head()
    below = plan.child()
    kind = below.getClass().getSimpleName()
    if kind == "Generate":
        return f"{below.generator().sql()} AS {projected.name()}"
    if kind == "Window":
        return " , ".join(str(e.sql()) for e in _seq(below.windowExpressions()))
    return str(projected.sql())


def predicate_sql(df: DataFrame, condition: Column | str) -> str:
    """The analyzed SQL of a condition over ``df``, without the name Spark gives it."""
    expr = _projected(df, condition)
    if expr.getClass().getSimpleName() == "Alias":
        expr = expr.child()
    return str(expr.sql())


def _code_digest(code: Any) -> list[Any]:
    consts = [_code_digest(c) if hasattr(c, "co_code") else repr(c) for c in code.co_consts]
    return [code.co_code.hex(), consts, list(code.co_names)]


def _udf_hash(udf: Any) -> str:
    """A hash of a Python UDF's code (what it computes, not where it was written)."""
    from pyspark.serializers import CPickleSerializer

    command = udf.func().command()
    if command.size() > _MAX_UDF_BYTES:
        return f"jvm:{command.hashCode() & 0xFFFFFFFF:08x}"
    # One py4j call for the whole pickle (iterating the Seq would be one call per byte).
    text = str(command.mkString(","))
    payload = bytes(int(b) & 0xFF for b in text.split(",")) if text else b""
    serializer: Any = CPickleSerializer()
    return code_hash(serializer.loads(payload)[0])


def code_hash(func: Any) -> str:
    """A hash of a Python function's code: bytecode, constants and names (not file or line);
    of its pickle when it has no code object."""
    code = getattr(func, "__code__", None)
    if code is None:
        import pickle

        try:
            text = pickle.dumps(func).hex()
        except Exception:
            text = repr(func)
    else:
        text = json.dumps(_code_digest(code), sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def udf_params(df: DataFrame, columns: Sequence[Column | str]) -> dict[str, str]:
    """``{"udfs": [[name, code hash], ...]}`` of the Python UDFs the columns call, if any."""
    udfs: list[list[str]] = []
    for column in columns:
        for expr in _expressions(_projected(df, column)):
            if expr.getClass().getSimpleName() == "PythonUDF":
                udfs.append([str(expr.name()), _udf_hash(expr)])
    return {"udfs": json.dumps(udfs)} if udfs else {}


def aggregate_params(grouped: DataFrame) -> dict[str, str]:
    """Grouping keys and aggregates of an analyzed aggregation (``groupBy(...).agg(...)``)."""
    plan = _analyzed(grouped)
    while plan.getClass().getSimpleName() != "Aggregate":
        children = _seq(plan.children())
        if len(children) != 1:
            raise ValueError("no aggregation in the plan")
        plan = children[0]
    keys = [str(e.sql()) for e in _seq(plan.groupingExpressions())]
    outputs = [str(e.sql()) for e in _seq(plan.aggregateExpressions())]
    return {"keys": json.dumps(keys), "aggregates": json.dumps(outputs)}
