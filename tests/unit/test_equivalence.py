"""sparkprov.equivalence and sparkprov.verifier: Drove's equivalence of two versions'
sinks, decided by z3, on hand-built DAGs (parameters as the capture agent records them)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from sparkprov.equivalence import Equivalence, Semantics, Verdict, check
from sparkprov.workflow import DagBuilder, WorkflowDag

R = [("k", "bigint"), ("x", "bigint"), ("s", "string")]
S = [("k", "bigint"), ("y", "double")]
RS = [("k", "bigint"), ("x", "bigint"), ("s", "string"), ("y", "double")]

Build = Callable[[DagBuilder, int, int], int]


def version(body: Build) -> WorkflowDag:
    dag = DagBuilder()
    r = dag.add("source", {"relation": "r"}, [], R)
    s = dag.add("source", {"relation": "s"}, [], S)
    dag.add("named", {"relation": "out"}, [body(dag, r, s)], [])
    return dag.dag()


def decide(one: Build, other: Build, semantics: Semantics = Semantics.BAG) -> Equivalence:
    a, b = version(one), version(other)
    sink_a, sink_b = a.sink("out"), b.sink("out")
    assert sink_a is not None and sink_b is not None
    return check(a, b, sink_a, sink_b, semantics)


def filt(predicate: str, columns: list[tuple[str, str]] = R) -> Build:
    return lambda d, r, s: d.add("filter", {"predicate": predicate}, [r], columns)


def test_identical_sub_dags() -> None:
    answer = decide(filt("(x > CAST(3 AS BIGINT))"), filt("(x > CAST(3 AS BIGINT))"))
    assert answer.verdict is Verdict.EQUIVALENT and answer.method == "identical"


def test_equal_predicates_written_differently() -> None:
    answer = decide(filt("((x > 3) AND (s = 'CA'))"), filt("((s = 'CA') AND NOT (x <= 3))"))
    assert answer.verdict is Verdict.EQUIVALENT and answer.method == "smt", answer.reason


def test_different_predicates_with_a_counterexample() -> None:
    answer = decide(filt("(x > 3)"), filt("(x >= 3)"))
    assert answer.verdict is Verdict.NOT_EQUIVALENT
    assert "x = 3" in answer.counterexample


def test_nulls_are_sql_nulls() -> None:
    # In two-valued logic this filter keeps every row; in SQL it drops rows where x is null.
    def nothing(d: DagBuilder, r: int, s: int) -> int:
        return r

    answer = decide(filt("((x > 3) OR NOT (x > 3))"), nothing)
    assert answer.verdict is Verdict.NOT_EQUIVALENT
    assert "x#null = True" in answer.counterexample
    same = decide(filt("((x > 3) OR NOT (x > 3))"), filt("(x IS NOT NULL)"))
    assert same.verdict is Verdict.EQUIVALENT, same.reason


def join(d: DagBuilder, left: int, right: int) -> int:
    return d.add("join", {"how": "inner", "on": '["k"]'}, [left, right], RS)


def test_filter_pushed_below_a_join() -> None:
    def above(d: DagBuilder, r: int, s: int) -> int:
        return d.add("filter", {"predicate": "(s = 'CA')"}, [join(d, r, s)], RS)

    def below(d: DagBuilder, r: int, s: int) -> int:
        return join(d, d.add("filter", {"predicate": "(s = 'CA')"}, [r], R), s)

    answer = decide(above, below)
    assert answer.verdict is Verdict.EQUIVALENT, answer.reason
    assert {o.kind for o in answer.segment_a} == {"filter", "join", "named"}


def test_projection_outputs_compared() -> None:
    def doubled(d: DagBuilder, r: int, s: int) -> int:
        cols = '["k", "(x * CAST(2 AS BIGINT)) AS x2"]'
        return d.add("project", {"columns": cols}, [r], [("k", "bigint"), ("x2", "bigint")])

    def added(d: DagBuilder, r: int, s: int) -> int:
        cols = '["k", "(x + x) AS x2"]'
        return d.add("project", {"columns": cols}, [r], [("k", "bigint"), ("x2", "bigint")])

    def plus_one(d: DagBuilder, r: int, s: int) -> int:
        cols = '["k", "(x + CAST(1 AS BIGINT)) AS x2"]'
        return d.add("project", {"columns": cols}, [r], [("k", "bigint"), ("x2", "bigint")])

    assert decide(doubled, added).verdict is Verdict.EQUIVALENT
    assert decide(doubled, plus_one).verdict is Verdict.NOT_EQUIVALENT


def grouped(function: str, predicate: str | None = None) -> Build:
    def build(d: DagBuilder, r: int, s: int) -> int:
        source = r if predicate is None else d.add("filter", {"predicate": predicate}, [r], R)
        params = {"keys": '["s"]', "aggregates": f'["s", "{function} AS v"]'}
        return d.add("aggregate", params, [source], [("s", "string"), ("v", "bigint")])

    return build


@pytest.mark.parametrize("function", ["count(1)", "sum(x)", "avg(x)", "min(x)", "max(x)"])
def test_aggregates(function: str) -> None:
    one = grouped(function, "((x > 1) AND (x < 5))")
    same = grouped(function, "((x < 5) AND (x > 1))")
    other = grouped(function, "(x > 1)")
    assert decide(one, same).verdict is Verdict.EQUIVALENT
    assert decide(one, other).verdict is Verdict.NOT_EQUIVALENT


def test_different_aggregate_functions_are_unknown() -> None:
    answer = decide(grouped("sum(x)", "(x > 1)"), grouped("max(x)", "(x > 2)"))
    assert answer.verdict in (Verdict.UNKNOWN, Verdict.NOT_EQUIVALENT)
    assert decide(grouped("sum(x)"), grouped("max(x)")).verdict is Verdict.UNKNOWN


def udf(name: str, code: str) -> Build:
    def build(d: DagBuilder, r: int, s: int) -> int:
        params = {"columns": f'["{name}(s) AS l"]', "udfs": f'[["{name}", "{code}"]]'}
        return d.add("with_column", params, [r], [*R, ("l", "int")])

    return build


def test_udf_inside_the_segment_is_unknown_never_equivalent() -> None:
    answer = decide(udf("label", "c0de"), udf("label", "beef"))
    assert answer.verdict is Verdict.UNKNOWN
    assert "UDF label" in answer.reason


def test_udf_outside_the_segment_does_not_block() -> None:
    def then(predicate: str) -> Build:
        def build(d: DagBuilder, r: int, s: int) -> int:
            labelled = udf("label", "c0de")(d, r, s)
            return d.add("filter", {"predicate": predicate}, [labelled], [*R, ("l", "int")])

        return build

    proven = decide(then("((l = 1) AND (x > 2))"), then("((x > 2) AND (l = 1))"))
    assert proven.verdict is Verdict.EQUIVALENT, proven.reason
    assert decide(then("(l = 1)"), then("(l = 0)")).verdict is Verdict.NOT_EQUIVALENT


def test_a_difference_below_an_explode_is_unknown() -> None:
    def exploded(predicate: str) -> Build:
        def build(d: DagBuilder, r: int, s: int) -> int:
            kept = d.add("filter", {"predicate": predicate}, [r], R)
            cols = '["k", "explode(split(s, \',\', -1)) AS part"]'
            return d.add("project", {"columns": cols}, [kept], [("k", "bigint"), ("p", "string")])

        return build

    differs = decide(exploded("(x > 1)"), exploded("(x > 2)"))
    assert differs.verdict is Verdict.UNKNOWN and "may hide" in differs.reason
    same = decide(exploded("(x > 1)"), exploded("(NOT (x <= 1))"))
    assert same.verdict is Verdict.EQUIVALENT


def test_uninterpreted_functions_prove_but_never_refute() -> None:
    same = decide(filt("(RLIKE(s, 'clim') AND (x > 1))"), filt("((x > 1) AND RLIKE(s, 'clim'))"))
    assert same.verdict is Verdict.EQUIVALENT
    other = decide(filt("RLIKE(s, 'clim')"), filt("RLIKE(s, 'heat')"))
    assert other.verdict is Verdict.UNKNOWN


def test_set_semantics_ignores_distinct() -> None:
    def distinct(d: DagBuilder, r: int, s: int) -> int:
        kept = d.add("filter", {"predicate": "(x > 1)"}, [r], R)
        return d.add("distinct", {"keys": '["k", "x", "s"]'}, [kept], R)

    plain = filt("(x > 1)")
    assert decide(distinct, plain, Semantics.SET).verdict is Verdict.EQUIVALENT
    assert decide(distinct, plain, Semantics.BAG).verdict is Verdict.UNKNOWN
