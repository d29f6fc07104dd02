"""Reuse: ten versions of one workflow, each run plain, storing every result, and with reuse.

    python -m bench.reuse [--rows 1000000] [--data DIR]

The workflow (events joined with users; sinks ``big`` (large purchases), ``by_country`` (an
aggregate) and ``tagged`` (a Python UDF)) goes through ten versions, edits as Drove's: add a
filter before the join, move it after the join, swap the UDF, change a projection, reorder two
commutative filters, rewrite a predicate equivalently, change it, revert it, add a redundant
filter. Every version runs three ways, with capture to the local stack's Kafka (topic
``sparkprov.bench``, which ingest does not consume; ``SPARKPROV_KAFKA_BOOTSTRAP``):

- ``plain``: ``ProvenanceSession`` without reuse, nothing stored;
- ``store-all``: ``reuse=True`` over an empty results path: every sink computed and stored,
  what keeping every version's results costs;
- ``reuse``: ``reuse=True`` over one results path for the ten versions in order: sinks with an
  identical or proven-equivalent stored result are read, not computed, and not stored again.

Each sink is delivered to the caller in full (a ``noop`` write of its rows). Per version: wall
time of the session, bytes added to the results path, lineage records emitted (nodes + edges),
the sinks reused; per version pair and sink: the equivalence check's verdict and time in ms
(sparkprov.equivalence, the same check reuse runs). Prints a side-by-side table with
ratios and writes JSON under bench/results/ with the load average. Run it alone (flock).
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from capture_agent import ProvenanceSession
from examples.spark import local_spark
from sparkprov.equivalence import check
from sparkprov.workflow import WorkflowDag

RESULTS = Path(__file__).parent / "results"
TOPIC = "sparkprov.bench"
SINKS = ("big", "by_country", "tagged")

# Each version: (name, edit, its settings). Settings not named keep the previous version's.
VERSIONS: list[tuple[str, str, dict[str, Any]]] = [
    ("v1", "base", {}),
    ("v2", "add filter age >= 18 on users, before the join", {"adults": "before"}),
    ("v3", "move the age filter after the join", {"adults": "after"}),
    ("v4", "swap the tagging UDF", {"udf": "upper"}),
    ("v5", "big: project the age too", {"big_age": True}),
    ("v6", "big: reorder its two filters", {"big_order": "amount_first"}),
    ("v7", "by_country: amount > 100 written as NOT (amount <= 100)", {"spend": "not_le"}),
    ("v8", "by_country: amount > 200", {"spend": "gt200"}),
    ("v9", "revert v8", {"spend": "not_le"}),
    ("v10", "big: add the redundant filter amount > 400", {"redundant": True}),
]


def settings_of() -> list[dict[str, Any]]:
    current: dict[str, Any] = {
        "adults": None,
        "udf": "lower",
        "big_age": False,
        "big_order": "category_first",
        "spend": "gt100",
        "redundant": False,
    }
    out = []
    for _, _, change in VERSIONS:
        current = {**current, **change}
        out.append(dict(current))
    return out


def make_inputs(spark: SparkSession, folder: Path, rows: int) -> tuple[str, str]:
    users_n = max(100, rows // 100)
    events, users = folder / f"events-{rows}.parquet", folder / f"users-{rows}.parquet"
    if not events.exists():
        print(f"generating {rows:,} events and {users_n:,} users ...", flush=True)
        spark.range(rows).select(
            F.col("id"),
            (F.col("id") * 7919 % users_n).alias("user"),
            (F.col("id") * 31 % 1000).cast("double").alias("amount"),
            F.concat(F.lit("cat-"), (F.col("id") % 23).cast("string")).alias("category"),
        ).write.parquet(str(events))
        spark.range(users_n).select(
            F.col("id").alias("user"),
            F.concat(F.lit("c"), (F.col("id") % 40).cast("string")).alias("country"),
            (F.col("id") % 70 + 10).alias("age"),
        ).write.parquet(str(users))
    return str(events), str(users)


def _lower(category):  # type: ignore[no-untyped-def]  # no hints: an Arrow UDF otherwise
    return category.lower()


def _upper(category):  # type: ignore[no-untyped-def]
    return category.upper()


def workflow(prov: ProvenanceSession, events: str, users: str, s: dict[str, Any]) -> None:
    """One version's pipeline; every sink delivered in full."""
    spark = prov.spark
    e = prov.source(spark.read.parquet(events), "events")
    u = prov.source(spark.read.parquet(users), "users")
    adult = F.col("age") >= 18
    if s["adults"] == "before":
        u = u.filter(adult)
    joined = e.join(u, on="user")
    if s["adults"] == "after":
        joined = joined.filter(adult)
    # big keeps large purchases outside one category: two commutative filters.
    large, other = F.col("amount") > 500, F.col("category") != "cat-0"
    first, second = (large, other) if s["big_order"] == "amount_first" else (other, large)
    big = joined.filter(first).filter(second)
    if s["redundant"]:
        big = big.filter(F.col("amount") > 400)
    columns = ["id", "user", "country", "amount", *(["age"] if s["big_age"] else [])]
    spend = {
        "gt100": F.col("amount") > 100,
        "not_le": ~(F.col("amount") <= 100),
        "gt200": F.col("amount") > 200,
    }[s["spend"]]
    tag = F.udf(_lower if s["udf"] == "lower" else _upper, "string")
    sinks = {
        "big": big.select(*columns).named("big"),
        "by_country": joined.filter(spend)
        .groupBy("country")
        .agg(F.sum("amount").alias("total"), F.count("id").alias("n"))
        .named("by_country"),
        "tagged": e.withColumn("tag", tag(F.col("category"))).select("id", "tag").named("tagged"),
    }
    for frame in sinks.values():
        frame.df.write.format("noop").mode("overwrite").save()


def folder_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def run(
    spark: SparkSession,
    body: Callable[[ProvenanceSession], None],
    name: str,
    results: Path | None,
) -> dict[str, Any]:
    before = folder_bytes(results) if results is not None and results.exists() else 0
    started = time.perf_counter()
    with ProvenanceSession(
        spark, "bench-reuse", topic=TOPIC, reuse=results is not None, results_path=results
    ) as prov:
        body(prov)
    seconds = time.perf_counter() - started
    nodes, edges = prov.counts()
    after = folder_bytes(results) if results is not None else 0
    return {
        "seconds": seconds,
        "bytes": after - before,
        "records": nodes + edges,
        "reused": sorted(prov.reuse.reused) if prov.reuse is not None else [],
        "dag": prov.workflow_dag(),
    }


def checks(dags: list[WorkflowDag]) -> dict[str, dict[str, Any]]:
    """Every version pair and sink: verdict and milliseconds of the equivalence check."""
    out: dict[str, dict[str, Any]] = {}
    for (i, a), (j, b) in itertools.combinations(enumerate(dags), 2):
        for sink in SINKS:
            sink_a, sink_b = a.sink(sink), b.sink(sink)
            assert sink_a is not None and sink_b is not None
            started = time.perf_counter()
            answer = check(a, b, sink_a, sink_b)
            millis = (time.perf_counter() - started) * 1000
            out[f"{VERSIONS[i][0]}-{VERSIONS[j][0]}:{sink}"] = {
                "verdict": answer.verdict.value,
                "method": answer.method,
                "ms": round(millis, 2),
            }
    return out


def machine() -> dict[str, Any]:
    """What a result was measured on, the load average included (benchmarks run alone)."""
    return {
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "loadavg_before": list(os.getloadavg()),
    }


def _ratio(a: float, b: float) -> str:
    return f"{a / b:.2f}" if b else "-"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--data", default=os.path.join(tempfile.gettempdir(), "sparkprov-bench"))
    args = parser.parse_args(argv)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    report: dict[str, Any] = {"machine": machine(), "arguments": vars(args), "versions": []}
    spark = local_spark("sparkprov-bench-reuse")
    data = Path(args.data)
    data.mkdir(parents=True, exist_ok=True)
    events, users = make_inputs(spark, data, args.rows)
    work = Path(tempfile.mkdtemp(prefix="sparkprov-reuse-", dir=data))
    shared = work / "reuse"
    settings = settings_of()
    try:
        # Untimed: JIT, Python workers, file cache.
        run(spark, lambda p: workflow(p, events, users, settings[0]), "warmup", None)
        dags = []
        for (name, edit, _), s in zip(VERSIONS, settings, strict=True):

            def body(prov: ProvenanceSession, s: dict[str, Any] = s) -> None:
                workflow(prov, events, users, s)

            plain = run(spark, body, name, None)
            alone = run(spark, body, name, work / f"all-{name}")
            reused = run(spark, body, name, shared)
            dags.append(reused.pop("dag"))
            plain.pop("dag"), alone.pop("dag")
            entry = {"version": name, "edit": edit, "plain": plain, "store_all": alone}
            entry["reuse"] = reused
            report["versions"].append(entry)
            print(
                f"{name:4} plain {plain['seconds']:6.2f}s  store-all {alone['seconds']:6.2f}s  "
                f"reuse {reused['seconds']:6.2f}s  reused {','.join(reused['reused']) or '-'}",
                flush=True,
            )
        report["checks"] = checks(dags)
    finally:
        shutil.rmtree(work, ignore_errors=True)
        spark.stop()
    report["machine"]["loadavg_after"] = list(os.getloadavg())
    print_table(report)
    RESULTS.mkdir(parents=True, exist_ok=True)
    out = RESULTS / f"reuse-{args.rows}-{time.strftime('%Y%m%d-%H%M%S')}.json"
    out.write_text(json.dumps(report, indent=2))
    print(f"wrote {out}")
    return 0


def print_table(report: dict[str, Any]) -> None:
    checked = report["checks"]
    print()
    print(
        "| version | edit | plain s | store-all s | reuse s | reuse/store-all | "
        "bytes store-all | bytes reuse | ratio | records store-all | records reuse | "
        "reused | checks vs previous (ms) |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    totals = {"alone": 0.0, "reuse": 0.0, "bytes_alone": 0, "bytes_reuse": 0}
    previous = ""
    for v in report["versions"]:
        alone, reused = v["store_all"], v["reuse"]
        totals["alone"] += alone["seconds"]
        totals["reuse"] += reused["seconds"]
        totals["bytes_alone"] += alone["bytes"]
        totals["bytes_reuse"] += reused["bytes"]
        pair = [
            f"{sink} {c['verdict'][:5]} {c['ms']:.0f}"
            for sink in SINKS
            if (c := checked.get(f"{previous}-{v['version']}:{sink}"))
        ]
        print(
            f"| {v['version']} | {v['edit']} | {v['plain']['seconds']:.2f} | "
            f"{alone['seconds']:.2f} | {reused['seconds']:.2f} | "
            f"{_ratio(reused['seconds'], alone['seconds'])} | {alone['bytes']:,} | "
            f"{reused['bytes']:,} | {_ratio(reused['bytes'], alone['bytes'])} | "
            f"{alone['records']:,} | {reused['records']:,} | "
            f"{', '.join(reused['reused']) or '-'} | {'; '.join(pair) or '-'} |"
        )
        previous = v["version"]
    millis = [c["ms"] for c in checked.values()]
    smt = [c["ms"] for c in checked.values() if c["method"] == "smt"]
    print(
        f"\ntotal: store-all {totals['alone']:.1f}s, reuse {totals['reuse']:.1f}s "
        f"({_ratio(totals['reuse'], totals['alone'])}); bytes store-all "
        f"{totals['bytes_alone']:,}, reuse {totals['bytes_reuse']:,} "
        f"({_ratio(totals['bytes_reuse'], totals['bytes_alone'])})"
    )
    print(
        f"equivalence checks: {len(millis)} (version pairs x sinks), median "
        f"{statistics.median(millis):.1f} ms, max {max(millis):.1f} ms; by z3: {len(smt)}, "
        f"median {statistics.median(smt) if smt else 0:.1f} ms"
    )
    verdicts: dict[str, int] = {}
    for c in checked.values():
        verdicts[c["verdict"]] = verdicts.get(c["verdict"], 0) + 1
    print(f"verdicts: {verdicts}; load average after {report['machine']['loadavg_after']}")


if __name__ == "__main__":
    sys.exit(main())
