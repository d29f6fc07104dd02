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


@pytest.mark.integration
@pytest.mark.parametrize("capture", ["jvm", "python"])
def test_a_100kb_value_is_stored_truncated_and_the_run_completes(
    spark, client, neo4j_driver, capture
) -> None:  # type: ignore[no-untyped-def]
    df = spark.createDataFrame([("a", "x" * BIG), ("a", "short"), ("b", "y")], ["k", "text"])
    plain = df.groupBy("k").agg(F.max("text").alias("m")).collect()
    with ProvenanceSession(spark, workflow="large-values", capture=capture) as prov:
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
