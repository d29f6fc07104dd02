"""How fast can Neo4j store lineage on this machine at all? The ceiling under ingest's rate.

The time-to-queryable issue asks ingest for >= 50,000 stored records/s with component and set
ids kept, and a 1M-row pipeline queryable 60 s after its job (about 4.7M records when no
derivable node is stored: ~79k records/s if none of it is written while the job runs). This
benchmark measures, side by side on one private Neo4j (the local stack's settings, wiped before
each variant), what the engine gives for the same pipeline-shaped lineage:

- ``core-api``: the engine alone: an embedded Neo4j (same settings, no Bolt, no Cypher) creating
  the same graph with the core API (bench/java/CoreApiCeiling.java, run from source), the
  unique id constraint kept, a seek per edge end not created in the same transaction. The upper
  bound of any writer inside the server, ours included.
- ``cypher-bare``: the bare batched CREATE: ``UNWIND ... CREATE`` of the nodes (id, run, op,
  label, relation: no component or set ids) and ``UNWIND ... MATCH ... MATCH ... CREATE`` of
  the edges (a seek of each end by the unique id), one transaction per flush; only the unique
  id constraint exists. No id maintenance, no placeholders, no dedup: the floor of any writer
  that upserts by id.
- ``procedure``: ``sparkprov.write``, the ingest procedure (upsert by id, placeholders,
  component and set ids and set dependencies kept), with ingest's schema, on the same flushes.
- ``procedure-full``: the same procedure on the graph as captured today (an aggregate member
  also sends a TENSOR and a VALUE node per aggregated column, and their 3 edges).
- ``procedure@baseline`` (and ``procedure-full@baseline``): the same with another build of the
  procedure jar (``--baseline-jar``, e.g. one built from an older commit), so that a change to
  the procedure is measured before and after in one run.

The graph is capture_overhead's pipeline in miniature: ``--rows`` order tokens (80% pass the
filter), ``--dim`` customer tokens, a TIMES node per joined row with 2 edges, a member edge from
each joined row to its group's DELTA node (37 groups), 3 AGGREGATE nodes per group. Flushes are
ingest's (``batch_rows`` nodes + edges), built from 2,048-row capture batches in job order.
Nothing goes through Kafka or the Python consumer: this is Neo4j's part alone.

    flock /tmp/sparkprov-bench.lock .venv/bin/python -m bench.neo4j_ceiling [--rows 200000]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import neo4j
import numpy as np
import pandas as pd

from bench.stack import RESULTS, Ports, bench_stack, busy_ports
from capture_agent.taps import MemberSpec, derive, salt_of
from ingest_service.store import Flush, Store
from sparkprov.events import EdgeColumns, NodeColumns, decode, encode_batch

RUN = "ceiling"
WORKFLOW = "bench.neo4j_ceiling"
CHUNK = 2048
GROUPS = 37
AGGREGATES = 3
VARIANTS = ("core-api", "cypher-bare", "procedure", "procedure-full")
BASELINE = "@baseline"
PROCEDURE_JAR = "sparkprov-ingest-procedure.jar"
CORE_API = Path(__file__).resolve().parent / "java" / "CoreApiCeiling.java"

_BARE_NODES = """
UNWIND $rows AS r
CREATE (:Node {id: r.id, run_id: r.run, op: r.op, label: r.label, relation: r.relation})
"""
_BARE_EDGES = """
UNWIND $rows AS e
MATCH (a:Node {id: e[0]})
MATCH (b:Node {id: e[1]})
CREATE (a)-[:DERIVES]->(b)
"""


@dataclass(frozen=True)
class Shape:
    rows: int
    dim: int
    seed: int = 7


def _random_ids(rng: np.random.Generator, n: int) -> np.ndarray:
    return rng.integers(-(2**63), 2**63 - 1, size=n, dtype=np.int64)


def capture_batches(
    shape: Shape, full: bool
) -> Iterator[tuple[list[NodeColumns], EdgeColumns | None]]:
    """The pipeline's lineage as the taps would send it, in 2,048-row batches, in job order."""
    rng = np.random.default_rng(shape.seed)
    customers = _random_ids(rng, shape.dim)
    orders = _random_ids(rng, shape.rows)
    groups = _random_ids(rng, GROUPS)
    split = ("bench",)
    for start in range(0, shape.dim, CHUNK):
        ids = customers[start : start + CHUNK]
        yield (
            [NodeColumns("TOKEN", ids, label="Customers", relation="Customers", split=split)],
            None,
        )
    kept = rng.random(shape.rows) < 0.8
    region = rng.integers(0, GROUPS, size=shape.rows)
    customer_of = customers[rng.integers(0, shape.dim, size=shape.rows)]
    member = MemberSpec(key="bench-members", aggregates=AGGREGATES, group_key="bench-group")
    for start in range(0, shape.rows, CHUNK):
        stop = min(start + CHUNK, shape.rows)
        ids = orders[start:stop]
        yield [NodeColumns("TOKEN", ids, label="Orders", relation="Orders", split=split)], None
        keep = kept[start:stop]
        joined = derive(ids[keep], salt_of("bench-join"))
        yield (
            [NodeColumns("TIMES", joined, label="·", split=split)],
            EdgeColumns(
                np.concatenate([ids[keep], customer_of[start:stop][keep]]),
                np.concatenate([joined, joined]),
            ),
        )
        in_group = groups[region[start:stop][keep]]
        if full:
            values = pd.Series(rng.integers(1, 1000, size=len(joined)).astype(str))
            pdf = pd.DataFrame(
                {"id": joined, "group": in_group, **{f"x{i}": values for i in range(AGGREGATES)}}
            )
            nodes, edges = member.emit(pdf)
            yield [replace(n, split=split) for n in nodes], edges
        else:
            yield [], EdgeColumns(joined, in_group)
    yield [NodeColumns("DELTA", groups, label="δ", split=split)], None
    for i in range(AGGREGATES):
        aggregates = derive(groups, salt_of("bench-group", i, "aggregate"))
        yield [NodeColumns("AGGREGATE", aggregates, label="SUM", split=split)], None


def flushes(shape: Shape, full: bool, batch_rows: int) -> Iterator[Flush]:
    """Ingest's flushes: decoded events gathered up to ``batch_rows`` nodes + edges each."""
    flush = Flush()
    for seq, (nodes, edges) in enumerate(capture_batches(shape, full)):
        event = decode(encode_batch(RUN, WORKFLOW, "bench", 0, seq, nodes, edges))
        flush.add(event)
        if flush.rows >= batch_rows:
            yield from flush.split(batch_rows)
            flush = Flush()
    if flush:
        yield from flush.split(batch_rows)


def write_bare(driver: neo4j.Driver, flush: Flush) -> int:
    nodes = [
        {
            "id": node_id,
            "run": b["run"],
            "op": b["op"],
            "label": b["label"],
            "relation": b["relation"],
        }
        for b in flush.blocks
        for node_id in b["ids"]
    ]
    edges = [[s, d] for e in flush.edges for s, d in zip(e["src"], e["dst"], strict=True)]

    def work(tx: neo4j.ManagedTransaction) -> None:
        if nodes:
            tx.run(_BARE_NODES, rows=nodes).consume()
        if edges:
            tx.run(_BARE_EDGES, rows=edges).consume()

    with driver.session() as session:
        session.execute_write(work)
    return len(nodes) + len(edges)


def run_core_api(shape: Shape, stack: Any, batch_rows: int) -> dict[str, Any]:
    """The embedded core-API writer, in its own JVM with the stack's heap and neo4j.conf."""
    stack.down(("neo4j",))
    home = stack.dir / "data" / "core-api"
    shutil.rmtree(home, ignore_errors=True)
    conf = stack.dir / "neo4j" / "core-api.conf"
    conf.parent.mkdir(parents=True, exist_ok=True)
    conf.write_text(stack.settings.neo4j.conf_text())
    lib = stack.dir / "lib" / "neo4j"
    command = [
        stack.settings.java,
        *stack.settings.neo4j.jvm_heap_flags(),
        "-XX:+UseG1GC",
        "-cp",
        f"{lib}/*",
        str(CORE_API),
        str(home),
        str(shape.rows),
        str(shape.dim),
        str(batch_rows),
        str(conf),
    ]
    load0 = os.getloadavg()
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    shutil.rmtree(home, ignore_errors=True)
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0 or not lines:
        raise RuntimeError(f"core-api writer failed ({done.returncode}):\n{done.stderr[-3000:]}")
    measured = json.loads(lines[-1])
    return {
        "variant": "core-api",
        **measured,
        "load_average_start": load0,
        "load_average_end": os.getloadavg(),
    }


def use_plugins(stack: Any, baseline_jar: Path | None) -> None:
    """Points the bench stack's plugins/ at this checkout's jars, or at a copy of them whose
    procedure jar is ``baseline_jar``."""
    link = stack.dir / "plugins"
    if link.is_symlink() or link.is_file():
        link.unlink()
    elif link.is_dir():
        shutil.rmtree(link)
    if baseline_jar is None:
        link.symlink_to(Path(__file__).resolve().parent.parent / ".stack" / "plugins")
        return
    link.mkdir()
    for jar in (Path(__file__).resolve().parent.parent / ".stack" / "plugins").glob("*.jar"):
        if jar.name != PROCEDURE_JAR:
            shutil.copy(jar, link / jar.name)
    shutil.copy(baseline_jar, link / PROCEDURE_JAR)


def run_variant(
    variant: str,
    shape: Shape,
    stack: Any,
    uri: str,
    batch_rows: int,
    baseline_jar: Path | None = None,
) -> dict[str, Any]:
    stack.down(("neo4j",))
    shutil.rmtree(stack.dir / "data" / "neo4j", ignore_errors=True)
    use_plugins(stack, baseline_jar if variant.endswith(BASELINE) else None)
    stack.up(("neo4j",))
    full = variant.removesuffix(BASELINE) == "procedure-full"
    driver = neo4j.GraphDatabase.driver(uri, auth=None)
    store = Store(driver)
    try:
        if variant == "cypher-bare":
            with driver.session() as session:
                session.run(
                    "CREATE CONSTRAINT sp_node_id IF NOT EXISTS FOR (n:Node) REQUIRE n.id IS UNIQUE"
                ).consume()
        else:
            store.ensure_schema()
            if variant.endswith(BASELINE):
                # A jar from before the ids were kept by reference seeks nodes by their ids.
                with driver.session() as session:
                    for key in ("component_id", "set_id", "s0", "s1", "s2"):
                        session.run(
                            f"CREATE INDEX baseline_{key} IF NOT EXISTS FOR (n:Node) ON (n.{key})"
                        ).consume()
                    session.run("CALL db.awaitIndexes(300)").consume()
        prepare = write = 0.0
        records = 0
        flush_times: list[float] = []
        load0 = os.getloadavg()
        generated = flushes(shape, full, batch_rows)
        while True:
            t0 = time.perf_counter()
            flush = next(generated, None)
            t1 = time.perf_counter()
            prepare += t1 - t0
            if flush is None:
                break
            if variant == "cypher-bare":
                records += write_bare(driver, flush)
            else:
                result = store.write(flush)
                records += result.nodes_created + result.edges_created
            took = time.perf_counter() - t1
            write += took
            flush_times.append(took)
            if len(flush_times) % 50 == 0:
                print(
                    f"  {variant}: {records:,} records, {records / write:,.0f}/s",
                    file=sys.stderr,
                    flush=True,
                )
        with driver.session() as session:
            nodes = session.run("MATCH (n:Node) RETURN count(n) AS c").single()["c"]  # type: ignore[index]
            edges = session.run("MATCH ()-[r:DERIVES]->() RETURN count(r) AS c").single()["c"]  # type: ignore[index]
        return {
            "variant": variant,
            "records": records,
            "stored_nodes": nodes,
            "stored_edges": edges,
            "flushes": len(flush_times),
            "write_s": round(write, 2),
            "records_per_s": round(records / write, 1) if write else 0.0,
            "median_flush_s": round(float(np.median(flush_times)), 3) if flush_times else 0.0,
            "prepare_s": round(prepare, 2),
            "load_average_start": load0,
            "load_average_end": os.getloadavg(),
        }
    finally:
        driver.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--dim", type=int, default=0, help="customers (default rows / 10)")
    parser.add_argument("--batch-rows", type=int, default=20_000, help="ingest's flush size")
    parser.add_argument(
        "--variants",
        default=",".join(VARIANTS),
        help=f"of {', '.join(VARIANTS)}; a procedure variant + '{BASELINE}' uses --baseline-jar",
    )
    parser.add_argument(
        "--baseline-jar", type=Path, default=None, help="another build of the procedure jar"
    )
    parser.add_argument("--bolt-port", type=int, default=26687)
    parser.add_argument("--keep", action="store_true", help="leave Neo4j running at the end")
    parser.add_argument(
        "--jfr", default="", help="record Neo4j's JVM with Java Flight Recorder into this file"
    )
    args = parser.parse_args(argv)
    variants = [v for v in args.variants.split(",") if v]
    unknown = {v.removesuffix(BASELINE) for v in variants} - set(VARIANTS)
    if unknown:
        parser.error(f"unknown variants {sorted(unknown)}; known: {', '.join(VARIANTS)}")
    baselines = [v for v in variants if v.endswith(BASELINE)]
    if baselines and (args.baseline_jar is None or not args.baseline_jar.is_file()):
        parser.error(f"{', '.join(baselines)} need --baseline-jar (a procedure jar)")
    if any(v.removesuffix(BASELINE) in ("core-api", "cypher-bare") for v in baselines):
        parser.error(f"{BASELINE} applies to the procedure variants only")
    shape = Shape(args.rows, args.dim or max(1, args.rows // 10))
    ports = Ports(
        kafka=26092, kafka_controller=26093, bolt=args.bolt_port, grpc=26051, ingest_http=26464
    )
    if busy_ports([ports.bolt]):
        print(f"port {ports.bolt} is busy: another run? (--bolt-port)", file=sys.stderr)
        return 2
    environ = {}
    if args.jfr:
        flight = (
            "-XX:FlightRecorderOptions=stackdepth=512 "
            f"-XX:StartFlightRecording=filename={Path(args.jfr).resolve()},settings=profile"
        )
        environ["JAVA_TOOL_OPTIONS"] = flight
    stack = bench_stack(environ, folder=".stack-ceiling", ports=ports)
    uri = f"bolt://127.0.0.1:{ports.bolt}"
    results = []
    try:
        for variant in variants:
            print(f"{variant} ...", file=sys.stderr, flush=True)
            if variant == "core-api":
                results.append(run_core_api(shape, stack, args.batch_rows))
            else:
                results.append(
                    run_variant(variant, shape, stack, uri, args.batch_rows, args.baseline_jar)
                )
    finally:
        if not args.keep:
            stack.down(("neo4j",))
        use_plugins(stack, None)
    bare = next((r for r in results if r["variant"] == "cypher-bare"), None)
    print(
        f"\nNeo4j write ceiling, {shape.rows:,} rows + {shape.dim:,} customers, "
        f"flushes of {args.batch_rows:,}"
    )
    print(f"{'variant':<16}{'records':>12}{'write s':>10}{'records/s':>12}{'vs bare':>9}")
    for r in results:
        ratio = f"{r['records_per_s'] / bare['records_per_s']:.2f}" if bare else "-"
        print(
            f"{r['variant']:<16}{r['records']:>12,}{r['write_s']:>10.1f}{r['records_per_s']:>12,.0f}{ratio:>9}"
        )
    RESULTS.mkdir(parents=True, exist_ok=True)
    out = RESULTS / f"neo4j_ceiling-{time.strftime('%Y%m%d-%H%M%S')}.json"
    report = {
        "benchmark": "neo4j_ceiling",
        "rows": shape.rows,
        "dim": shape.dim,
        "batch_rows": args.batch_rows,
        "machine": {"cores": os.cpu_count(), "load_average": os.getloadavg()},
        "neo4j": asdict(stack.settings.neo4j),
        "baseline_jar": str(args.baseline_jar) if args.baseline_jar else None,
        "results": results,
    }
    out.write_text(json.dumps(report, indent=2, default=str))
    print(f"results: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
