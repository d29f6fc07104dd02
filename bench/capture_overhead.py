"""Capture overhead: each workload plain and captured, in one process, the modes alternating.

    python -m bench.capture_overhead [--pairs 3] [--warmup 1]
        [--workloads pipeline,cars,arctic,tpch] [--modes plain,jvm,python] [--topic T]

Workloads: ``pipeline`` (1M orders filtered, joined with 100k customers, grouped),
``pipeline_scrambled`` (the same with each order's customer a hash of its id, where the
pipeline's customers follow an arithmetic progression that delta coding of positions finds),
``enrich`` (bench.time_to_queryable's: filter, join, withColumn, written as parquet), ``cars``,
``arctic``, ``tpch`` and ``tpch_sql`` (the same 22 queries as SQL text through ``spark.sql``,
for the capture extension: issue 28's overhead goal).

"Captured" includes publishing every lineage batch to the real Kafka of the local stack (topic
``sparkprov.bench``, which the ingest service does not consume, so ingest does not compete for
the two cores) and waiting for the acknowledgements; ``jvm`` captures with the JVM taps
(capture_agent.jvm, the default), ``python`` with the pandas UDF taps. "Plain" is the same code
with the kill switch (``ProvenanceSession(enabled=False)``: plain DataFrames, Spark's own plans).
``tpch`` runs all 22 TPC-H queries (bench.tpch, over tables generated once at ``--tpch-scale``
and read from Parquet) and times their total. Prints the median ratio captured/plain per
workload and mode (and the median and range of each round's own ratio: the modes alternate
within a round, so drift moves a round's runs alike) and writes JSON under bench/results/,
with the load average.

CPU per run, by thread (bench.jvm_threads): each run's CPU seconds in the driver JVM (which runs
local[2]'s executors) by kind of thread: the tasks, HotSpot's compilers (``jit``), GC, Kafka's
producer thread, the rest; and the local stack's broker when the bench publishes there. On two
cores every one of them takes time from the tasks; the medians are printed and recorded.

Bytes per input row: what one captured run adds to the topic's log (``DescribeLogDirs``: record
batches as the broker stores them, compression included), divided by the rows of the workload's
sources (pipeline, pipeline_scrambled and enrich: orders + customers; tpch: the eight tables'
rows; cars and Arctic: per lineage record only). A mode may name a codec: ``jvm-none`` is
``jvm`` with ``SPARKPROV_KAFKA_COMPRESSION=none`` (default: zstd), so ``--modes
plain,jvm,jvm-none`` compares both in one run (``extension-lz4``, ``extension-zstd3``,
``extension-zstd-1``: the extension's producer with lz4, or with zstd at level 3 or -1 where the
default is 1, through ``spark.sparkprov.kafka.*``); ``jvm+partition`` identifies source rows by
partition and offset (``SPARKPROV_SOURCE_POSITIONS=partition``) where ``jvm`` reads the parquet
sources' file and row index (the default since 2026-11-27); ``jvm@all`` captures every source
row the scan reads, the ones a filter over the source drops too (the Spark conf
``spark.sparkprov.sourceFiltersFirst=false``; ``jvm`` leaves them out, issue 26, 2026-11-28);
``jvm@resend`` has every action send its source rows again (``spark.sparkprov.sourceRowsOnce=
false``; ``jvm`` sends a file source's row once per run); ``jvm@apart`` gives a join only an
aggregation reads its own capture point (``spark.sparkprov.joinRowsWithMembers=false``; ``jvm``
sends its rows with the members, issue 27, 2026-11-29).
``--topic sparkprov.lineage``
publishes where the local stack's ingest service consumes, for the ratios of the one-machine
deployment (ingest competing for the cores).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from bench.harness import ROOT, fresh_topic, topic_bytes
from bench.jvm_threads import ThreadCpu
from capture_agent import ProvenanceSession
from examples import arctic, cars
from examples.spark import local_spark
from sparkprov import defaults

RESULTS = Path(__file__).parent / "results"
TOPIC = "sparkprov.bench"
BENCH_PARTITIONS = 4  # as the local stack's broker makes a topic (localstack num.partitions)


def make_pipeline_inputs(
    spark: SparkSession, folder: Path, rows: int, dim: int, scrambled: bool = False
) -> tuple[str, str]:
    """The pipeline's orders and customers. An order's customer is ``id * 7919 % dim`` (an
    arithmetic progression: consecutive orders' customers differ by the same step), or, with
    ``scrambled``, a hash of the order id (no pattern for a delta coder to find)."""
    # Named by their sizes: a folder kept from a run at other sizes is never read as these.
    suffix = f"-{rows}-{dim}" + ("-scrambled" if scrambled else "")
    facts, dims = folder / f"facts{suffix}.parquet", folder / f"dims{suffix}.parquet"
    customer = F.pmod(F.xxhash64("id"), F.lit(dim)) if scrambled else F.col("id") * 7919 % dim
    if not facts.exists():
        print(f"generating {rows:,} fact rows and {dim:,} dimension rows ...", flush=True)
        spark.range(rows).select(
            F.col("id").alias("order_id"),
            customer.alias("customer_id"),
            (F.col("id") % 1000 / 10).alias("amount"),
            (F.col("id") % 5).alias("status"),
        ).write.parquet(str(facts))
        spark.range(dim).select(
            F.col("id").alias("customer_id"),
            F.concat(F.lit("region-"), (F.col("id") % 37).cast("string")).alias("region"),
        ).write.parquet(str(dims))
    return str(facts), str(dims)


def pipeline(prov: ProvenanceSession, facts: str, dims: str) -> int:
    """1M rows: filter, join with a 100k-row table, groupBy with 3 aggregates."""
    spark = prov.spark
    orders = prov.source(spark.read.parquet(facts), "Orders")
    customers = prov.source(spark.read.parquet(dims), "Customers")
    paid = orders.filter(F.col("status") != 0)
    joined = paid.join(customers, on="customer_id")
    result = joined.groupBy("region").agg(
        F.sum("amount").alias("total"),
        F.avg("amount").alias("mean"),
        F.count("order_id").alias("n"),
    )
    return len(result.named("RegionTotals").collect())


def base_workloads(
    facts: str, dims: str, n_cars: int, cars_exec: int, arctic_exec: int
) -> dict[str, Callable[[ProvenanceSession], Any]]:
    """The issue's workloads: the 1M-row pipeline, Lipstick's car dealerships and Arctic."""
    return {
        "pipeline": lambda prov: pipeline(prov, facts, dims),
        "cars": lambda prov: cars.run(prov, n_cars, cars_exec, seed=1),
        "arctic": lambda prov: arctic.run(prov, 24, "dense", 6, "month", arctic_exec),
    }


def tpch_inputs(spark: SparkSession, folder: Path, scale: float) -> dict[str, str]:
    """The eight TPC-H tables at ``scale``, generated once into Parquet (not timed)."""
    from bench.tpch import tables

    paths = {}
    for name, df in tables(spark, scale=scale).items():
        path = folder / f"tpch-{scale}" / f"{name}.parquet"
        if not path.exists():
            print(f"generating TPC-H {name} at SF {scale} ...", flush=True)
            df.write.parquet(str(path))
        paths[name] = str(path)
    return paths


def tpch(prov: ProvenanceSession, paths: dict[str, str], values: str = "read") -> int:
    """All 22 TPC-H queries, each collected, over sources tracked once. ``values``: what the
    sources' TOKEN nodes keep: "read" the columns each query reads (the default policy), "all"
    their values, or "key" their key column (enough for the witness replay)."""
    from bench.tpch import KEYS, QUERIES

    spark = prov.spark
    sources = {
        name: prov.source(
            spark.read.parquet(path), name, values=[KEYS[name]] if values == "key" else values
        )
        for name, path in paths.items()
    }
    return sum(len(query(dict(sources)).collect()) for query in QUERIES.values())


def tpch_sql(prov: ProvenanceSession, paths: dict[str, str]) -> int:
    """All 22 TPC-H queries as the spec's SQL text (bench.tpc_sql's adapted texts, issue 28),
    each ``spark.sql(text)`` collected, over temp views of the same Parquet files as ``tpch``.
    Only the capture extension captures SQL text as it is; the other modes run it plain."""
    from bench.tpc_sql.queries import adapt, original

    spark = prov.spark
    for name, path in paths.items():
        spark.read.parquet(path).createOrReplaceTempView(name)
    return sum(
        len(spark.sql(adapt("tpch", number, original("tpch", number))).collect())
        for number in range(1, 23)
    )


def tpch_rows(spark: SparkSession, paths: dict[str, str]) -> int:
    return sum(spark.read.parquet(path).count() for path in paths.values())


# io.sparkprov.capture.SourceFiltersFirst's and SourceRowsOnce's switches (docs/capture.md,
# "Source rows a filter drops", "Source rows sent once per run").
EXTENSION_CAPTURE = "spark.sparkprov.capture"  # io.sparkprov.capture.TapPlacement.CONF
FILTERS_FIRST = "spark.sparkprov.sourceFiltersFirst"
ROWS_ONCE = "spark.sparkprov.sourceRowsOnce"
JOIN_ROWS = "spark.sparkprov.joinRowsWithMembers"  # capture_agent.frame.JOIN_ROWS_WITH_MEMBERS
MATCHES_TOGETHER = "spark.sparkprov.matchesTogether"  # io.sparkprov.capture.SemiJoins.TOGETHER
JOINS_FIRST = "spark.sparkprov.sourceJoinsFirst"  # io.sparkprov.capture.SourceJoinsFirst.CONF
# The extension's producer settings (io.sparkprov.capture.CaptureRun.KAFKA_PREFIX + Kafka's name).
KAFKA_CODEC = "spark.sparkprov.kafka.compression.type"
KAFKA_ZSTD_LEVEL = "spark.sparkprov.kafka.compression.zstd.level"  # Kafka clients >= 3.8


CPU_SHOWN = ("tasks", "jit", "gc", "kafka_producer", "broker", "other", "ended")


def median_cpu(runs: list[dict[str, float]]) -> dict[str, float]:
    """Per kind of thread, the median over runs of the CPU seconds it took."""
    kinds = sorted({k for run in runs for k in run})
    return {k: statistics.median(run.get(k, 0.0) for run in runs) for k in kinds}


def local_broker(bootstrap: str) -> int | None:
    """The pid of the local stack's Kafka (``make up``) when the bench publishes to it."""
    from localstack.stack import Stack, StackSettings

    stack = Stack(StackSettings.from_env(ROOT / ".stack", os.environ))
    return stack.pid("kafka") if stack.settings.kafka_bootstrap == bootstrap else None


def timed(
    spark: SparkSession, mode: str, body: Callable[[ProvenanceSession], Any], topic: str = TOPIC
) -> tuple[float, tuple[int, int]]:
    """One run of ``body``: ``mode`` "plain" (the kill switch), "jvm" or "python" capture, with
    a codec after a dash ("jvm-none") and source positions after a plus ("jvm+partition":
    every source row by partition and offset instead of a parquet row by file and row) and
    which source rows after an at ("jvm@all": those a filter over the source or its first join
    drops too; "jvm@resend": every action's rows, those an earlier action of the run sent too;
    "jvm@apart": a join only an aggregation reads has its own capture point, as before 2026-11-29;
    "extension@regroup": a semi or anti join's pairs shuffled and grouped back per left row, as
    before 2026-12-01; "jvm@unjoined" or "extension@unjoined": a file source's rows that its
    first inner join drops sent too, as before 2026-12-01, evening)."""
    mode, _, rows = mode.partition("@")
    mode, _, positions = mode.partition("+")
    capture, _, codec = mode.partition("-")
    extension = capture == "extension"
    enabled = capture not in ("plain", "extension")
    spark.conf.set(EXTENSION_CAPTURE, "true" if extension else "false")
    # The extension's producer reads its settings from the SparkConf when a run begins
    # (spark.sparkprov.kafka.*): "extension-zstd3" is zstd at level 3, "extension-lz4" lz4.
    live = spark.sparkContext._jsc.sc().conf()
    if extension and codec:
        named = re.fullmatch(r"(none|gzip|snappy|lz4|zstd)(-?\d*)", codec)
        if named is None:
            raise ValueError(f"mode {mode}: after extension- comes a Kafka codec, then a level")
        live.set(KAFKA_CODEC, named[1])
        if named[2]:
            live.set(KAFKA_ZSTD_LEVEL, named[2])
    saved = os.environ.get(defaults.ENV_KAFKA_COMPRESSION)
    os.environ[defaults.ENV_KAFKA_COMPRESSION] = codec or saved or defaults.KAFKA_COMPRESSION
    if rows not in ("", "all", "resend", "apart", "regroup", "unjoined"):
        raise ValueError(
            f"mode {mode}@{rows}: after @ comes all, resend, apart, regroup or unjoined"
        )
    spark.conf.set(FILTERS_FIRST, "false" if rows == "all" else "true")
    spark.conf.set(ROWS_ONCE, "false" if rows == "resend" else "true")
    spark.conf.set(JOIN_ROWS, "false" if rows == "apart" else "true")
    spark.conf.set(MATCHES_TOGETHER, "false" if rows == "regroup" else "true")
    spark.conf.set(JOINS_FIRST, "false" if rows in ("all", "unjoined") else "true")
    try:
        started = time.perf_counter()
        with ProvenanceSession(
            spark,
            workflow="bench",
            topic=topic,
            enabled=enabled,
            capture=capture if enabled else None,
            source_positions=positions or None,
        ) as prov:
            body(prov)
            if extension:  # the run completes, as the session's end completes its run
                run = spark._jvm.io.sparkprov.capture.CaptureRun.of(spark._jsc.sc())  # type: ignore[union-attr]
                run.finish()
        elapsed = time.perf_counter() - started
        if extension:  # each timed run is a run of its own, as each session's is
            totals = run.totals()
            return elapsed, (int(totals[0]), int(totals[1]))
        return elapsed, prov.counts()
    finally:
        live.remove(KAFKA_CODEC)
        live.remove(KAFKA_ZSTD_LEVEL)
        spark.conf.set(EXTENSION_CAPTURE, "false")
        spark.conf.unset(FILTERS_FIRST)
        spark.conf.unset(ROWS_ONCE)
        spark.conf.unset(JOIN_ROWS)
        spark.conf.unset(MATCHES_TOGETHER)
        spark.conf.unset(JOINS_FIRST)
        if saved is None:
            os.environ.pop(defaults.ENV_KAFKA_COMPRESSION, None)
        else:
            os.environ[defaults.ENV_KAFKA_COMPRESSION] = saved


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--pairs", type=int, default=5)
    parser.add_argument(
        "--warmup",
        type=int,
        default=4,
        help="untimed plain+captured pairs first (per workload): after 1-2 the JIT still compiles "
        "capture's code and TPC-H measured 1.4-1.5, after 4 1.2-1.3 (bench/README.md)",
    )
    parser.add_argument("--workloads", default="pipeline,cars,arctic,tpch")
    parser.add_argument("--modes", default="plain,jvm,python", help="plain must come first")
    parser.add_argument("--tpch-scale", type=float, default=0.1)
    parser.add_argument("--tpch-values", choices=("read", "all", "key"), default="read")
    parser.add_argument(
        "--python-workloads",
        default="pipeline,cars,arctic",
        help="workloads also timed with the Python taps (when --modes has python)",
    )
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--dim", type=int, default=100_000)
    parser.add_argument("--cars", type=int, default=20_000)
    parser.add_argument("--cars-exec", type=int, default=10)
    parser.add_argument("--arctic-exec", type=int, default=2)
    parser.add_argument("--data", default=os.path.join(tempfile.gettempdir(), "sparkprov-bench"))
    parser.add_argument("--topic", default=TOPIC, help="sparkprov.lineage: ingest consumes it")
    parser.add_argument(
        "--keep-topic",
        action="store_true",
        help=f"append to {TOPIC} as it is; by default it is deleted and made again first (a "
        "broker appending to a log of several GB spent 2-5x the CPU per run)",
    )
    parser.add_argument(
        "--codegen-cache",
        type=int,
        default=1000,
        help="Spark's cache of compiled classes (spark.sql.codegen.cache.maxEntries), the same "
        "for every mode: the modes share one process, and at Spark's default (100) each mode's "
        "classes evict the other's. The capture extension sets 1000 where a job leaves it unset",
    )
    parser.add_argument(
        "--driver-memory",
        default="4g",
        help="the local JVM's heap (spark.driver.memory; driver and executors in one JVM), the "
        "same for every mode. Spark's default, 1g, made TPC-H spend a tenth of its time in GC "
        "pauses, plain and captured alike; runs before 2026-12-01 used it",
    )
    args = parser.parse_args(argv)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    bootstrap = os.environ.get(defaults.ENV_KAFKA_BOOTSTRAP, defaults.KAFKA_BOOTSTRAP)
    conf = {}
    if any(m.startswith("extension") for m in args.modes.split(",")):
        from capture_agent.jvm import ENV_JAR, jar_path

        conf = {
            "spark.jars": str(jar_path(os.environ.get(ENV_JAR, ""))),
            "spark.sql.extensions": "io.sparkprov.capture.CaptureExtension",
            "spark.sparkprov.kafka.bootstrap": bootstrap,
            "spark.sparkprov.topic": args.topic,
            "spark.sparkprov.workflow": "bench",
            EXTENSION_CAPTURE: "false",  # on for the extension's runs only
        }
    conf["spark.sql.codegen.cache.maxEntries"] = str(args.codegen_cache)
    conf["spark.driver.memory"] = args.driver_memory
    made_new = args.topic == TOPIC and not args.keep_topic
    if made_new:
        fresh_topic(bootstrap, TOPIC, BENCH_PARTITIONS)
    spark = local_spark("sparkprov-bench", conf=conf)
    data = Path(args.data)
    data.mkdir(parents=True, exist_ok=True)
    facts, dims = make_pipeline_inputs(spark, data, args.rows, args.dim)
    workloads = base_workloads(facts, dims, args.cars, args.cars_exec, args.arctic_exec)
    input_rows: dict[str, int] = {
        name: args.rows + args.dim for name in ("pipeline", "pipeline_scrambled", "enrich")
    }
    chosen = [w for w in args.workloads.split(",") if w]
    if "pipeline_scrambled" in chosen:
        scrambled = make_pipeline_inputs(spark, data, args.rows, args.dim, scrambled=True)
        workloads["pipeline_scrambled"] = lambda prov: pipeline(prov, *scrambled)
    if "enrich" in chosen:
        from bench.time_to_queryable import enrich

        written = str(data / "enriched.parquet")
        workloads["enrich"] = lambda prov: enrich(prov, facts, dims, written)
    if {"tpch", "tpch_sql"} & set(chosen):  # the same tables, generated and counted once
        paths = tpch_inputs(spark, data, args.tpch_scale)
        rows = tpch_rows(spark, paths)
        workloads["tpch"] = lambda prov: tpch(prov, paths, args.tpch_values)
        workloads["tpch_sql"] = lambda prov: tpch_sql(prov, paths)
        input_rows |= {"tpch": rows, "tpch_sql": rows}
    modes = [m for m in args.modes.split(",") if m]
    if modes[0] != "plain" or len(modes) < 2:
        parser.error("--modes starts with plain and names at least one capture mode")
    report: dict[str, Any] = {
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count()},
        "kafka": os.environ.get(defaults.ENV_KAFKA_BOOTSTRAP, defaults.KAFKA_BOOTSTRAP),
        "pairs": args.pairs,
        "codegen_cache": args.codegen_cache,
        "driver_memory": args.driver_memory,
        "load_average_before": os.getloadavg(),
        "workloads": {},
    }
    report["topic"] = args.topic
    report["topic_made_new"] = made_new
    RESULTS.mkdir(parents=True, exist_ok=True)
    out = RESULTS / f"capture_overhead-{time.strftime('%Y%m%d-%H%M%S')}.json"
    report["arguments"] = vars(args)
    python_workloads = set(args.python_workloads.split(","))
    # Where each run's CPU went (the tasks, HotSpot's compilers, GC, Kafka's producer thread,
    # the broker of the local stack when the bench publishes there): what wall time hides.
    cpu = ThreadCpu.of_spark(spark, local_broker(bootstrap))
    for name in chosen:
        body = workloads[name]
        these = [m for m in modes if m != "python" or name in python_workloads]
        for _ in range(args.warmup):  # JIT, Python workers, file cache
            for mode in these:
                timed(spark, mode, body, args.topic)
        seconds: dict[str, list[float]] = {mode: [] for mode in these}
        spent: dict[str, list[dict[str, float]]] = {mode: [] for mode in these}
        lineage: dict[str, tuple[int, int]] = {}
        wire: dict[str, list[int]] = {mode: [] for mode in these if mode != "plain"}
        for i in range(args.pairs):
            order = these if i % 2 == 0 else list(reversed(these))
            for mode in order:
                before = topic_bytes(bootstrap, args.topic) if mode != "plain" else 0
                threads = cpu.snapshot()
                elapsed, counts = timed(spark, mode, body, args.topic)
                spent[mode].append(cpu.since(threads))
                if mode != "plain":
                    wire[mode].append(topic_bytes(bootstrap, args.topic) - before)
                seconds[mode].append(elapsed)
                lineage[mode] = counts
            print(
                f"  {name} round {i + 1}: " + " ".join(f"{m} {seconds[m][-1]:.2f}s" for m in these),
                flush=True,
            )
        plain = statistics.median(seconds["plain"])
        entry: dict[str, Any] = {
            "seconds": seconds,
            "median_s": {m: statistics.median(v) for m, v in seconds.items()},
            "ratio": {m: statistics.median(v) / plain for m, v in seconds.items() if m != "plain"},
            # Each round's captured time over the same round's plain: drift over the rounds (the
            # JIT still warming, the machine's load) moves both runs of a round alike.
            "paired_ratios": {
                m: [c / p for c, p in zip(v, seconds["plain"], strict=True)]
                for m, v in seconds.items()
                if m != "plain"
            },
            "lineage": {m: {"nodes": n, "edges": e} for m, (n, e) in lineage.items()},
            "cpu_s_per_run": {m: runs for m, runs in spent.items()},
            "median_cpu_s": {m: median_cpu(runs) for m, runs in spent.items()},
            "wire_bytes": wire,
            "input_rows": input_rows.get(name),
            "bytes_per_input_row": {
                m: statistics.median(b) / input_rows[name]
                for m, b in wire.items()
                if b and name in input_rows
            },
            "bytes_per_record": {
                m: statistics.median(b) / max(1, sum(lineage[m])) for m, b in wire.items() if b
            },
            "load_average_after": os.getloadavg(),
        }
        report["workloads"][name] = entry

        def per_row(m: str, entry: dict[str, Any] = entry) -> str:
            if m in entry["bytes_per_input_row"]:
                return f" {entry['bytes_per_input_row'][m]:.1f} B/input row"
            return f" {entry['bytes_per_record'][m]:.1f} B/record"

        def paired(m: str, entry: dict[str, Any] = entry) -> str:
            r = entry["paired_ratios"][m]
            return f" (paired {statistics.median(r):.2f}, {min(r):.2f}-{max(r):.2f})"

        ratios = "  ".join(
            f"{m} {entry['median_s'][m]:6.2f}s ratio {r:.2f}{paired(m)}{per_row(m)}"
            for m, r in entry["ratio"].items()
        )
        nodes, edges = next(iter(lineage[m] for m in these if m != "plain"))
        print(
            f"{name:9} plain {plain:6.2f}s  {ratios}  ({nodes:,} nodes, {edges:,} edges)"
            f"  load {os.getloadavg()[0]:.2f}",
            flush=True,
        )
        for m in these:
            median = entry["median_cpu_s"][m]
            print(
                f"  cpu s per run, {m}: "
                + ", ".join(f"{k} {median[k]:.2f}" for k in CPU_SHOWN if k in median),
                flush=True,
            )
        out.write_text(json.dumps(report, indent=2))  # after each workload: a long run may stop
    spark.stop()
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
