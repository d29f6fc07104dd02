"""The equivalence verifier: two segments of operator DAGs, decided by z3 (Drove, section 2.2).

A segment is encoded as its tuple and cardinality representation: the leaf relations it reads
(identical sub-DAGs of both versions, the same free relation on both sides), one symbolic tuple
per leaf, the condition under which that combination of tuples yields an output tuple (T, in
SQL's three-valued logic: only a surely-true condition keeps a tuple), the output columns as
terms over the leaf tuples (S), and, for an aggregate, its grouping keys and aggregates. Each
combination of leaf tuples yields at most one output tuple (filters, projections, inner joins),
so a tuple's multiplicity (C) is the number of combinations that yield it.

Two segments over the same leaves (each read once) are equivalent when z3 proves their
conditions equal and their outputs equal wherever the condition holds: then the same
combinations yield the same tuples, the same number of times (bag, hence set, equivalence),
and aggregates with the same keys and functions over equal arguments agree. When z3 finds a
model of the difference, that model is one tuple per leaf on which the two outputs differ: a
counterexample, reported as not equivalent, unless an uninterpreted function took part.

Supported: filter, projection (select, withColumn, rename, drop), inner and cross joins on
column names, named relations, and one aggregate (count, sum, avg, min, max; grouping columns)
at the top; under set semantics also distinct. Everything else raises Unsupported.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum

import z3
from sqlglot import expressions as exp

from sparkprov.expressions import Translator, Truth, Unsupported, Value, sort_of
from sparkprov.workflow import Operator

__all__ = ["Comparison", "Semantics", "Unsupported", "compare", "supported"]

_AGGREGATES = {exp.Count: "count", exp.Sum: "sum", exp.Avg: "avg", exp.Min: "min", exp.Max: "max"}
_IDENTITY = {"named", "order_by"}  # order is not part of bag or set equivalence
_KINDS = {"filter", "project", "with_column", "rename", "drop", "join", "aggregate", *_IDENTITY}


class Semantics(Enum):
    BAG = "bag"
    SET = "set"


# Generators make several rows of one (not a tuple-to-tuple map); windows read other rows.
_NOT_TUPLEWISE = ("explode(", "posexplode(", "inline(", "stack(", "json_tuple(", " over (")


def supported(op: Operator, semantics: Semantics) -> bool:
    """Whether the verifier models ``op`` (its kind and parameters)."""
    text = " ".join(v for _, v in op.params).lower()
    if any(word in text for word in _NOT_TUPLEWISE):
        return False
    if op.kind == "distinct":
        return semantics is Semantics.SET and not op.param("sets")
    if op.kind not in _KINDS or op.param("udfs") or op.param("opaque"):
        return False
    if op.kind == "join":
        return op.param("how") in ("inner", "cross") and not op.param("condition")
    return not (op.kind == "aggregate" and op.param("sets"))


@dataclass(frozen=True)
class _Aggregate:
    keys: tuple[Value, ...]
    functions: tuple[tuple[str, bool, Value | None], ...]  # (function, distinct, argument)


@dataclass
class _Block:
    leaves: list[str]
    condition: Truth
    columns: dict[str, Value]
    order: list[str]
    aggregate: _Aggregate | None = None
    opaque: bool = False


@dataclass
class _Encoder:
    ops: Mapping[str, Operator]
    leaves: set[str]
    semantics: Semantics
    seen: dict[str, int] = field(default_factory=dict)

    def block(self, op_id: str) -> _Block:
        op = self.ops[op_id]
        if op_id in self.leaves:
            return self._leaf(op)
        if not supported(op, self.semantics):
            detail = json.loads(op.param("udfs") or "[]")
            what = f"UDF {', '.join(u[0] for u in detail)}" if detail else op.describe()
            raise Unsupported(f"{what} is inside the segment")
        inputs = [self.block(i) for i in op.inputs]
        aggregated = any(b.aggregate is not None for b in inputs)
        if aggregated and op.kind not in _IDENTITY and not self._plain(op):
            raise Unsupported(f"{op.describe()} after an aggregate")
        if op.kind in _IDENTITY or op.kind == "distinct":
            return inputs[0]
        if op.kind == "join":
            return self._join(op, inputs[0], inputs[1])
        block = inputs[0]
        t = Translator(block.columns)
        if op.kind == "filter":
            truth = t.truth(t.parse(op.param("predicate")))
            block.condition = Truth(
                z3.And(block.condition.true, truth.true), z3.Or(block.condition.false, truth.false)
            )
        elif op.kind == "aggregate":
            block = self._aggregate(op, block, t)
        elif op.kind in ("project", "with_column"):
            new = {}
            for sql in json.loads(op.param("columns")):
                node = t.parse(sql)
                name = node.alias_or_name
                new[name] = t.value(node)
            env = {} if op.kind == "project" else dict(block.columns)
            env.update(new)
            block.columns = {name: env[name] for name, _ in op.columns}
        elif op.kind == "rename":
            renames = dict(json.loads(op.param("renames")))
            block.columns = {renames.get(k, k): v for k, v in block.columns.items()}
        block.columns = {name: block.columns[name] for name, _ in op.columns}
        block.order = [name for name, _ in op.columns]
        block.opaque = block.opaque or t.opaque
        return block

    @staticmethod
    def _plain(op: Operator) -> bool:
        """A projection that only keeps or drops columns."""
        if op.kind == "drop":
            return True
        if op.kind != "project":
            return False
        return all(exp.maybe_parse(s).alias_or_name == s for s in json.loads(op.param("columns")))

    def _leaf(self, op: Operator) -> _Block:
        occurrence = self.seen.get(op.id, 0)
        self.seen[op.id] = occurrence + 1
        if occurrence:
            raise Unsupported(f"relation {op.id} is read twice in the segment")
        columns = {
            name: Value(
                z3.Const(f"{op.id}.{name}", sort_of(type_)),
                z3.Bool(f"{op.id}.{name}#null"),
            )
            for name, type_ in op.columns
        }
        if len(columns) != len(op.columns):
            raise Unsupported("a relation with two columns of one name")
        true = Truth(z3.BoolVal(True), z3.BoolVal(False))
        return _Block([op.id], true, columns, [n for n, _ in op.columns])

    def _join(self, op: Operator, left: _Block, right: _Block) -> _Block:
        if left.aggregate is not None or right.aggregate is not None:
            raise Unsupported("a join over an aggregate")
        keys = json.loads(op.param("on") or "[]")
        true = z3.And(left.condition.true, right.condition.true)
        false = z3.Or(left.condition.false, right.condition.false)
        for key in keys:
            a, b = left.columns[key], right.columns[key]
            known = z3.Not(z3.Or(a.null, b.null))
            x, y = a.term, b.term
            true = z3.And(true, known, x == y)
            false = z3.Or(false, z3.And(known, x != y), z3.Not(known))
        columns: dict[str, Value] = {}
        for name, _ in op.columns:
            if name in keys or name in left.columns and name not in right.columns:
                columns[name] = left.columns[name]
            elif name in right.columns and name not in left.columns:
                columns[name] = right.columns[name]
            else:
                raise Unsupported(f"column {name} on both sides of the join")
        return _Block(
            left.leaves + right.leaves,
            Truth(true, false),
            columns,
            [n for n, _ in op.columns],
            opaque=left.opaque or right.opaque,
        )

    def _aggregate(self, op: Operator, block: _Block, t: Translator) -> _Block:
        if block.aggregate is not None:
            raise Unsupported("an aggregate over an aggregate")
        keys = tuple(t.value(t.parse(k)) for k in json.loads(op.param("keys")))
        functions = []
        outputs: dict[str, Value] = {}
        for sql in json.loads(op.param("aggregates")):
            node = t.parse(sql)
            inner = node.this if isinstance(node, exp.Alias) else node
            kind = next((n for k, n in _AGGREGATES.items() if isinstance(inner, k)), None)
            name = node.alias_or_name
            if kind is None:
                outputs[name] = t.value(node)  # a grouping column
                continue
            argument = inner.this
            distinct = isinstance(argument, exp.Distinct)
            if distinct:
                argument = argument.expressions[0]
            is_star = isinstance(argument, exp.Star) or (
                kind == "count" and isinstance(argument, exp.Literal)
            )
            value = None if is_star else t.value(argument)
            functions.append((kind, distinct, value))
            outputs[name] = Value(z3.Const(f"{op.id}.{name}", z3.IntSort()), z3.BoolVal(False))
        block.aggregate = _Aggregate(keys, tuple(functions))
        block.columns = outputs
        return block


@dataclass(frozen=True)
class Comparison:
    """The verifier's answer: ``equivalent`` True / False, or None (unknown) with the reason."""

    equivalent: bool | None
    reason: str
    counterexample: str = ""


def _differ(a: Value, b: Value) -> z3.BoolRef:
    x, y = a.term, b.term
    if x.sort() != y.sort():
        return z3.BoolVal(True)
    return z3.Or(a.null != b.null, z3.And(z3.Not(a.null), x != y))


def _shown(model: z3.ModelRef) -> str:
    """A model as ``relation.column = value`` lines (null flags as ``#null``)."""
    return "; ".join(sorted(f"{d.name()} = {model[d]}" for d in model.decls() if d.arity() == 0))


def _solve(formula: z3.BoolRef) -> z3.ModelRef | None:
    solver = z3.Solver()
    solver.set("timeout", 10_000)
    solver.add(formula)
    answer = solver.check()
    if answer == z3.unsat:
        return None
    if answer == z3.unknown:
        raise Unsupported("z3 could not decide the segments (timeout or undecidable fragment)")
    return solver.model()


def compare(
    ops_a: Mapping[str, Operator],
    top_a: str,
    ops_b: Mapping[str, Operator],
    top_b: str,
    leaves: set[str],
    semantics: Semantics,
) -> Comparison:
    """Decides whether the segments under ``top_a`` and ``top_b`` are equivalent; ``leaves``
    are the operators both versions share (identical sub-DAGs), read as free relations.
    Raises Unsupported when a segment holds what the verifier does not model."""
    a = _Encoder(ops_a, leaves, semantics).block(top_a)
    b = _Encoder(ops_b, leaves, semantics).block(top_b)
    opaque = a.opaque or b.opaque
    if sorted(a.leaves) != sorted(b.leaves):
        raise Unsupported("the segments read different relations")
    if a.order != b.order:
        return Comparison(False, f"different columns: {a.order} vs {b.order}")
    if (a.aggregate is None) != (b.aggregate is None):
        raise Unsupported("one segment aggregates, the other does not")
    keep_differs = z3.Xor(a.condition.true, b.condition.true)
    model = _solve(keep_differs)
    if model is not None:
        if opaque:
            raise Unsupported("the conditions differ only through uninterpreted functions")
        if a.aggregate is not None and not a.aggregate.keys:
            raise Unsupported("global aggregates over different rows may still agree")
        return Comparison(False, "one keeps a tuple the other drops", _shown(model))
    differences: list[z3.BoolRef] = []
    if a.aggregate is not None and b.aggregate is not None:
        if len(a.aggregate.keys) != len(b.aggregate.keys) or len(a.aggregate.functions) != len(
            b.aggregate.functions
        ):
            raise Unsupported("aggregates with different keys or functions")
        differences += [
            _differ(x, y) for x, y in zip(a.aggregate.keys, b.aggregate.keys, strict=True)
        ]
        for (fa, da, xa), (fb, db, xb) in zip(
            a.aggregate.functions, b.aggregate.functions, strict=True
        ):
            if fa != fb or da != db or (xa is None) != (xb is None):
                raise Unsupported(f"aggregates {fa} and {fb} differ")
            if xa is not None and xb is not None:
                differences.append(_differ(xa, xb))
    else:
        differences += [_differ(a.columns[n], b.columns[n]) for n in a.order]
    if not differences:
        return Comparison(True, "same condition, same outputs")
    model = _solve(z3.And(a.condition.true, z3.Or(*differences)))
    if model is None:
        return Comparison(True, "same condition, same outputs")
    if opaque:
        raise Unsupported("the outputs differ only through uninterpreted functions")
    return Comparison(False, "a kept tuple has different values", _shown(model))
