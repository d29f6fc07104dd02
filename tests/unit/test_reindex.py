"""The Spark connected components of ``reindex`` against networkx, and its set ids against the
from-scratch definition (tests.reference.sets.recompute), on random graphs."""

from __future__ import annotations

import random
from pathlib import Path

import networkx as nx
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from ingest_service import reindex
from tests.reference.sets import LEVELS, level_count, recompute, same_partition

SPLITS = [("a",), ("a", "x"), ("a", "y"), ("b",), ("b", "z"), ()]


SPARK_CONF = {"spark.sql.shuffle.partitions": "2"}


@pytest.mark.parametrize("seed", range(2))
def test_components_equal_networkx(spark: object, seed: int) -> None:
    rng = random.Random(seed)
    rows, expected = [], {}
    for g in (-1, 0, 1):
        n = rng.randint(5, 120)
        graph = nx.Graph()
        for _ in range(rng.randint(0, 2 * n)):
            u, v = rng.randrange(n) * 7 + 3, rng.randrange(n) * 7 + 3
            if u == v:
                continue  # a self-loop links nothing
            rows.append((g, u, v))
            graph.add_edge(u, v)
        for members in nx.connected_components(graph):
            expected.update({(g, m): min(members) for m in members})
    df = spark.createDataFrame(rows, "g int, u long, v long")  # type: ignore[attr-defined]
    got = {(r["g"], r["id"]): r["label"] for r in reindex.components(df).collect()}
    assert got == expected


@pytest.mark.parametrize("seed", range(2))
def test_recomputed_sets_equal_the_definition(spark: object, tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    n = rng.randint(20, 60)
    splits = {i + 1: rng.choice(SPLITS) for i in range(n)}
    known = {i for i in splits if rng.random() < 0.9}
    edges = sorted(
        {(a, b) for a, b in ((rng.randint(1, n), rng.randint(1, n)) for _ in range(n)) if a < b}
    )
    for name in ("nodes", "edges", "set_deps"):
        (tmp_path / name).mkdir()
    ids = sorted(splits)
    pq.write_table(
        pa.table(
            {
                "id": pa.array(ids, pa.int64()),
                "known": pa.array([i in known for i in ids]),
                "split": pa.array(
                    [list(splits[i]) if i in known else [] for i in ids], pa.list_(pa.string())
                ),
                "component_id": pa.array(ids, pa.int64()),
                "set_id": pa.array(ids, pa.int64()),
            }
        ),
        tmp_path / "nodes" / "p.parquet",
    )
    pq.write_table(
        pa.table(
            {
                "src": pa.array([a for a, _ in edges], pa.int64()),
                "dst": pa.array([b for _, b in edges], pa.int64()),
            }
        ),
        tmp_path / "edges" / "p.parquet",
    )
    pq.write_table(
        pa.table({"src": pa.array([], pa.int64()), "dst": pa.array([], pa.int64())}),
        tmp_path / "set_deps" / "p.parquet",
    )
    theta = 4
    nodes, _, _ = reindex.recompute(spark, tmp_path, theta)
    rows = nodes.select("id", "c", "set", "l0", "l1", "l2").collect()
    expected_component, expected_set = recompute(
        {i: splits[i] for i in known},
        [(a, b) for a, b in edges if a in known and b in known],
        theta,
    )
    got_set = {r["id"]: tuple(r["set"]) for r in rows if r["id"] in known}
    assert same_partition(got_set, expected_set)
    # Components count every edge, placeholders (unknown nodes) included.
    graph = nx.Graph()
    graph.add_nodes_from(ids)
    graph.add_edges_from(edges)
    component = {m: min(c) for c in nx.connected_components(graph) for m in c}
    assert same_partition({r["id"]: r["c"] for r in rows}, component)
    # Levels past a node's split depth are not kept (as ingest keeps none): the node alone.
    for r in rows:
        depth = level_count(splits[r["id"]]) if r["id"] in known else 0
        for level in range(depth, LEVELS):
            assert r[f"l{level}"] == r["id"]
    _ = expected_component


def _write_graph(folder: Path, columns: dict[str, pa.Array], edges, deps) -> None:  # type: ignore[no-untyped-def]
    for name, table in (
        ("nodes", pa.table(columns)),
        ("edges", pa.table({"src": [a for a, _ in edges], "dst": [b for _, b in edges]})),
        ("set_deps", pa.table({"src": [a for a, _ in deps], "dst": [b for _, b in deps]})),
    ):
        (folder / name).mkdir(parents=True, exist_ok=True)
        pq.write_table(
            table.cast(pa.schema([(f.name, pa.int64()) for f in table.schema]))
            if name != "nodes"
            else table,
            folder / name / "p.parquet",
        )


@pytest.mark.parametrize("seed", range(1))  # a seed costs CI about a minute of Spark jobs
def test_the_check_wants_set_dependencies_between_sets_of_more_than_one_node_only(
    spark: object, tmp_path: Path, seed: int
) -> None:
    """``--check`` compares the stored SET_DEP with those between two sets of more than one node
    (a lone node's set has no record and its dependencies are read from its edges): the exact
    ones pass; one with a lone end, or one missing, fails."""
    rng = random.Random(seed)
    n = rng.randint(30, 60)
    splits = {i + 1: rng.choice(SPLITS[:5]) for i in range(n)}
    edges = sorted(
        {(a, b) for a, b in ((rng.randint(1, n), rng.randint(1, n)) for _ in range(n)) if a < b}
    )
    ids = sorted(splits)
    base = {
        "id": pa.array(ids, pa.int64()),
        "known": pa.array([True] * n),
        "split": pa.array([list(splits[i]) for i in ids], pa.list_(pa.string())),
        "component_id": pa.array(ids, pa.int64()),
        "set_id": pa.array(ids, pa.int64()),
    }
    _write_graph(tmp_path / "first", base, edges, [])
    nodes, _, _ = reindex.recompute(spark, tmp_path / "first", 3)
    rows = {r["id"]: r for r in nodes.collect()}
    # Stored ids equal to the recomputation: a component by its label, a set by its key.
    set_id = {i: reindex.set_key(r["set"][0], r["set"][1]) for i, r in rows.items()}
    size = {i: [r["size0"], r["size1"], r["size2"]][r["level"]] for i, r in rows.items()}
    stored = dict(
        base,
        component_id=pa.array([rows[i]["c"] for i in ids], pa.int64()),
        set_id=pa.array([set_id[i] for i in ids], pa.int64()),
    )
    deps = {(set_id[a], set_id[b]) for a, b in edges if set_id[a] != set_id[b]}
    multi = {
        (set_id[a], set_id[b])
        for a, b in edges
        if set_id[a] != set_id[b] and size[a] > 1 and size[b] > 1
    }
    lone = deps - multi
    assert multi and lone, "the random graph has both kinds of dependency"

    _write_graph(tmp_path / "exact", stored, edges, sorted(multi))
    # One recomputation serves the three: they differ in their stored set dependencies only.
    nodes, edges_df, deps_df = reindex.recompute(spark, tmp_path / "exact", 3)
    assert reindex.compare(nodes, edges_df, deps_df)
    for name, wrong in (("lone", multi | {min(lone)}), ("missing", multi - {min(multi)})):
        _write_graph(tmp_path / name, stored, edges, sorted(wrong))
        deps_df = spark.read.parquet(str(tmp_path / name / "set_deps"))
        assert not reindex.compare(nodes, edges_df, deps_df), name
