"""Provenance polynomials and their semiring evaluations, against brute force on random DAGs."""

from __future__ import annotations

import itertools
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from query_service.graph import Graph
from query_service.model import NodeView
from query_service.polynomial import (
    boolean,
    counting,
    minimal,
    polynomial,
    probability,
    tropical,
    why,
)

from .test_deletion import typed_dags


def view(i: int, op: str, label: str = "") -> NodeView:
    return NodeView(i, "r", op, label or f"x{i}", "", {}, "", 0, 0)


def _example() -> Graph:
    """r = (x0 · x1) + (x1 · x2) + x3 with a DELTA on top: δ(x0·x1 + x1·x2 + x3)."""
    return Graph.of(
        [(0, 4), (1, 4), (1, 5), (2, 5), (4, 6), (5, 6), (3, 6), (6, 7)],
        {0: view(0, "TOKEN"), 1: view(1, "TOKEN"), 2: view(2, "TOKEN"), 3: view(3, "TOKEN"),
         4: view(4, "TIMES"), 5: view(5, "TIMES"), 6: view(6, "PLUS"), 7: view(7, "DELTA")},
    )  # fmt: skip


def test_text_counting_why_and_tropical_on_a_known_polynomial() -> None:
    graph = _example()
    poly = polynomial(graph, 6)
    text, cut = poly.text()
    assert not cut
    assert sorted(text.split(" + ")) == ["x0 · x1", "x1 · x2", "x3"]
    assert polynomial(graph, 7).text()[0] == f"δ({text})"
    assert counting(poly) == 3 and counting(polynomial(graph, 7)) == 1
    assert counting(poly, {1: 2}) == 2 + 2 + 1
    assert set(minimal(why(poly))) == {frozenset({0, 1}), frozenset({1, 2}), frozenset({3})}
    assert tropical(poly, {0: 1, 1: 2, 2: 5, 3: 10}) == 3
    assert tropical(poly, {3: 0.5}, default=1) == 0.5
    assert boolean(poly, [1]) and not boolean(poly, [1, 3])


def test_exact_probability_of_a_known_polynomial() -> None:
    p = {0: 0.5, 1: 0.5, 2: 0.5, 3: 0.2}
    # P(x0x1 ∨ x1x2) = P(x1)·P(x0 ∨ x2) = 0.5 · 0.75; with x3 independent:
    expected = 1 - (1 - 0.5 * 0.75) * (1 - 0.2)
    result = probability(polynomial(_example(), 6), p)
    assert result.value == pytest.approx(expected)
    assert result.method.startswith("exact")


def _brute_probability(graph: Graph, root: int, p: dict[int, float]) -> float:
    poly = polynomial(graph, root)
    variables = poly.variables
    total = 0.0
    for bits in itertools.product([True, False], repeat=len(variables)):
        weight = math.prod(p[v] if b else 1 - p[v] for v, b in zip(variables, bits, strict=True))
        false = [v for v, b in zip(variables, bits, strict=True) if not b]
        total += weight * boolean(poly, false)
    return total


@settings(max_examples=80, deadline=None)
@given(typed_dags(), st.data())
def test_probability_equals_enumeration_and_why_matches_boolean(
    graph: Graph, data: st.DataObject
) -> None:
    root = data.draw(st.sampled_from(sorted(graph.ids())))
    poly = polynomial(graph, root)
    p = {v: data.draw(st.sampled_from([0.0, 0.1, 0.5, 0.9, 1.0])) for v in poly.variables}
    assert probability(poly, p).value == pytest.approx(_brute_probability(graph, root, p))
    witnesses = minimal(why(poly))
    # a set of variables being true derives the root iff it contains a witness
    for k in range(len(poly.variables) + 1):
        for true in itertools.combinations(poly.variables, k):
            false = set(poly.variables) - set(true)
            assert boolean(poly, false) == any(w <= set(true) for w in witnesses)
    # counting counts derivations: zero exactly when no witness exists
    assert (counting(poly) > 0) == bool(witnesses)


def test_monte_carlo_beyond_the_witness_cap(monkeypatch: pytest.MonkeyPatch) -> None:
    from query_service import polynomial as module

    monkeypatch.setattr(module, "MAX_WITNESSES", 1)
    result = probability(polynomial(_example(), 6), {0: 0.5, 1: 0.5, 2: 0.5, 3: 0.2}, 20_000)
    assert result.method.startswith("Monte Carlo")
    assert result.value == pytest.approx(1 - (1 - 0.375) * 0.8, abs=0.02)
