"""What capture costs the driver: the time to build a captured query (before its action) and to
run it, for TPC-DS as SQL text (plan capture, ``prov.tracked(spark.sql(text))``) and TPC-H as
DataFrame calls over tracked sources, beside the plain query's, for this checkout and, side by
side in the same run, another one (``--against``: a checkout with its own capture jar).

    python -m bench.driver_build [--against /tmp/old --against-jar /tmp/old.jar]
        [--tpcds 4,47,57] [--tpch q1,q5,q18] [--rounds 3]

Each checkout runs in a process of its own (this file with ``--worker``), the checkouts
alternating round by round, so the machine's drift falls on both. A round builds and
runs every query once after a warm-up round; the times are per round, summed over the queries.
The py4j round trips the builds made are counted too (the driver's cost is mostly their
latency). Prints the medians and new/old ratios; writes
bench/results/driver_build-<stamp>.json with the load average.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parent / "results"
HERE = Path(__file__).resolve().parents[1]
_MARK = "driver_build round: "  # a worker's result line; anything else on its stdout is not


def _count_round_trips() -> list[int]:
    """A counter of py4j commands sent, from now on (one element, incremented in place)."""
    import py4j.clientserver as cs

    count = [0]
    send = cs.JavaClient.send_command

    def counted(self: Any, command: str, *args: Any, **kwargs: Any) -> Any:
        count[0] += 1
        return send(self, command, *args, **kwargs)

    cs.JavaClient.send_command = counted
    return count


def worker(args: argparse.Namespace) -> None:
    """One checkout's rounds: a JSON line per round on stdout."""
    from bench.capture_overhead import tpch_inputs
    from bench.tpc_sql.data import generate
    from bench.tpc_sql.queries import adapt, original
    from bench.tpc_sql.run import local_session, spark_views
    from bench.tpch import QUERIES
    from capture_agent import ProvenanceSession
    from capture_agent.emitters import NoopEmitter

    spark = local_session(2, "4g")
    spark.sparkContext.setLogLevel("ERROR")
    spark_views(spark, generate("tpcds", args.sf, None))
    paths = tpch_inputs(spark, Path(args.tpch_data), args.tpch_scale)
    sql = {q: adapt("tpcds", q, original("tpcds", q)) for q in _numbers(args.tpcds)}
    tpch = [QUERIES[q] for q in args.tpch.split(",") if q]
    calls = _count_round_trips()
    emitter = NoopEmitter()

    def one_round() -> dict[str, float]:
        t: dict[str, float] = dict.fromkeys(
            ("plain_build", "plain_run", "build", "run", "calls"), 0.0
        )
        for text in sql.values():
            started = time.monotonic()
            df = spark.sql(text)
            built = time.monotonic()
            df.collect()
            t["plain_build"] += built - started
            t["plain_run"] += time.monotonic() - built
            with ProvenanceSession(spark, "driver-build", emitter=emitter) as prov:
                before, started = calls[0], time.monotonic()
                out = prov.tracked(spark.sql(text), values="all")
                built = time.monotonic()
                t["calls"] += calls[0] - before
                out.df.collect()
            t["build"] += built - started
            t["run"] += time.monotonic() - built
        plain = {n: spark.read.parquet(p) for n, p in paths.items()}
        for query in tpch:
            started = time.monotonic()
            df = query(dict(plain))
            built = time.monotonic()
            df.collect()
            t["plain_build"] += built - started
            t["plain_run"] += time.monotonic() - built
            with ProvenanceSession(spark, "driver-build", emitter=emitter) as prov:
                sources = {n: prov.source(spark.read.parquet(p), n) for n, p in paths.items()}
                before, started = calls[0], time.monotonic()
                captured = query(dict(sources))
                built = time.monotonic()
                t["calls"] += calls[0] - before
                captured.collect()
            t["build"] += built - started
            t["run"] += time.monotonic() - built
        return t

    # A warm-up round (JIT, caches, the jar's classes), then the measured ones; each waits for
    # the parent's turn signal, so that the other checkout never runs beside it.
    for _ in range(args.rounds + 1):
        sys.stdin.readline()
        print(_MARK + json.dumps(one_round()), flush=True)


def _numbers(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x]


def _start(tree: Path, jar: str | None, argv: list[str]) -> subprocess.Popen[str]:
    """The worker of ``tree``; its stderr (Spark's log) goes to driver_build-<tree>.log in the
    temporary folder."""
    log = (Path(tempfile.gettempdir()) / f"driver_build-{tree.name}.log").open("w")
    env = dict(os.environ, PYTHONPATH=str(tree), PYSPARK_PYTHON=sys.executable)
    if jar:
        env["SPARKPROV_CAPTURE_JAR"] = jar
    # This file runs in the other checkout too (it may not have it): by path, with that
    # checkout first on the path, so capture_agent and bench's workloads are its own.
    return subprocess.Popen(
        [sys.executable, str(Path(__file__).resolve()), "--worker", *argv],
        cwd=tree,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=log,
        text=True,
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--against", type=Path, help="another checkout, compared side by side")
    parser.add_argument("--against-jar", help="its capture jar (else the one it ships)")
    parser.add_argument("--tpcds", default="4,47,57", help="TPC-DS query numbers (SQL text)")
    parser.add_argument("--tpch", default="q1,q5,q18", help="TPC-H queries (DataFrame calls)")
    parser.add_argument("--sf", type=float, default=0.01, help="TPC-DS scale")
    parser.add_argument("--tpch-scale", type=float, default=0.01)
    parser.add_argument("--tpch-data", default="/tmp/sparkprov-bench")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    if args.worker:
        worker(args)
        return 0
    passed = [
        f"--tpcds={args.tpcds}",
        f"--tpch={args.tpch}",
        f"--sf={args.sf}",
        f"--tpch-scale={args.tpch_scale}",
        f"--tpch-data={args.tpch_data}",
        f"--rounds={args.rounds}",
    ]
    trees = {"this": (HERE, None)}
    if args.against:
        trees["against"] = (args.against.resolve(), args.against_jar)
    load_before = os.getloadavg()
    workers = {name: _start(tree, jar, passed) for name, (tree, jar) in trees.items()}
    rounds: dict[str, list[dict[str, float]]] = {name: [] for name in trees}
    for turn in range(args.rounds + 1):  # turn 0 is the warm-up
        for name, process in workers.items():
            assert process.stdout is not None and process.stdin is not None
            process.stdin.write("\n")
            process.stdin.flush()
            line = process.stdout.readline()
            while line and not line.startswith(_MARK):  # what Spark or a library printed
                line = process.stdout.readline()
            if not line:
                raise SystemExit(f"the {name} worker stopped (exit {process.wait()})")
            if turn:
                rounds[name].append(json.loads(line[len(_MARK) :]))
                print(f"{name}: {rounds[name][-1]}", flush=True)
    for process in workers.values():
        process.wait()
    summary = {
        name: {k: statistics.median(r[k] for r in rs) for k in rs[0]} for name, rs in rounds.items()
    }
    print(
        f"{'':10} {'plain build s':>14} {'plain run s':>12} {'build s':>9} {'run s':>8} "
        f"{'py4j calls':>11}"
    )
    for name, s in summary.items():
        print(
            f"{name:10} {s['plain_build']:14.2f} {s['plain_run']:12.2f} {s['build']:9.2f} "
            f"{s['run']:8.2f} {s['calls']:11.0f}"
        )
    ratios = {}
    if "against" in summary:
        ratios = {k: summary["this"][k] / summary["against"][k] for k in ("build", "run", "calls")}
        print("this / against: " + ", ".join(f"{k} {v:.2f}" for k, v in ratios.items()))
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / f"driver_build-{time.strftime('%Y%m%d-%H%M%S')}.json"
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False
    ).stdout.strip()
    path.write_text(
        json.dumps(
            {
                "commit": commit,
                "against": str(args.against) if args.against else None,
                "args": vars(args) | {"against": str(args.against)},
                "load_avg_before": load_before,
                "load_avg_after": os.getloadavg(),
                "rounds": rounds,
                "medians": summary,
                "ratios": ratios,
            },
            indent=2,
        )
    )
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
