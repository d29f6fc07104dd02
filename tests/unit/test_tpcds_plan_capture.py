"""TPC-DS query texts captured from their plans at SF 0.01, one query per construct plan capture
translates without a DataFrame call of its own: rollup (Expand), a scalar subquery bounded at run
time, EXISTS under OR (ExistenceJoin), distinct beside plain aggregates. Each captured result
equals the plain one, the emitted graph matches the run's counts, and Titian's oracle holds on a
sampled output row. Outputs computed from the keys and same-named columns of a self-joined CTE
(q27, q97) are in tests/unit/test_plan_capture.py on small views; the 99 queries run in
bench/tpc_sql/captured.py (bench/README.md), kept out of CI for time."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from bench.tpc_sql.captured import capture_query
from bench.tpc_sql.data import generate
from bench.tpc_sql.run import spark_views

QUERIES = {
    22: "rollup over four keys (Expand)",
    6: "a scalar subquery the plan does not bound to one row",
    35: "EXISTS under OR (ExistenceJoin)",
    28: "count(DISTINCT) beside avg and count, six times, cross-joined",
}


@pytest.fixture(scope="module")
def tpcds(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    tables = generate("tpcds", 0.01, tmp_path_factory.mktemp("tpcds-plan-sf0.01"))
    spark_views(spark, tables)
    yield spark
    for name in tables:
        spark.catalog.dropTempView(name)


@pytest.mark.parametrize("number", sorted(QUERIES))
def test_tpcds_query_as_sql_text_is_captured_with_the_oracle(tpcds: Any, number: int) -> None:
    result = capture_query(tpcds, "tpcds", number, sampled=1)
    assert result.captured == "yes", f"q{number} ({QUERIES[number]}): {result.captured}"
    assert result.equal, f"q{number}: the captured result differs from the plain one"
    assert result.counts_match, f"q{number}: the emitted graph differs from the run's counts"
    assert result.rows > 0 and result.oracle_checked == 1
    assert result.oracle_held == 1, f"q{number}: re-running on the witness lost the row"
