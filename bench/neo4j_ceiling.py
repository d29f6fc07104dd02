"""How fast can Neo4j store lineage on this machine at all? The ceiling under ingest's rate.

The time-to-queryable issue asks ingest to store a run within 1.5x the bare engine's time for
the same stored records. This benchmark measures, side by side on one private Neo4j (the local
stack's settings, wiped before each variant), the same flushes of the same pipeline-shaped
lineage written four ways, each on a store with the real store's schema (every constraint and
index of ``ingest_service.store``'s ``ensure_schema``):

- ``core-api``: the engine alone: an embedded Neo4j (same settings, no Bolt, no Cypher) writing
  the flushes (read from a file this module writes) with the core API, one transaction per
  flush (bench/java/CoreApiCeiling.java, run from source). The upper bound of any writer inside
  the server, ours included.
- ``cypher-bare``: the same over Bolt with batched Cypher, one transaction per flush:
  ``UNWIND ... MERGE`` of the nodes on their unique id, ``UNWIND ... MERGE ... MERGE ... CREATE``
  of the edges and member edges.
- ``procedure``: ``sparkprov.write``, the ingest procedure (upsert by id, placeholders,
  component and set ids and set dependencies kept), on the same flushes.
- ``procedure-full``: the same procedure on the graph as captured before member blocks (an
  aggregate member sent as a TENSOR and a VALUE node per aggregated column, and their 3 edges).
- ``procedure@baseline`` (and ``procedure-full@baseline``): the same with another build of the
  procedure jar (``--baseline-jar``, e.g. one built from an older commit), so that a change to
  the procedure is measured before and after in one run.

What the bare writers do is what any writer of the real store must do, and no more (no
component or set ids, no check for an edge sent twice, no :MemberKey registry):

- The same properties per node as FlushWriter.fill (neo4j_plugin), 6-10 on this graph
  (:func:`node_properties`): ``id``, ``run_id``, ``op``, ``label``, ``relation`` when named,
  ``value`` when given, ``split``, ``a_<column>`` per non-null attribute (a node born alone
  carries no birth ids: they are written by merges only); a member edge carries
  ``member_key``, ``member_values`` and ``pair``.
- Edges whose end has not arrived create it as a placeholder (``id``, ``pending_run``), and the
  node, when it arrives, fills it (its ``pending_run`` removed): the
  group's DELTA node arrives after all its members' edges (the reduce side's tap runs last), as
  in a real job, so a writer that only MATCHes ends loses those edges. This is the honest choice
  rather than reordering the flushes: a streaming writer cannot wait for the last flush.
- Every variant reports the records it CREATED, counted in Neo4j after it (count store: nodes
  and relationships by label and type; ``pending`` placeholders left over), next to the rows it
  was sent; rates are lineage records created (``:Node`` and ``DERIVES``) per second of writing,
  and the ratio is to ``core-api``. The procedure also creates its id structures, shown apart.
  A variant that creates fewer lineage records than the graph holds is flagged ``SHORT``.

The graph is capture_overhead's pipeline with its data: ``--rows`` order tokens (4 attributes;
status 0, one in five, is filtered out), ``--dim`` customer tokens (2 attributes), a TIMES node
with the joined row's 5 attributes and 2 edges per kept order, a member edge from each joined
row to its region's DELTA node (37 groups; 3 aggregated values on the edge), the DELTA nodes (4
attributes) and 3 AGGREGATE nodes per group with their edges. Split paths as the capture agent
gives them: ``main/Orders`` and ``main/Customers`` for the tokens, ``main`` otherwise. Flushes
are ingest's (``batch_rows`` nodes + edges), built from 2,048-row capture batches in job order.
Nothing goes through Kafka or the Python consumer: this is Neo4j's part alone. Building the
flushes (and the core-api file) is timed apart (``prepare_s``), not as writing.

    flock /tmp/sparkprov-bench.lock .venv/bin/python -m bench.neo4j_ceiling [--rows 200000]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import struct
import subprocess
import sys
import time
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, BinaryIO

import neo4j
import numpy as np
import pandas as pd

from bench.harness import RESULTS, Ports, bench_stack, busy_ports, embedded_neo4j
from capture_agent.taps import MemberSpec, derive, salt_of
from ingest_service import store as ingest_store
from ingest_service.store import Flush, Store
from sparkprov.blocks import EdgeBlock, MemberBlock, NodeBlock
from sparkprov.events import EdgeColumns, MemberColumns, NodeColumns, decode, encode_batch

RUN = "ceiling"
WORKFLOW = "bench.neo4j_ceiling"
CHUNK = 2048
GROUPS = 37
AGGREGATES = 3
VARIANTS = ("core-api", "cypher-bare", "procedure", "procedure-full")
BASELINE = "@baseline"
PROCEDURE_JAR = "sparkprov-neo4j-plugin.jar"
CORE_API = Path(__file__).resolve().parent / "java" / "CoreApiCeiling.java"
MAIN = ("main",)

# The labels and types counted after each variant (count store: O(1) each).
NODE_LABELS = ("Node", "Component", "LevelSet", "ConnectedSet", "MemberKey", "Run", "IngestLock")
REL_TYPES = ("DERIVES", "SET_DEP")

_BARE_NODES = """
UNWIND $rows AS r
MERGE (n:Node {id: r.id})
SET n += r.p
REMOVE n.pending_run
"""
_BARE_EDGES = """
UNWIND $rows AS e
MERGE (a:Node {id: e[0]})
  ON CREATE SET a.pending_run = $run
MERGE (b:Node {id: e[1]})
  ON CREATE SET b.pending_run = $run
CREATE (a)-[:DERIVES]->(b)
"""
_BARE_MEMBERS = """
UNWIND $rows AS m
MERGE (a:Node {id: m[0]})
  ON CREATE SET a.pending_run = $run
MERGE (b:Node {id: m[1]})
  ON CREATE SET b.pending_run = $run
CREATE (a)-[r:DERIVES {member_key: $key, pair: m[2], member_values: m[3]}]->(b)
FOREACH (nulls IN CASE WHEN size(m[4]) > 0 THEN [m[4]] ELSE [] END |
  SET r.member_nulls = nulls)
"""


@dataclass(frozen=True)
class Shape:
    rows: int
    dim: int
    seed: int = 7


def _random_ids(rng: np.random.Generator, n: int) -> np.ndarray:
    return rng.integers(-(2**63), 2**63 - 1, size=n, dtype=np.int64)


def _texts(values: np.ndarray) -> list[str]:
    return values.astype(str).tolist()  # type: ignore[no-any-return]


def _token_labels(relation: str, start: int, stop: int) -> list[str]:
    return [f"{relation}#0.{i}" for i in range(start, stop)]


def capture_batches(
    shape: Shape, full: bool
) -> Iterator[tuple[list[NodeColumns], EdgeColumns | None, list[MemberColumns]]]:
    """The pipeline's lineage as the taps send it, in 2,048-row batches, in job order."""
    rng = np.random.default_rng(shape.seed)
    customers = _random_ids(rng, shape.dim)
    orders = _random_ids(rng, shape.rows)
    groups = _random_ids(rng, GROUPS)
    region_of = np.arange(shape.dim) % GROUPS  # make_pipeline_inputs: region-<customer % 37>
    for start in range(0, shape.dim, CHUNK):
        stop = min(start + CHUNK, shape.dim)
        index = np.arange(start, stop)
        attributes = {
            "customer_id": _texts(index),
            "region": [f"region-{r}" for r in region_of[start:stop].tolist()],
        }
        yield (
            [
                NodeColumns(
                    "TOKEN",
                    customers[start:stop],
                    labels=_token_labels("Customers", start, stop),
                    relation="Customers",
                    attributes=attributes,
                    split=(*MAIN, "Customers"),
                )
            ],
            None,
            [],
        )
    member = MemberSpec(key="bench-members", aggregates=AGGREGATES, group_key="bench-group")
    total = np.zeros(GROUPS)
    count = np.zeros(GROUPS, dtype=np.int64)
    for start in range(0, shape.rows, CHUNK):
        stop = min(start + CHUNK, shape.rows)
        index = np.arange(start, stop)
        customer = index * 7919 % shape.dim
        amount = index % 1000 / 10
        status = index % 5
        row = {
            "order_id": _texts(index),
            "customer_id": _texts(customer),
            "amount": _texts(amount),
            "status": _texts(status),
        }
        ids = orders[start:stop]
        yield (
            [
                NodeColumns(
                    "TOKEN",
                    ids,
                    labels=_token_labels("Orders", start, stop),
                    relation="Orders",
                    attributes=row,
                    split=(*MAIN, "Orders"),
                )
            ],
            None,
            [],
        )
        keep = status != 0
        kept = np.flatnonzero(keep)
        joined = derive(ids[keep], salt_of("bench-join"))
        region = region_of[customer[keep]]
        joined_row = {name: [values[k] for k in kept.tolist()] for name, values in row.items()}
        joined_row["region"] = [f"region-{r}" for r in region.tolist()]
        yield (
            [NodeColumns("TIMES", joined, label="·", attributes=joined_row, split=MAIN)],
            EdgeColumns(
                np.concatenate([ids[keep], customers[customer[keep]]]),
                np.concatenate([joined, joined]),
            ),
            [],
        )
        np.add.at(total, region, amount[keep])
        np.add.at(count, region, 1)
        pdf = pd.DataFrame(
            {
                "id": joined,
                "group": groups[region],
                "x0": joined_row["amount"],
                "x1": joined_row["amount"],
                "x2": joined_row["order_id"],
            }
        )
        if full:
            nodes, edges = member.emit(pdf)
            yield [replace(n, split=MAIN) for n in nodes], edges, []
        else:
            yield [], None, [member.members(pdf)]
    values = [_texts(total), _texts(total / np.maximum(count, 1)), _texts(count)]
    aggregates = [derive(groups, salt_of("bench-group", i, "aggregate")) for i in range(AGGREGATES)]
    delta = NodeColumns(
        "DELTA",
        groups,
        label="δ",
        relation="RegionTotals",
        attributes={
            "region": [f"region-{g}" for g in range(GROUPS)],
            "total": values[0],
            "mean": values[1],
            "n": values[2],
        },
        split=(*MAIN, "RegionTotals"),
    )
    aggregate_nodes = [
        NodeColumns("AGGREGATE", ids, label=function, values=values[i], split=MAIN)
        for i, (ids, function) in enumerate(zip(aggregates, ("SUM", "AVG", "COUNT"), strict=True))
    ]
    yield (
        [delta, *aggregate_nodes],
        EdgeColumns(np.concatenate(aggregates), np.concatenate([groups] * AGGREGATES)),
        [],
    )


def flushes(shape: Shape, full: bool, batch_rows: int) -> Iterator[Flush]:
    """Ingest's flushes: decoded events gathered up to ``batch_rows`` nodes + edges each."""
    flush = Flush()
    batches = capture_batches(shape, full)
    for seq, (nodes, edges, members) in enumerate(batches):
        event = decode(encode_batch(RUN, WORKFLOW, "bench", 0, seq, nodes, edges, members=members))
        flush.add(event)
        if flush.rows >= batch_rows:
            yield from flush.split(batch_rows)
            flush = Flush()
    if flush:
        yield from flush.split(batch_rows)


def node_properties(block: NodeBlock, i: int) -> dict[str, Any]:
    """The properties the real store gives node ``i`` of ``block`` when it stores it, besides
    ``id`` (set when the node is created): FlushWriter.fill's, in neo4j_plugin.
    CoreApiCeiling.java writes the same."""
    props: dict[str, Any] = {
        "run_id": block["run"],
        "op": block["op"],
        "label": block["labels"][i] if block["labels"] else block["label"],
    }
    if block["relation"]:
        props["relation"] = block["relation"]
    if block["values"]:
        props["value"] = block["values"][i]
    if block["shared"]:
        props["shared"] = True
    props["split"] = list(block["split"])
    for name, values, nulls in zip(
        block["attribute_names"], block["attribute_values"], block["null_rows"], strict=True
    ):
        if i not in nulls:
            props[f"a_{name}"] = values[i]
    return props


@dataclass(frozen=True)
class BareFlush:
    """One flush as the bare Cypher writer's parameters (built before the clock starts)."""

    nodes: list[dict[str, Any]]
    edges: dict[str, list[list[int]]]  # per run
    members: list[tuple[str, str, list[list[Any]]]]  # (run, group key, rows)


def bare_flush(flush: Flush) -> BareFlush:
    nodes = [
        {"id": node_id, "p": node_properties(b, i)}
        for b in flush.blocks
        for i, node_id in enumerate(b["ids"])
    ]
    edges: dict[str, list[list[int]]] = {}
    for e in flush.edges:
        edges.setdefault(e["run"], []).extend(
            [s, d] for s, d in zip(e["src"], e["dst"], strict=True)
        )
    members = [(m["run"], m["group_key"], member_rows(m)) for m in flush.members]
    return BareFlush(nodes, edges, members)


def member_rows(m: MemberBlock) -> list[list[Any]]:
    """Per member: its end ids, pair, values per aggregated column and null columns, as
    FlushWriter.setMemberProperties stores them on the member edge."""
    nulls = [set(rows) for rows in m["null_rows"]]
    return [
        [
            member,
            group,
            pair,
            [column[k] for column in m["values"]],
            [c for c, rows in enumerate(nulls) if k in rows],
        ]
        for k, (member, group, pair) in enumerate(
            zip(m["members"], m["groups"], m["pairs"], strict=True)
        )
    ]


def write_bare(driver: neo4j.Driver, flush: BareFlush) -> tuple[int, int]:
    """One transaction; returns the nodes and relationships Neo4j reports it created."""
    created = [0, 0]

    def run(tx: neo4j.ManagedTransaction, query: str, **params: Any) -> None:
        counters = tx.run(query, **params).consume().counters
        created[0] += counters.nodes_created
        created[1] += counters.relationships_created

    def work(tx: neo4j.ManagedTransaction) -> None:
        created[:] = [0, 0]  # a retried transaction counts again
        if flush.nodes:
            run(tx, _BARE_NODES, rows=flush.nodes)
        for member_run, key, rows in flush.members:
            run(tx, _BARE_MEMBERS, rows=rows, run=member_run, key=key)
        for edge_run, rows in flush.edges.items():
            run(tx, _BARE_EDGES, rows=rows, run=edge_run)

    with driver.session() as session:
        session.execute_write(work)
    return created[0], created[1]


# -- the core-api writer's input: the same flushes, big-endian as java.io.DataInputStream reads --


class FlushFile:
    """Writes the schema statements and the flushes for CoreApiCeiling.java: strings as
    ``writeUTF`` (2-byte length, UTF-8: none of ours holds NUL or a character beyond the BMP),
    ints and longs big-endian; a flush starts with 1, the file ends with 0."""

    def __init__(self, out: BinaryIO) -> None:
        self._out = out

    def _int(self, value: int) -> None:
        self._out.write(struct.pack(">i", value))

    def _text(self, value: str) -> None:
        data = value.encode()
        self._out.write(struct.pack(">H", len(data)) + data)

    def _texts(self, values: Iterable[str]) -> None:
        values = list(values)
        self._int(len(values))
        self._out.write(
            b"".join(struct.pack(">H", len(d)) + d for d in (v.encode() for v in values))
        )

    def _longs(self, values: list[int]) -> None:
        self._int(len(values))
        self._out.write(np.asarray(values, dtype=">i8").tobytes())

    def _ints(self, values: list[int]) -> None:
        self._int(len(values))
        self._out.write(np.asarray(values, dtype=">i4").tobytes())

    def schema(self, statements: list[str]) -> None:
        self._texts(statements)

    def flush(self, flush: Flush) -> None:
        self._int(1)
        self._int(len(flush.blocks))
        for b in flush.blocks:
            self._node_block(b)
        self._int(len(flush.edges))
        for e in flush.edges:
            self._edge_block(e)
        self._int(len(flush.members))
        for m in flush.members:
            self._member_block(m)

    def end(self) -> None:
        self._int(0)

    def _node_block(self, b: NodeBlock) -> None:
        for text in (b["run"], b["op"], b["label"], b["relation"] or ""):
            self._text(text)
        self._out.write(b"\x01" if b["shared"] else b"\x00")
        self._texts(b["labels"])
        self._texts(b["values"])
        self._texts(b["split"])
        self._texts(b["attribute_names"])
        for values, nulls in zip(b["attribute_values"], b["null_rows"], strict=True):
            self._texts(values)
            self._ints(nulls)
        self._longs(b["ids"])

    def _edge_block(self, e: EdgeBlock) -> None:
        self._text(e["run"])
        self._longs(e["src"])
        self._longs(e["dst"])

    def _member_block(self, m: MemberBlock) -> None:
        self._text(m["run"])
        self._text(m["group_key"])
        self._longs(m["members"])
        self._longs(m["groups"])
        self._longs(m["pairs"])
        self._int(m["aggregates"])
        for values, nulls in zip(m["values"], m["null_rows"], strict=True):
            self._texts(values)
            self._ints(nulls)


def schema_statements() -> list[str]:
    """The real store's constraints and indexes (ingest_service.store), as ``ensure_schema``
    runs them."""
    return list(ingest_store.SCHEMA)


def graph_counts(driver: neo4j.Driver) -> dict[str, int]:
    """Nodes and relationships by label and type, all of them, and placeholders left."""
    queries = {
        "nodes": "MATCH (n) RETURN count(n) AS c",
        "relationships": "MATCH ()-[r]->() RETURN count(r) AS c",
        **{label: f"MATCH (n:{label}) RETURN count(n) AS c" for label in NODE_LABELS},
        **{kind: f"MATCH ()-[r:{kind}]->() RETURN count(r) AS c" for kind in REL_TYPES},
        "pending": "MATCH (n:Node) WHERE n.pending_run IS NOT NULL RETURN count(n) AS c",
    }
    # Labels this variant never made (SET_DEP, IngestLock) draw a warning per query: not ours.
    with driver.session(notifications_min_severity="OFF") as session:
        return {
            name: int(session.run(query).single()["c"])  # type: ignore[index]
            for name, query in queries.items()
        }


def summary(
    variant: str,
    attempted: int,
    stored: dict[str, int],
    write_s: float,
    flush_times: list[float],
    **extra: Any,
) -> dict[str, Any]:
    """One variant's line: rows sent, records created (lineage apart), rates from created."""
    lineage = stored["Node"] + stored["DERIVES"]
    created = stored["nodes"] + stored["relationships"]
    return {
        "variant": variant,
        "attempted": attempted,
        "created_lineage": lineage,
        "created_total": created,
        "created_other": created - lineage,
        "stored": stored,
        "short": lineage < attempted,
        "flushes": len(flush_times),
        "write_s": round(write_s, 3),
        "records_per_s": round(lineage / write_s, 1) if write_s else 0.0,
        "all_records_per_s": round(created / write_s, 1) if write_s else 0.0,
        "median_flush_s": round(float(np.median(flush_times)), 4) if flush_times else 0.0,
        **extra,
    }


def run_core_api(shape: Shape, stack: Any, batch_rows: int) -> dict[str, Any]:
    """The embedded core-API writer, in its own JVM with the stack's heap and neo4j.conf, on
    the same flushes (written to a file first, outside the clock)."""
    stack.down(("neo4j",))
    home = stack.dir / "data" / "core-api"
    shutil.rmtree(home, ignore_errors=True)
    conf = stack.dir / "neo4j" / "core-api.conf"
    conf.parent.mkdir(parents=True, exist_ok=True)
    conf.write_text(stack.settings.neo4j.conf_text())
    data = stack.dir / "core-api-flushes.bin"
    t0 = time.perf_counter()
    attempted = 0
    with data.open("wb") as out:
        writer = FlushFile(out)
        writer.schema(schema_statements())
        for flush in flushes(shape, False, batch_rows):
            attempted += flush.rows
            writer.flush(flush)
        writer.end()
    prepare = time.perf_counter() - t0
    command = embedded_neo4j(stack, CORE_API, str(home), str(data), str(conf))
    load0 = os.getloadavg()
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    shutil.rmtree(home, ignore_errors=True)
    data.unlink(missing_ok=True)
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0 or not lines:
        raise RuntimeError(f"core-api writer failed ({done.returncode}):\n{done.stderr[-3000:]}")
    measured = json.loads(lines[-1])
    return summary(
        "core-api",
        attempted,
        measured["stored"],
        measured["write_s"],
        measured["flush_s"],
        counted_created=measured["created"],
        prepare_s=round(prepare, 2),
        load_average_start=load0,
        load_average_end=os.getloadavg(),
    )


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
    bare = variant == "cypher-bare"
    driver = neo4j.GraphDatabase.driver(uri, auth=None)
    store = Store(driver)
    try:
        store.ensure_schema()  # the real store's constraints and indexes, for every variant
        with driver.session() as session:
            if variant.endswith(BASELINE):
                # A jar from before the ids were kept by reference seeks nodes by their ids.
                for key in ("component_id", "set_id", "s0", "s1", "s2"):
                    session.run(
                        f"CREATE INDEX baseline_{key} IF NOT EXISTS FOR (n:Node) ON (n.{key})"
                    ).consume()
            session.run("CALL db.awaitIndexes(300)").consume()
        prepare = write = 0.0
        attempted = reported = 0
        counted = [0, 0]
        flush_times: list[float] = []
        load0 = os.getloadavg()
        generated = flushes(shape, full, batch_rows)
        while True:
            t0 = time.perf_counter()
            flush = next(generated, None)
            params = bare_flush(flush) if bare and flush is not None else None
            t1 = time.perf_counter()
            prepare += t1 - t0
            if flush is None:
                break
            attempted += flush.rows
            if params is not None:
                nodes, rels = write_bare(driver, params)
                counted[0] += nodes
                counted[1] += rels
            else:
                result = store.write(flush)
                reported += result.nodes_created + result.edges_created
            took = time.perf_counter() - t1
            write += took
            flush_times.append(took)
            if len(flush_times) % 50 == 0:
                print(
                    f"  {variant}: {attempted:,} rows sent, {attempted / write:,.0f}/s",
                    file=sys.stderr,
                    flush=True,
                )
        extra: dict[str, Any] = (
            {"counted_created": {"nodes": counted[0], "relationships": counted[1]}}
            if bare
            # The procedure counts logical records: a member edge stands for 2 nodes and 4 edges
            # per aggregated value (sparkprov.derived), which are never stored.
            else {"procedure_reported": reported}
        )
        return summary(
            variant,
            attempted,
            graph_counts(driver),
            write,
            flush_times,
            **extra,
            prepare_s=round(prepare, 2),
            load_average_start=load0,
            load_average_end=os.getloadavg(),
        )
    finally:
        driver.close()


def print_table(shape: Shape, batch_rows: int, results: list[dict[str, Any]]) -> None:
    ceiling = next((r for r in results if r["variant"] == "core-api"), None)
    print(
        f"\nNeo4j write ceiling, {shape.rows:,} rows + {shape.dim:,} customers, "
        f"flushes of {batch_rows:,}; records/s = lineage records created (:Node, DERIVES) per s"
    )
    print(
        f"{'variant':<22}{'rows sent':>11}{'created':>11}{'+ids etc':>10}"
        f"{'write s':>9}{'records/s':>11}{'vs core-api':>12}"
    )
    for r in results:
        ratio = (
            f"{r['records_per_s'] / ceiling['records_per_s']:.2f}"
            if ceiling and ceiling["records_per_s"]
            else "-"
        )
        flag = "  SHORT" if r["short"] else ""
        print(
            f"{r['variant']:<22}{r['attempted']:>11,}{r['created_lineage']:>11,}"
            f"{r['created_other']:>10,}{r['write_s']:>9.1f}{r['records_per_s']:>11,.0f}"
            f"{ratio:>12}{flag}"
        )


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
    load_start = os.getloadavg()
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
    print_table(shape, args.batch_rows, results)
    RESULTS.mkdir(parents=True, exist_ok=True)
    out = RESULTS / f"neo4j_ceiling-{time.strftime('%Y%m%d-%H%M%S')}.json"
    report = {
        "benchmark": "neo4j_ceiling",
        "rows": shape.rows,
        "dim": shape.dim,
        "batch_rows": args.batch_rows,
        "rate": "lineage records created (:Node and DERIVES, counted in Neo4j) per write second",
        "machine": {
            "cores": os.cpu_count(),
            "load_average_start": load_start,
            "load_average": os.getloadavg(),
        },
        "neo4j": asdict(stack.settings.neo4j),
        "baseline_jar": str(args.baseline_jar) if args.baseline_jar else None,
        "results": results,
    }
    out.write_text(json.dumps(report, indent=2, default=str))
    print(f"results: {out}")
    return 1 if any(r["short"] for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
