"""Spark SQL expressions as z3 terms, with SQL's nulls and three-valued logic.

A value is a :class:`Value` (a z3 term and a z3 flag that says it is null); a condition is a
:class:`Truth` (two flags: surely true, surely false; neither is SQL's unknown). The analyzed SQL
the capture agent records (``(x > CAST(3 AS BIGINT))``) is parsed with sqlglot (Spark dialect).

Columns, literals, casts between numbers, comparisons, AND/OR/NOT, IS [NOT] NULL, IN lists,
+ - * and unary minus are interpreted. Any other expression (``RLIKE(text, 'climate')``,
``lower(s)``) is an uninterpreted function of the columns it reads, its null flag too: equal
inputs give equal results, which holds for every deterministic function, and nothing else is
assumed, so a proof that uses one is still a proof. A formula that involves one may have models
that no real function allows, so :attr:`Translator.opaque` tells the caller not to trust a
counterexample. Non-deterministic functions raise :class:`Unsupported`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, cast

import sqlglot
import z3
from sqlglot import expressions as exp

__all__ = ["Truth", "Translator", "Unsupported", "Value", "sort_of", "truth_of"]

_NONDETERMINISTIC = ("rand", "uuid", "current_", "now", "monotonically", "shuffle", "random")


class Unsupported(Exception):
    """An expression or operator the verifier does not model: the answer becomes unknown."""


@dataclass(frozen=True)
class Value:
    term: z3.ExprRef
    null: z3.BoolRef


@dataclass(frozen=True)
class Truth:
    true: z3.BoolRef
    false: z3.BoolRef


def sort_of(spark_type: str) -> z3.SortRef:
    """The z3 sort of a Spark column type; Unsupported for types not modelled."""
    t = spark_type.lower()
    if t in ("int", "bigint", "smallint", "tinyint", "date", "timestamp", "timestamp_ntz"):
        return z3.IntSort()
    if t in ("double", "float") or t.startswith("decimal"):
        return z3.RealSort()
    if t == "string" or t.startswith("varchar") or t.startswith("char"):
        return z3.StringSort()
    if t == "boolean":
        return z3.BoolSort()
    raise Unsupported(f"column type {spark_type}")


def truth_of(v: Value) -> Truth:
    if not z3.is_bool(v.term):
        raise Unsupported("a non-boolean value used as a condition")
    return Truth(z3.And(z3.Not(v.null), v.term), z3.And(z3.Not(v.null), z3.Not(v.term)))


def _value_of(t: Truth) -> Value:
    return Value(t.true, z3.And(z3.Not(t.true), z3.Not(t.false)))


_COMPARE: dict[type[exp.Expression], Callable[[Any, Any], Any]] = {
    exp.EQ: lambda a, b: a == b,
    exp.NEQ: lambda a, b: a != b,
    exp.GT: lambda a, b: a > b,
    exp.GTE: lambda a, b: a >= b,
    exp.LT: lambda a, b: a < b,
    exp.LTE: lambda a, b: a <= b,
}
_ARITHMETIC: dict[type[exp.Expression], Callable[[Any, Any], Any]] = {
    exp.Add: lambda a, b: a + b,
    exp.Sub: lambda a, b: a - b,
    exp.Mul: lambda a, b: a * b,
}


def _align(a: z3.ExprRef, b: z3.ExprRef) -> tuple[z3.ExprRef, z3.ExprRef]:
    if a.sort() == b.sort():
        return a, b
    if {a.sort(), b.sort()} == {z3.IntSort(), z3.RealSort()}:
        to_real = z3.ToReal
        return (to_real(a) if a.sort() == z3.IntSort() else a), (
            to_real(b) if b.sort() == z3.IntSort() else b
        )
    raise Unsupported(f"comparison of {a.sort()} with {b.sort()}")


@dataclass
class Translator:
    """Translates expressions over the columns ``env`` (name -> value)."""

    env: Mapping[str, Value]
    opaque: bool = False
    _functions: dict[str, Any] = field(default_factory=dict)

    def parse(self, sql: str) -> exp.Expression:
        try:
            return cast(exp.Expression, sqlglot.parse_one(sql, read="spark"))
        except sqlglot.errors.ParseError as e:
            raise Unsupported(f"cannot parse {sql!r}") from e

    def value(self, node: exp.Expression, sort: z3.SortRef | None = None) -> Value:
        if isinstance(node, exp.Paren | exp.Alias):
            return self.value(node.this, sort)
        if isinstance(node, exp.Column):
            name = node.name
            if name not in self.env:
                raise Unsupported(f"unknown column {name}")
            return self.env[name]
        if isinstance(node, exp.Null):
            return Value(z3.FreshConst(z3.IntSort() if sort is None else sort), z3.BoolVal(True))
        if isinstance(node, exp.Boolean):
            return Value(z3.BoolVal(bool(node.this)), z3.BoolVal(False))
        if isinstance(node, exp.Literal):
            if node.is_string:
                return Value(z3.StringVal(node.this), z3.BoolVal(False))
            text = node.this
            number = z3.RealVal(text) if any(c in text for c in ".eE") else z3.IntVal(int(text))
            return Value(number, z3.BoolVal(False))
        if isinstance(node, exp.Cast):
            inner = self.value(node.this)
            target = sort_of(node.to.sql(dialect="spark"))
            if inner.term.sort() == target:
                return inner
            if inner.term.sort() == z3.IntSort() and target == z3.RealSort():
                return Value(z3.ToReal(inner.term), inner.null)
            return self._opaque(node, sort)
        if isinstance(node, exp.Neg):
            inner = self.value(node.this)
            return Value(-inner.term, inner.null)
        for kind, op in _ARITHMETIC.items():
            if isinstance(node, kind):
                a, b = self.value(node.this), self.value(node.expression)
                x, y = _align(a.term, b.term)
                if x.sort() == z3.StringSort():
                    raise Unsupported("arithmetic on strings")
                return Value(op(x, y), z3.Or(a.null, b.null))
        if isinstance(node, exp.Condition) and self._is_condition(node):
            return _value_of(self.truth(node))
        return self._opaque(node, sort)

    @staticmethod
    def _is_condition(node: exp.Expression) -> bool:
        kinds: tuple[type[exp.Expression], ...] = (exp.And, exp.Or, exp.Not, exp.Is, exp.In)
        kinds += (exp.Between, *_COMPARE)
        return isinstance(node, kinds)

    def truth(self, node: exp.Expression) -> Truth:
        if isinstance(node, exp.Paren | exp.Alias):
            return self.truth(node.this)
        if isinstance(node, exp.And):
            a, b = self.truth(node.this), self.truth(node.expression)
            return Truth(z3.And(a.true, b.true), z3.Or(a.false, b.false))
        if isinstance(node, exp.Or):
            a, b = self.truth(node.this), self.truth(node.expression)
            return Truth(z3.Or(a.true, b.true), z3.And(a.false, b.false))
        if isinstance(node, exp.Not):
            a = self.truth(node.this)
            return Truth(a.false, a.true)
        if isinstance(node, exp.Is):
            if not isinstance(node.expression, exp.Null):
                raise Unsupported(f"IS {node.expression.sql()}")
            v = self.value(node.this)
            return Truth(v.null, z3.Not(v.null))
        for kind, op in _COMPARE.items():
            if isinstance(node, kind):
                left = self.value(node.this)
                right = self.value(node.expression, left.term.sort())
                x, y = _align(left.term, right.term)
                known = z3.Not(z3.Or(left.null, right.null))
                holds = op(x, y)
                return Truth(z3.And(known, holds), z3.And(known, z3.Not(holds)))
        if isinstance(node, exp.In):
            if node.args.get("query") is not None:
                raise Unsupported("IN (subquery)")
            options = [exp.EQ(this=node.this, expression=o) for o in node.expressions]
            if not options:
                return Truth(z3.BoolVal(False), z3.BoolVal(True))
            tree: exp.Expression = options[0]
            for o in options[1:]:
                tree = exp.Or(this=tree, expression=o)
            return self.truth(tree)
        if isinstance(node, exp.Between):
            low = exp.GTE(this=node.this, expression=node.args["low"])
            high = exp.LTE(this=node.this, expression=node.args["high"])
            return self.truth(exp.And(this=low, expression=high))
        return truth_of(self.value(node, z3.BoolSort()))

    def _opaque(self, node: exp.Expression, sort: z3.SortRef | None) -> Value:
        """An uninterpreted (deterministic) function of the columns ``node`` reads."""
        text = node.sql(dialect="spark")
        if any(word in text.lower() for word in _NONDETERMINISTIC):
            raise Unsupported(f"non-deterministic expression {text}")
        columns = sorted({c.name for c in node.find_all(exp.Column)})
        args = [self.value(exp.column(c)) for c in columns]
        result = sort
        if result is None:
            result = z3.BoolSort() if isinstance(node, exp.Predicate) else z3.StringSort()
        key = f"{text}:{result}"
        if key not in self._functions:
            domain = [a.term.sort() for a in args]
            self._functions[key] = (
                z3.Function(f"f[{text}]", *domain, result) if domain else z3.Const(text, result),
                z3.Function(f"null[{text}]", *domain, z3.BoolSort())
                if domain
                else z3.Const(f"null[{text}]", z3.BoolSort()),
            )
        self.opaque = True
        f, null = self._functions[key]
        terms = [a.term for a in args]
        return Value(f(*terms) if terms else f, null(*terms) if terms else null)
