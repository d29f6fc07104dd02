"""All 22 TPC-H queries (bench.tpch) over the eight generated tables, on the real stack: per
query, the captured result equals the plain one, and the re-execution oracle
(tests/integration/oracle.py) gets a few output rows back from their witnesses."""

from __future__ import annotations

from typing import Any

import pytest
from pyspark.sql import DataFrame, SparkSession

from bench.tpch import KEYS, QUERIES, tables
from capture_agent import ProvenanceSession

from .oracle import check_by_reexecution

SCALE = 0.001
MAX_ROWS = 3  # output rows the oracle traces back per query

# Queries the capture agent does not run yet: query -> the exact failure (temporary).
CAPTURE_FAILS: dict[str, str] = {}
ORACLE_FAILS: dict[str, str] = {}


def _params(failing: dict[str, str]) -> list[Any]:
    names = sorted(QUERIES, key=lambda n: int(n[1:]))
    return [
        pytest.param(n, marks=pytest.mark.xfail(strict=True, reason=failing[n]))
        if n in failing
        else n
        for n in names
    ]


@pytest.fixture(scope="module")
def tpch_tables(spark: SparkSession) -> dict[str, DataFrame]:
    generated = tables(spark, SCALE)
    for df in generated.values():
        df.cache().count()
    return generated


def _sorted_rows(rows: list[Any]) -> list[tuple[Any, ...]]:
    return sorted((tuple(r) for r in rows), key=repr)


@pytest.mark.parametrize("name", _params(CAPTURE_FAILS))
def test_captured_result_equals_plain(
    spark: SparkSession, tpch_tables: dict[str, DataFrame], name: str
) -> None:
    query = QUERIES[name]
    plain = _sorted_rows(query(dict(tpch_tables)).collect())
    assert plain, f"{name} returns no row at scale {SCALE}"
    with ProvenanceSession(spark, workflow=f"tpch22-{name}") as prov:
        tracked = {table: prov.source(df, table) for table, df in tpch_tables.items()}
        captured = _sorted_rows(query(tracked).collect())
    assert captured == plain


@pytest.mark.parametrize("name", _params(ORACLE_FAILS))
def test_rows_come_back_from_their_witness(
    spark: SparkSession, client: Any, tpch_tables: dict[str, DataFrame], name: str
) -> None:
    checked = check_by_reexecution(
        spark,
        client,
        tpch_tables,
        KEYS,
        QUERIES[name],
        max_rows=MAX_ROWS,
        workflow=f"tpch22-oracle-{name}",
    )
    assert checked.checked >= 1
