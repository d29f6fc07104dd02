"""Runs TPC-H or TPC-DS query texts through ``spark.sql`` and checks each result against DuckDB.

    python -m bench.tpc_sql.run --benchmark tpch --sf 0.01 [--queries 1,2,3] [--data DIR]

Both engines read the same parquet files (:mod:`bench.tpc_sql.data`): Spark as temp views, DuckDB
as views. Spark runs the adapted text (:func:`bench.tpc_sql.queries.adapt`), DuckDB the original,
and the results are compared as multisets (:mod:`bench.tpc_sql.compare`); a query ending in
``ORDER BY ... LIMIT n`` whose results differ is compared again allowing ties at the n-th row.
Prints one line per query and writes bench/results/tpc_sql-<benchmark>-<sf>-<timestamp>.json.
"""

from __future__ import annotations

import argparse
import json
import logging
import re
import sys
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import duckdb
import sqlglot
from sqlglot import exp

from bench.tpc_sql.compare import equal, tie_equal
from bench.tpc_sql.data import generate
from bench.tpc_sql.queries import COUNTS, adapt, original

__all__ = [
    "Outcome",
    "check",
    "duckdb_views",
    "local_session",
    "main",
    "order_columns",
    "spark_views",
]

log = logging.getLogger(__name__)

RESULTS = Path(__file__).resolve().parents[1] / "results"
TRAILING_LIMIT = re.compile(r"\s+LIMIT\s+(\d+)\s*;?\s*$", re.IGNORECASE)


@dataclass
class Outcome:
    """One query's run: ``equal`` is yes, tie (equal up to ties at LIMIT), no, or - (no run)."""

    query: int
    spark_ok: bool
    error: str
    rows: int
    duckdb_rows: int
    equal: str
    seconds: float


def local_session(cores: int, driver_memory: str) -> Any:
    """examples.spark.local_spark's session with the driver's heap set: at SF 1 the default 1g
    cannot broadcast the build side of TPC-DS q35."""
    from examples.spark import local_spark

    return local_spark("tpc_sql", cores, {"spark.driver.memory": driver_memory})


def spark_views(spark: Any, tables: Mapping[str, Path]) -> None:
    """Each table as a temp view over its parquet file, named as in the query texts."""
    for name, path in tables.items():
        spark.read.parquet(str(path)).createOrReplaceTempView(name)


def duckdb_views(tables: Mapping[str, Path]) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB with a view per table over the same parquet file as Spark's."""
    con = duckdb.connect()
    for name, path in tables.items():
        con.execute(f"CREATE VIEW {name} AS SELECT * FROM read_parquet('{path}')")
    return con


def order_columns(sql: str, columns: Sequence[str]) -> list[int] | None:
    """The output columns the outermost ORDER BY sorts on, or None when one of its keys is not
    an output column (an expression) or there is no outermost ORDER BY."""
    tree = sqlglot.parse_one(sql, read="duckdb")
    order = tree.args.get("order")
    if order is None:
        return None
    names = [c.lower() for c in columns]
    out = []
    for ordered in order.expressions:
        key = ordered.this
        if isinstance(key, exp.Literal) and key.is_int and 0 < int(key.this) <= len(names):
            out.append(int(key.this) - 1)
        elif isinstance(key, exp.Column) and key.name.lower() in names:
            out.append(names.index(key.name.lower()))
        else:
            return None
    return out


def _first_line(error: BaseException) -> str:
    """The line that names the failure: past Py4J's "An error occurred while calling ..."."""
    lines = [line.strip(" :") for line in str(error).strip().splitlines() if line.strip(" :")]
    if len(lines) > 1 and lines[0].startswith("An error occurred while calling"):
        lines = lines[1:]
    return (lines[0] if lines else type(error).__name__)[:300]


def _compare(
    con: duckdb.DuckDBPyConnection, sql: str, spark_rows: list[tuple[Any, ...]]
) -> tuple[str, int]:
    """(yes / tie / no, DuckDB's row count) for Spark's rows against DuckDB's result of the
    original text ``sql``; ties are looked at only when plain equality fails."""
    result = con.execute(sql)
    columns = [d[0] for d in result.description or []]
    duck = result.fetchall()
    if equal(spark_rows, duck):
        return "yes", len(duck)
    order = order_columns(sql, columns) if TRAILING_LIMIT.search(sql) else None
    if order is None:
        return "no", len(duck)
    unlimited = con.execute(TRAILING_LIMIT.sub("", sql)).fetchall()
    return ("tie" if tie_equal(spark_rows, duck, unlimited, order) else "no"), len(duck)


def check(spark: Any, con: duckdb.DuckDBPyConnection, benchmark: str, number: int) -> Outcome:
    """Query ``number`` in Spark (adapted text) and in DuckDB (original text), compared."""
    text = original(benchmark, number)
    started = time.monotonic()
    try:
        rows = [tuple(row) for row in spark.sql(adapt(benchmark, number, text)).collect()]
    except Exception as error:  # any Spark failure is this query's result, not the run's
        seconds = round(time.monotonic() - started, 3)
        return Outcome(number, False, _first_line(error), 0, -1, "-", seconds)
    seconds = round(time.monotonic() - started, 3)
    try:
        verdict, duck_rows = _compare(con, text, rows)
    except duckdb.Error as error:  # the reference failing is reported, not raised
        return Outcome(number, True, f"duckdb: {_first_line(error)}", len(rows), -1, "-", seconds)
    return Outcome(number, True, "", len(rows), duck_rows, verdict, seconds)


def parse_queries(spec: str | None, benchmark: str) -> list[int]:
    """``1,2,5-9`` -> [1, 2, 5, 6, 7, 8, 9]; all of the benchmark's queries when empty."""
    if not spec:
        return list(range(1, COUNTS[benchmark] + 1))
    out: list[int] = []
    for part in spec.split(","):
        low, _, high = part.strip().partition("-")
        out.extend(range(int(low), int(high or low) + 1))
    return out


def table(outcomes: Iterable[Outcome]) -> str:
    """The printed report: one line per query."""
    lines = [f"{'query':>5}  {'spark':<5}  {'rows':>6}  {'duckdb':>6}  {'equal':<5}  {'s':>7}"]
    for o in outcomes:
        spark = "ok" if o.spark_ok else "error"
        line = f"{o.query:>5}  {spark:<5}  {o.rows:>6}  {o.duckdb_rows:>6}  {o.equal:<5}  "
        lines.append(line + f"{o.seconds:>7.2f}" + (f"  {o.error}" if o.error else ""))
    return "\n".join(lines)


def summary(outcomes: Sequence[Outcome]) -> dict[str, int]:
    return {
        "queries": len(outcomes),
        "spark_ok": sum(o.spark_ok for o in outcomes),
        "equal": sum(o.equal == "yes" for o in outcomes),
        "equal_with_ties": sum(o.equal == "tie" for o in outcomes),
        "different": sum(o.equal == "no" for o in outcomes),
    }


def _write(args: argparse.Namespace, outcomes: Sequence[Outcome], data: Path) -> Path:
    RESULTS.mkdir(exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    path = RESULTS / f"tpc_sql-{args.benchmark}-{args.sf:g}-{stamp}.json"
    doc = {
        "benchmark": args.benchmark,
        "sf": args.sf,
        "data": str(data),
        "duckdb": duckdb.__version__,
        "summary": summary(outcomes),
        "queries": [asdict(o) for o in outcomes],
    }
    path.write_text(json.dumps(doc, indent=1) + "\n")
    return path


def _args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--benchmark", choices=sorted(COUNTS), default="tpch")
    parser.add_argument("--sf", type=float, default=0.01)
    parser.add_argument("--queries", help="e.g. 1,2,5-9 (default: all)")
    parser.add_argument("--data", type=Path, help="parquet cache folder (default: user cache)")
    parser.add_argument("--cores", type=int, default=2, help="local[N]")
    parser.add_argument("--driver-memory", default="4g", help="the driver JVM's heap")
    parser.add_argument("-v", "--verbose", action="store_true")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = _args(argv)
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s %(message)s",
        stream=sys.stderr,
    )
    tables = generate(args.benchmark, args.sf, args.data)
    data = next(iter(tables.values())).parent
    spark = local_session(args.cores, args.driver_memory)
    con = duckdb_views(tables)
    try:
        spark_views(spark, tables)
        outcomes = []
        for number in parse_queries(args.queries, args.benchmark):
            outcomes.append(check(spark, con, args.benchmark, number))
            log.info("q%d: %s", number, outcomes[-1])
    finally:
        con.close()
        spark.stop()
    print(table(outcomes))
    print(json.dumps(summary(outcomes)))
    print(f"written {_write(args, outcomes, data)}")
    return 0 if all(o.equal in ("yes", "tie") for o in outcomes) else 1


if __name__ == "__main__":
    sys.exit(main())
