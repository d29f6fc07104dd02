"""A value of any size never fails a captured job: lineage is the ids, not the values. A text
over sparkprov.limits.MAX_TEXT_BYTES is stored truncated and marked, on both capture paths, and
the run completes with exact counts (issue: lineage sized to the data)."""

from __future__ import annotations

import pytest
from pyspark.sql import functions as F

from capture_agent import ProvenanceSession
from sparkprov import limits

from .graph import own_nodes, run_graph

BIG = 100_000


def _longest_stored(spark, client, neo4j_driver, df, workflow, capture):  # type: ignore[no-untyped-def]
    """Each key's longest text of ``df`` under capture: the plain job's rows (which keep every
    value whole), the run completed with exact counts; its stored graph."""
    plain = df.groupBy("k").agg(F.max("text").alias("m")).collect()
    with ProvenanceSession(spark, workflow=workflow, capture=capture) as prov:
        rows = (
            prov.source(df, "Texts")
            .groupBy("k")
            .agg(F.max("text").alias("m"))
            .named("Longest")
            .collect()
        )
    assert sorted(rows) == sorted(plain)  # the job's own result keeps the whole value
    run = client.wait_for_run(prov.run_id)
    graph = run_graph(neo4j_driver, prov.run_id)
    assert run.node_count == own_nodes(graph) == prov.counts()[0]
    assert run.edge_count == graph.number_of_edges() == prov.counts()[1]
    return graph


@pytest.mark.integration
@pytest.mark.parametrize("capture", ["jvm", "python"])
def test_a_100kb_value_is_stored_truncated_and_the_run_completes(
    spark, client, neo4j_driver, capture
) -> None:  # type: ignore[no-untyped-def]
    df = spark.createDataFrame([("a", "x" * BIG), ("a", "short"), ("b", "y")], ["k", "text"])
    graph = _longest_stored(spark, client, neo4j_driver, df, "large-values", capture)
    mark = limits.truncation_mark(BIG)
    (big_token,) = [
        d for _, d in graph.nodes(data=True) if d.get("op") == "TOKEN" and d["a_text"][0] == "x"
    ]
    for text in (
        big_token["a_text"],
        *(
            d["value"]
            for _, d in graph.nodes(data=True)
            if d.get("op") == "AGGREGATE" and d["value"].startswith("x")
        ),
        *(
            d["value"]
            for _, d in graph.nodes(data=True)
            if d.get("op") == "VALUE" and d["value"].startswith("x")
        ),
    ):
        assert text.endswith(mark)
        assert len(text.encode("utf-8")) == limits.MAX_TEXT_BYTES
        assert text.startswith("x" * 60_000)
    values = [d for _, d in graph.nodes(data=True) if d.get("op") == "VALUE"]
    assert any(d["value"].endswith(mark) for d in values)  # the member's value too


@pytest.mark.integration
@pytest.mark.parametrize("capture", ["jvm", "python"])
def test_many_large_values_make_more_messages_and_the_run_completes(
    spark, client, neo4j_driver, capture
) -> None:  # type: ignore[no-untyped-def]
    """300 values of 90 KB: one chunk of their rows would be a message of ~40 MB, which Kafka
    refuses; the taps end a chunk at its texts' bound instead, and the job succeeds."""
    rows = [(i % 3, (f"x{i:03d}" * 22_500)) for i in range(300)]
    df = spark.createDataFrame(rows, ["k", "text"])
    graph = _longest_stored(spark, client, neo4j_driver, df, "many-large-values", capture)
    tokens = [d for _, d in graph.nodes(data=True) if d.get("op") == "TOKEN"]
    assert len(tokens) == 300
    assert all(len(d["a_text"].encode("utf-8")) == limits.MAX_TEXT_BYTES for d in tokens)
