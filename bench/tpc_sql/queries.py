"""The 22 TPC-H and 99 TPC-DS query texts as DuckDB ships them, and the one place that adapts
DuckDB's dialect to what Spark SQL reads.

Every rewrite is a row of :data:`REWRITES`: (benchmark, query number or ``None`` for every
query, pattern, replacement, reason). A per-query rewrite must change its text
(:func:`stale_rewrites` finds those that no longer do, and tests/unit/test_tpc_sql.py fails on
them), so a change in DuckDB's texts cannot leave a silent no-op behind. Rewrites are kept
minimal and must not change what the query means: the runner compares Spark's result of the
adapted text with DuckDB's result of the original.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache

from bench.tpc_sql.data import connect

__all__ = ["COUNTS", "REWRITES", "Rewrite", "adapt", "original", "stale_rewrites", "texts"]

COUNTS = {"tpch": 22, "tpcds": 99}


@dataclass(frozen=True)
class Rewrite:
    """One regular-expression substitution and why Spark needs it."""

    benchmark: str
    query: int | None  # None: a dialect pattern applied to every query of the benchmark
    pattern: str
    replacement: str
    reason: str

    def apply(self, sql: str) -> str:
        return re.sub(self.pattern, self.replacement, sql, flags=re.IGNORECASE | re.DOTALL)


R = Rewrite
REWRITES: tuple[Rewrite, ...] = (
    R(
        "tpcds",
        None,
        r'\bAS(\s+)"([^"\n]+)"',
        r"AS\1`\2`",
        'double quotes delimit identifiers in DuckDB (aliases such as AS "30 days"); Spark '
        "reads them as string literals and wants backticks",
    ),
    R(
        "tpcds",
        66,
        r"sum\((\w+_sales)/w_warehouse_sq_ft\)",
        r"sum(CAST(\1 AS DOUBLE)/w_warehouse_sq_ft)",
        "DuckDB's decimal / int is a double; Spark rounds each row's quotient to a decimal of "
        "6 places and the sum of those roundings drifts past the 1e-6 tolerance",
    ),
)


@cache
def texts(benchmark: str) -> dict[int, str]:
    """Query number -> DuckDB's text (``tpch_queries()`` / ``tpcds_queries()``), offline."""
    con = connect(benchmark)
    try:
        rows = con.execute(f"SELECT query_nr, query FROM {benchmark}_queries()").fetchall()
    finally:
        con.close()
    found = {int(number): str(sql) for number, sql in rows}
    if len(found) != COUNTS[benchmark]:
        raise RuntimeError(f"{benchmark}: expected {COUNTS[benchmark]} queries, got {len(found)}")
    return found


def original(benchmark: str, number: int) -> str:
    return texts(benchmark)[number]


def _applies(rewrite: Rewrite, benchmark: str, number: int) -> bool:
    return rewrite.benchmark == benchmark and rewrite.query in (None, number)


def _steps(benchmark: str, number: int) -> list[Rewrite]:
    """The rewrites of one query in the order they run: dialect patterns, then its own."""
    mine = [r for r in REWRITES if _applies(r, benchmark, number)]
    return sorted(mine, key=lambda r: r.query is not None)


def adapt(benchmark: str, number: int, sql: str) -> str:
    """``sql`` (DuckDB's text of query ``number``) in the Spark SQL that means the same.

    Dialect patterns run first, then the query's own rewrites; a trailing ``;`` goes (spark.sql
    takes one statement)."""
    for rewrite in _steps(benchmark, number):
        sql = rewrite.apply(sql)
    return sql.strip().rstrip(";").rstrip()


def _changes(benchmark: str, number: int) -> set[Rewrite]:
    """The rewrites that change query ``number``'s text where they run in :func:`adapt`."""
    sql, changed = original(benchmark, number), set()
    for rewrite in _steps(benchmark, number):
        after = rewrite.apply(sql)
        if after != sql:
            changed.add(rewrite)
        sql = after
    return changed


def stale_rewrites() -> list[Rewrite]:
    """Rewrites that name no such query, or change no text: a per-query one its query's, a
    dialect pattern any query's of its benchmark."""
    changed: set[Rewrite] = set()
    for benchmark in {r.benchmark for r in REWRITES}:
        for number in texts(benchmark):
            changed |= _changes(benchmark, number)
    return [r for r in REWRITES if r not in changed]
