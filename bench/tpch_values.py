"""What kept values cost: the 22 TPC-H queries one by one, plain and captured, per values policy.

    python -m bench.tpch_values [--sf 0.1] [--values read,all,none]

Each query runs plain (the kill switch) then captured, once, over sources tracked with the
policy (``read``, the sources' default: the columns the query reads; ``all``: every column;
``none``: no values, the rows still identified), after one untimed captured pass over all 22.
The emitter is a no-op: the taps build and encode every message and send nothing, so the times say
what Spark and the taps cost, not Kafka (``bench.capture_overhead`` measures with Kafka). To compare
two builds of the capture jar, run it twice with ``SPARKPROV_CAPTURE_JAR`` pointing at each. Prints
each query's times and ratio and the totals; writes bench/results/tpch_values-<timestamp>.json with
the load averages.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from bench.harness import RESULTS

__all__ = ["main"]


def _timed(
    spark: Any,
    paths: dict[str, str],
    enabled: bool,
    values: str,
    query: Callable[[dict[str, Any]], Any],
) -> float:
    from capture_agent import ProvenanceSession
    from capture_agent.emitters import NoopEmitter

    with ProvenanceSession(spark, "tpch-values", emitter=NoopEmitter(), enabled=enabled) as prov:
        kept = None if values == "none" else values
        sources = {n: prov.source(spark.read.parquet(p), n, values=kept) for n, p in paths.items()}
        started = time.perf_counter()
        query(sources).collect()
        return time.perf_counter() - started


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sf", type=float, default=0.1)
    parser.add_argument(
        "--values", default="read,all,none", help="policies, comma-separated: read, all, none"
    )
    parser.add_argument("--data", default=os.path.join(tempfile.gettempdir(), "sparkprov-bench"))
    args = parser.parse_args(argv)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from bench.capture_overhead import tpch_inputs
    from bench.tpch import QUERIES
    from examples.spark import local_spark

    spark = local_spark("sparkprov-tpch-values")
    paths = tpch_inputs(spark, Path(args.data), args.sf)
    result: dict[str, Any] = {
        "sf": args.sf,
        "jar": os.environ.get("SPARKPROV_CAPTURE_JAR", "the project's"),
        "load_before": os.getloadavg(),
        "policies": {},
    }
    for values in args.values.split(","):
        for query in QUERIES.values():  # warm-up: every plan compiled once
            _timed(spark, paths, True, values, query)
        rows = {}
        for name, query in QUERIES.items():
            plain = _timed(spark, paths, False, values, query)
            captured = _timed(spark, paths, True, values, query)
            rows[name] = {"plain_s": round(plain, 3), "captured_s": round(captured, 3)}
            print(
                f"values={values} {name:>4} plain {plain:6.2f}s captured {captured:6.2f}s "
                f"ratio {captured / plain:5.2f}",
                flush=True,
            )
        plain_s = sum(r["plain_s"] for r in rows.values())
        captured_s = sum(r["captured_s"] for r in rows.values())
        print(
            f"values={values} TOTAL plain {plain_s:.2f}s captured {captured_s:.2f}s "
            f"ratio {captured_s / plain_s:.2f}",
            flush=True,
        )
        result["policies"][values] = {
            "queries": rows,
            "plain_s": round(plain_s, 3),
            "captured_s": round(captured_s, 3),
            "ratio": round(captured_s / plain_s, 3),
        }
    result["load_after"] = os.getloadavg()
    RESULTS.mkdir(parents=True, exist_ok=True)
    out = RESULTS / f"tpch_values-{time.strftime('%Y%m%d-%H%M%S')}.json"
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {out}; load average {result['load_before']} -> {result['load_after']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
