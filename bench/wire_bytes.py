"""What travels, by capture point and by field: one captured run of a workload, its messages kept
in memory (no broker), then per tap the raw bytes and the bytes after zstd (level 3, the
messages of a tap compressed eight at a time as a producer's batch would), per input row, and
the raw bytes of each field of the messages.

    python -m bench.wire_bytes [--workload pipeline|pipeline_scrambled|enrich] [--rows 1000000]
    python -m bench.wire_bytes --workload tpch [--scale 0.1] [--values read|all|key]

With ``tpch`` the 22 queries run over sources tracked once and bytes are per table row (the
eight tables' rows), as in ``bench.capture_overhead``.

Not a timing: it tells which field of which tap to shrink next (bench/README.md, issue 26)."""

from __future__ import annotations

import argparse
import collections
import os
import re
import sys
import tempfile
from pathlib import Path
from typing import Any

import zstandard

from bench.capture_overhead import make_pipeline_inputs, pipeline, tpch, tpch_inputs, tpch_rows
from capture_agent import ProvenanceSession
from capture_agent.emitters import MemoryEmitter
from examples.spark import local_spark
from sparkprov.v1 import lineage_pb2


def field_bytes(message: Any, prefix: str, out: collections.Counter[str]) -> None:
    """The serialized size of each set field of ``message`` (nested messages by their fields)."""
    for descriptor, value in message.ListFields():
        name = f"{prefix}.{descriptor.name}"
        repeated = hasattr(value, "extend")
        if descriptor.message_type is not None:
            for item in value if repeated else [value]:
                field_bytes(item, name, out)
            continue
        probe = type(message)()
        if repeated:
            getattr(probe, descriptor.name).extend(value)
        else:
            setattr(probe, descriptor.name, value)
        out[name] += probe.ByteSize()


def _kind(tap: str) -> str:
    """A tap's kind and relation without its number (``join#12`` -> ``join``, ``source:orders#3``
    -> ``source:orders``, ``group#8:members`` -> ``group:members``)."""
    return re.sub(r"#\d+", "", tap)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--workload", default="pipeline")
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--dim", type=int, default=100_000)
    parser.add_argument("--scale", type=float, default=0.1, help="TPC-H scale (tpch only)")
    parser.add_argument("--values", default="read", help="the sources' values policy (tpch only)")
    parser.add_argument("--data", default=os.path.join(tempfile.gettempdir(), "sparkprov-bench"))
    args = parser.parse_args(argv)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark = local_spark("sparkprov-wire-bytes")
    data = Path(args.data)
    data.mkdir(parents=True, exist_ok=True)
    emitter = MemoryEmitter(spark)
    if args.workload == "tpch":
        paths = tpch_inputs(spark, data, args.scale)
        rows = tpch_rows(spark, paths)
        with ProvenanceSession(spark, "wire-bytes", emitter=emitter) as prov:
            tpch(prov, paths, args.values)
    else:
        rows = args.rows + args.dim
        scrambled = args.workload == "pipeline_scrambled"
        facts, dims = make_pipeline_inputs(spark, data, args.rows, args.dim, scrambled=scrambled)
        with ProvenanceSession(spark, "wire-bytes", emitter=emitter) as prov:
            if args.workload == "enrich":
                from bench.time_to_queryable import enrich

                enrich(prov, facts, dims, str(data / "enriched.parquet"))
            else:
                pipeline(prov, facts, dims)
    by_tap: dict[str, list[bytes]] = collections.defaultdict(list)
    fields: collections.Counter[str] = collections.Counter()
    for _, value in emitter.messages():
        event = lineage_pb2.LineageEvent.FromString(value)
        if event.HasField("batch"):
            tap = _kind(event.batch.tap)
            by_tap[tap].append(value)
            field_bytes(event.batch, tap, fields)
    compressor = zstandard.ZstdCompressor(level=3)
    print(f"{args.workload}: bytes per input row ({rows:,} input rows; tpch: table rows)")
    total_raw = total_zstd = 0
    for tap, messages in sorted(by_tap.items()):
        raw = sum(map(len, messages))
        packed = sum(
            len(compressor.compress(b"".join(messages[i : i + 8])))
            for i in range(0, len(messages), 8)
        )
        total_raw, total_zstd = total_raw + raw, total_zstd + packed
        per_row = f"raw {raw / rows:7.2f}  zstd {packed / rows:6.2f}"
        print(f"  {tap:28} {len(messages):6,} messages  {per_row}")
    print(f"  {'all':28} {'':15} raw {total_raw / rows:7.2f}  zstd {total_zstd / rows:6.2f}")
    print("raw bytes per input row by field:")
    for name, size in fields.most_common(15):
        print(f"  {name:50} {size / rows:7.2f}")
    spark.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
