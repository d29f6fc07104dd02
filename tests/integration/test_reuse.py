"""Sink reuse on the real stack (docs/versions.md, "Reuse"): capture -> Kafka -> ingest -> Neo4j.

Version a labels climate tweets with a UDF, joins them with their state and keeps California
(sink ``ca``) beside a wordcloud; version c moves the California filter before the join (proven
equivalent by z3); version n keeps New York instead (not equivalent). A Spark accumulator
counts the labelling UDF's calls: a reused sink does not call it.
"""

from __future__ import annotations

import random
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from capture_agent import ProvenanceSession
from sparkprov.client import QueryClient
from sparkprov.query_model import Strategy

CITIES = {"LA": "CA", "SF": "CA", "NYC": "NY", "Austin": "TX", "Seattle": "WA"}
WORDS = ["climate", "wildfire", "rain", "heat", "flood", "sun"]


def _frames(spark: Any) -> tuple[Any, Any]:
    rng = random.Random(23)
    rows = []
    for tid in range(120):
        text = " ".join(rng.sample(WORDS, 3))
        rows.append((tid, text, rng.choice(sorted(CITIES))))
    rows += [(200, "climate wildfire", "LA"), (201, "climate heat", "NYC")]
    tweets = spark.createDataFrame(rows, "tid long, text string, location string")
    states = spark.createDataFrame(sorted(CITIES.items()), "location string, state string")
    return tweets, states


def _run(spark: Any, workflow: str, version: str, results: Path) -> dict[str, Any]:
    from pyspark.sql import functions as F

    calls = spark.sparkContext.accumulator(0)

    def label(text):  # type: ignore[no-untyped-def]  # no hints: Spark would infer an Arrow UDF
        calls.add(1)
        return 1 if "wildfire" in text else 0

    label_udf = F.udf(label, "int")
    tweets, states = _frames(spark)
    with ProvenanceSession(spark, workflow, reuse=True, results_path=results) as prov:
        t = prov.source(tweets, "tweet")
        s = prov.source(states, "state_table")
        climate = t.filter(F.col("text").rlike("climate"))
        wordcloud = climate.select("tid", "text").named("wordcloud")
        labelled = climate.withColumn("label", label_udf(F.col("text")))
        state = "NY" if version == "n" else "CA"
        if version == "c":
            ca = labelled.join(s.filter(F.col("state") == state), on="location")
        else:
            ca = labelled.join(s, on="location").filter(F.col("state") == state)
        sink = ca.named("ca")
        rows = {"wordcloud": wordcloud.collect(), "ca": sink.collect()}
    assert prov.reuse is not None
    return {
        "run": prov.run_id,
        "rows": rows,
        "calls": calls.value,
        "reused": dict(prov.reuse.reused),
        "stored": dict(prov.reuse.stored),
    }


def _bag(rows: list[Any]) -> Counter[tuple[Any, ...]]:
    return Counter(tuple(r) for r in rows)


@pytest.fixture(scope="module")
def runs(spark, client, tmp_path_factory) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    workflow = f"reuse-{uuid.uuid4().hex[:8]}"
    results = tmp_path_factory.mktemp("results")
    out: dict[str, Any] = {"workflow": workflow, "results": results}
    for name in ("a", "c", "n"):
        out[name] = _run(spark, workflow, name, results)
        client.wait_for_run(out[name]["run"])
    return out


def test_first_run_computes_and_stores(runs) -> None:  # type: ignore[no-untyped-def]
    a = runs["a"]
    assert a["calls"] > 0 and not a["reused"]
    assert set(a["stored"]) == {"wordcloud", "ca"}
    assert a["stored"]["ca"].rows == len(a["rows"]["ca"]) > 0
    from capture_agent.result_manifest import candidates, damage

    for sink in ("wordcloud", "ca"):
        mine = [(e, s) for e, s in candidates(runs["results"], runs["workflow"], sink)]
        mine = [(e, s) for e, s in mine if s.run_id == a["run"]]
        assert len(mine) == 1 and damage(*mine[0]) is None


def test_equivalent_sink_is_reused_not_recomputed(runs) -> None:  # type: ignore[no-untyped-def]
    a, c = runs["a"], runs["c"]
    # ca: the filter moved across the join, proven equivalent; wordcloud: the same sub-DAG
    assert set(c["reused"]) == {"ca", "wordcloud"}
    assert {r.run_id for r in c["reused"].values()} == {a["run"]}
    assert c["calls"] == 0  # the labelling UDF never ran: the sink was read, not computed
    assert _bag(c["rows"]["ca"]) == _bag(a["rows"]["ca"])
    assert _bag(c["rows"]["wordcloud"]) == _bag(a["rows"]["wordcloud"])
    assert not c["stored"]


def test_reuses_stored_and_listed(runs, client: QueryClient, neo4j_driver) -> None:  # type: ignore[no-untyped-def]
    a, c = runs["a"], runs["c"]
    records, _, _ = neo4j_driver.execute_query(
        "MATCH (:Run {run_id: $c})-[u:REUSES]->(e:Run) RETURN u.sink AS sink, "
        "u.version AS version, e.run_id AS run ORDER BY sink",
        c=c["run"],
    )
    assert [(r["sink"], r["run"]) for r in records] == [("ca", a["run"]), ("wordcloud", a["run"])]
    assert records[0]["version"] == a["stored"]["ca"].version
    listed = {r.run_id: r for r in client.runs(runs["workflow"])}
    assert [(u.sink, u.run_id) for u in listed[c["run"]].reuses] == [
        ("ca", a["run"]),
        ("wordcloud", a["run"]),
    ]
    assert listed[a["run"]].reuses == ()


@pytest.mark.parametrize(
    "strategy", [Strategy.RECURSIVE, Strategy.COMPONENT, Strategy.CONNECTED_SET]
)
def test_trace_from_a_reused_row_reaches_the_earlier_tokens(runs, client, strategy) -> None:  # type: ignore[no-untyped-def]
    a, c = runs["a"], runs["c"]
    rows = client.find_nodes(c["run"], "ca", {"tid": "200"})
    assert len(rows) == 1 and rows[0].run_id == c["run"]
    trace = client.backward_trace([rows[0].id], strategy=strategy)
    tokens = {(n.relation, n.run_id) for n in trace.nodes if n.op.name == "TOKEN"}
    assert tokens == {("tweet", a["run"]), ("state_table", a["run"])}
    source = [n for n in trace.nodes if n.relation == "tweet"]
    assert [n.attributes["tid"] for n in source] == ["200"]


def test_not_equivalent_sink_recomputes(runs) -> None:  # type: ignore[no-untyped-def]
    n = runs["n"]
    assert set(n["reused"]) == {"wordcloud"}  # ca keeps New York now: computed and stored
    assert n["calls"] > 0 and set(n["stored"]) == {"ca"}
    assert {r["state"] for r in n["rows"]["ca"]} == {"NY"}


def test_corrupt_stored_result_recomputes(runs, spark, client) -> None:  # type: ignore[no-untyped-def]
    from capture_agent.result_manifest import candidates

    results, workflow = Path(runs["results"]), runs["workflow"]
    entry, stored = next(
        (e, s) for e, s in candidates(results, workflow, "ca") if s.run_id == runs["a"]["run"]
    )
    part = sorted((entry / stored.data).glob("part-*"))[0]
    part.write_bytes(b"not parquet" + part.read_bytes()[11:])
    again = _run(spark, workflow, "a", results)
    client.wait_for_run(again["run"])
    assert "ca" not in again["reused"] and again["calls"] > 0
    assert _bag(again["rows"]["ca"]) == _bag(runs["a"]["rows"]["ca"])
    # the damaged entry is replaced by the new run's result
    (_, replaced), *_ = [(e, s) for e, s in candidates(results, workflow, "ca") if e == entry]
    assert replaced.run_id == again["run"]


def test_schema_changed_manifest_is_not_reused(runs, spark, client) -> None:  # type: ignore[no-untyped-def]
    import dataclasses

    from capture_agent.result_manifest import candidates, write_manifest

    results, workflow = Path(runs["results"]), runs["workflow"]
    for entry, stored in candidates(results, workflow, "wordcloud"):
        changed = (*stored.schema[:-1], (stored.schema[-1][0], "int"))
        write_manifest(entry, dataclasses.replace(stored, schema=changed))
    again = _run(spark, workflow, "a", results)
    client.wait_for_run(again["run"])
    assert "wordcloud" not in again["reused"] and "wordcloud" in again["stored"]
    assert _bag(again["rows"]["wordcloud"]) == _bag(runs["a"]["rows"]["wordcloud"])
