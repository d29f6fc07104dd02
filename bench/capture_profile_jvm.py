"""Where the JVM taps' time goes: a workload plain, with taps that encode and discard, and with
taps that send to Kafka; optionally under Java Flight Recorder, with the hottest methods.

    python -m bench.capture_profile_jvm [--workloads pipeline,tpch] [--repeat 3] [--jfr]

Stages (median of ``--repeat`` runs each, one process, the inputs of bench.capture_overhead):

- ``plain``: the kill switch (constant id column, no taps);
- ``call``: Spark computes the ids and every tap's input struct and calls the tap, which returns
  at once (io.sparkprov.capture.DiscardSink with Step CALL);
- ``copy``: ... and the tap copies each row into its chunk of primitive columns;
- ``emit``: ... and each full chunk becomes its nodes, edges and members (Emission);
- ``discard``: ... and is encoded as a LineageEvent (Wire), then dropped;
- ``kafka``: the real taps (Kafka's Java client, acks=all, waiting for every acknowledgement).

With ``--jfr``, the driver JVM (which runs the local executors) records CPU samples during the
``kafka`` stage, and the report lists the methods most often on top of the stack, and the
methods of io.sparkprov.capture / Spark / Kafka most often anywhere on it.
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.capture_overhead import (
    RESULTS,
    TOPIC,
    base_workloads,
    make_pipeline_inputs,
    tpch,
    tpch_inputs,
)
from capture_agent import ProvenanceSession
from capture_agent.emitters import KafkaEmitter
from capture_agent.jvm import JvmTaps
from capture_agent.publisher import PublisherConfig
from sparkprov import defaults

# stage -> the DiscardSink step the taps stop after
DISCARD_STEPS = {"call": "CALL", "copy": "COPY", "emit": "EMIT", "discard": "ENCODE"}
STAGES = ("plain", *DISCARD_STEPS, "kafka")


@dataclasses.dataclass(frozen=True)
class DiscardEmitter(KafkaEmitter):
    """Kafka for the driver's markers; the JVM taps stop after ``step`` and drop their rows."""

    step: str = "ENCODE"

    def jvm_sink(self, taps: JvmTaps) -> Any:
        return taps.discard_sink(self.step)


def run(spark: Any, stage: str, body: Callable[[ProvenanceSession], Any]) -> float:
    config = PublisherConfig(
        os.environ.get(defaults.ENV_KAFKA_BOOTSTRAP, defaults.KAFKA_BOOTSTRAP), TOPIC
    )
    emitter = (
        DiscardEmitter(config, DISCARD_STEPS[stage])
        if stage in DISCARD_STEPS
        else KafkaEmitter(config)
    )
    started = time.perf_counter()
    with ProvenanceSession(
        spark, "bench", emitter=emitter, enabled=stage != "plain", capture="jvm"
    ) as prov:
        body(prov)
    return time.perf_counter() - started


_OURS_AND_SPARKS = ("io.sparkprov", "org.apache.spark.sql", "org.apache.spark.unsafe")


def hottest(recording: Path, top: int = 25) -> dict[str, list[tuple[str, int]]]:
    """Top-of-stack and anywhere-on-stack counts of the recording's CPU samples."""
    printed = subprocess.run(
        ["jfr", "print", "--json", "--events", "jdk.ExecutionSample", str(recording)],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    samples = json.loads(printed)["recording"]["events"]
    on_top: collections.Counter[str] = collections.Counter()
    anywhere: collections.Counter[str] = collections.Counter()
    for sample in samples:
        frames = [
            f"{f['method']['type']['name']}.{f['method']['name']}".replace("/", ".")
            for f in sample["values"]["stackTrace"]["frames"]
        ]
        if frames:
            on_top[frames[0]] += 1
        for frame in set(frames):
            if frame.startswith(
                ("io.sparkprov", "org.apache.spark.sql", "org.apache.spark.unsafe")
            ):
                anywhere[frame] += 1
    return {
        "samples": [("all", len(samples))],
        "on_top": on_top.most_common(top),
        "anywhere": anywhere.most_common(top),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--workloads", default="pipeline")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--jfr", action="store_true")
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--dim", type=int, default=100_000)
    parser.add_argument("--data", default=os.path.join(tempfile.gettempdir(), "sparkprov-bench"))
    parser.add_argument("--tpch-scale", type=float, default=0.1)
    args = parser.parse_args(argv)
    recording = Path(tempfile.mkdtemp()) / "capture.jfr"
    from examples.spark import local_spark

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark = local_spark("sparkprov-profile-jvm")
    data = Path(args.data)
    data.mkdir(parents=True, exist_ok=True)
    facts, dims = make_pipeline_inputs(spark, data, args.rows, args.dim)
    workloads = base_workloads(facts, dims, 20_000, 10, 1)
    chosen = [w for w in args.workloads.split(",") if w]
    if "tpch" in chosen:  # the 22 queries, as bench.capture_overhead runs them
        paths = tpch_inputs(spark, data, args.tpch_scale)
        workloads["tpch"] = lambda prov: tpch(prov, paths)
    pid = spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid()  # type: ignore[union-attr]
    report: dict[str, Any] = {"load_average_before": os.getloadavg(), "workloads": {}}
    for name in chosen:
        body = workloads[name]
        for stage in STAGES:  # warm-up
            run(spark, stage, body)
        seconds: dict[str, list[float]] = {stage: [] for stage in STAGES}
        for _ in range(args.repeat):
            for stage in seconds:
                if stage == "kafka" and args.jfr:
                    subprocess.run(
                        ["jcmd", str(pid), "JFR.start", "name=sp", "settings=profile"],
                        check=True,
                        capture_output=True,
                    )
                seconds[stage].append(run(spark, stage, body))
                if stage == "kafka" and args.jfr:
                    subprocess.run(
                        ["jcmd", str(pid), "JFR.stop", "name=sp", f"filename={recording}"],
                        check=True,
                        capture_output=True,
                    )
        medians = {stage: statistics.median(v) for stage, v in seconds.items()}
        entry: dict[str, Any] = {"seconds": seconds, "median_s": medians}
        print(
            f"{name}: "
            + "  ".join(f"{s} {m:.2f}s ({m / medians['plain']:.2f}x)" for s, m in medians.items()),
            flush=True,
        )
        if args.jfr:
            entry["jfr"] = hottest(recording)
            for kind in ("on_top", "anywhere"):
                print(f"  {kind}:")
                for frame, count in entry["jfr"][kind][:15]:
                    print(f"    {count:6d}  {frame}")
        report["workloads"][name] = entry
    report["load_average_after"] = os.getloadavg()
    RESULTS.mkdir(parents=True, exist_ok=True)
    out = RESULTS / f"capture_profile_jvm-{time.strftime('%Y%m%d-%H%M%S')}.json"
    out.write_text(json.dumps(report, indent=2))
    print(f"wrote {out}")
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
