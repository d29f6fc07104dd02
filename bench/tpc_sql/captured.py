"""TPC-H or TPC-DS query texts captured from their plans, each checked twice: the captured result
equals the plain one, and Titian's oracle holds on sampled output rows.

    python -m bench.tpc_sql.captured --benchmark tpcds --sf 0.01 [--queries 1-9] [--sampled 2]

Each query runs as ``spark.sql(text)`` plain, then inside a ``ProvenanceSession`` through
``prov.tracked`` (capture from the optimized plan, no DataFrame rewrite) into the in-memory
emitter. Per query: whether it was captured (or the operator that stops it), whether the captured
rows equal the plain ones, the emitted graph against the run's counts, and for ``--sampled``
output rows spread over the result, whether re-running the text on only the rows of the row's
witness gives the row back (:mod:`bench.tpc_sql.oracle`). Prints a table and writes
bench/results/tpc_plan_capture-<benchmark>-sf<sf>-<timestamp>.json. The times are the in-memory
emitter's (no Kafka): they say what rebuilding and tapping cost, not the overhead of issue 26.
"""

from __future__ import annotations

import argparse
import json
import logging
import re
import resource
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from bench.tpc_sql.compare import equal
from bench.tpc_sql.data import generate
from bench.tpc_sql.oracle import compact, reproduces, texts
from bench.tpc_sql.queries import COUNTS, adapt, original
from bench.tpc_sql.run import local_session, parse_queries, spark_views

__all__ = ["Captured", "capture_query", "main", "markdown"]

log = logging.getLogger(__name__)
RESULTS = Path(__file__).resolve().parents[1] / "results"


@dataclass
class Captured:
    """One query: ``captured`` is "yes", "refused: <why>" or "error: <why>"; ``equal`` and the
    oracle's counts only mean something when it was captured."""

    query: int
    captured: str
    equal: bool
    rows: int
    counts_match: bool
    oracle_checked: int
    oracle_held: int
    plain_s: float
    captured_s: float
    oracle_s: float = 0.0  # building the compact graph and re-running the sampled rows
    peak_rss_mb: int = 0  # the bench process's peak RSS so far (the JVM's not included)


def capture_query(spark: Any, benchmark: str, number: int, sampled: int) -> Captured:
    """Query ``number`` plain and captured, compared, with the oracle on ``sampled`` rows."""
    from capture_agent import ProvenanceSession
    from capture_agent.emitters import MemoryEmitter
    from capture_agent.errors import UnsupportedOperation

    sql = adapt(benchmark, number, original(benchmark, number))
    started = time.monotonic()
    plain = texts(spark.sql(sql))
    plain_s = round(time.monotonic() - started, 3)
    emitter = MemoryEmitter(spark)
    started = time.monotonic()
    try:
        with ProvenanceSession(spark, f"{benchmark}-q{number}", emitter=emitter) as prov:
            # values="all": the oracle restricts each view to its witness rows by their whole
            # values (bench/tpc_sql/oracle.py); "read" keeps only the columns the query reads.
            out = prov.tracked(spark.sql(sql), values="all").named("Out")
            columns, captured = out.columns, texts(out.df)
        # After the block: the run's end waits for the query's jobs that outlive the action.
        emitted = prov.counts()
    except UnsupportedOperation as error:
        why = f"refused: {error}"[:300]
        return Captured(number, why, False, len(plain), False, 0, 0, plain_s, 0, 0, _peak_rss_mb())
    except Exception as error:  # any other failure is this query's result, not the run's
        text = str(error).strip().splitlines()
        line = next((t for t in text if t and not t.startswith("An error occurred")), "")
        why = f"error: {line}"[:300]
        return Captured(number, why, False, len(plain), False, 0, 0, plain_s, 0, 0, _peak_rss_mb())
    captured_s = round(time.monotonic() - started, 3)
    started = time.monotonic()
    graph = compact(emitter, spark)
    # The graph keeps the messages; PySpark keeps every accumulator of the session, so a run of
    # 99 queries would otherwise hold them all twice.
    emitter.clear()
    log.info(
        "q%d: a graph of %d nodes, %d edges built in %.1f s",
        number,
        graph.node_count,
        graph.edge_count,
        time.monotonic() - started,
    )
    outputs = graph.of_relation("Out")
    same_graph = (graph.node_count, graph.edge_count) == tuple(emitted)
    counts_match = same_graph and len(outputs) == len(plain)
    if not counts_match:
        log.warning(
            "q%d: the graph has %d nodes, %d edges and %d output rows; the run counted %d nodes "
            "and %d edges, the plain query %d rows",
            number,
            graph.node_count,
            graph.edge_count,
            len(outputs),
            *emitted,
            len(plain),
        )
    views = _read(sql, [t.name for t in spark.catalog.listTables() if t.isTemporary])
    held = checked = 0
    for node in outputs[:: max(1, len(outputs) // max(sampled, 1))][:sampled]:
        checked += 1
        found, again = reproduces(spark, sql, views, graph, node, columns)
        held += found
        if not found:
            log.warning("q%d: the witness of node %d gave %s", number, node, again[:3])
    return Captured(
        number,
        "yes",
        equal(captured, plain),
        len(plain),
        counts_match,
        checked,
        held,
        plain_s,
        captured_s,
        round(time.monotonic() - started, 3),
        _peak_rss_mb(),
    )


def _read(sql: str, views: Sequence[str]) -> list[str]:
    """The ``views`` the text names (as a word): the only ones its re-run reads, so the only
    ones the oracle restricts (each restriction costs a few Spark calls)."""
    return [v for v in views if re.search(rf"\b{re.escape(v)}\b", sql, re.IGNORECASE)]


def _peak_rss_mb() -> int:
    """This process's peak resident set size so far, in MB (ru_maxrss is in KB on Linux)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024


def _table(results: Sequence[Captured]) -> str:
    lines = ["query  captured  equal  rows  oracle  plain_s  captured_s  oracle_s  peak_mb"]
    for r in results:
        oracle = f"{r.oracle_held}/{r.oracle_checked}" if r.captured == "yes" else "-"
        what = "yes" if r.captured == "yes" else r.captured[:70]
        lines.append(
            f"q{r.query:<5} {what:<9} {str(r.equal):<6} {r.rows:>5}  {oracle:<6} "
            f"{r.plain_s:>7.2f}  {r.captured_s:>10.2f}  {r.oracle_s:>8.2f}  {r.peak_rss_mb:>7}"
        )
    return "\n".join(lines)


def markdown(results: Sequence[Captured], across: int = 3) -> str:
    """The bench/README.md table: query, captured, rows, oracle; ``across`` queries a line."""

    def cells(r: Captured) -> list[str]:
        if r.captured != "yes":
            return [f"q{r.query}", r.captured.split(":")[0], str(r.rows), "-"]
        if not r.equal:
            return [f"q{r.query}", "**wrong**", str(r.rows), "-"]
        oracle = "no rows" if r.oracle_checked == 0 else f"{r.oracle_held}/{r.oracle_checked}"
        return [f"q{r.query}", "yes", str(r.rows), oracle]

    head = " |  | ".join(["query | captured | rows | oracle"] * across)
    lines = [f"| {head} |", "|" + "---|" * (5 * across - 1)]
    for i in range(0, len(results), across):
        row = [" | ".join(cells(r)) for r in results[i : i + across]]
        row += [" |  |  | "] * (across - len(row))  # four empty cells
        lines.append("| " + " |  | ".join(row) + " |")
    return "\n".join(lines)


def _summary(results: Sequence[Captured]) -> dict[str, int]:
    captured = [r for r in results if r.captured == "yes"]
    return {
        "queries": len(results),
        "captured_equal": sum(r.equal for r in captured),
        "captured_wrong": sum(not r.equal for r in captured),
        "counts_mismatch": sum(not r.counts_match for r in captured),
        "with_rows": sum(r.rows > 0 for r in captured),
        "oracle_holds_on_every_checked_row": sum(
            r.oracle_checked > 0 and r.oracle_held == r.oracle_checked for r in captured
        ),
        "oracle_failed": sum(r.oracle_held < r.oracle_checked for r in captured),
        "refused": sum(r.captured.startswith("refused") for r in results),
        "errors": sum(r.captured.startswith("error") for r in results),
    }


def _write(path: Path, args: argparse.Namespace, commit: str, results: list[Captured]) -> None:
    with open("/proc/loadavg") as f:
        load = f.read().split()[:3]
    record = {
        "benchmark": args.benchmark,
        "sf": args.sf,
        "sampled": args.sampled,
        "commit": commit,
        "date": time.strftime("%Y-%m-%d %H:%M:%S"),
        "load_avg": load,
        "summary": _summary(results),
        "queries": [asdict(r) for r in results],
    }
    path.write_text(json.dumps(record, indent=1) + "\n")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--benchmark", choices=sorted(COUNTS), default="tpcds")
    parser.add_argument("--sf", type=float, default=0.01)
    parser.add_argument("--queries", help="e.g. 1,2,5-9 (default: all)")
    parser.add_argument("--sampled", type=int, default=2, help="output rows re-run per query")
    parser.add_argument("--data", type=Path, help="parquet cache folder (default: user cache)")
    parser.add_argument("--cores", type=int, default=2, help="local[N]")
    parser.add_argument("--driver-memory", default="6g", help="the driver JVM's heap")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    logging.getLogger("capture_agent").setLevel(logging.WARNING)  # a line per run otherwise
    spark = local_session(args.cores, args.driver_memory)
    spark.sparkContext.setLogLevel("ERROR")
    spark_views(spark, generate(args.benchmark, args.sf, args.data))
    RESULTS.mkdir(exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    path = RESULTS / f"tpc_plan_capture-{args.benchmark}-sf{args.sf:g}-{stamp}.json"
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False
    ).stdout.strip()
    results: list[Captured] = []
    for number in parse_queries(args.queries, args.benchmark):
        result = capture_query(spark, args.benchmark, number, args.sampled)
        log.info("%s", _table([result]).splitlines()[1])
        results.append(result)
        _write(path, args, commit, results)  # after each query: a long run keeps what it did
    print(_table(results))
    print(markdown(results))
    summary = _summary(results)
    print(json.dumps(summary))
    print(f"wrote {path}")
    wrong = summary["captured_wrong"] + summary["counts_mismatch"] + summary["oracle_failed"]
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
