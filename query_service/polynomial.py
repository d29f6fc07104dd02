"""Provenance polynomials (N[X] with δ) of a node, and their evaluation in commutative semirings.

The polynomial of a node is read off its ancestry (MODEL.md section 4): a TOKEN or MODULE node
without parents is a variable; TIMES and TENSOR are products of their parents (joint use); PLUS
and AGGREGATE are sums (alternative use: an aggregate exists while one member does); DELTA is δ of
the sum of its parents; a BLACK_BOX f is f(args), evaluated as δ of the sum of its arguments; any
other node without parents (a VALUE) is the constant 1. These are exactly the survival rules of
deletion propagation (Definition 4.2), so the Boolean evaluation with the deleted nodes set to
false says which nodes survive: ``tests/unit/test_polynomial.py`` checks it on random graphs.

The text leaves out constant factors 1 (values) and a group row's aggregate under its δ (the
aggregate exists only while a member does, so under δ it adds nothing); the structured terms keep
every argument. Terms form a DAG shared by node id, never expanded: evaluating costs one pass
over the ancestry.
Why-provenance (sets of witness sets) can grow exponentially and is capped at ``MAX_WITNESSES``.
Probability (independent variables) is exact: Shannon expansion over the minimal witnesses (the
polynomial is monotone, so it is true iff some minimal witness is all true), with memoised
cofactors and independent clause groups multiplied; when the witnesses pass the cap or the
expansion its step budget, a Monte Carlo estimate over the term DAG is returned instead, and
``method`` says which ran.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TypeVar

from query_service.graph import Graph

__all__ = [
    "MAX_WITNESSES",
    "Polynomial",
    "Term",
    "TooLarge",
    "ProbabilityResult",
    "boolean",
    "counting",
    "minimal",
    "polynomial",
    "probability",
    "tropical",
    "why",
]

T = TypeVar("T")

VARIABLE_OPS = frozenset({"TOKEN", "MODULE"})
# EXCLUDED: an anti join's excluded left row with its match, the pair's product (as deletion
# removes it with either); no node has one as an ancestor, so no other polynomial changes.
_PRODUCT = frozenset({"TIMES", "TENSOR", "EXCLUDED"})
_VALUE_OPS = frozenset({"AGGREGATE", "TENSOR", "VALUE"})
MAX_WITNESSES = 10_000
SHANNON_BUDGET = 200_000
MAX_TEXT = 20_000


class TooLarge(Exception):
    """A why-provenance with more than MAX_WITNESSES witness sets."""


@dataclass(frozen=True)
class Term:
    id: int
    op: str  # VAR, ONE, PLUS, TIMES, DELTA, BLACK_BOX (evaluated as DELTA)
    label: str
    args: tuple[int, ...]
    kind: str = ""  # the graph node's op


@dataclass(frozen=True)
class Polynomial:
    root: int
    terms: dict[int, Term]  # topological: every term after its arguments
    variables: list[int]

    def text(self, limit: int = MAX_TEXT) -> tuple[str, bool]:
        """Readable text; shared subterms are repeated. (text, truncated)."""
        cache: dict[int, str] = {}
        sums: set[int] = set()  # terms whose text is a bare sum: parenthesised inside products
        for term in self.terms.values():
            shown = term.args
            if term.op == "TIMES":
                # constants 1 (values) are left out of products
                shown = tuple(a for a in term.args if self.terms[a].op != "ONE") or term.args[:1]
            elif term.op == "DELTA":
                # a group row's aggregate (a v-node) adds no derivation under δ: not printed
                rows = tuple(a for a in term.args if self.terms[a].kind not in _VALUE_OPS)
                shown = rows or term.args
            if term.op == "VAR":
                out = term.label
            elif term.op == "ONE":
                out = "1"
            elif term.op == "PLUS":
                out = " + ".join(cache[a] for a in shown)
                if len(shown) > 1 or shown[0] in sums:
                    sums.add(term.id)
            elif term.op == "TIMES":
                out = " · ".join(f"({cache[a]})" if a in sums else cache[a] for a in shown)
            elif term.op == "DELTA":
                out = f"δ({' + '.join(cache[a] for a in shown)})"
            else:
                out = f"{term.label}({', '.join(cache[a] for a in shown)})"
            cache[term.id] = out[:limit]
        text = cache[self.root]
        return text, len(text) >= limit


def polynomial(graph: Graph, root: int) -> Polynomial:
    """The polynomial of ``root`` over ``graph`` (which must hold root's whole ancestry)."""
    order = _topological(graph, root)
    terms: dict[int, Term] = {}
    variables = []
    for n in order:
        view = graph.nodes.get(n)
        op = view.op if view else ""
        parents = tuple(sorted(graph.parents.get(n, ())))
        if not parents:
            if op in VARIABLE_OPS:
                label = _variable_label(graph, n)
                terms[n] = Term(n, "VAR", label, (), op)
                variables.append(n)
            else:
                terms[n] = Term(n, "ONE", "1", (), op)
        elif op in _PRODUCT:
            terms[n] = Term(n, "TIMES", "·", parents, op)
        elif op == "DELTA":
            terms[n] = Term(n, "DELTA", "δ", parents, op)
        elif op == "BLACK_BOX":
            terms[n] = Term(n, "BLACK_BOX", view.label if view else "f", parents, op)
        else:  # PLUS, AGGREGATE, a zoomed-out module node: alternatives
            terms[n] = Term(n, "PLUS", "+", parents, op)
    return Polynomial(root, terms, variables)


def _variable_label(graph: Graph, n: int) -> str:
    view = graph.nodes[n]
    if view.op == "MODULE":
        return f"{view.label}#{n & 0xFFFF:04x}"
    return view.label or str(n)


def _topological(graph: Graph, root: int) -> list[int]:
    """Root's ancestors, parents before children (iterative, for deep graphs)."""
    ancestors = set(graph.reach([root], backward=True))
    indegree = {n: sum(1 for p in graph.parents.get(n, ()) if p in ancestors) for n in ancestors}
    ready = sorted(n for n, d in indegree.items() if d == 0)
    out = []
    while ready:
        n = ready.pop()
        out.append(n)
        for c in graph.children.get(n, ()):
            if c in indegree:
                indegree[c] -= 1
                if indegree[c] == 0:
                    ready.append(c)
    if len(out) != len(ancestors):
        raise ValueError("the ancestry has a cycle")
    return out


def _evaluate(
    poly: Polynomial,
    var: Callable[[int], T],
    one: T,
    plus: Callable[[list[T]], T],
    times: Callable[[list[T]], T],
    delta: Callable[[T], T],
    fixed: Mapping[int, T] | None = None,
) -> T:
    values: dict[int, T] = {}
    for term in poly.terms.values():
        if fixed and term.id in fixed:
            values[term.id] = fixed[term.id]
            continue
        args = [values[a] for a in term.args]
        if term.op == "VAR":
            values[term.id] = var(term.id)
        elif term.op == "ONE":
            values[term.id] = one
        elif term.op == "TIMES":
            values[term.id] = times(args)
        elif term.op == "PLUS":
            values[term.id] = plus(args)
        else:  # DELTA, BLACK_BOX
            values[term.id] = delta(plus(args))
    return values[poly.root]


def boolean(poly: Polynomial, false_nodes: Iterable[int] = ()) -> bool:
    """True iff the root survives when the given nodes (variables or not) are false: the same
    question deletion propagation answers."""
    false = set(false_nodes)
    return _evaluate(
        poly,
        lambda v: True,
        True,
        any,
        all,
        lambda x: x,
        fixed=dict.fromkeys(false, False),
    )


def counting(poly: Polynomial, multiplicity: Mapping[int, int] | None = None) -> int:
    """The number of derivations (N), every variable 1 unless given; δ(n) = min(n, 1)."""
    m = multiplicity or {}
    return _evaluate(
        poly,
        lambda v: m.get(v, 1),
        1,
        sum,
        math.prod,
        lambda x: min(x, 1),
    )


def tropical(poly: Polynomial, costs: Mapping[int, float], default: float = 1.0) -> float:
    """Min-cost derivation: (min, +) with every variable costing ``costs`` or ``default``."""
    return _evaluate(
        poly,
        lambda v: costs.get(v, default),
        0.0,
        lambda xs: min(xs, default=math.inf),
        lambda xs: math.fsum(xs),
        lambda x: x,
    )


Witnesses = frozenset[frozenset[int]]


def why(poly: Polynomial, cap: int | None = None) -> Witnesses:
    """Why-provenance: the set of witness sets (sets of variables that jointly derive the root);
    TooLarge past ``cap`` (default MAX_WITNESSES) sets."""
    cap = MAX_WITNESSES if cap is None else cap

    def plus(xs: list[Witnesses]) -> Witnesses:
        out = frozenset().union(*xs) if xs else frozenset()
        if len(out) > cap:
            raise TooLarge(f"more than {cap} witness sets")
        return out

    def times(xs: list[Witnesses]) -> Witnesses:
        acc: Witnesses = frozenset({frozenset()})
        for x in xs:
            acc = frozenset(a | b for a in acc for b in x)
            if len(acc) > cap:
                raise TooLarge(f"more than {cap} witness sets")
        return acc

    return _evaluate(
        poly,
        lambda v: frozenset({frozenset({v})}),
        frozenset({frozenset()}),
        plus,
        times,
        lambda x: x,
    )


def minimal(witnesses: Witnesses) -> list[frozenset[int]]:
    """The minimal witness sets (none contains another), smallest first."""
    out: list[frozenset[int]] = []
    for w in sorted(witnesses, key=lambda s: (len(s), sorted(s))):
        if not any(m <= w for m in out):
            out.append(w)
    return out


@dataclass(frozen=True)
class ProbabilityResult:
    value: float
    method: str


def probability(
    poly: Polynomial,
    p: Mapping[int, float],
    samples: int = 10_000,
    seed: int = 0,
) -> ProbabilityResult:
    """P(root derivable) with independent variables true with probability ``p`` (default 1)."""
    try:
        clauses = minimal(why(poly))
    except TooLarge:
        return _monte_carlo(poly, p, samples, seed, "too many witness sets")
    budget = [SHANNON_BUDGET]
    memo: dict[frozenset[frozenset[int]], float] = {}

    def prob(cs: frozenset[frozenset[int]]) -> float:
        if not cs:
            return 0.0
        if frozenset() in cs:
            return 1.0
        if cs in memo:
            return memo[cs]
        budget[0] -= 1
        if budget[0] < 0:
            raise TooLarge("Shannon expansion budget spent")
        groups = _independent(cs)
        if len(groups) > 1:
            miss = 1.0
            for g in groups:
                miss *= 1.0 - prob(g)
            result = 1.0 - miss
        else:
            # branch on the variable in most clauses
            counts: dict[int, int] = {}
            for c in cs:
                for v in c:
                    counts[v] = counts.get(v, 0) + 1
            x = max(sorted(counts), key=lambda v: counts[v])
            px = p.get(x, 1.0)
            when_true = frozenset(c - {x} for c in cs)
            when_false = frozenset(c for c in cs if x not in c)
            result = px * prob(_absorb(when_true)) + (1.0 - px) * prob(when_false)
        memo[cs] = result
        return result

    # Certain variables (p = 1) drop out of every clause; impossible ones drop their clauses.
    reduced = frozenset(
        frozenset(v for v in c if p.get(v, 1.0) < 1.0)
        for c in clauses
        if all(p.get(v, 1.0) > 0.0 for v in c)
    )
    try:
        value = prob(_absorb(reduced))
    except TooLarge as e:
        return _monte_carlo(poly, p, samples, seed, str(e))
    k = len({v for c in reduced for v in c})
    return ProbabilityResult(
        value, f"exact: Shannon expansion over {len(clauses)} minimal witnesses, {k} uncertain"
    )


def _absorb(cs: frozenset[frozenset[int]]) -> frozenset[frozenset[int]]:
    return frozenset(minimal(cs))


def _independent(cs: frozenset[frozenset[int]]) -> list[frozenset[frozenset[int]]]:
    """Clause groups sharing no variable (union-find over variables)."""
    parent: dict[int, int] = {}

    def find(v: int) -> int:
        while parent.setdefault(v, v) != v:
            parent[v] = parent[parent[v]]
            v = parent[v]
        return v

    for c in cs:
        vs = sorted(c)
        for v in vs[1:]:
            parent[find(v)] = find(vs[0])
    groups: dict[int, set[frozenset[int]]] = {}
    for c in cs:
        groups.setdefault(find(min(c)), set()).add(c)
    return [frozenset(g) for g in groups.values()]


def _monte_carlo(
    poly: Polynomial, p: Mapping[int, float], samples: int, seed: int, why_not: str
) -> ProbabilityResult:
    rng = random.Random(seed)
    hits = 0
    for _ in range(samples):
        false = [v for v in poly.variables if rng.random() >= p.get(v, 1.0)]
        hits += boolean(poly, false)
    return ProbabilityResult(
        hits / samples, f"Monte Carlo estimate, {samples} samples ({why_not}; exact infeasible)"
    )
