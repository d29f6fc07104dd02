"""Where capture time goes: one workload run in stages, each adding one part of a tap's work.

    python -m bench.capture_profile [--workloads pipeline,cars,arctic] [--repeat 3]

Stages (each the median of ``--repeat`` runs, same process, same inputs as bench.capture_overhead):

- ``plain``: the kill switch (constant id column, no taps);
- ``ids``: ids computed by Spark and every tap's columns shipped to Python as Arrow batches and
  converted to pandas, the tap returning at once (Spark + Arrow + Python worker cost);
- ``emit``: plus the spec turning each batch into node and edge columns;
- ``encode``: plus the protobuf encoding of each message;
- ``full``: the real tap (plus handing every message to Kafka and waiting for the acks).

The differences between consecutive stages say what each part costs. The stand-in taps are built
here (they replace ``capture_agent.session.make_tap`` on the driver, and Spark pickles them by
value into the workers), so the product code is measured as it is.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

import capture_agent.session as session_module
from bench.capture_overhead import RESULTS, TOPIC, make_pipeline_inputs, pipeline
from capture_agent import ProvenanceSession
from capture_agent.taps import TAP_PREFIX, TapContext, TapSpec, make_tap
from examples import arctic, cars
from examples.spark import local_spark

STAGES = ("plain", "ids", "emit", "encode", "full")


def stand_in_tap(stage: str) -> Callable[[TapSpec, TapContext], Any]:
    def factory(spec: TapSpec, ctx: TapContext) -> Any:
        from pyspark.sql.pandas.functions import pandas_udf
        from pyspark.sql.types import BooleanType

        def tap(batches: Iterator[pd.DataFrame]) -> Iterator[pd.Series]:
            from sparkprov.events import encode_batch

            step = ctx.rows_per_message
            for pdf in batches:
                if stage != "ids":
                    for start in range(0, len(pdf), step):
                        # What make_tap sends (group members: one compact block).
                        nodes, edges, members = spec.wire(pdf.iloc[start : start + step])
                        if stage == "encode":
                            encode_batch(
                                ctx.run_id,
                                ctx.workflow,
                                spec.key,
                                0,
                                0,
                                nodes,
                                edges,
                                members=members,
                            )
                yield pd.Series(np.ones(len(pdf), dtype=bool))

        tap.__name__ = f"{TAP_PREFIX}_{spec.key}"
        return pandas_udf(tap, BooleanType()).asNondeterministic()  # type: ignore[call-overload]

    return factory


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--workloads", default="pipeline,cars,arctic")
    parser.add_argument("--stages", default=",".join(STAGES))
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--warmup", type=int, default=1, help="untimed rounds first")
    parser.add_argument("--cars", type=int, default=20_000)
    parser.add_argument("--cars-exec", type=int, default=10)
    parser.add_argument("--arctic-exec", type=int, default=1)
    parser.add_argument("--data", default="/tmp/sparkprov-bench")
    parser.add_argument("--profiler", action="store_true", help="cProfile the taps (full stage)")
    args = parser.parse_args(argv)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark = local_spark("sparkprov-profile")
    if args.profiler:
        spark.conf.set("spark.sql.pyspark.udf.profiler", "perf")
    facts, dims = make_pipeline_inputs(spark, Path(args.data), 1_000_000, 100_000)
    workloads: dict[str, Callable[[ProvenanceSession], Any]] = {
        "pipeline": lambda prov: pipeline(prov, facts, dims),
        "cars": lambda prov: cars.run(prov, args.cars, args.cars_exec, seed=1),
        "arctic": lambda prov: arctic.run(prov, 24, "dense", 6, "month", args.arctic_exec),
    }
    report: dict[str, Any] = {"arguments": vars(args), "workloads": {}}
    out = RESULTS / f"capture_profile-{time.strftime('%Y%m%d-%H%M%S')}.json"
    for name in [w for w in args.workloads.split(",") if w]:
        body = workloads[name]
        times: dict[str, list[float]] = {}
        for _ in range(args.warmup + args.repeat):
            for stage in args.stages.split(","):
                session_module.make_tap = make_tap if stage == "full" else stand_in_tap(stage)  # type: ignore[assignment]
                started = time.perf_counter()
                with ProvenanceSession(
                    spark, workflow="bench", topic=TOPIC, enabled=stage != "plain"
                ) as prov:
                    body(prov)
                times.setdefault(stage, []).append(time.perf_counter() - started)
        medians = {s: statistics.median(t[args.warmup :]) for s, t in times.items()}
        report["workloads"][name] = {"seconds": times, "median_s": medians}
        print(name, "  ".join(f"{s} {m:.2f}s" for s, m in medians.items()), flush=True)
        out.write_text(json.dumps(report, indent=2))
    session_module.make_tap = make_tap  # type: ignore[assignment]
    if args.profiler:
        spark.profile.show(type="perf")
    spark.stop()
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
