"""``python -m ingest_service.reindex (--check | --write)``: component and connected-set ids of the
whole stored graph, recomputed from scratch on Spark.

The graph is exported from Neo4j page by page (by node id, so memory stays bounded) into Parquet,
then Spark computes, with the large-star/small-star algorithm (Kiveris et al., SoCC 2014;
O(log^2 n) rounds of joins, all four graphs at once):

- components: weakly connected components over every DERIVES edge (and PARTNER: a folded join
  row's right parent joins its group as its logical edge through the row does);
- level-k sets (k = 0..2): components over the edges whose two stored ends share their level-k
  split part (ingest_service.levels.part);
- the connected set of a node: its first level whose set holds fewer than theta nodes, else its
  deepest (ingest_service.levels.effective), exactly what the ingest service keeps incrementally.

``--check`` compares these with the ids every reader sees (resolved by the ingest plugin's
``sparkprov.component(n)`` and ``sparkprov.set(n)``: docs/graph-schema.md, "Component and set
ids") as partitions (equal up to renaming), and the stored set dependencies with those of the
edges; exit status 1 on any difference. It recomputes each node's set with the theta its
component's ids are kept under (``sparkprov.theta(n)``, stored on the component's root) unless
``--theta`` names one for all. ``--write`` is the backfill: every node is given as birth ids its
recomputed roots (its component, and its set at each level its split path has), the union-find
records are rebuilt as roots only (:Component with the theta, :LevelSet, without ``parent``),
then the :ConnectedSet records and SET_DEP edges; in batches. Stop the ingest service while it
runs.

Ids are kept behind the data (ingest_service.indexer): ``--check`` waits (``--wait-s``) until no
write's ids are pending, since pending ids read as none; ``--write`` recomputes every id from the
stored edges, so it drops the pending id work (``:IdWork``) it makes moot.
"""

from __future__ import annotations

import argparse
import logging
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import neo4j
import pyarrow as pa
import pyarrow.parquet as pq

from ingest_service.levels import DEFAULT_THETA, LEVELS
from sparkprov import defaults
from sparkprov.progress import Progress
from sparkprov.runtime import configure_logging, neo4j_driver

log = logging.getLogger("ingest_service.reindex")

PAGE = 50_000
# The current ids, resolved (a node's own component_id and s0..s2 are the ids it was born with).
_NODES = """
MATCH (n:Node) WHERE n.id > $after
WITH n ORDER BY n.id LIMIT $page
RETURN n.id AS id, n.op IS NOT NULL AS known, coalesce(n.split, []) AS split,
       sparkprov.component(n) AS component_id, sparkprov.set(n) AS set_id,
       sparkprov.theta(n) AS theta
"""
_CREATE_COMPONENTS = (
    "UNWIND $rows AS r CREATE (:Component {id: r.id, size: r.size, theta: r.theta})"
)
_COUNT_NODES = "MATCH (n:Node) RETURN count(n) AS n"
_EDGES = """
MATCH (a:Node) WHERE a.id > $after
WITH a ORDER BY a.id LIMIT $page
OPTIONAL MATCH (a)-[:DERIVES|PARTNER]->(b:Node)
RETURN a.id AS last, collect(b.id) AS dst
"""
_SET_DEPS = """
MATCH (a:ConnectedSet) WHERE a.id > $after
WITH a ORDER BY a.id LIMIT $page
OPTIONAL MATCH (a)-[:SET_DEP]->(b:ConnectedSet)
RETURN a.id AS last, collect(b.id) AS dst
"""


def _pages(driver: neo4j.Driver, query: str, key: str) -> Iterator[list[neo4j.Record]]:
    after = -(2**63)
    while True:
        records, _, _ = driver.execute_query(query, after=after, page=PAGE, routing_="r")
        if not records:
            return
        yield records
        after = records[-1][key]


def export(driver: neo4j.Driver, folder: Path) -> tuple[int, int]:
    """Nodes, edges and set dependencies of the stored graph, as Parquet files in ``folder``."""
    nodes = edges = 0
    for name in ("nodes", "edges", "set_deps"):
        (folder / name).mkdir(parents=True)
    # Neo4j keeps both counts in its count store: asking costs nothing.
    total = driver.execute_query(_COUNT_NODES, routing_="r").records[0]["n"]
    bar = Progress(total, "exporting nodes", unit="nodes")
    for i, page in enumerate(_pages(driver, _NODES, "id")):
        table = pa.table(
            {
                "id": pa.array([r["id"] for r in page], pa.int64()),
                "known": pa.array([r["known"] for r in page], pa.bool_()),
                "split": pa.array([list(r["split"]) for r in page], pa.list_(pa.string())),
                # What readers see (resolved by the plugin), not the births on the node.
                "component_id": pa.array([r["component_id"] for r in page], pa.int64()),
                "set_id": pa.array([r["set_id"] for r in page], pa.int64()),
                "theta": pa.array([r["theta"] for r in page], pa.int64()),
            }
        )
        pq.write_table(table, folder / "nodes" / f"part-{i:05d}.parquet")
        nodes += len(page)
        bar.update(nodes)
        log.info("exported %d nodes", nodes)
    bar.close()
    for name, query in (("edges", _EDGES), ("set_deps", _SET_DEPS)):
        count = 0
        bar = Progress(None, f"exporting {name}", unit="edges")
        for i, page in enumerate(_pages(driver, query, "last")):
            src = [r["last"] for r in page for _ in r["dst"]]
            dst = [d for r in page for d in r["dst"]]
            table = pa.table({"src": pa.array(src, pa.int64()), "dst": pa.array(dst, pa.int64())})
            pq.write_table(table, folder / name / f"part-{i:05d}.parquet")
            count += len(src)
            bar.update(count)
        bar.close()
        if name == "edges":
            edges = count
        log.info("exported %d %s", count, name)
    return nodes, edges


def components(edges: Any) -> Any:
    """Connected components of several graphs at once: ``edges`` has columns g (the graph), u, v;
    returns (g, id, label) for every vertex that has an edge, label = the smallest id of its
    component. Large-star/small-star, alternating until the edge set no longer changes."""
    from pyspark.sql import functions as F

    def normal(df: Any) -> Any:
        return df.where(F.col("u") != F.col("v")).select(
            "g", F.least("u", "v").alias("u"), F.greatest("u", "v").alias("v")
        )

    def both(df: Any) -> Any:
        return df.unionByName(df.select("g", F.col("v").alias("u"), F.col("u").alias("v")))

    current = normal(edges).distinct().localCheckpoint()
    before = current.count()
    for rounds in range(1, 200):
        sym = both(current)
        # Large star: every neighbour larger than u links to the smallest of u's neighbourhood.
        low = sym.groupBy("g", "u").agg(F.least(F.min("v"), F.first("u")).alias("m"))
        large = (
            sym.where(F.col("v") > F.col("u"))
            .join(low, ["g", "u"])
            .select("g", F.col("v").alias("u"), F.col("m").alias("v"))
        )
        large = normal(large).distinct().localCheckpoint()
        # Small star: u and its smaller neighbours link to the smallest of them.
        sym = both(large)
        smaller = sym.where(F.col("v") < F.col("u"))
        low = smaller.groupBy("g", "u").agg(F.min("v").alias("m"))
        small = smaller.join(low, ["g", "u"]).select("g", F.col("v").alias("u"), "m")
        small = small.unionByName(low.select("g", "u", "m")).withColumnRenamed("m", "v")
        small = normal(small).distinct().localCheckpoint()
        size = small.count()
        changed = size != before or not small.exceptAll(current).isEmpty()
        current, before = small, size
        log.debug("components: round %d, %d edges", rounds, size)
        if not changed:
            break
    # Converged: stars, each centre the smallest id of its component.
    sym = both(current)
    return sym.groupBy("g", F.col("u").alias("id")).agg(
        F.least(F.min("v"), F.first("u")).alias("label")
    )


def _with_ends(edges: Any, table: Any, **columns: tuple[str, str]) -> Any:
    """The edges (``src``, ``dst``) with columns of ``table`` (keyed by ``id``) at both ends:
    ``column=("at_src", "at_dst")`` names each column's value at the source and destination."""
    from pyspark.sql import functions as F

    def end(key: str, side: int) -> Any:
        names = [F.col(c).alias(names[side]) for c, names in columns.items()]
        return table.select(F.col("id").alias(key), *names)

    return edges.join(end("src", 0), "src").join(end("dst", 1), "dst")


def recompute(spark: Any, folder: Path, theta: int | None) -> tuple[Any, Any, Any]:
    """(nodes with computed component, levels and set, edges, stored set deps) as DataFrames.
    Sets are refined at ``theta``, or where it is None at each node's stored theta (its
    component's)."""
    from pyspark.sql import functions as F

    limit = F.col("theta") if theta is None else F.lit(theta)
    nodes = spark.read.parquet(str(folder / "nodes")).cache()
    edges = spark.read.parquet(str(folder / "edges")).cache()
    set_deps = spark.read.parquet(str(folder / "set_deps"))
    graphs = [edges.select(F.lit(-1).alias("g"), F.col("src").alias("u"), F.col("dst").alias("v"))]
    ends = _with_ends(edges, nodes, known=("ka", "kb"), split=("sa", "sb")).where(
        F.col("ka") & F.col("kb")
    )
    for level in range(LEVELS):
        # Levels at or past a node's split depth are never read for it (levels.level_count), so
        # they are not kept (ingest's IdMaintenance skips them too); the two ends of an edge in
        # one part at this level have the same depth.
        kept = F.greatest(F.lit(1), F.size("sa")) > level
        same = (F.slice("sa", 1, level + 1) == F.slice("sb", 1, level + 1)) & kept
        graphs.append(
            ends.where(same).select(
                F.lit(level).alias("g"), F.col("src").alias("u"), F.col("dst").alias("v")
            )
        )
    all_edges = graphs[0]
    for g in graphs[1:]:
        all_edges = all_edges.unionByName(g)
    labels = components(all_edges).cache()

    def label_of(g: int, name: str) -> Any:
        return labels.where(F.col("g") == g).select("id", F.col("label").alias(name))

    out = nodes
    out = out.join(label_of(-1, "c"), "id", "left").withColumn("c", F.coalesce("c", "id"))
    for level in range(LEVELS):
        name = f"l{level}"
        out = out.join(label_of(level, name), "id", "left")
        out = out.withColumn(name, F.coalesce(name, "id"))
        sizes = out.groupBy(name).agg(F.count("*").alias(f"size{level}"))
        out = out.join(sizes, name)
    levels = F.greatest(F.lit(1), F.least(F.size("split"), F.lit(LEVELS)))
    # The effective level: the first whose set is below theta, else the deepest (sets.effective).
    chosen = F.when(F.col("size0") < limit, 0).otherwise(
        F.when(levels == 1, 0).when((F.col("size1") < limit) | (levels == 2), 1).otherwise(2)
    )
    out = out.withColumn("level", chosen).withColumn(
        "set", F.array("level", F.element_at(F.array("l0", "l1", "l2"), F.col("level") + 1))
    )
    return out.cache(), edges, set_deps


def _same_partition(df: Any, a: str, b: str) -> tuple[bool, int, int, int]:
    pairs = df.select(a, b).distinct().count()
    left = df.select(a).distinct().count()
    right = df.select(b).distinct().count()
    return pairs == left == right, pairs, left, right


def check(spark: Any, folder: Path, theta: int | None) -> bool:
    """Whether the stored ids and set dependencies in ``folder`` equal their recomputation."""
    return compare(*recompute(spark, folder, theta))


def compare(nodes: Any, edges: Any, set_deps: Any) -> bool:
    """Whether the stored ids (``component_id``, ``set_id``) of ``nodes`` partition them as the
    recomputed ones (``c``, ``set``) do, and ``set_deps`` are the dependencies of ``edges``
    between sets of more than one node; prints each comparison."""
    from pyspark.sql import functions as F

    ok = True
    for stored, computed, what in (("component_id", "c", "components"), ("set_id", "set", "sets")):
        same, pairs, left, right = _same_partition(nodes, stored, computed)
        print(
            f"{what}: {left:,} stored, {right:,} recomputed, {pairs:,} pairs -> "
            f"{'equal' if same else 'DIFFERENT'}"
        )
        ok &= same
    # SET_DEP is stored between sets of more than one node (a lone node's are read from its edges)
    sets = nodes.select("id", "set_id", _set_size().alias("size"))
    expected = (
        _with_ends(edges, sets, set_id=("a", "b"), size=("sa", "sb"))
        .where((F.col("a") != F.col("b")) & (F.col("sa") > 1) & (F.col("sb") > 1))
        .select(F.col("a").alias("src"), F.col("b").alias("dst"))
        .distinct()
    )
    missing = expected.exceptAll(set_deps.distinct()).count()
    extra = set_deps.distinct().exceptAll(expected).count()
    print(
        f"set dependencies: {expected.count():,} from the edges, {missing:,} missing, "
        f"{extra:,} extra -> {'equal' if not missing and not extra else 'DIFFERENT'}"
    )
    return bool(ok and not missing and not extra)


_MIX = 0x9E3779B97F4A7C15


def _set_size() -> Any:
    """A node's set's size as its record holds it: its level set's at the set's level."""
    from pyspark.sql import functions as F

    return F.element_at(F.array("size0", "size1", "size2"), F.col("level") + 1)


def set_key(level: int, label: int) -> int:
    """The stored id of a level's set (FlushWriter.setKey): the label, mixed with the level."""
    if level == 0:
        return label
    mixed = (label ^ (level * _MIX)) & (2**64 - 1)
    return mixed - 2**64 if mixed >= 2**63 else mixed


def write(spark: Any, folder: Path, theta: int, driver: neo4j.Driver) -> None:
    """Store the recomputed ids and rebuild the id structures (the backfill): every node is born
    again with its roots (a component's or level set's label is its root, whose record holds the
    size and no parent), so each id resolves to itself."""
    from pyspark.sql import functions as F

    nodes, edges, _ = recompute(spark, folder, theta)
    set_key_udf = F.udf(set_key, "long")
    nodes = nodes.withColumn(
        "set_id_new",
        F.when(F.col("known"), set_key_udf(F.col("level"), F.col("set")[1])).otherwise(F.col("id")),
    )
    depth = F.greatest(F.lit(1), F.least(F.size("split"), F.lit(LEVELS)))
    for level in range(LEVELS):
        # A level-set id is kept only at the levels a stored node's split path has (a placeholder
        # gets its ids with its record), as ingest writes them (FlushWriter.writeNode).
        nodes = nodes.withColumn(
            f"b{level}", F.when(F.col("known") & (depth > level), F.col(f"l{level}"))
        )
    nodes = nodes.cache()
    # CALL ... IN TRANSACTIONS runs only in an implicit (auto-commit) transaction.
    with driver.session() as session:
        for label in ("Component", "LevelSet", "ConnectedSet"):
            session.run(
                f"MATCH (s:{label}) CALL (s) {{ DETACH DELETE s }} IN TRANSACTIONS OF 10000 ROWS"
            ).consume()
    batch: list[dict[str, Any]] = []

    def flush(query: str) -> None:
        if batch:
            driver.execute_query(query, rows=batch)
            batch.clear()

    # Removing set_id migrates a database written before ids were kept by reference.
    update = (
        "UNWIND $rows AS r MATCH (n:Node {id: r.id}) "
        "SET n.component_id = r.c, n.s0 = r.s0, n.s1 = r.s1, n.s2 = r.s2 REMOVE n.set_id"
    )
    done = 0
    bar = Progress(None, "storing ids", unit="nodes")
    for row in nodes.select("id", "c", "b0", "b1", "b2").toLocalIterator():
        batch.append({"id": row[0], "c": row[1], "s0": row[2], "s1": row[3], "s2": row[4]})
        if len(batch) >= 10_000:
            done += len(batch)
            flush(update)
            bar.update(done)
            log.info("ids stored for %d nodes", done)
    done += len(batch)
    flush(update)
    bar.update(done)
    bar.close()
    sizes = nodes.groupBy("c").count()
    for row in sizes.where(F.col("count") > 1).toLocalIterator():
        batch.append({"id": row[0], "size": row[1], "theta": theta})
        if len(batch) >= 10_000:
            flush(_CREATE_COMPONENTS)
    flush(_CREATE_COMPONENTS)
    for level in range(LEVELS):
        for row in (
            nodes.select(f"b{level}", f"size{level}")
            .distinct()
            .where(F.col(f"b{level}").isNotNull() & (F.col(f"size{level}") > 1))
            .toLocalIterator()
        ):
            batch.append({"key": f"{level}:{row[0]}", "size": row[1]})
            if len(batch) >= 10_000:
                flush("UNWIND $rows AS r CREATE (:LevelSet {key: r.key, size: r.size})")
        flush("UNWIND $rows AS r CREATE (:LevelSet {key: r.key, size: r.size})")
    # Records only for sets of more than one node, SET_DEP only between two of them: a lone
    # node's set and dependencies are read from the node and its edges.
    known = nodes.where("known").where(_set_size() > 1)
    ids = known.select("id", F.col("set_id_new").alias("s"))
    deps = (
        _with_ends(edges, ids, s=("a", "b"))
        .where(F.col("a") != F.col("b"))
        .select("a", "b")
        .distinct()
        .cache()
    )
    wanted = known.groupBy(F.col("set_id_new").alias("s")).agg(
        F.first("level").alias("level"),
        F.first(_set_size()).alias("size"),
        F.first("c").alias("c"),
    )
    create = (
        "UNWIND $rows AS r CREATE (:ConnectedSet "
        "{id: r.s, level: r.level, size: r.size, component_id: r.c})"
    )
    for row in wanted.select("s", "level", "size", "c").toLocalIterator():
        batch.append({"s": row[0], "level": row[1], "size": row[2], "c": row[3]})
        if len(batch) >= 10_000:
            flush(create)
    flush(create)
    link = (
        "UNWIND $rows AS r MATCH (a:ConnectedSet {id: r.a}), (b:ConnectedSet {id: r.b}) "
        "CREATE (a)-[:SET_DEP]->(b)"
    )
    for row in deps.toLocalIterator():
        batch.append({"a": row[0], "b": row[1]})
        if len(batch) >= 10_000:
            flush(link)
    flush(link)


_PENDING = "MATCH (w:IdWork) RETURN count(w) AS n"
_DROP_PENDING = "MATCH (w:IdWork) CALL (w) { DELETE w } IN TRANSACTIONS OF 1000 ROWS"


def wait_for_indexer(driver: neo4j.Driver, wait_s: float) -> int:
    """Waits until no write's ids are pending, at most ``wait_s``; the writes still pending."""
    deadline = time.monotonic() + wait_s
    while True:
        records, _, _ = driver.execute_query(_PENDING)
        pending = int(records[0]["n"])
        if not pending or time.monotonic() >= deadline:
            return pending
        time.sleep(0.5)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--check", action="store_true", help="compare with the stored ids")
    mode.add_argument("--write", action="store_true", help="store the recomputed ids")
    parser.add_argument(
        "--theta",
        type=int,
        default=None,
        help="--check: default each component's, as readers resolve sets; --write: default "
        "SPARKPROV_SET_THETA's, as ingest's, stored on every component",
    )
    parser.add_argument(
        "--wait-s",
        type=float,
        default=300.0,
        help="--check: how long to wait for the indexer to keep every pending write's ids",
    )
    args = parser.parse_args(argv)
    configured = int(os.environ.get("SPARKPROV_SET_THETA", DEFAULT_THETA))
    configure_logging(os.environ.get("SPARKPROV_LOG_LEVEL", "INFO"))
    from pyspark.sql import SparkSession

    driver = neo4j_driver(
        os.environ.get(defaults.ENV_NEO4J_URI, defaults.NEO4J_URI),
        os.environ.get(defaults.ENV_NEO4J_USER, ""),
        os.environ.get(defaults.ENV_NEO4J_PASSWORD, ""),
        tls_ca=os.environ.get(defaults.ENV_NEO4J_TLS_CA, ""),
        database=os.environ.get(defaults.ENV_NEO4J_DATABASE, ""),
    )
    folder = Path(tempfile.mkdtemp(prefix="sparkprov-reindex-"))
    spark = (
        SparkSession.builder.appName("sparkprov-reindex")
        .master(os.environ.get("SPARKPROV_SPARK_MASTER", "local[*]"))
        .config("spark.sql.shuffle.partitions", "8")
        # Every join here is of the whole graph with itself: a broadcast of one side ran the
        # driver out of memory at 340k nodes; sort-merge joins spill instead.
        .config("spark.sql.autoBroadcastJoinThreshold", "-1")
        .config("spark.ui.enabled", "false")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    try:
        if args.check:
            pending = wait_for_indexer(driver, args.wait_s)
            if pending:
                print(
                    f"reindex check: the ids of {pending:,} writes are still pending after "
                    f"{args.wait_s:.0f}s (is the ingest service's indexer running?)",
                    file=sys.stderr,
                )
                return 2
        started = time.monotonic()
        nodes, edges = export(driver, folder / "graph")
        log.info("exported %d nodes, %d edges in %.1fs", nodes, edges, time.monotonic() - started)
        if args.check:
            ok = check(spark, folder / "graph", args.theta)
            print(
                f"reindex check: {'ids equal' if ok else 'ids DIFFER'} "
                f"({nodes:,} nodes, {edges:,} edges, {time.monotonic() - started:.1f}s)"
            )
            return 0 if ok else 1
        write(spark, folder / "graph", configured if args.theta is None else args.theta, driver)
        with driver.session() as session:
            session.run(_DROP_PENDING).consume()  # every stored edge's ids are written now
        print(f"reindex: ids of {nodes:,} nodes written in {time.monotonic() - started:.1f}s")
        return 0
    finally:
        spark.stop()
        driver.close()
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
