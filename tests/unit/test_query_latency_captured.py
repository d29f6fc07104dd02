"""bench.query_latency_captured's choice of query nodes on fake stored graphs, and
bench.captured_load's reuse key."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest

from bench import captured_load
from bench.captured_load import reusable, reuse_key, tpch_scale
from bench.query_latency import Adjacency
from bench.query_latency_captured import StoredGraph, ancestor_counts, histogram, pick_classes


def fan_in(ids: list[int], edges: list[tuple[int, int]], child: int, parents: int) -> None:
    """``child`` fed by ``parents`` fresh sources (ids taken after the largest so far)."""
    start = max(ids) + 1
    ids += [child, *range(start, start + parents)]
    edges += [(p, child) for p in range(start, start + parents)]


def fake_graph() -> tuple[StoredGraph, dict[str, int]]:
    """A large component with a 150-ancestor node, its 151-ancestor child and a 6,150-ancestor
    node; a small one with a 120-ancestor node; and a 50-ancestor node in neither band."""
    ids: list[int] = [1_000_000]
    edges: list[tuple[int, int]] = []
    names = {"lc_sl": 10, "lc_sl_child": 11, "lc_ll": 12, "sc_sl": 20, "outside": 30}
    fan_in(ids, edges, names["lc_sl"], 150)
    ids.append(names["lc_sl_child"])
    edges.append((names["lc_sl"], names["lc_sl_child"]))
    fan_in(ids, edges, names["lc_ll"], 5_998)
    edges += [(names["lc_sl_child"], names["lc_ll"])]  # one component: 5,998 + 2 + 150 ancestors
    fan_in(ids, edges, names["sc_sl"], 120)
    fan_in(ids, edges, names["outside"], 50)
    return StoredGraph.of(ids, edges), names


def test_stored_graph_maps_ids_to_positions() -> None:
    graph = StoredGraph.of([30, -5, 12], [(-5, 12), (12, 30)])
    assert graph.ids.tolist() == [-5, 12, 30]
    assert graph.src.tolist() == [0, 1] and graph.dst.tolist() == [1, 2]
    assert (graph.nodes, graph.edges) == (3, 2)


def test_ancestor_counts_match_networkx_up_to_the_cap() -> None:
    rng = np.random.default_rng(3)
    dag = nx.gnp_random_graph(400, 0.02, seed=3, directed=True)
    edges = [(u, v) for u, v in dag.edges if u < v]  # acyclic
    edges += [(int(u), 399) for u in rng.choice(300, 40, replace=False)]  # a wide fan-in
    dag = nx.DiGraph(edges)
    dag.add_nodes_from(range(400))
    graph = StoredGraph.of(list(range(400)), sorted(set(edges)))
    for cap in (5, 60, 10_000):
        counts = ancestor_counts(Adjacency(graph), cap=cap)
        expected = [min(len(nx.ancestors(dag, n)), cap + 1) for n in range(400)]
        assert counts.tolist() == expected


def test_classes_are_picked_inside_their_bands_and_counted() -> None:
    graph, names = fake_graph()
    counts = ancestor_counts(Adjacency(graph))
    pos = {k: int(np.searchsorted(graph.ids, v)) for k, v in names.items()}
    assert counts[pos["lc_sl"]] == 150 and counts[pos["lc_sl_child"]] == 151
    assert counts[pos["lc_ll"]] == 5_998 + 152 and counts[pos["sc_sl"]] == 120
    large = np.zeros(graph.nodes, dtype=bool)
    component = [names["lc_sl"], names["lc_sl_child"], names["lc_ll"]]
    large[np.searchsorted(graph.ids, component)] = True

    classes = pick_classes(counts, large, seed=7, per_class=1)
    assert classes["LC-SL"]["candidates"] == 2
    assert classes["LC-SL"]["pool"] == 3
    assert classes["LC-SL"]["positions"][0] in (pos["lc_sl"], pos["lc_sl_child"])
    assert classes["LC-LL"]["candidates"] == 1
    assert classes["LC-LL"]["positions"] == [pos["lc_ll"]]
    assert classes["LC-LL"]["ancestors"] == [6_150]
    assert classes["SC-SL"]["candidates"] == 1  # the 50-ancestor node is in no band
    assert classes["SC-SL"]["positions"] == [pos["sc_sl"]]
    assert pick_classes(counts, large, seed=7, per_class=1) == classes  # seeded
    both = pick_classes(counts, large, seed=7, per_class=10)["LC-SL"]["positions"]
    assert sorted(both) == sorted([pos["lc_sl"], pos["lc_sl_child"]])


def test_a_class_without_candidates_stays_empty() -> None:
    graph, names = fake_graph()
    counts = ancestor_counts(Adjacency(graph))
    large = np.zeros(graph.nodes, dtype=bool)
    large[int(np.searchsorted(graph.ids, names["outside"]))] = True  # only the 50-ancestor node
    classes = pick_classes(counts, large, seed=1, per_class=10)
    for name in ("LC-SL", "LC-LL"):
        assert classes[name]["candidates"] == 0
        assert classes[name]["positions"] == [] and classes[name]["ancestors"] == []
        assert classes[name]["pool"] == 1
        assert classes[name]["pool_histogram"]["10-99"] == 1
    assert classes["SC-SL"]["candidates"] == 3  # 120, 150 and 151 (6,150 is past the band)


def test_histogram_bins() -> None:
    tally = histogram(np.array([0, 0, 1, 9, 10, 150, 201, 999, 5000, 10_000, 10_001]))
    assert tally == {
        "0": 2,
        "1-9": 2,
        "10-99": 1,
        "100-200": 1,
        "201-999": 2,
        "1000-4999": 0,
        "5000-10000": 2,
        "10001+": 1,
    }


def test_reuse_key_names_pipeline_rows_theta_and_version() -> None:
    key = reuse_key("tpch", 100_000, None)
    loaded = {**key, "run_id": "r1", "ingest_s": 12.0}
    assert reusable(loaded, reuse_key("tpch", 100_000, None))
    assert not reusable(loaded, reuse_key("pipeline", 100_000, None))
    assert not reusable(loaded, reuse_key("tpch", 1_000_000, None))
    assert not reusable(loaded, reuse_key("tpch", 100_000, 2_500))
    assert not reusable({**key}, key)  # no run id: the load never completed
    assert not reusable({}, key)


def test_reuse_key_changes_with_the_version(monkeypatch: pytest.MonkeyPatch) -> None:
    loaded = {**reuse_key("tpch", 100_000, None), "run_id": "r1"}
    monkeypatch.setattr(captured_load, "VERSION", captured_load.VERSION + 1)
    assert not reusable(loaded, reuse_key("tpch", 100_000, None))


def test_tpch_scale_from_input_rows() -> None:
    assert tpch_scale(captured_load.TPCH_ROWS_AT_SCALE_1) == 1.0
    assert tpch_scale(1_000_000) == pytest.approx(0.1155, abs=1e-4)
    with pytest.raises(ValueError, match="positive"):
        tpch_scale(0)
